package redact

import (
	"strconv"
	"unicode/utf8"

	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// Located is a Finding and where it is: the part of the message (its
// index, and the nested parts' after a dot: "2.0"; "" for the message's
// own error or a snapshot's head) and the field that holds it.
type Located struct {
	Part  string
	Field string
	Finding
}

// FindMessage returns the secrets in m, in the fields Message redacts.
func (r *Redactor) FindMessage(m session.Message) []Located {
	if r.Off() {
		return nil
	}
	var out []Located
	out = r.locate(out, "", "error", m.Error)
	return r.locateParts(out, "", m.Parts)
}

func (r *Redactor) locateParts(out []Located, prefix string, ps []session.Part) []Located {
	for i := range ps {
		p := &ps[i]
		at := prefix + strconv.Itoa(i)
		out = r.locate(out, at, "text", p.Text)
		out = r.locate(out, at, "output", p.Output)
		out = r.locate(out, at, "url", p.URL)
		out = r.locate(out, at, "input", string(p.Input))
		out = r.locate(out, at, "result", string(p.Result))
		if len(p.Data) > 0 && utf8.Valid(p.Data) {
			out = r.locate(out, at, "data", string(p.Data))
		}
		out = r.locateParts(out, at+".", p.Content)
	}
	return out
}

// FindHead returns the secrets in the fields of snap outside its
// conversation that Snapshot redacts.
func (r *Redactor) FindHead(snap sessnap.Snapshot) []Located {
	if r.Off() {
		return nil
	}
	var out []Located
	out = r.locate(out, "", "title", snap.Title)
	if t, _ := r.String(snap.Title); t != "" {
		if at, last, rule := r.cutShort(t); rule != "" { // a secret cut short at the title's end
			out = append(out, Located{Field: "title", Finding: Finding{Rule: rule, Start: at, End: at + len(last), Hash: shortHash(last)}})
		}
	}
	out = r.locate(out, "", "last_error", snap.LastError)
	if p := snap.Pending; p != nil {
		out = r.locate(out, "", "pending_input", string(p.Input))
		out = r.locate(out, "", "pending_reason", p.Reason)
	}
	return out
}

func (r *Redactor) locate(out []Located, part, field, s string) []Located {
	for _, f := range r.Find(s) {
		out = append(out, Located{Part: part, Field: field, Finding: f})
	}
	return out
}
