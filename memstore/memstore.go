package memstore

import (
	"cmp"
	"context"
	"fmt"
	"iter"
	"maps"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/adapter"
	"github.com/sessionstore/sessionstore/internal/appender"
	"github.com/sessionstore/sessionstore/internal/blob"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/redact"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
	"github.com/sessionstore/sessionstore/summary"
)

var _ sessionstore.Store = (*Store)(nil)

// Options tune a Store. The zero value works.
type Options struct {
	// MaxRecordBytes caps one encoded snapshot (its large content kept
	// out of line); 0 means sessionstore.DefaultMaxRecordBytes.
	MaxRecordBytes int
	// BlobThreshold is the size from which part content (a text, a tool
	// output, an image's data) is kept out of line, once per session under
	// its SHA-256 (0: sessionstore.DefaultBlobThreshold; negative: never).
	BlobThreshold int
	// Now is the clock for record times and lease identities; nil means
	// time.Now.
	Now func() time.Time
	// Redactor replaces the secrets of what the store writes (nil:
	// redact.Default(), the high-confidence rules); a writer's
	// AcquireOptions may name another.
	Redactor *redact.Redactor
}

func (o Options) withDefaults() Options {
	adapter.Defaults(&o.MaxRecordBytes, &o.BlobThreshold, &o.Now, &o.Redactor)
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

// entry is one session: its records, its content kept out of line and its
// lease.
type entry struct {
	id session.SessionID
	// records[i] is revision i+1, its line parsed (record.Parse), its
	// payload its own; elements are never modified, so a prefix of the
	// slice is read outside the lock.
	records  []record.Rec
	logBytes int64
	// blobs is the content the records reference, by SHA-256; an entry is
	// only ever added, and its bytes never change.
	blobs     map[string][]byte
	blobBytes int64

	holder   *writer            // the live holder, nil when the lease is free
	identity summary.Holder     // the current holder, or the last one
	lastGen  uint64             // the highest generation ever issued
	prev     summary.LeaseState // while free: LeaseFree or LeaseStale
	// freed is closed (and replaced) whenever the lease becomes free or the
	// session is deleted, to wake waiting Acquires.
	freed chan struct{}
}

// recordsPath is the Path of the records in errors about them.
const recordsPath = "memory"

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

// ready reports ErrClosed or ctx's error (adapter.Ready).
func (s *Store) ready(ctx context.Context) error { return adapter.Ready(ctx, s.isClosed()) }

// readyID validates id, then reports ErrClosed or ctx's error.
func (s *Store) readyID(ctx context.Context, id session.SessionID) error {
	return adapter.ReadyID(ctx, id, s.isClosed())
}

func (s *Store) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
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
	if err := s.readyID(ctx, snap.ID); err != nil {
		return nil, err
	}
	return s.create(snap, nil, opts)
}

// Fork implements sessionstore.Store. The fork's revision 1 is the
// source revision as stored, its references included; the content they
// name is the source's, shared (memory is held once).
func (s *Store) Fork(ctx context.Context, from session.SessionID, rev uint64, newID session.SessionID, opts sessionstore.AcquireOptions) (sessionstore.Writer, error) {
	newID, err := adapter.ForkID(ctx, from, newID, s.readyID)
	if err != nil {
		return nil, err
	}
	e, recs, err := s.recordsOf(from)
	if err != nil {
		return nil, err
	}
	if rev == 0 {
		rev = uint64(len(recs))
	}
	src, err := s.decode(e, recs, rev, true)
	if err != nil {
		return nil, err
	}
	snap := adapter.ForkSnapshot(src.Snapshot, newID)
	held := map[string][]byte{}
	s.mu.Lock()
	snap.Messages.Refs(func(ref session.ContentRef) { held[ref.SHA256] = e.blobs[ref.SHA256] })
	s.mu.Unlock()
	return s.create(snap, held, opts)
}

// create stores revision 1 of a new session, whose content kept out of
// line starts as held, and returns its first holder.
func (s *Store) create(snap sessnap.Snapshot, held map[string][]byte, opts sessionstore.AcquireOptions) (sessionstore.Writer, error) {
	id := snap.ID
	get := func(hash string) ([]byte, bool) {
		b, ok := held[hash]
		return b, ok
	}
	var arrivals blob.Arrivals
	if err := arrivals.Check(id, snap.Messages, sizes(get)); err != nil {
		return nil, err
	}
	app := appender.New(nil, s.opts.MaxRecordBytes, false)
	app.Redact = redact.NewStream(cmp.Or(opts.Redactor, s.opts.Redactor))
	// The creator is the session's first holder, of generation 1: a new
	// entry has issued none.
	rec, added, err := s.line(app, id, get, record.First(1, s.opts.Now()), &snap)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, fmt.Errorf("%w: session %s", sessionstore.ErrClosed, id)
	}
	if _, ok := s.sessions[id]; ok {
		return nil, fmt.Errorf("%w: session %s", sessionstore.ErrExists, id)
	}
	e := &entry{id: id, freed: make(chan struct{}), blobs: map[string][]byte{}}
	s.sessions[id] = e
	s.addBlobsLocked(e, held)
	// There was no lease before the creator, so its previous state is
	// unknown.
	w := s.takeLocked(e, opts)
	w.app, w.arrivals = app, arrivals
	s.appendLocked(e, rec, &snap, added)
	w.rev = 1
	return w, nil
}

// line encodes snap as record m with app, keeping large content out of
// line: the content the session does not hold already (get finds what it
// holds) is returned as added, for the caller to store with the record.
// The record's line is parsed back, so that it is read as every record is.
func (s *Store) line(app *appender.Appender, id session.SessionID, get func(hash string) ([]byte, bool), m record.Meta, snap *sessnap.Snapshot) (record.Rec, map[string][]byte, error) {
	added := map[string][]byte{}
	ext := &blob.Externalizer{Threshold: s.opts.BlobThreshold, Put: func(hash string, content []byte) error {
		if _, ok := get(hash); !ok {
			if _, ok := added[hash]; !ok {
				// A copy: the caller may change its snapshot afterwards.
				added[hash] = append([]byte(nil), content...)
			}
		}
		return nil
	}}
	app.Ext, app.Pages = ext, ext // a full record's pages are kept as content is
	line, err := app.Line(id, m, snap)
	if err != nil {
		return record.Rec{}, nil, err
	}
	meta, payload, err := record.Parse(line[:len(line)-1], s.opts.MaxRecordBytes)
	if err != nil {
		return record.Rec{}, nil, opErr("append", id, fmt.Errorf("the appended record does not read back: %w", err))
	}
	return record.Rec{Meta: meta, Path: recordsPath, LineLen: int64(len(line)), Payload: payload}, added, nil
}

// sizes returns the size function of blob.Arrivals.Check for the content
// get finds.
func sizes(get func(hash string) ([]byte, bool)) func(hash string) (int64, bool, error) {
	return func(hash string) (int64, bool, error) {
		b, ok := get(hash)
		return int64(len(b)), ok, nil
	}
}

// addBlobsLocked adds content to e's.
func (s *Store) addBlobsLocked(e *entry, content map[string][]byte) {
	for h, b := range content {
		if _, ok := e.blobs[h]; !ok && b != nil {
			e.blobs[h] = b
			e.blobBytes += int64(len(b))
		}
	}
}

// appendLocked stores rec as the next revision of e, with the content it
// adds, and feeds the index.
func (s *Store) appendLocked(e *entry, rec record.Rec, snap *sessnap.Snapshot, added map[string][]byte) {
	rec.Offset = e.logBytes
	e.records = append(e.records, rec)
	e.logBytes += rec.LineLen
	s.addBlobsLocked(e, added)
	if e.holder != nil && e.holder.gen == rec.Gen {
		e.identity.HeartbeatAt = rec.Time // an append proves the holder alive, as a heartbeat does
	}
	sum := summary.Project(snap, rec.Rev, rec.Gen, rec.Time)
	sum.Sizes.LogBytes = e.logBytes
	sum.Lease = e.statusLocked(rec.Time)
	// Under s.mu, so the index sees each session's revisions and lease
	// changes in order.
	s.index.Put(sum)
	s.search.appended(snap, rec.Rev, &sum)
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

// recordsOf returns id's entry and its records as they are now.
func (s *Store) recordsOf(id session.SessionID) (*entry, []record.Rec, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, err := s.lookupLocked(id)
	if err != nil {
		return nil, nil, err
	}
	// Records are never modified once appended, so reading this prefix
	// outside the lock is safe.
	return e, e.records[:len(e.records):len(e.records)], nil
}

// chain returns the records that rebuild the last of recs: from the
// latest full record on. Writers keep a chain within about one and a half
// snapshots (record.Tracker), so rebuilding a revision costs that,
// whatever the length of the history.
func chain(recs []record.Rec) []record.Rec {
	start := len(recs) - 1
	for start > 0 && recs[start].Kind != record.KindFull {
		start--
	}
	return recs[start:]
}

// decode rebuilds revision rev of recs (e's records) and returns it as a
// Record, with its content kept out of line, or (light) without it.
func (s *Store) decode(e *entry, recs []record.Rec, rev uint64, light bool) (sessionstore.Record, error) {
	if rev < 1 || rev > uint64(len(recs)) {
		return sessionstore.Record{}, fmt.Errorf("%w: session %s revision %d (latest %d)", sessionstore.ErrNotFound, e.id, rev, len(recs))
	}
	snaps := record.NewSnapshots(e.id, s.opts.MaxRecordBytes)
	c := chain(recs[:rev])
	for i := range c {
		if err := snaps.Add(&c[i]); err != nil {
			return sessionstore.Record{}, err
		}
	}
	return s.decodeRecord(e, &c[len(c)-1], snaps.Bytes(), light)
}

// decodeRecord turns r, whose snapshot is payload, into a Record: a fresh
// decoding, so no caller shares memory with the store, its pages expanded
// and its references resolved unless light.
func (s *Store) decodeRecord(e *entry, r *record.Rec, payload []byte, light bool) (sessionstore.Record, error) {
	corrupt := func(err error) error {
		// Only records the appender built are stored, so this is a bug,
		// not damage; it is reported as corruption all the same.
		return &sessionstore.CorruptionError{ID: e.id, Path: recordsPath, Offset: r.Offset, Revision: r.Rev, Err: err}
	}
	payload, err := record.ExpandPages(payload, func(p record.PageRef) ([]byte, error) {
		if b, ok := s.get(e, p.SHA256); ok {
			return b, nil // held under its SHA-256 since the append that made it
		}
		return nil, fmt.Errorf("page %s (%d bytes) is not held", p.SHA256, p.Size)
	})
	if err != nil {
		return sessionstore.Record{}, corrupt(err)
	}
	snap, err := sessnap.Unmarshal(payload)
	if err != nil {
		return sessionstore.Record{}, corrupt(err)
	}
	if !light {
		if err := snap.Messages.Resolve(s.fetcher(e)); err != nil {
			return sessionstore.Record{}, corrupt(err)
		}
	}
	return sessionstore.Record{ID: e.id, Revision: r.Rev, Generation: r.Gen, Time: r.Time, SchemaVersion: r.Schema, Snapshot: snap}, nil
}

// Load implements sessionstore.Store. It rebuilds the latest revision
// from its chain (the latest full record and the deltas after it).
func (s *Store) Load(ctx context.Context, id session.SessionID) (sessionstore.Record, error) {
	return s.LoadWith(ctx, id, sessionstore.LoadOptions{})
}

// LoadRevision implements sessionstore.Store. Revision 0 does not exist
// (Load reads the latest).
func (s *Store) LoadRevision(ctx context.Context, id session.SessionID, rev uint64) (sessionstore.Record, error) {
	return adapter.LoadRevision(id, rev, func() error { return s.readyID(ctx, id) }, func() (sessionstore.Record, error) {
		return s.LoadWith(ctx, id, sessionstore.LoadOptions{Revision: rev})
	})
}

// LoadWith implements sessionstore.Store: with WithoutContent,
// parts whose content is kept out of line hold its reference instead.
func (s *Store) LoadWith(ctx context.Context, id session.SessionID, opts sessionstore.LoadOptions) (sessionstore.Record, error) {
	if err := s.readyID(ctx, id); err != nil {
		return sessionstore.Record{}, err
	}
	e, recs, err := s.recordsOf(id)
	if err != nil {
		return sessionstore.Record{}, err
	}
	rev := opts.Revision
	if rev == 0 {
		rev = uint64(len(recs))
	}
	return s.decode(e, recs, rev, opts.WithoutContent)
}

// History implements sessionstore.Store. The revisions are those present
// when History is called; later appends are not yielded.
func (s *Store) History(ctx context.Context, id session.SessionID) iter.Seq2[sessionstore.Record, error] {
	var e *entry
	var recs []record.Rec
	err := s.readyID(ctx, id)
	if err == nil {
		e, recs, err = s.recordsOf(id)
	}
	return func(yield func(sessionstore.Record, error) bool) {
		if err != nil {
			yield(sessionstore.Record{}, err)
			return
		}
		snaps := record.NewSnapshots(id, s.opts.MaxRecordBytes)
		for i := range recs {
			if err := ctx.Err(); err != nil {
				yield(sessionstore.Record{}, err)
				return
			}
			err := snaps.Add(&recs[i])
			var rec sessionstore.Record
			if err == nil {
				rec, err = s.decodeRecord(e, &recs[i], snaps.Bytes(), false)
			}
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

// IDs implements sessionstore.Store: the ID of every session, in ID
// order.
func (s *Store) IDs(ctx context.Context) ([]session.SessionID, error) {
	if err := s.ready(ctx); err != nil {
		return nil, err
	}
	s.mu.Lock()
	ids := slices.Collect(maps.Keys(s.sessions))
	s.mu.Unlock()
	slices.Sort(ids)
	return ids, nil
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

// opErr is the store's operational error: operation op on session id
// failed with err.
func opErr(op string, id session.SessionID, err error) error {
	return &sessionstore.OpError{Store: "memstore", Op: op, ID: id, Err: err}
}
