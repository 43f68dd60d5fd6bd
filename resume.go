package sessionstore

import (
	"context"

	"github.com/sessionstore/sessionstore/session"
)

// Resume acquires session id (Store.Acquire) and returns its writer with
// the latest revision (Writer.Latest): what an agent that starts a
// process per turn does to go on with a session. It reads the session
// once: the records acquiring recovers the session from are the ones the
// revision is rebuilt from, and the writer's first Append of that
// revision's messages followed by new ones stores what changed (a delta),
// never the session again. On error no lease is held.
func Resume(ctx context.Context, st Store, id session.SessionID, opts AcquireOptions) (Writer, Record, error) {
	w, err := st.Acquire(ctx, id, opts)
	if err != nil {
		return nil, Record{}, err
	}
	rec, err := w.Latest(ctx)
	if err != nil {
		_ = w.Release(context.WithoutCancel(ctx))
		return nil, Record{}, err
	}
	return w, rec, nil
}
