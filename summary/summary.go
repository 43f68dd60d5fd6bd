package summary

import (
	"maps"
	"time"

	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// Summary is the read model of one session: what a listing shows. It is a
// projection of the session's latest durable revision plus lease status
// computed when read; it is never a second source of truth.
type Summary struct {
	ID              session.SessionID       `json:"id"`
	Title           string                  `json:"title,omitempty"`
	TitleProvenance session.TitleProvenance `json:"title_provenance,omitempty"`
	State           session.State           `json:"state"`
	StopReason      session.StopReason      `json:"stop_reason,omitempty"`
	Kind            session.SessionKind     `json:"kind"`
	ParentID        session.SessionID       `json:"parent_id,omitempty"`
	Mode            session.PermissionMode  `json:"mode"`
	ProviderID      string                  `json:"provider_id,omitempty"`
	ModelID         string                  `json:"model_id,omitempty"`
	CreatedAt       time.Time               `json:"created_at"`
	// UpdatedAt is the time of the latest revision's record.
	UpdatedAt time.Time `json:"updated_at"`
	// Revision and Generation are those of the latest revision's record.
	Revision     uint64           `json:"revision"`
	Generation   uint64           `json:"generation"`
	MessageCount int              `json:"message_count"`
	Counters     session.Counters `json:"counters"`
	Usage        session.Usage    `json:"usage"`
	LastError    string           `json:"last_error,omitempty"`
	// Owner is the subject of the principal the session is attributed to.
	Owner string `json:"owner,omitempty"`
	// Labels are the session's labels (nil when it has none).
	Labels map[string]string `json:"labels,omitempty"`
	// Project, Dir and Branch are the session's workspace: the project
	// root, the working directory and the git branch.
	Project string `json:"project,omitempty"`
	Dir     string `json:"dir,omitempty"`
	Branch  string `json:"branch,omitempty"`
	// Origin is where an imported session came from, as its latest
	// revision records it (nil for a session that was not imported): what
	// an import reads to tell a source it already holds, unchanged, from
	// one it must read again.
	Origin *session.Origin `json:"origin,omitempty"`
	// Lease is computed from lease evidence when the summary is read (never
	// cached, never from process-local state); in a Change, when the change
	// was made. Adapters that cannot compute it cheaply leave it at
	// LeaseUnknown.
	Lease LeaseStatus `json:"lease"`
	Sizes Sizes       `json:"sizes"`
}

// Sizes are the bytes a session occupies, by kind of file. Adapters without
// files report only what they can (LogBytes as the sum of record sizes).
type Sizes struct {
	LogBytes      int64 `json:"log_bytes"`
	ArchiveBytes  int64 `json:"archive_bytes,omitempty"`
	ForensicBytes int64 `json:"forensic_bytes,omitempty"`
}

// Total is the sum of all sizes.
func (s Sizes) Total() int64 { return s.LogBytes + s.ArchiveBytes + s.ForensicBytes }

// LeaseState is the liveness of a session's operation lease, decided by
// lease evidence alone (a held kernel lock, an unexpired lease row).
type LeaseState string

// Lease states.
const (
	LeaseUnknown LeaseState = ""      // not computed
	LeaseFree    LeaseState = "free"  // nobody holds it; the last holder released cleanly (or there was none)
	LeaseHeld    LeaseState = "held"  // a live holder has it (possibly stopped, but alive)
	LeaseStale   LeaseState = "stale" // nobody holds it and the last holder died without releasing
)

// Holder identifies a lease holder, for people and diagnostics. It is never
// evidence of liveness. HeartbeatAt is when the holder last showed it was
// alive: its latest heartbeat or append (every adapter counts an append as
// a heartbeat).
type Holder struct {
	Host        string    `json:"host,omitempty"`
	PID         int       `json:"pid,omitempty"`
	Label       string    `json:"label,omitempty"`
	AcquiredAt  time.Time `json:"acquired_at,omitzero"`
	HeartbeatAt time.Time `json:"heartbeat_at,omitzero"`
}

// LeaseStatus is what a reader knows about a session's lease.
type LeaseStatus struct {
	State LeaseState `json:"state,omitempty"`
	// Generation is the generation of the current or last holder.
	Generation uint64 `json:"generation,omitempty"`
	// Holder is the current holder (held) or the last one (free, stale).
	Holder *Holder `json:"holder,omitempty"`
	// HeartbeatAge is how long ago the holder last heartbeated or
	// appended (Holder.HeartbeatAt), when held.
	HeartbeatAge time.Duration `json:"heartbeat_age_ns,omitempty"`
}

// Project builds the summary of a session from its latest revision's
// snapshot and record metadata. Lease and sizes are left to the caller.
func Project(snap *sessnap.Snapshot, revision, generation uint64, updatedAt time.Time) Summary {
	s := Summary{
		ID:              snap.ID,
		Title:           snap.Title,
		TitleProvenance: snap.TitleProvenance,
		State:           snap.State,
		StopReason:      snap.StopReason,
		Kind:            snap.Kind,
		ParentID:        snap.Relationship.ParentID,
		Mode:            snap.Mode,
		ProviderID:      snap.ProviderID,
		ModelID:         snap.ModelID,
		CreatedAt:       snap.CreatedAt,
		UpdatedAt:       updatedAt,
		Revision:        revision,
		Generation:      generation,
		MessageCount:    len(snap.Messages),
		Counters:        snap.Counters,
		LastError:       snap.LastError,
		Labels:          maps.Clone(snap.Labels),
		Project:         snap.Workspace.Project,
		Dir:             snap.Workspace.Dir,
		Branch:          snap.Workspace.Branch,
	}
	if s.Kind == "" {
		s.Kind = session.KindUnknown
	}
	if s.Mode == "" {
		s.Mode = session.ModeDefault
	}
	if snap.Usage != nil {
		s.Usage = *snap.Usage
	}
	if snap.Owner != nil {
		s.Owner = snap.Owner.Subject
	}
	if snap.Origin != nil {
		o := *snap.Origin
		s.Origin = &o
	}
	return s
}

// Change is a level-triggered change event: the current state of one
// session (its latest summary with its lease status, or that it cannot be
// read) or its deletion. A new revision is a change, and so is a lease
// that changes hands (SameLease). Changes may be coalesced: a watcher sees
// the latest state of each changed session, not every revision, and never
// counts events per append.
type Change struct {
	ID      session.SessionID `json:"id"`
	Deleted bool              `json:"deleted,omitempty"`
	// Unreadable, when set, says that the session exists but cannot be
	// read (see Page.Unreadable); Summary is zero then. A later Change
	// with a summary means that it reads again.
	Unreadable *Unreadable `json:"unreadable,omitempty"`
	// Summary is the session's latest summary; zero when Deleted or
	// Unreadable.
	Summary Summary `json:"summary,omitzero"`
}
