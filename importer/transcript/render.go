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
	// IDs shows each message's ID (session.MessageIDAt: its own, or its
	// position's), the names a rewind or a fork at a message takes.
	IDs bool
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

// style is the markup of one output format. Everything a session holds
// reaches the output through inline (a value on a line of the writer's:
// title, facts, headers, folded lines) or text (a message's text, the one
// thing shown over many lines), each of which keeps it from making
// structure of its own: a line break, a header or a fact, or markup.
type style interface {
	title(string) string
	fact(name, value string) string
	header(role, meta string) string
	text(string) string
	folded(kind, body string) string
	inline(string) string
}

// markdown writes CommonMark. A message's text is a fenced code block
// whose fence is longer than any run of backticks in it, so no line of
// the text can close it: inside, nothing is a header, HTML, a link
// reference or any other markup. A value on one line has its line breaks
// escaped (oneLine) and each character that could make markup there
// backslash-escaped (see markup), which CommonMark shows as the character
// itself.
type markdown struct{}

func (markdown) title(t string) string        { return "# " + t + "\n\n" }
func (markdown) fact(n, v string) string      { return "- **" + n + ":** " + v + "\n" }
func (markdown) header(r, meta string) string { return "\n## " + r + meta + "\n\n" }
func (markdown) folded(k, b string) string    { return "- *" + k + "* " + b + "\n" }

func (markdown) text(t string) string {
	longest, run := 0, 0
	for i := range len(t) {
		if t[i] == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", max(3, longest+1))
	if !strings.HasSuffix(t, "\n") {
		t += "\n"
	}
	return fence + "\n" + t + fence + "\n"
}

func (markdown) inline(s string) string {
	// oneLine's escapes are a backslash and a letter, which CommonMark
	// shows as they are; a backslash of s's own before one is shown too.
	s = oneLine(s)
	var b strings.Builder
	b.Grow(len(s))
	for i := range len(s) {
		if markup(s, i) {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// markup reports whether s[i] could start or end inline markup where a
// value from a session sits, mid-line in a paragraph or heading, and so
// is backslash-escaped: backticks (code spans), '*' and '~' (emphasis,
// strikethrough), '[' and ']' (links and images), '<' (raw HTML and
// autolinks), '#' (a heading's closing sequence), '&' before what could
// be an entity, a backslash before what it would escape, and '_' except in
// a run between letters or digits (snake_case), which CommonMark never
// takes for emphasis. Escaping less than every punctuation character
// keeps names, paths and IDs readable in the Markdown as written.
func markup(s string, i int) bool {
	switch s[i] {
	case '`', '*', '~', '[', ']', '<', '#':
		return true
	case '&':
		return i+1 < len(s) && (alnum(s[i+1]) || s[i+1] == '#')
	case '\\':
		return i+1 < len(s) && punct(s[i+1])
	case '_':
		j, k := i, i
		for j > 0 && s[j-1] == '_' {
			j--
		}
		for k < len(s) && s[k] == '_' {
			k++
		}
		return j == 0 || k == len(s) || !alnum(s[j-1]) || !alnum(s[k])
	}
	return false
}

func alnum(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' }

// punct reports ASCII punctuation: what a backslash escapes in CommonMark.
func punct(c byte) bool { return c > ' ' && c < 0x7f && !alnum(c) }

// plain writes text for people: headers and facts start their lines, and
// everything a message says is indented beneath its header, line by line,
// so that nothing it says starts a line.
type plain struct{}

func (plain) title(t string) string {
	return t + "\n" + strings.Repeat("=", utf8.RuneCountInString(t)) + "\n\n"
}
func (plain) fact(n, v string) string      { return n + ": " + v + "\n" }
func (plain) header(r, meta string) string { return "\n" + strings.ToUpper(r) + meta + "\n" }
func (plain) text(t string) string         { return indent(t) + "\n" }
func (plain) folded(k, b string) string    { return "  [" + k + "] " + b + "\n" }
func (plain) inline(s string) string       { return oneLine(s) }

// indent indents each line of t by two spaces. A line ends at "\n" (or
// "\r\n"); any other character a reader may take for the end of a line
// is escaped, so that it starts no line of its own.
func indent(t string) string {
	t = strings.ReplaceAll(t, "\r\n", "\n")
	lines := strings.Split(t, "\n")
	for i, l := range lines {
		lines[i] = escapeBreaks(l)
	}
	return "  " + strings.Join(lines, "\n  ")
}

// oneLine is s for a place on one line: every character a reader may
// take for the end of a line escaped (escapeBreaks), "\n" too.
func oneLine(s string) string {
	if strings.Contains(s, "\n") {
		s = strings.ReplaceAll(s, "\n", `\n`)
	}
	return escapeBreaks(s)
}

// escapeBreaks writes as a visible escape every character but "\n" that
// a reader may take for the end of a line: CR, vertical tab and form feed
// (\r, \v, \f), the information separators that Python's splitlines and
// its kin split at (\x1c to \x1e), NEL (U+0085) and the Unicode line and
// paragraph separators (U+2028, U+2029). Other bytes, invalid UTF-8
// included, are kept.
func escapeBreaks(s string) string {
	if !strings.ContainsAny(s, "\r\v\f\x1c\x1d\x1e\u0085\u2028\u2029") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch r {
		case '\r':
			b.WriteString(`\r`)
		case '\v':
			b.WriteString(`\v`)
		case '\f':
			b.WriteString(`\f`)
		case 0x1c, 0x1d, 0x1e:
			fmt.Fprintf(&b, `\x%02x`, r)
		case 0x85, 0x2028, 0x2029:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

func render(w io.Writer, s *session.Session, opts Options, st style) error {
	bw := bufio.NewWriter(w)
	r := renderer{bw: bw, st: st, opts: opts}
	v := st.inline // every value the session holds
	title, _ := s.Title()
	if title == "" {
		title = "Session " + string(s.ID())
	}
	r.put(st.title(v(title)))
	r.put(st.fact("Session", fmt.Sprintf("%s, %s, created %s", v(string(s.ID())), v(string(s.State())), r.time(s.CreatedAt()))))
	if ws := s.Workspace(); !ws.IsZero() {
		f := v(ws.Project)
		if ws.Dir != "" && ws.Dir != ws.Project {
			f += " (working in " + v(ws.Dir) + ")"
		}
		if ws.Branch != "" {
			f += ", branch " + v(ws.Branch)
		}
		r.put(st.fact("Workspace", strings.TrimPrefix(f, " ")))
	}
	if provider, model := s.Provider(); provider != "" || model != "" {
		r.put(st.fact("Model", strings.Trim(v(provider)+" "+v(model), " ")))
	}
	if o := s.Origin(); o != nil {
		f := v(o.Tool) + " session " + v(o.SessionID)
		if o.AgentID != "" {
			f += ", agent " + v(o.AgentID)
		}
		if o.Path != "" {
			f += ", " + v(o.Path)
		}
		r.put(st.fact("Imported from", f))
	}
	if rel := s.Relationship(); rel.ParentID != "" && (rel.ForkedAt != "" || s.Kind() != session.KindSubagent) {
		f := "fork of " + v(string(rel.ParentID))
		if rel.ForkedAt != "" {
			f += " at message " + v(rel.ForkedAt)
		}
		r.put(st.fact("Relationship", f))
	} else if rel.ParentID != "" {
		f := "sub-agent of " + v(string(rel.ParentID))
		if rel.Role != "" {
			f += " as " + v(rel.Role)
		}
		if rel.ToolCallID != "" {
			f += ", spawned by " + v(rel.ToolCallID)
		}
		r.put(st.fact("Relationship", f))
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
			keys[i] = v(k) + "=" + v(labels[k])
		}
		r.put(st.fact("Labels", strings.Join(keys, ", ")))
	}
	conv := s.Conversation()
	for i, m := range conv {
		if opts.IDs {
			m.ID = session.MessageIDAt(conv, i)
		} else {
			m.ID = ""
		}
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
		marks = append(marks, r.st.inline(m.Model))
	}
	if m.Usage != nil {
		marks = append(marks, usage(*m.Usage))
	}
	if m.ID != "" {
		marks = append(marks, "id "+r.st.inline(m.ID))
	}
	meta := ""
	if len(marks) > 0 {
		meta = " · " + strings.Join(marks, " · ")
	}
	r.put(r.st.header(role, meta))
	if c := m.Compaction; c != nil && (c.Trigger != "" || c.PreTokens > 0) {
		r.put(r.st.folded("compaction", strings.TrimSpace(fmt.Sprintf("%s, replaced %d tokens", r.st.inline(string(c.Trigger)), c.PreTokens))))
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
		r.put(st.folded(kind, fmt.Sprintf("%s %s (%s, %s)", st.inline(p.Name), r.line(compactJSON(p.Input)), size(len(p.Input)), st.inline(p.ToolCallID))))
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
			r.put(st.folded(kind, strings.TrimSpace(st.inline(p.MediaType)+" "+st.inline(p.URL))))
		default:
			r.put(st.folded(kind, st.inline(p.MediaType)+", "+size(len(p.Data))))
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
	desc := fmt.Sprintf("%s for %s: %s, %s", status, r.st.inline(p.ToolCallID), size(len(out)), count(lines(out), "line"))
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

// line folds s to one line of at most FoldBytes bytes of s, for a place
// on one line (the style's inline).
func (r *renderer) line(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if limit := r.opts.fold(); len(s) > limit {
		cut := limit
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return r.st.inline(s)
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
