package secretscan

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/blob"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/blobfile"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/layout"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/logfile"
	"github.com/sessionstore/sessionstore/redact"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// sessionScan scans one session's files.
type sessionScan struct {
	root  *layout.Root
	id    session.SessionID
	r     *redact.Redactor
	blobs *verdicts
	where func(archived bool) string
	// seen holds the SHA-256 of every message element, page reference
	// and snapshot head already scanned in this session.
	seen map[[32]byte]struct{}
	// places holds the places already reported: a secret is reported
	// once per place, at the first revision that holds it there.
	places map[place]bool
	out    []sessionstore.SecretFinding
	// dir is the session's blobs/, open (nil: read by path).
	dir *blobfile.DirReader
	// peek reads blobs into the worker's buffers; scope names the
	// session's file system in the verdicts' keys ("" for the store's
	// own: a file there is known by its identity).
	peek  *blobfile.Peeker
	scope string
	// hits holds the verdicts of the blobs this session's references
	// named (by hash: one file in one session), so that a blob named
	// again costs no open; held, the content of those read whole to say
	// where a secret is (readHeld).
	hits map[string]bool
	held map[string][]byte
}

type place struct {
	msg         int
	part, field string
	rule, hash  string
}

func newSessionScan(root *layout.Root, id session.SessionID, r *redact.Redactor, blobs *verdicts, peek *blobfile.Peeker, scope string, where func(bool) string) *sessionScan {
	return &sessionScan{root: root, id: id, r: r, blobs: blobs, peek: peek, scope: scope, where: where,
		seen: map[[32]byte]struct{}{}, places: map[place]bool{}, hits: map[string]bool{}, held: map[string][]byte{}}
}

var messagesKey = []byte(`"messages"`)

// history scans every revision of the session, archives first.
func (s *sessionScan) history(ctx context.Context) error {
	s.dir = blobfile.OpenDir(s.root.FS, s.id)
	if s.dir != nil {
		defer func() { s.dir.Close(); s.dir = nil }()
	}
	snaps := record.NewSnapshots(s.id, s.root.MaxRecordBytes)
	var prev [][]byte // the previous revision's message elements
	var prevHead []byte
	var bufs [2][]byte
	for placed, err := range logfile.Records(ctx, s.root, s.id) {
		if err != nil {
			return err
		}
		rec := placed.Rec
		if rec.Kind == record.KindGap {
			prev, prevHead = nil, nil
			continue
		}
		if err := snaps.Add(rec); err != nil {
			return err
		}
		// Two buffers in turn: prev aliases the other one.
		bufs[0], bufs[1] = bufs[1], snaps.AppendBytes(bufs[0][:0])
		snap := bufs[1]
		if len(snap) == 0 { // unknown (a snapshot is at least "{}")
			return &sessionstore.CorruptionError{ID: s.id, Path: rec.Path, Offset: rec.Offset, Revision: rec.Rev, Err: snaps.Why()}
		}
		where := s.where(placed.Archived)
		members, err := record.Members(snap)
		if err != nil {
			return s.corrupt(rec, err)
		}
		head, arr := splitHead(members)
		if !bytes.Equal(head, prevHead) {
			if err := s.head(rec.Rev, head, where); err != nil {
				return s.corrupt(rec, err)
			}
			prevHead = head
		}
		var elems [][]byte
		if arr != nil {
			if err := record.Elements(arr, func(e []byte) error { elems = append(elems, e); return nil }); err != nil {
				return s.corrupt(rec, err)
			}
		}
		msg := 0
		for i, e := range elems {
			n := 1
			page := record.IsPage(e)
			var p record.PageRef
			if page {
				if p, err = record.ParsePage(e); err != nil {
					return s.corrupt(rec, err)
				}
				n = p.Messages
			}
			if i < len(prev) && bytes.Equal(prev[i], e) || !s.first(e) {
				msg += n
				continue
			}
			if page {
				err = s.page(rec.Rev, msg, p, where)
			} else {
				err = s.message(rec.Rev, msg, e, where)
			}
			if err != nil {
				return s.corrupt(rec, err)
			}
			msg += n
		}
		prev = elems
	}
	return nil
}

func (s *sessionScan) corrupt(rec *record.Rec, err error) error {
	var ce *sessionstore.CorruptionError
	if errors.As(err, &ce) || errors.Is(err, sessionstore.ErrNotFound) {
		return err
	}
	return &sessionstore.CorruptionError{ID: s.id, Path: rec.Path, Offset: rec.Offset, Revision: rec.Rev, Err: err}
}

// first reports whether b was not seen before in this session, and
// remembers it.
func (s *sessionScan) first(b []byte) bool {
	k := sha256.Sum256(b)
	if _, ok := s.seen[k]; ok {
		return false
	}
	s.seen[k] = struct{}{}
	return true
}

// splitHead returns the snapshot's members but its messages, as an
// object, and its messages array (nil when it has none).
func splitHead(members []record.Member) (head, arr []byte) {
	head = append(head, '{')
	for _, m := range members {
		if bytes.Equal(m.Key, messagesKey) {
			arr = m.Value
			continue
		}
		if len(head) > 1 {
			head = append(head, ',')
		}
		head = append(append(append(head, m.Key...), ':'), m.Value...)
	}
	return append(head, '}'), arr
}

// head scans a snapshot's members but its messages (title, last error,
// pending approval).
func (s *sessionScan) head(rev uint64, head []byte, where string) error {
	if !s.first(head) || len(s.r.FindBytes(head)) == 0 {
		return nil
	}
	snap, err := sessnap.Unmarshal(head)
	if err != nil {
		return err
	}
	s.report(rev, -1, s.r.FindHead(snap), where)
	return nil
}

// page scans the messages of page p, the msg-th message on.
func (s *sessionScan) page(rev uint64, msg int, p record.PageRef, where string) error {
	content, err := s.read(session.ContentRef{Field: session.ContentText, SHA256: p.SHA256, Size: p.Size})
	if err != nil {
		return err
	}
	msgs, err := record.PageMessages(p, content)
	if err != nil {
		return err
	}
	for i, e := range msgs {
		if !s.first(e) {
			continue
		}
		if err := s.message(rev, msg+i, e, where); err != nil {
			return err
		}
	}
	return nil
}

// message scans message element e (the msg-th message of revision rev)
// and the content it keeps out of line, and, when a secret is there,
// decodes it to say in which part and field.
func (s *sessionScan) message(rev uint64, msg int, e []byte, where string) error {
	hit := len(s.r.FindBytes(e)) > 0
	for _, ref := range refsIn(e) {
		h, err := s.blobHit(ref)
		if err != nil {
			return err
		}
		hit = hit || h
	}
	if !hit {
		return nil
	}
	var ms sessnap.Messages
	if err := json.Unmarshal(append(append([]byte{'['}, e...), ']'), &ms); err != nil || len(ms) != 1 {
		return fmt.Errorf("message %d: %w", msg, errors.Join(err, errors.New("not one message")))
	}
	if err := ms.Resolve(s.readHeld); err != nil {
		return err
	}
	s.report(rev, msg, s.r.FindMessage(ms[0]), where)
	return nil
}

// blobHit reports whether the content ref names holds a secret, looking
// at each blob file once per scan (however many revisions and sessions
// name it: a fork's linked blobs are one file). The bytes are not checked
// against the hash (package doc).
func (s *sessionScan) blobHit(ref session.ContentRef) (bool, error) {
	if hit, ok := s.hits[ref.SHA256]; ok {
		return hit, nil
	}
	var key fileKey
	var hit, known bool
	content, skipped, err := s.peek.Peek(s.root.FS, s.dir, s.id, ref, func(ident vfs.Identity) bool {
		key = fileKey{ident: ident}
		if s.scope != "" || ident == (vfs.Identity{}) {
			key = fileKey{scope: s.scope + "/" + string(s.id), hash: ref.SHA256}
		}
		hit, known = s.blobs.get(key)
		return known
	})
	if err != nil {
		return false, err
	}
	if !skipped {
		hit = len(s.r.FindBytes(content)) > 0
		s.blobs.put(key, hit)
	}
	s.hits[ref.SHA256] = hit
	return hit, nil
}

// read reads the content ref names (checked against its hash).
func (s *sessionScan) read(ref session.ContentRef) ([]byte, error) {
	b, err := blobfile.ReadVia(s.root.FS, s.dir, s.id, ref)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: session %s: blob %s", sessionstore.ErrNotFound, s.id, ref.SHA256)
	}
	return b, err
}

// readHeld is read for the content of a message that holds a secret,
// which other messages may name too: read once per session, and held.
func (s *sessionScan) readHeld(ref session.ContentRef) ([]byte, error) {
	if b, ok := s.held[ref.SHA256]; ok && int64(len(b)) == ref.Size {
		return b, nil
	}
	b, err := s.read(ref)
	if err == nil {
		s.held[ref.SHA256] = b
	}
	return b, err
}

func (s *sessionScan) report(rev uint64, msg int, found []redact.Located, where string) {
	for _, f := range found {
		k := place{msg, f.Part, f.Field, f.Rule, f.Hash}
		if s.places[k] {
			continue
		}
		s.places[k] = true
		s.out = append(s.out, sessionstore.SecretFinding{ID: s.id, Revision: rev, Message: msg, Part: f.Part,
			Field: f.Field, Rule: f.Rule, Hash: f.Hash, Where: where})
	}
}

// forensics scans the session's forensic copies, and the blobs and
// pages they reference, as bytes: they are evidence of a damaged log,
// not records to decode.
func (s *sessionScan) forensics(retired bool) error {
	dir := layout.SessionDir(s.id) + "/" + layout.ForensicDir
	names, err := vfs.ReadDirNames(s.root.FS, dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return layout.OpErr("scan", s.id, err)
	}
	slices.Sort(names)
	where := sessionstore.WhereForensic
	if retired {
		where = sessionstore.WhereRetired + " " + sessionstore.WhereForensic
	}
	for _, name := range names {
		p := dir + "/" + name
		fi, err := s.root.FS.Lstat(p)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		b, err := vfs.ReadFile(s.root.FS, p, 1<<31)
		if err != nil {
			return layout.OpErr("scan", s.id, err)
		}
		file := layout.ForensicDir + "/" + name
		seen := map[[2]string]bool{}
		add := func(fs []redact.Finding) {
			for _, f := range fs {
				if k := [2]string{f.Rule, f.Hash}; !seen[k] {
					seen[k] = true
					s.out = append(s.out, sessionstore.SecretFinding{ID: s.id, Message: -1, Rule: f.Rule, Hash: f.Hash, Where: where, File: file})
				}
			}
		}
		add(s.r.FindBytes(b))
		for _, ref := range forensicRefs(b) {
			content, err := s.read(ref)
			if err != nil {
				continue // evidence of damage: what it references may be gone
			}
			add(s.r.FindBytes(content))
		}
	}
	return nil
}

// refsIn returns the content references ("sha256":"<hex>","size":N) in a
// message element, with their field unknown (text: read as it is).
func refsIn(e []byte) []session.ContentRef {
	var out []session.ContentRef
	blobfile.ScanRefs(e, func(hash string, page bool) {
		if page {
			return
		}
		if size, ok := sizeAfter(e, hash); ok {
			out = append(out, session.ContentRef{Field: session.ContentText, SHA256: hash, Size: size})
		}
	})
	return out
}

// forensicRefs returns the blobs and pages a forensic copy references.
func forensicRefs(b []byte) []session.ContentRef {
	var out []session.ContentRef
	blobfile.ScanRefs(b, func(hash string, page bool) {
		if size, ok := sizeAfter(b, hash); ok && blob.ValidHash(hash) {
			out = append(out, session.ContentRef{Field: session.ContentText, SHA256: hash, Size: size})
		}
	})
	return out
}

// sizeAfter returns the "size":N that follows hash in b (a blob's
// `"sha256":"…","size":N`, a page's `"sha256":"…","messages":M,"size":N`).
func sizeAfter(b []byte, hash string) (int64, bool) {
	i := bytes.Index(b, []byte(hash))
	if i < 0 {
		return 0, false
	}
	rest := b[i+len(hash) : min(len(b), i+len(hash)+48)]
	j := bytes.Index(rest, []byte(`"size":`))
	if j < 0 {
		return 0, false
	}
	var size int64
	n := 0
	for _, c := range rest[j+len(`"size":`):] {
		if c < '0' || c > '9' {
			break
		}
		size = size*10 + int64(c-'0')
		n++
	}
	return size, n > 0
}
