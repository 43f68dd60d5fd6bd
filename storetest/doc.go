// Package storetest is the conformance suite of the sessionstore contract.
// Every adapter runs it from its own tests; a behaviour the suite does not
// check is not part of the contract, and an adapter that passes it can
// replace any other.
//
// # Usage
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, storetest.Harness{
//			New: func(t *testing.T) sessionstore.Store {
//				st, err := jsonlstore.Open(t.TempDir(), jsonlstore.Options{Search: fts.New()})
//				if err != nil {
//					t.Fatal(err)
//				}
//				return st
//			},
//			Supersede: func(t *testing.T, s sessionstore.Store, id session.SessionID) {
//				// make the current holder lose its lease, e.g. by
//				// replacing the lock file
//			},
//			Crash: func(t *testing.T, s sessionstore.Store, id session.SessionID) {
//				// take the lease in another process, then kill it
//			},
//		})
//	}
//
// Each check is a subtest named after the rule it checks
// (ConcurrentAppendsOneWinnerPerRevision, SupersededWriterGetsErrLeaseLost,
// …; CheckNames lists them) and runs in parallel on a fresh store from
// Harness.New. Checks never sleep to synchronise and never count watch
// events; every wait is bounded (a few seconds), so a broken adapter fails
// a check rather than hanging the run.
package storetest
