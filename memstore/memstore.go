package memstore

import (
	"context"
	"fmt"
	"iter"
	"os"
	"sync"
	"time"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
	"github.com/sessionstore/sessionstore/summary"
)

var _ sessionstore.Store = (*Store)(nil)

// Options tune a Store. The zero value works.
type Options struct {
	// MaxRecordBytes caps one encoded snapshot; 0 means
	// sessionstore.DefaultMaxRecordBytes.
	MaxRecordBytes int
	// Now is the clock for record times and lease identities; nil means
	// time.Now.
	Now func() time.Time
}

func (o Options) withDefaults() Options {
	if o.MaxRecordBytes <= 0 {
		o.MaxRecordBytes = sessionstore.DefaultMaxRecordBytes
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// Store is the in-memory adapter of sessionstore.Store. It is safe for
// concurrent use; its leases exclude holders within this process only.
type Store struct {
	opts  Options
	host  string
	pid   int
	index *summary.Index
	done  chan struct{} // closed by Close: wakes every waiting Acquire

	// mu guards everything below and the state of every entry and writer.
	// One lock for the whole store keeps the lease table, the logs and the
	// index feed consistent with each other; nothing slow (encoding,
	// decoding) happens under it.
	mu       sync.Mutex
	sessions map[session.SessionID]*entry
	closed   bool
	search   searchIndex // fed under mu, in order
}

// entry is one session: its log and its lease.
type entry struct {
	id       session.SessionID
	records  []record // records[i] is revision i+1; elements are never modified
	logBytes int64

	holder   *writer            // the live holder, nil when the lease is free
	identity summary.Holder     // the current holder, or the last one
	lastGen  uint64             // the highest generation ever issued
	prev     summary.LeaseState // while free: LeaseFree or LeaseStale
	// freed is closed (and replaced) whenever the lease becomes free or the
	// session is deleted, to wake waiting Acquires.
	freed chan struct{}
}

// record is one stored revision. data is the sessnap encoding; every read
// decodes it afresh, so no caller ever shares memory with the store.
type record struct {
	gen    uint64
	time   time.Time
	schema int
	data   []byte
}

// New returns an empty store.
func New(opts Options) *Store {
	host, _ := os.Hostname() // "" if unknown: identity is for people only
	return &Store{
		opts:     opts.withDefaults(),
		host:     host,
		pid:      os.Getpid(),
		index:    summary.NewIndex(),
		done:     make(chan struct{}),
		sessions: make(map[session.SessionID]*entry),
	}
}

func (s *Store) now() time.Time { return s.opts.Now().UTC() }

// ready reports ErrClosed or ctx's error.
func (s *Store) ready(ctx context.Context) error {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return sessionstore.ErrClosed
	}
	return ctx.Err()
}

func (s *Store) lookupLocked(id session.SessionID) (*entry, error) {
	if s.closed {
		return nil, fmt.Errorf("%w: session %s", sessionstore.ErrClosed, id)
	}
	e, ok := s.sessions[id]
	if !ok {
		return nil, fmt.Errorf("%w: session %s", sessionstore.ErrNotFound, id)
	}
	return e, nil
}

// Create implements sessionstore.Store.
func (s *Store) Create(ctx context.Context, snap sessnap.Snapshot, opts sessionstore.AcquireOptions) (sessionstore.Writer, error) {
	if err := sessionstore.ValidateID(snap.ID); err != nil {
		return nil, err
	}
	if err := s.ready(ctx); err != nil {
		return nil, err
	}
	data, err := sessionstore.EncodeSnapshot(snap.ID, snap, s.opts.MaxRecordBytes)
	if err != nil {
		return nil, err
	}
	return s.create(&snap, data, opts)
}

// Fork implements sessionstore.Store.
func (s *Store) Fork(ctx context.Context, from session.SessionID, rev uint64, newID session.SessionID, opts sessionstore.AcquireOptions) (sessionstore.Writer, error) {
	if err := sessionstore.ValidateID(from); err != nil {
		return nil, err
	}
	if newID == "" {
		newID = sessionstore.NewID()
	}
	if err := sessionstore.ValidateID(newID); err != nil {
		return nil, err
	}
	if err := s.ready(ctx); err != nil {
		return nil, err
	}
	src, _, err := s.recordAt(from, rev)
	if err != nil {
		return nil, err
	}
	srcSnap, err := sessnap.Unmarshal(src.data)
	if err != nil {
		return nil, fmt.Errorf("memstore: fork session %s: %w", from, err)
	}
	snap := sessionstore.ForkSnapshot(srcSnap, newID)
	data, err := sessionstore.EncodeSnapshot(newID, snap, s.opts.MaxRecordBytes)
	if err != nil {
		return nil, err
	}
	return s.create(&snap, data, opts)
}

// create stores revision 1 of a new session and returns its first holder.
func (s *Store) create(snap *sessnap.Snapshot, data []byte, opts sessionstore.AcquireOptions) (sessionstore.Writer, error) {
	id := snap.ID
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, fmt.Errorf("%w: session %s", sessionstore.ErrClosed, id)
	}
	if _, ok := s.sessions[id]; ok {
		return nil, fmt.Errorf("%w: session %s", sessionstore.ErrExists, id)
	}
	e := &entry{id: id, freed: make(chan struct{})}
	s.sessions[id] = e
	// The creator is the session's first holder: there was no lease
	// before it, so its previous state is unknown.
	w := s.takeLocked(e, opts)
	s.appendLocked(e, w.gen, snap, data)
	w.rev = 1
	return w, nil
}

// appendLocked stores data as the next revision of e and feeds the index.
func (s *Store) appendLocked(e *entry, gen uint64, snap *sessnap.Snapshot, data []byte) uint64 {
	t := s.now()
	if n := len(e.records); n > 0 && t.Before(e.records[n-1].time) {
		t = e.records[n-1].time // the clock stepped back: never go backwards
	}
	e.records = append(e.records, record{gen: gen, time: t, schema: sessnap.SchemaVersion, data: data})
	if e.holder != nil && e.holder.gen == gen {
		e.identity.HeartbeatAt = t // an append proves the holder alive, as a heartbeat does
	}
	e.logBytes += int64(len(data))
	rev := uint64(len(e.records))
	sum := summary.Project(snap, rev, gen, t)
	sum.Sizes.LogBytes = e.logBytes
	sum.Lease = e.statusLocked(t)
	// Under s.mu, so the index sees each session's revisions and lease
	// changes in order.
	s.index.Put(sum)
	s.search.appended(snap, rev, &sum)
	return rev
}

// leaseChangedLocked publishes e's summary again with its lease status,
// which just changed (acquired, released, lost), so that watchers see the
// change.
func (s *Store) leaseChangedLocked(e *entry) {
	sum, ok := s.index.Get(e.id)
	if !ok {
		return // being created: its first revision carries the lease
	}
	sum.Lease = e.statusLocked(s.now())
	s.index.Put(sum)
}

// recordAt returns revision rev of id (0: the latest) and its number.
func (s *Store) recordAt(id session.SessionID, rev uint64) (record, uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, err := s.lookupLocked(id)
	if err != nil {
		return record{}, 0, err
	}
	if rev == 0 {
		rev = uint64(len(e.records))
	}
	if rev < 1 || rev > uint64(len(e.records)) {
		return record{}, 0, fmt.Errorf("%w: session %s revision %d (latest %d)", sessionstore.ErrNotFound, id, rev, len(e.records))
	}
	return e.records[rev-1], rev, nil
}

func decode(id session.SessionID, rev uint64, r record) (sessionstore.Record, error) {
	snap, err := sessnap.Unmarshal(r.data)
	if err != nil {
		// Only bytes Marshal produced are stored, so this is a bug, not
		// damage; report it as corruption all the same.
		return sessionstore.Record{}, &sessionstore.CorruptionError{ID: id, Path: "memory", Revision: rev, Err: err}
	}
	return sessionstore.Record{
		ID:            id,
		Revision:      rev,
		Generation:    r.gen,
		Time:          r.time,
		SchemaVersion: r.schema,
		Snapshot:      snap,
	}, nil
}

// Load implements sessionstore.Store.
func (s *Store) Load(ctx context.Context, id session.SessionID) (sessionstore.Record, error) {
	return s.load(ctx, id, 0)
}

// LoadRevision implements sessionstore.Store. Revision 0 does not exist
// (Load reads the latest).
func (s *Store) LoadRevision(ctx context.Context, id session.SessionID, rev uint64) (sessionstore.Record, error) {
	if rev == 0 {
		if err := sessionstore.ValidateID(id); err != nil {
			return sessionstore.Record{}, err
		}
		if err := s.ready(ctx); err != nil {
			return sessionstore.Record{}, err
		}
		return sessionstore.Record{}, fmt.Errorf("%w: session %s revision 0", sessionstore.ErrNotFound, id)
	}
	return s.load(ctx, id, rev)
}

// load reads revision rev (0: the latest).
func (s *Store) load(ctx context.Context, id session.SessionID, rev uint64) (sessionstore.Record, error) {
	if err := sessionstore.ValidateID(id); err != nil {
		return sessionstore.Record{}, err
	}
	if err := s.ready(ctx); err != nil {
		return sessionstore.Record{}, err
	}
	r, rev, err := s.recordAt(id, rev)
	if err != nil {
		return sessionstore.Record{}, err
	}
	return decode(id, rev, r)
}

// History implements sessionstore.Store. The revisions are those present
// when History is called; later appends are not yielded.
func (s *Store) History(ctx context.Context, id session.SessionID) iter.Seq2[sessionstore.Record, error] {
	var recs []record
	err := sessionstore.ValidateID(id)
	if err == nil {
		err = s.ready(ctx)
	}
	if err == nil {
		s.mu.Lock()
		var e *entry
		if e, err = s.lookupLocked(id); err == nil {
			// Records are never modified once appended, so reading this
			// prefix outside the lock is safe.
			recs = e.records[:len(e.records):len(e.records)]
		}
		s.mu.Unlock()
	}
	return func(yield func(sessionstore.Record, error) bool) {
		if err != nil {
			yield(sessionstore.Record{}, err)
			return
		}
		for i, r := range recs {
			if err := ctx.Err(); err != nil {
				yield(sessionstore.Record{}, err)
				return
			}
			rec, err := decode(id, uint64(i+1), r)
			if !yield(rec, err) || err != nil {
				return
			}
		}
	}
}

// List implements sessionstore.Store. Lease status is taken from the live
// lease table when the page is read.
func (s *Store) List(ctx context.Context, q summary.Query) (summary.Page, error) {
	if err := s.ready(ctx); err != nil {
		return summary.Page{}, err
	}
	page, err := s.index.Query(q)
	if err != nil {
		return summary.Page{}, err
	}
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range page.Items {
		if e, ok := s.sessions[page.Items[i].ID]; ok {
			page.Items[i].Lease = e.statusLocked(now)
		}
	}
	return page, nil
}

// Watch implements sessionstore.Store. Every change carries the session's
// lease status as it was when the change was made: acquiring the lease,
// releasing it and losing it (Supersede) are changes, as appends are; a
// heartbeat is not (List and Lease compute the heartbeat age when asked).
// The channel's goroutine ends when ctx is done or the store is closed.
func (s *Store) Watch(ctx context.Context) (<-chan summary.Change, error) {
	if err := s.ready(ctx); err != nil {
		return nil, err
	}
	// Subscribing under s.mu orders it with Close: a subscription made
	// before Close is closed by it, one after is refused above or closed
	// at once by the closed index.
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, sessionstore.ErrClosed
	}
	return s.index.Subscribe(ctx).C(), nil
}

// Close implements sessionstore.Store: it ends every watch and wakes every
// waiting Acquire; afterwards every method of the store and of its writers
// returns ErrClosed. Close is idempotent.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.done)
	s.mu.Unlock()
	s.index.Close()
	return nil
}
