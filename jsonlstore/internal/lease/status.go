package lease

import (
	"time"

	"github.com/sessionstore/sessionstore/fslease"
	"github.com/sessionstore/sessionstore/summary"
)

// Status converts an fslease status for readers.
func Status(st fslease.Status, now time.Time) summary.LeaseStatus {
	var out summary.LeaseStatus
	switch st.State {
	case fslease.Free:
		out.State = summary.LeaseFree
	case fslease.Held:
		out.State = summary.LeaseHeld
	case fslease.Stale:
		out.State = summary.LeaseStale
	}
	if r := st.Record; r != nil {
		out.Generation = r.Generation
		out.Holder = holderOf(*r)
		// The holder's last sign of life: a heartbeat, or an append (which
		// touches the lease, see the store's writer).
		out.Holder.HeartbeatAt = st.ActiveAt
		if st.State == fslease.Held {
			out.HeartbeatAge = max(now.Sub(st.ActiveAt), 0)
		}
	}
	return out
}

func holderOf(r fslease.Record) *summary.Holder {
	return &summary.Holder{
		Host: r.Owner.Host, PID: r.Owner.PID, Label: r.Owner.Label,
		AcquiredAt: r.AcquiredAt, HeartbeatAt: r.HeartbeatAt,
	}
}

// Previous describes the previous holder of l for a RecoveryReport.
func Previous(l Handle) summary.LeaseStatus {
	var out summary.LeaseStatus
	rec, ok := l.Previous()
	switch l.PreviousState() {
	case fslease.PrevReleased:
		out.State = summary.LeaseFree
	case fslease.PrevStale:
		out.State = summary.LeaseStale
	default:
		return out
	}
	if ok {
		out.Generation = rec.Generation
		out.Holder = holderOf(rec)
	}
	return out
}
