// Package ingest imports other agents' transcripts into a store, the way
// `sessions import` does: it finds a tool's source files under the paths
// it is given, skips the sources the store already holds unchanged,
// reads the others with the tool's converter (package claudecode or
// codex), creates or continues a session per conversation (its
// sub-agents as child sessions) and reports, per source, what it read,
// skipped and wrote. It works on any store through the store contract.
//
//	rep, err := ingest.Run(ctx, store, ingest.ClaudeCode, []string{"/home/me/.claude/projects"}, ingest.Options{})
//	// rep.Sources: one report per source; rep.Totals: their sums.
//
// # Sources
//
// A source is one conversation's files. For Claude Code that is a
// session's transcript and its sub-agents' files (the layout claudecode
// documents); a path is a transcript, a project directory (holding
// transcripts) or a projects directory (holding project directories). For
// Codex it is one rollout; a path is a rollout or a directory searched,
// to any depth, for *.jsonl files. Sources are only ever opened for
// reading.
//
// # Idempotence
//
// Each conversation becomes the session importer.Transcript.SessionID
// names, so importing a source again finds the session it made. A new
// session is created with its whole history at once
// (sessionstore.CreateHistory: one sync for all its revisions); an
// existing one is continued with the steps it lacks (Transcript.Apply),
// under its lease, which the import takes without waiting (a session held
// by someone else is reported and left alone). A source whose
// conversation is no longer the start of the stored one (rewritten) is
// reported as diverged and nothing is written.
//
// A source the store holds unchanged is not read at all: the summary of
// every imported session carries its origin (session.Origin: the
// source's path, size and SHA-256 as last imported), and a source whose
// files all have the size and SHA-256 an origin records for them is
// skipped after hashing them, which costs a small part of reading and
// converting them. A session resumed in another Claude Code file, and
// folded into it (claudecode.Fold), has no session of its own: the
// continuing session's claudecode.ResumesLabel names it, and it is read
// again (never written) each time, to check that the continuing session
// still holds it.
//
// # Reports
//
// Nothing in a source is fatal: what the converter could not use (a torn
// last line, unknown line types, invalid lines) is counted in the
// source's report by reason (importer.Report), and a source that cannot
// be read or written is reported as failed while the others are
// imported. Run returns an error only when it cannot start (a path that
// does not exist, a store it cannot list).
package ingest
