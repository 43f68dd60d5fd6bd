package importer

import (
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sessionstore/sessionstore/session"
)

// Builder assembles a Transcript while a converter reads its source, so
// that both converters keep steps, titles and times by the same rules.
type Builder struct {
	t   *Transcript
	rep *Report // where it counts: t.Report, or a report shared by several builders
	ws  session.Workspace

	title string
	prov  session.TitleProvenance
}

// NewBuilder starts a transcript of a source written by tool.
func NewBuilder(tool string) *Builder {
	b := &Builder{t: &Transcript{Tool: tool}}
	b.rep = &b.t.Report
	return b
}

// CountInto makes the builder count into r, a report that one converter
// shares among the builders of the conversations one file holds; the
// converter then sets each transcript's report itself.
func (b *Builder) CountInto(r *Report) { b.rep = r }

// T returns the transcript being built, for the converter to fill in the
// fields the builder does not keep (identity, model, links, report).
func (b *Builder) T() *Transcript { return b.t }

// Report returns the report being counted.
func (b *Builder) Report() *Report { return b.rep }

// Append adds m to the conversation as a new step and returns its index.
// The step takes the current title and workspace.
func (b *Builder) Append(m session.Message) int {
	b.t.Messages = append(b.t.Messages, m)
	b.t.Steps = append(b.t.Steps, Step{
		Messages: len(b.t.Messages), At: m.CreatedAt, Title: b.title, TitleProvenance: b.prov, Workspace: b.ws,
	})
	return len(b.t.Messages) - 1
}

// Message returns message i of the conversation, for the converter to
// add to while it is still the source's current one.
func (b *Builder) Message(i int) *session.Message { return &b.t.Messages[i] }

// Len returns the number of messages so far.
func (b *Builder) Len() int { return len(b.t.Messages) }

// SetTitle sets the title from now on. A title of higher standing is not
// replaced by a lower one: explicit beats generated beats first prompt.
func (b *Builder) SetTitle(title string, prov session.TitleProvenance) {
	if title == "" || rank(prov) < rank(b.prov) {
		return
	}
	b.title, b.prov = title, prov
}

func rank(p session.TitleProvenance) int {
	switch p {
	case session.TitleExplicit:
		return 3
	case session.TitleGenerated:
		return 2
	case session.TitleFirstPrompt:
		return 1
	}
	return 0
}

// SetWorkspace sets the workspace from now on: dir and branch as given
// (an empty value keeps the current one); the project is the first
// directory seen unless project names it.
func (b *Builder) SetWorkspace(project, dir, branch string) {
	project, dir, branch = b.path("project", project), b.path("dir", dir), b.path("branch", branch)
	if b.ws.Project == "" {
		b.ws.Project = project
		if b.ws.Project == "" {
			b.ws.Project = dir
		}
	}
	if dir != "" {
		b.ws.Dir = dir
	}
	if branch != "" {
		b.ws.Branch = branch
	}
}

// path returns p if a workspace can hold it, else "" (counted).
func (b *Builder) path(what, p string) string {
	if len(p) > session.MaxPathBytes || strings.ContainsRune(p, 0) || !utf8.ValidString(p) {
		b.rep.Drop("workspace " + what + " too long or with NUL")
		return ""
	}
	return p
}

// Fit returns v if a message or origin ID can hold it (at most
// session.MaxMessageIDBytes bytes), else "" (counted as dropped what).
func (b *Builder) Fit(what, v string) string {
	if len(v) > session.MaxMessageIDBytes || !utf8.ValidString(v) {
		b.rep.Drop(what + " too long")
		return ""
	}
	return v
}

// MaxTokens bounds a token count a converter accepts: larger ones are
// damage (no response is that large), and sums of counts below it stay
// exact in every JSON reader.
const MaxTokens = 1 << 40

// Tokens returns u if every count is from 0 to MaxTokens, else nil
// (counted as dropped).
func (b *Builder) Tokens(u session.Usage) *session.Usage {
	for _, n := range [...]int64{u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens} {
		if n < 0 || n > MaxTokens {
			b.rep.Drop("usage out of range")
			return nil
		}
	}
	return &u
}

// Workspace returns the current workspace.
func (b *Builder) Workspace() session.Workspace { return b.ws }

// Touch records that the source had a line dated at.
func (b *Builder) Touch(at time.Time) {
	if at.IsZero() {
		return
	}
	if b.t.CreatedAt.IsZero() || at.Before(b.t.CreatedAt) {
		b.t.CreatedAt = at
	}
	if at.After(b.t.UpdatedAt) {
		b.t.UpdatedAt = at
	}
}

// Finish completes the transcript: a session without a title from its
// source takes its first prompt's (from that prompt's step on); a title or
// workspace that changed after the last message adds a last step; the
// report counts the messages.
func (b *Builder) Finish() *Transcript {
	t := b.t
	if b.title == "" {
		for i, m := range t.Messages {
			if text := promptText(m); text != "" {
				b.title, b.prov = session.TitleFromPrompt(text), session.TitleFirstPrompt
				for j := i; j < len(t.Steps); j++ {
					t.Steps[j].Title, t.Steps[j].TitleProvenance = b.title, b.prov
				}
				break
			}
		}
	}
	t.Title, t.TitleProvenance, t.Workspace = b.title, b.prov, b.ws
	if n := len(t.Steps); n > 0 {
		last := t.Steps[n-1]
		if last.Title != b.title || last.TitleProvenance != b.prov || last.Workspace != b.ws {
			t.Steps = append(t.Steps, Step{Messages: last.Messages, At: t.UpdatedAt, Title: b.title, TitleProvenance: b.prov, Workspace: b.ws})
		}
	}
	t.Report.Messages = len(t.Messages)
	return t
}

// promptText returns the text of m if it is a person's prompt that can
// title a session, else "".
func promptText(m session.Message) string {
	if !StartsTurn(m) {
		return ""
	}
	for _, p := range m.Parts {
		if p.Type == session.PartText && TitleCandidate(p.Text) {
			return p.Text
		}
	}
	return ""
}

// StartsTurn reports whether m begins a turn: a prompt a person gave, not
// context the runtime injected or a compaction summary.
func StartsTurn(m session.Message) bool {
	return m.Role == session.RoleUser && !m.Injected && m.Compaction == nil
}

// Title returns the current title and its provenance.
func (b *Builder) Title() (string, session.TitleProvenance) { return b.title, b.prov }
