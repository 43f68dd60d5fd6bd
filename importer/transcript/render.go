package transcript

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sessionstore/sessionstore/importer"
	"github.com/sessionstore/sessionstore/session"
)

// Options adjust the rendering. The zero value works.
type Options struct {
	// Location is the time zone of the times shown (default UTC).
	Location *time.Location
	// FoldBytes is how much of a tool input, tool output or reasoning text
	// is shown before it is folded (default 160 bytes).
	FoldBytes int
}

func (o Options) loc() *time.Location {
	if o.Location == nil {
		return time.UTC
	}
	return o.Location
}

func (o Options) fold() int {
	if o.FoldBytes <= 0 {
		return 160
	}
	return o.FoldBytes
}

// WriteMarkdown writes s's conversation to w as Markdown: a heading with
// the title, a list of the session's facts, and a section per message with
// its role, time and model. Text is shown in full; reasoning, tool calls
// and tool results are folded to a line each with their sizes; images and
// blobs are named with their type and size.
func WriteMarkdown(w io.Writer, s *session.Session, opts Options) error {
	return render(w, s, opts, markdown{})
}

// WriteText writes s's conversation to w as plain text, with the same
// content as WriteMarkdown and no markup.
func WriteText(w io.Writer, s *session.Session, opts Options) error {
	return render(w, s, opts, plain{})
}

// style is the markup of one output format.
type style interface {
	title(string) string
	fact(name, value string) string
	header(role, meta string) string
	text(string) string
	folded(kind, body string) string
}

type markdown struct{}

func (markdown) title(t string) string        { return "# " + t + "\n\n" }
func (markdown) fact(n, v string) string      { return "- **" + n + ":** " + v + "\n" }
func (markdown) header(r, meta string) string { return "\n## " + r + meta + "\n\n" }
func (markdown) text(t string) string         { return t + "\n" }
func (markdown) folded(k, b string) string    { return "- *" + k + "* " + b + "\n" }

type plain struct{}

func (plain) title(t string) string {
	return t + "\n" + strings.Repeat("=", utf8.RuneCountInString(t)) + "\n\n"
}
func (plain) fact(n, v string) string      { return n + ": " + v + "\n" }
func (plain) header(r, meta string) string { return "\n" + strings.ToUpper(r) + meta + "\n" }
func (plain) text(t string) string         { return indent(t) + "\n" }
func (plain) folded(k, b string) string    { return "  [" + k + "] " + b + "\n" }

func indent(t string) string {
	return "  " + strings.ReplaceAll(t, "\n", "\n  ")
}

func render(w io.Writer, s *session.Session, opts Options, st style) error {
	bw := bufio.NewWriter(w)
	r := renderer{bw: bw, st: st, opts: opts}
	title, _ := s.Title()
	if title == "" {
		title = "Session " + string(s.ID())
	}
	r.put(st.title(title))
	r.put(st.fact("Session", fmt.Sprintf("%s, %s, created %s", s.ID(), s.State(), r.time(s.CreatedAt()))))
	if ws := s.Workspace(); !ws.IsZero() {
		v := ws.Project
		if ws.Dir != "" && ws.Dir != ws.Project {
			v += " (working in " + ws.Dir + ")"
		}
		if ws.Branch != "" {
			v += ", branch " + ws.Branch
		}
		r.put(st.fact("Workspace", strings.TrimPrefix(v, " ")))
	}
	if provider, model := s.Provider(); provider != "" || model != "" {
		r.put(st.fact("Model", strings.Trim(provider+" "+model, " ")))
	}
	if o := s.Origin(); o != nil {
		v := o.Tool + " session " + o.SessionID
		if o.AgentID != "" {
			v += ", agent " + o.AgentID
		}
		if o.Path != "" {
			v += ", " + o.Path
		}
		r.put(st.fact("Imported from", v))
	}
	if rel := s.Relationship(); rel.ParentID != "" {
		v := "sub-agent of " + string(rel.ParentID)
		if rel.Role != "" {
			v += " as " + rel.Role
		}
		if rel.ToolCallID != "" {
			v += ", spawned by " + rel.ToolCallID
		}
		r.put(st.fact("Relationship", v))
	}
	if u := s.Usage(); !u.IsZero() {
		r.put(st.fact("Usage", usage(u)))
	}
	if labels := s.Labels(); len(labels) > 0 {
		keys := make([]string, 0, len(labels))
		for k := range labels {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for i, k := range keys {
			keys[i] = k + "=" + labels[k]
		}
		r.put(st.fact("Labels", strings.Join(keys, ", ")))
	}
	for _, m := range s.Conversation() {
		r.message(m)
	}
	if r.err != nil {
		return fmt.Errorf("transcript: %w", r.err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("transcript: %w", err)
	}
	return nil
}

type renderer struct {
	bw   *bufio.Writer
	st   style
	opts Options
	err  error
}

func (r *renderer) put(s string) {
	if r.err == nil {
		_, r.err = r.bw.WriteString(s)
	}
}

func (r *renderer) time(t time.Time) string {
	return t.In(r.opts.loc()).Format("2006-01-02 15:04:05 MST")
}

var roleNames = map[session.Role]string{session.RoleUser: "User", session.RoleAssistant: "Assistant",
	session.RoleSystem: "System", session.RoleTool: "Tool"}

func (r *renderer) message(m session.Message) {
	role := roleNames[m.Role]
	var marks []string
	switch {
	case m.Compaction != nil:
		role += " (compaction summary)"
	case m.Error != "":
		role += " (error)"
	case m.Injected:
		role += " (injected)"
	}
	if !m.CreatedAt.IsZero() {
		marks = append(marks, r.time(m.CreatedAt))
	}
	if m.Model != "" {
		marks = append(marks, m.Model)
	}
	if m.Usage != nil {
		marks = append(marks, usage(*m.Usage))
	}
	meta := ""
	if len(marks) > 0 {
		meta = " · " + strings.Join(marks, " · ")
	}
	r.put(r.st.header(role, meta))
	if c := m.Compaction; c != nil && (c.Trigger != "" || c.PreTokens > 0) {
		r.put(r.st.folded("compaction", strings.TrimSpace(fmt.Sprintf("%s, replaced %d tokens", c.Trigger, c.PreTokens))))
	}
	if m.Error != "" && importer.Text(m.Parts) != m.Error {
		r.put(r.st.folded("error", r.line(m.Error)))
	}
	for _, p := range m.Parts {
		r.part(p)
	}
}

func (r *renderer) part(p session.Part) {
	st := r.st
	switch p.Type {
	case session.PartText:
		if strings.TrimSpace(p.Text) != "" {
			r.put(st.text(p.Text))
		}
	case session.PartReasoning:
		var what []string
		if p.Text != "" {
			what = append(what, r.line(p.Text)+" ("+size(len(p.Text))+")")
		}
		if p.Encrypted != "" {
			what = append(what, "encrypted, "+size(len(p.Encrypted)))
		}
		if p.Signature != "" && p.Text == "" && p.Encrypted == "" {
			what = append(what, "signed, no text kept")
		}
		if len(what) == 0 {
			what = append(what, "nothing kept")
		}
		r.put(st.folded("reasoning", strings.Join(what, "; ")))
	case session.PartToolCall:
		kind := "tool call"
		if p.ProviderExecuted {
			kind = "provider tool call"
		}
		r.put(st.folded(kind, fmt.Sprintf("%s %s (%s, %s)", p.Name, r.line(compactJSON(p.Input)), size(len(p.Input)), p.ToolCallID)))
	case session.PartToolResult:
		r.put(st.folded("tool result", r.result(p)))
		for _, c := range p.Content {
			if c.Type != session.PartText {
				r.part(c)
			}
		}
	case session.PartImage, session.PartBlob:
		kind := "image"
		if p.Type == session.PartBlob {
			kind = "file"
		}
		switch {
		case p.URL != "":
			r.put(st.folded(kind, strings.TrimSpace(p.MediaType+" "+p.URL)))
		default:
			r.put(st.folded(kind, p.MediaType+", "+size(len(p.Data))))
		}
	}
}

func (r *renderer) result(p session.Part) string {
	status := "ok"
	if p.IsError {
		status = "error"
	}
	out := p.Output
	if out == "" {
		out = importer.Text(p.Content)
	}
	desc := fmt.Sprintf("%s for %s: %s, %s", status, p.ToolCallID, size(len(out)), count(lines(out), "line"))
	if n := len(p.Content); n > 0 {
		desc += ", " + count(n, "part")
	}
	if len(p.Result) > 0 {
		desc += ", structured result " + size(len(p.Result))
	}
	if strings.TrimSpace(out) != "" {
		desc += ": " + r.line(out)
	}
	return desc
}

// line folds s to one line of at most FoldBytes bytes.
func (r *renderer) line(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	limit := r.opts.fold()
	if len(s) <= limit {
		return s
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func compactJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}

func lines(s string) int {
	if s == "" {
		return 0
	}
	return strings.Count(strings.TrimSuffix(s, "\n"), "\n") + 1
}

// count says n things ("1 line", "2 lines").
func count(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

func usage(u session.Usage) string {
	return fmt.Sprintf("%d in, %d out, %d cache read, %d cache write tokens", u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens)
}

// size formats n bytes for people.
func size(n int) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}
