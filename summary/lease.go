package summary

import "time"

// SameLease reports whether a and b differ at most in the holder's last
// sign of life (Holder.HeartbeatAt, HeartbeatAge). It is the rule by which
// a watch publishes lease changes: an acquisition, a release, a takeover
// or a holder's death is a change; a heartbeat is not.
func SameLease(a, b LeaseStatus) bool {
	if a.State != b.State || a.Generation != b.Generation || (a.Holder == nil) != (b.Holder == nil) {
		return false
	}
	if a.Holder == nil {
		return true
	}
	ha, hb := *a.Holder, *b.Holder
	ha.HeartbeatAt, hb.HeartbeatAt = time.Time{}, time.Time{}
	return ha == hb
}
