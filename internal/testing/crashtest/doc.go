// Package crashtest is the harness of the power-loss tests: it runs a
// workload on a vfs.Sim, takes points (snapshots of the file system, with
// what the workload had been told was done) at every sync, crashes each
// point many ways, and has a checker judge every crashed state. A mutation
// run silences one sync call and requires some crashed state to fail the
// check, which proves the checks have teeth and that no sync is for
// nothing.
//
// The harness knows nothing of the store: a test supplies the workload
// (what it does, and what it acknowledged, as a value of its own type A)
// and the checker (what must hold of a crashed state, given A):
//
//	func workload(t testing.TB, mutate int) *crashtest.Recorder[ack] {
//		rec := crashtest.Start[ack](mutate)
//		defer rec.Stop()
//		st := openStoreOn(rec.FS)            // the store writes through rec.FS
//		... st.Create(...); rec.Ack.created = true
//		rec.Mark("end")
//		return rec
//	}
//
//	func TestPowerLoss(t *testing.T) {
//		rec := workload(t, -1)
//		crashtest.Sweep(t, rec.Points(), seeds, check)
//	}
//
// A point is taken just before each sync takes effect (Recorder.Capture
// narrows that), and wherever the workload calls Mark. Each point is
// crashed with nothing pending surviving (DurableOnly), with everything
// surviving (All), and with seeds of the Sim's unkind model (Unkind); the
// crashes of a point are seeded by its index, so a run repeats exactly.
// A checker reports what failed as a *Violation naming the check.
//
// Mutate runs the workload again for each sync call k with that call made
// a no-op that reports success (vfs.Fault.Silent), searches the crashes of
// the points taken after it (Search) for one that fails the check, and
// logs a table of which check caught each silenced sync; a sync whose loss
// nothing notices fails the test.
package crashtest
