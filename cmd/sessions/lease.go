package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

const leaseDoc = `
Shows a session's operation lease: free, held or stale; the holder's
identity (label, pid, host); its generation; when it acquired the lease and
how long ago it was last active (its latest append or heartbeat: an append
counts as one); and what to do about a session that seems stuck.

Liveness is decided by the lock alone: a held lease has a live holder (maybe
stopped, but alive), so nothing takes it away; stop the holder or wait. A
stale lease's holder died without releasing; the next acquirer recovers the
session by itself.`

// leaseReport is the --json output of lease.
type leaseReport struct {
	ID     string              `json:"id"`
	Lease  summary.LeaseStatus `json:"lease"`
	Advice string              `json:"advice"`
}

func cmdLease(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := newSub("lease", leaseDoc, stdout, stderr)
	asJSON := c.fs.Bool("json", false, "print the lease status as JSON")
	name, code, ok := c.parseID(args)
	if !ok {
		return code
	}
	return c.withSession(ctx, name, func(st sessionstore.Store, id session.SessionID) int {
		ls, err := st.Lease(ctx, id)
		if err != nil {
			return c.fail(err)
		}
		advice := leaseAdvice(ls)
		if *asJSON {
			return c.printJSON(leaseReport{ID: string(id), Lease: ls, Advice: advice})
		}
		now := time.Now()
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "session\t%s\n", id)
		fmt.Fprintf(tw, "state\t%s\n", ls.State)
		if h := ls.Holder; h != nil {
			who := "holder"
			if ls.State != summary.LeaseHeld {
				who = "last holder"
			}
			fmt.Fprintf(tw, "%s\t%s (pid %d on %s)\n", who, orDash(h.Label), h.PID, orDash(h.Host)) // orDash escapes
			fmt.Fprintf(tw, "generation\t%d\n", ls.Generation)
			if !h.AcquiredAt.IsZero() {
				fmt.Fprintf(tw, "acquired\t%s (%s)\n", h.AcquiredAt.UTC().Format(time.RFC3339), ago(now.Sub(h.AcquiredAt)))
			}
			if ls.State == summary.LeaseHeld {
				fmt.Fprintf(tw, "active\t%s ago (latest append or heartbeat)\n", ls.HeartbeatAge.Round(time.Millisecond))
			} else if !h.HeartbeatAt.IsZero() {
				fmt.Fprintf(tw, "last seen\t%s (%s)\n", h.HeartbeatAt.UTC().Format(time.RFC3339), ago(now.Sub(h.HeartbeatAt)))
			}
		}
		fmt.Fprintf(tw, "advice\t%s\n", advice)
		if err := tw.Flush(); err != nil {
			return c.fail(err)
		}
		return exitOK
	})
}

// leaseAdvice says what to do about a session's lease.
func leaseAdvice(ls summary.LeaseStatus) string {
	switch ls.State {
	case summary.LeaseHeld:
		if h := ls.Holder; h != nil {
			return fmt.Sprintf("the holder (pid %d on host %s) is alive; stop it, or wait", h.PID, orDash(h.Host))
		}
		return "a live process holds it; stop it, or wait"
	case summary.LeaseStale:
		return "the previous holder died; the next acquirer recovers it automatically"
	case summary.LeaseFree:
		return "nobody holds it; the next acquirer takes it at once"
	}
	return "unknown"
}
