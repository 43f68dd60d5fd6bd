package retire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/sessionstore/sessionstore/internal/onejson"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/jsonlstore/maintenance"
	"github.com/sessionstore/sessionstore/session"
)

// The policy file, ROOT/.retention.json, says which sessions `sessions
// retire --policy` retires (FORMAT.md):
//
//	{
//	  "v": 1,
//	  "retire": [
//	    {"older_than": "90d"},
//	    {"older_than": "14d", "labels": {"kind": "ci"}}
//	  ],
//	  "keep": {"labels": {"pin": "yes"}}
//	}
//
// A session is retired when one rule matches it (it carries every label
// of the rule, and has been idle at least older_than) and it carries none
// of keep's labels. Parsing is strict: unknown keys, a second value,
// a missing or invalid older_than, invalid labels, a file over 64 KiB
// are refused with the place named.

const (
	// maxPolicyBytes bounds the policy file.
	maxPolicyBytes = 64 << 10
	// maxRules bounds its rules.
	maxRules = 100
	// PolicyVersion is the policy file's version.
	PolicyVersion = 1
)

type policyFile struct {
	V      *int         `json:"v"`
	Retire []policyRule `json:"retire"`
	Keep   *struct {
		Labels map[string]string `json:"labels"`
	} `json:"keep"`
}

type policyRule struct {
	OlderThan *string           `json:"older_than"`
	Labels    map[string]string `json:"labels"`
}

// ReadPolicy reads and checks the store's policy file. A missing file is
// a *PolicyError wrapping fs.ErrNotExist.
func ReadPolicy(fsys vfs.FS) (maintenance.RetirePolicy, error) {
	fail := func(where string, err error) (maintenance.RetirePolicy, error) {
		return maintenance.RetirePolicy{}, &PolicyError{File: PolicyFile, Where: where, Err: err}
	}
	f, err := fsys.OpenFile(PolicyFile, layout.RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return fail("", fmt.Errorf("no policy: write one at the store's root (FORMAT.md, \"Retention policy\"): %w", err))
	}
	if err != nil {
		return fail("", err)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxPolicyBytes+1))
	_ = f.Close()
	if err != nil {
		return fail("", err)
	}
	return ParsePolicy(b)
}

// ParsePolicy parses and checks the bytes of a policy file.
func ParsePolicy(b []byte) (maintenance.RetirePolicy, error) {
	fail := func(where string, err error) (maintenance.RetirePolicy, error) {
		return maintenance.RetirePolicy{}, &PolicyError{File: PolicyFile, Where: where, Err: err}
	}
	if len(b) > maxPolicyBytes {
		return fail("", fmt.Errorf("larger than %d bytes", maxPolicyBytes))
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var pf policyFile
	if err := onejson.Decode(dec, &pf); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return fail(fmt.Sprintf("byte %d", se.Offset), err)
		}
		return fail("", err)
	}
	switch {
	case pf.V == nil:
		return fail("v", errors.New("missing (this program reads version 1)"))
	case *pf.V != PolicyVersion:
		return fail("v", fmt.Errorf("version %d (this program reads version %d)", *pf.V, PolicyVersion))
	case len(pf.Retire) == 0:
		return fail("retire", errors.New("no rules: a policy says which sessions to retire"))
	case len(pf.Retire) > maxRules:
		return fail("retire", fmt.Errorf("%d rules (at most %d)", len(pf.Retire), maxRules))
	}
	var p maintenance.RetirePolicy
	for i, r := range pf.Retire {
		where := fmt.Sprintf("retire rule %d", i+1)
		if r.OlderThan == nil {
			return fail(where, errors.New(`"older_than" is missing (for example "90d")`))
		}
		d, err := maintenance.ParseAge(*r.OlderThan)
		if err != nil {
			return fail(where+": older_than", err)
		}
		if err := checkLabels(r.Labels); err != nil {
			return fail(where+": labels", err)
		}
		p.Rules = append(p.Rules, maintenance.RetireRule{OlderThan: d, Labels: r.Labels})
	}
	if pf.Keep != nil {
		if err := checkLabels(pf.Keep.Labels); err != nil {
			return fail("keep: labels", err)
		}
		p.Keep = pf.Keep.Labels
	}
	return p, nil
}

func checkLabels(m map[string]string) error {
	if len(m) > session.MaxLabels {
		return fmt.Errorf("%d labels (at most %d)", len(m), session.MaxLabels)
	}
	for k, v := range m {
		if err := session.ValidateLabel(k, v); err != nil {
			return err
		}
	}
	return nil
}
