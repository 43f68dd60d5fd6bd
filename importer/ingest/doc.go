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
// Codex it is one rollout; a path is a rollout or a directory searched
// for *.jsonl files, at most Options.MaxDepth directories deep. Sources
// are only ever opened for reading.
//
// Each path is read as an importer.Tree: a path is followed wherever it
// leads (the caller named it), but nothing under it leads out of it. Only
// regular files are read, and never a named pipe, a device or a socket
// (a pipe is opened without blocking, and refused); a walk follows no
// symbolic link, goes on past a directory it cannot read, and stops with
// ErrTooManyEntries after Options.MaxEntries directory entries; each path
// it passes over is in Report.Ignored, with why. Every read checks the
// context: a cancelled Run stops within one read of each file it was
// reading, and returns the context's error, the sessions written before
// kept.
//
// # Idempotence
//
// Each conversation becomes the session importer.Transcript.SessionID
// names, so importing a source again finds the session it made. A new
// session is created with its whole history at once
// (sessionstore.CreateHistory: one sync for all its revisions) and
// released; on a store that can do both in one step
// (jsonlstore.Store.CreateHistoryReleased), it is published with its
// lease already released, so that releasing it writes nothing; an
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
// # What a session holds of its source
//
// The converters' documentation (claudecode, codex) says line by line
// what they keep and drop; at the level of a session:
//
//   - identity: the session ID is "<tool>-<source session ID>" (and
//     "-<agent ID>" for a sub-agent's conversation); the origin records the
//     tool, the source's IDs and version, and the path (absolute), lines,
//     bytes and SHA-256 of the files last read. Labels are the converter's
//     (a git remote; claudecode.ResumesLabel), never bookkeeping.
//   - conversation: the source's messages in its order, with their IDs,
//     times, models, per-message usage, reasoning, tool calls and results
//     (structured results too), images and files (kept out of line by the
//     store), errors and compaction summaries; what the source writes twice
//     is written once.
//   - revisions: one per step of the source (a message, or a change of
//     title or workspace), each the conversation so far; record times are
//     the store's, message times the source's.
//   - state: an imported session ends idle; its turns are the prompts a
//     person typed, its tool calls and usage the sums of its messages'; its
//     title, workspace (project, directory, branch), model, effort and
//     permission mode are the source's.
//   - sub-agents: child sessions (kind subagent) whose relationship names
//     the parent's session, the root, the role and, where the source says,
//     the parent's tool call that spawned them.
//   - dropped: whatever the converters drop (progress, UI state, telemetry,
//     unknown line types and fields), counted in the report.
//
// # Reading and writing
//
// Reading and writing overlap, and both use every core (as does hashing
// the sources, to find those unchanged, before). Converters (one
// per core) convert the sources a few ahead; one reader takes their
// transcripts in the sources' order and does what needs the sources
// before them (folding resumed Claude Code sessions, linking Codex
// sub-agents to their parents); several writers write the sessions, and
// the reports are taken in the sources' order. What is written does not
// depend on how many run at once: each session is one source's, built
// from it alone and the sources before it.
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
