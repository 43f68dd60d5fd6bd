package summary_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/summary"
)

func TestSameLease(t *testing.T) {
	t0 := sessiontest.Epoch
	held := func(edit func(*summary.LeaseStatus)) summary.LeaseStatus {
		l := summary.LeaseStatus{
			State: summary.LeaseHeld, Generation: 3, HeartbeatAge: time.Second,
			Holder: &summary.Holder{Host: "box", PID: 7, Label: "agent", AcquiredAt: t0, HeartbeatAt: t0},
		}
		if edit != nil {
			edit(&l)
		}
		return l
	}
	tests := []struct {
		name string
		b    summary.LeaseStatus
		want bool
	}{
		{"identical", held(nil), true},
		{"a heartbeat later", held(func(l *summary.LeaseStatus) {
			l.Holder.HeartbeatAt, l.HeartbeatAge = t0.Add(time.Minute), 0
		}), true},
		{"released", held(func(l *summary.LeaseStatus) { l.State = summary.LeaseFree }), false},
		{"died", held(func(l *summary.LeaseStatus) { l.State = summary.LeaseStale }), false},
		{"taken over", held(func(l *summary.LeaseStatus) { l.Generation = 4 }), false},
		{"another holder", held(func(l *summary.LeaseStatus) { l.Holder.PID = 8 }), false},
		{"acquired again", held(func(l *summary.LeaseStatus) { l.Holder.AcquiredAt = t0.Add(time.Second) }), false},
		{"no holder", held(func(l *summary.LeaseStatus) { l.Holder = nil }), false},
		{"unknown", summary.LeaseStatus{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, summary.SameLease(held(nil), tt.b))
			require.Equal(t, tt.want, summary.SameLease(tt.b, held(nil)))
		})
	}
	require.True(t, summary.SameLease(summary.LeaseStatus{}, summary.LeaseStatus{}))
}
