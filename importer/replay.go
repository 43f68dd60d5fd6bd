package importer

import (
	"errors"
	"fmt"
	"iter"

	"github.com/sessionstore/sessionstore/session"
)

// ErrDiverged reports a session that an import cannot continue: its
// conversation is not the start of the source's (the source was rewritten,
// or the session went on without it), or it was imported from another
// source.
var ErrDiverged = errors.New("importer: session and source have diverged")

// Revisions returns the revisions of a fresh import of t into a session
// configured by cfg (see Config): Apply over session.New(cfg).
func (t *Transcript) Revisions(cfg session.Config) iter.Seq2[*session.Session, error] {
	return func(yield func(*session.Session, error) bool) {
		s, err := session.New(cfg)
		if err != nil {
			yield(nil, fmt.Errorf("importer: %w", err))
			return
		}
		for s, err := range t.Apply(s) {
			if !yield(s, err) || err != nil {
				return
			}
		}
	}
}

// Apply continues s through the steps of t it lacks and yields s after
// each one: the revisions a caller appends to a store, in order. s is
// either a fresh session (Revisions) or one restored from the latest
// revision of an earlier import of the same source; the second import
// then appends only what the source gained, and importing an unchanged
// source yields nothing. Apply changes s in place: a yielded session is
// valid until the next iteration (sessnap.Of captures it).
//
// Each step appends its messages through the public session API: a
// prompt begins a turn (BeginTurn), an assistant message adds its usage
// to the session's (AddUsage) and counts its tool calls (RecordToolCall),
// and the last step of a turn ends it (EndTurn), so an import ends idle.
// The title and workspace follow the source; the first revision records
// the origin of this read (SetOrigin).
//
// Each message appended is then held once: t's message shares the copy
// s keeps (read-only, as a session's conversation is).
//
// It yields ErrDiverged, and nothing else, when s's conversation is not
// the start of t's or s was imported from another source.
func (t *Transcript) Apply(s *session.Session) iter.Seq2[*session.Session, error] {
	return func(yield func(*session.Session, error) bool) {
		if err := t.check(s); err != nil {
			yield(nil, err)
			return
		}
		have := s.MessageCount()
		originSet := false
		step := func(st Step) error {
			for i := s.MessageCount(); i < st.Messages; i++ {
				if err := t.appendMessage(s, i); err != nil {
					return fmt.Errorf("importer: message %d: %w", i, err)
				}
			}
			// A title the session was given (explicit) is not replaced by
			// one the source derived.
			if title, prov := s.Title(); st.Title != "" && (title != st.Title || prov != st.TitleProvenance) && rank(st.TitleProvenance) >= rank(prov) {
				if err := s.SetTitle(st.Title, st.TitleProvenance); err != nil {
					return fmt.Errorf("importer: %w", err)
				}
			}
			if st.Workspace != s.Workspace() && !st.Workspace.IsZero() {
				if err := s.SetWorkspace(st.Workspace); err != nil {
					return fmt.Errorf("importer: %w", err)
				}
			}
			if !originSet {
				originSet = true
				if err := s.SetOrigin(t.Origin()); err != nil {
					return fmt.Errorf("importer: %w", err)
				}
			}
			return nil
		}
		// Steps only grow the conversation, so the ones s lacks are a tail.
		first := len(t.Steps)
		for k, st := range t.Steps {
			if st.Messages > have {
				first = k
				break
			}
		}
		for _, st := range t.Steps[first:] {
			if err := step(st); err != nil {
				yield(nil, err)
				return
			}
			if !yield(s, nil) {
				return
			}
		}
		if first < len(t.Steps) {
			return
		}
		// Nothing to append: the source's title, workspace or size may
		// still have changed.
		last := Step{Messages: have, Title: t.Title, TitleProvenance: t.TitleProvenance, Workspace: t.Workspace}
		title, prov := s.Title()
		o := s.Origin()
		if (last.Title == "" || title == last.Title && prov == last.TitleProvenance || rank(last.TitleProvenance) < rank(prov)) &&
			(last.Workspace.IsZero() || last.Workspace == s.Workspace()) && o != nil && *o == *t.Origin() {
			return
		}
		if err := step(last); err != nil {
			yield(nil, err)
			return
		}
		yield(s, nil)
	}
}

// check reports ErrDiverged unless s's conversation is the start of t's
// and s was imported from t's source, if at all.
func (t *Transcript) check(s *session.Session) error {
	if o, want := s.Origin(), t.Origin(); o != nil && (o.Tool != want.Tool || o.SessionID != want.SessionID || o.AgentID != want.AgentID) {
		return fmt.Errorf("%w: session %s was imported from %s %q", ErrDiverged, s.ID(), o.Tool, o.SessionID)
	}
	have := s.Conversation()
	if len(have) > len(t.Messages) {
		return fmt.Errorf("%w: session %s has %d messages, the source %d", ErrDiverged, s.ID(), len(have), len(t.Messages))
	}
	for i, m := range have {
		if t.Messages[i].ID == "" {
			// The store gave an ID to a message its source names none
			// for (session.Session.AppendMessage).
			m.ID = ""
		}
		if !m.Equal(t.Messages[i]) {
			return fmt.Errorf("%w: session %s differs from the source at message %d", ErrDiverged, s.ID(), i)
		}
	}
	return nil
}

// appendMessage appends message i of t to s within the lifecycle: it
// begins a turn for a prompt (ending a running one) and for an assistant
// or tool message outside any turn, counts usage and tool calls, and ends
// the turn after the turn's last message.
func (t *Transcript) appendMessage(s *session.Session, i int) error {
	m := t.Messages[i]
	running := s.State() == session.StateRunning
	if StartsTurn(m) && running {
		if err := s.EndTurn(); err != nil {
			return err
		}
		running = false
	}
	if !running && (StartsTurn(m) || m.Role == session.RoleAssistant || m.Role == session.RoleTool) {
		if err := s.BeginTurn(); err != nil {
			return err
		}
		running = true
	}
	if err := s.AppendMessage(m); err != nil {
		return err
	}
	// The session keeps a copy of m; the transcript takes that copy in
	// place of its own, so that a conversation being imported is held in
	// memory once, not twice.
	conv := s.Conversation()
	t.Messages[i] = conv[len(conv)-1]
	if running && m.Role == session.RoleAssistant {
		if m.Usage != nil {
			if err := s.AddUsage(*m.Usage); err != nil {
				return err
			}
		}
		for _, p := range m.Parts {
			if p.Type == session.PartToolCall {
				if err := s.RecordToolCall(); err != nil {
					return err
				}
			}
		}
	}
	if running && (i+1 == len(t.Messages) || StartsTurn(t.Messages[i+1])) {
		return s.EndTurn()
	}
	return nil
}
