package secretscan

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"slices"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/retire"
	"github.com/sessionstore/sessionstore/redact"
	"github.com/sessionstore/sessionstore/session"
)

// Scan scans ids (Targets) with r once ready, the store's check that it
// is open and usable, returns nil: the store's side of
// sessionstore.SecretScanner.
func Scan(ctx context.Context, root *layout.Root, area *retire.Area, ready func() error, r *redact.Redactor, ids []session.SessionID) iter.Seq2[sessionstore.SecretFinding, error] {
	return func(yield func(sessionstore.SecretFinding, error) bool) {
		err := ready()
		var targets []Target
		if err == nil {
			targets, err = Targets(root, area, ids)
		}
		if err != nil {
			yield(sessionstore.SecretFinding{}, err)
			return
		}
		for f, err := range Run(ctx, root, area, r, targets) {
			if !yield(f, err) {
				return
			}
		}
	}
}

// Targets returns what a scan of ids reads: each live session of ids and
// each that has a pack in the retired area (both, when an interrupted
// retire or restore left both); with no ids, every live session, then
// every retired one. An id that is neither is sessionstore.ErrNotFound.
func Targets(root *layout.Root, area *retire.Area, ids []session.SessionID) ([]Target, error) {
	if len(ids) == 0 {
		live, err := layout.SessionIDs(root.FS)
		if err != nil {
			return nil, err
		}
		retired, err := area.IDs()
		if err != nil {
			return nil, err
		}
		var out []Target
		for _, id := range live {
			out = append(out, Target{ID: id})
		}
		for _, id := range retired {
			out = append(out, Target{ID: id, Retired: true})
		}
		return out, nil
	}
	var out []Target
	for _, id := range ids {
		if err := sessionstore.ValidateID(id); err != nil {
			return nil, err
		}
		err := root.Exists(id)
		live := err == nil
		if err != nil && !errors.Is(err, sessionstore.ErrNotFound) {
			return nil, err
		}
		if live {
			out = append(out, Target{ID: id})
		}
		_, perr := root.FS.Lstat(retire.PackPath(id))
		switch {
		case perr == nil:
			out = append(out, Target{ID: id, Retired: true})
		case !errors.Is(perr, fs.ErrNotExist):
			return nil, perr
		case !live:
			return nil, fmt.Errorf("%w: session %s", sessionstore.ErrNotFound, id)
		}
	}
	return slices.Clip(out), nil
}
