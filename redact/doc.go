// Package redact finds secrets in session content and replaces them with
// placeholders, before a store writes anything (FORMAT.md "Redaction").
// Every adapter redacts what it writes with the Redactor of its Options
// (the high-confidence rules by default), or of the AcquireOptions of the
// call that made the writer; sessionstore.Scan reports the secrets a
// store holds, and a jsonlstore's Redact rewrites a session's history
// without them.
//
// A placeholder names the rule and a short hash of the secret,
// [REDACTED:github-token:1f2e3d4c], so that two mentions of one key stay
// recognisable and nothing of the key is kept.
//
//	r, err := redact.New(redact.Options{Generic: true})
//	clean, n := r.String("export GITHUB_TOKEN=ghp_…")
//	snap, n := r.Snapshot(snap)
//	st := redact.NewStream(r) // a writer's: scans only new messages
//	n = st.Snapshot(&snap)
//
// The rules are regular expressions behind a keyword prefilter: one pass
// over a string looks for the keywords every match of a rule contains (a
// prefix such as ghp_ or AKIA), and a rule's expression runs only around
// them, so that the cost on content without secrets is one table lookup
// per byte.
package redact
