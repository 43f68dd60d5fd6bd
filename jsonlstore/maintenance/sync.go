package maintenance

import (
	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// SyncReport says what Sync did to each of two stores, A (the store Sync
// is called on) and B, and whether what it wrote verifies.
type SyncReport struct {
	A string `json:"a"`
	B string `json:"b"`
	// ToA and ToB are the sessions written into A and into B: new ones,
	// appended ones, ones copied whole (SessionBackup.Action).
	ToA []SessionBackup `json:"to_a"`
	ToB []SessionBackup `json:"to_b"`
	// Forks are the sessions made for branches that diverged.
	Forks []SyncFork `json:"forks"`
	// Unchanged counts the sessions both stores held alike.
	Unchanged int `json:"unchanged"`
	// Skipped names the sessions left alone, and why (a live writer holds
	// one on either side).
	Skipped    map[string]string    `json:"skipped,omitempty"`
	Unreadable []summary.Unreadable `json:"unreadable,omitempty"`
	// BytesCopied is every byte written into either store.
	BytesCopied int64                     `json:"bytes_copied"`
	VerifyA     sessionstore.VerifyReport `json:"verify_a"`
	VerifyB     sessionstore.VerifyReport `json:"verify_b"`
}

// OK reports whether every session was synced and what was written
// verifies.
func (r *SyncReport) OK() bool {
	return len(r.Unreadable) == 0 && r.VerifyA.OK() && r.VerifyB.OK()
}

// Changed reports whether the sync wrote anything.
func (r *SyncReport) Changed() bool {
	return len(r.ToA)+len(r.ToB)+len(r.Forks) > 0
}

// SyncFork is one branch of a session appended on both sides since their
// last common revision: the side In ("a" or "b") gets the other side's
// branch as session Fork, a fork of ID (its relationship names ID as the
// parent) whose labels say where it diverged (SyncDivergedFrom,
// SyncDivergedAt). It holds every revision of that branch, from 1.
type SyncFork struct {
	ID         session.SessionID `json:"id"`
	Fork       session.SessionID `json:"fork"`
	In         string            `json:"in"`
	DivergedAt uint64            `json:"diverged_at"`
	Revisions  uint64            `json:"revisions"`
}

// The labels of a fork Sync makes: the session it diverged from and the
// last revision both sides had in common.
const (
	SyncDivergedFrom = "sync/diverged-from"
	SyncDivergedAt   = "sync/diverged-at"
)

// SyncOptions tunes a sync.
type SyncOptions struct {
	// Progress, when set, is called after each session with how many of
	// total are done.
	Progress func(done, total int)
}
