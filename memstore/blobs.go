package memstore

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/adapter"
	"github.com/sessionstore/sessionstore/session"
)

// Part content at or above Options.BlobThreshold is kept out of line: once
// per session, in the entry's blobs under its SHA-256, the records holding
// its reference (FORMAT.md "Blobs", as a file store writes them). The same
// content attached many times is held once; a fork shares its source's.
// Reads resolve references with a copy, so a caller never shares memory
// with the store.

// getLocked returns the content e holds under hash.
func (e *entry) getLocked(hash string) ([]byte, bool) {
	b, ok := e.blobs[hash]
	return b, ok
}

// get is getLocked taking the store's lock.
func (s *Store) get(e *entry, hash string) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return e.getLocked(hash)
}

// fetcher returns the fetch of sessnap.Messages.Resolve for e's content.
func (s *Store) fetcher(e *entry) func(ref session.ContentRef) ([]byte, error) {
	return func(ref session.ContentRef) ([]byte, error) {
		b, ok := s.get(e, ref.SHA256)
		if !ok || int64(len(b)) != ref.Size {
			return nil, fmt.Errorf("content %s (%d bytes) is not held", ref.SHA256, ref.Size)
		}
		if ref.Field == session.ContentData {
			return bytes.Clone(b), nil // Resolve keeps the slice; a string is a copy already
		}
		return b, nil
	}
}

// ReadBlob implements sessionstore.Store: a copy of the content
// session id holds for ref.
func (s *Store) ReadBlob(ctx context.Context, id session.SessionID, ref session.ContentRef) ([]byte, error) {
	if err := s.readyID(ctx, id); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, err := s.lookupLocked(id)
	if err != nil {
		return nil, err
	}
	b, ok := e.getLocked(ref.SHA256)
	if !ok || int64(len(b)) != ref.Size {
		return nil, fmt.Errorf("%w: session %s: content %s of %d bytes", sessionstore.ErrNotFound, id, ref.SHA256, ref.Size)
	}
	return bytes.Clone(b), nil
}

// DiskUsage implements sessionstore.Store: the memory each
// session's data holds, LogBytes its records' lines and BlobBytes its
// content kept out of line (each content once). Memory a fork shares with
// its source counts in both.
func (s *Store) DiskUsage(ctx context.Context, ids ...session.SessionID) (sessionstore.UsageReport, error) {
	var rep sessionstore.UsageReport
	if err := adapter.ReadyIDs(s.ready(ctx), ids); err != nil {
		return rep, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(ids) == 0 {
		for id := range s.sessions {
			ids = append(ids, id)
		}
		slices.Sort(ids)
	}
	for _, id := range ids {
		e, err := s.lookupLocked(id)
		if err != nil {
			return sessionstore.UsageReport{}, err
		}
		u := sessionstore.SessionUsage{ID: id, LogBytes: e.logBytes, BlobBytes: e.blobBytes, TotalBytes: e.logBytes + e.blobBytes}
		rep.Sessions = append(rep.Sessions, u)
		rep.Total.Add(u)
	}
	return rep, nil
}
