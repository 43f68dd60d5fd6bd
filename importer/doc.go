// Package importer turns other agents' transcripts into sessions: the
// shared result of a converter (Transcript, Step, Link, Report), the line
// reader every converter reads its JSONL source with, and the replay that
// turns a transcript into session revisions through the public session
// API. The converters themselves are its subpackages, one per source
// format (claudecode, codex); package transcript writes a session back out
// as Markdown or plain text, and each converter package writes its own
// format.
//
// Nothing here does I/O beyond the io.Reader a converter is given (and,
// in the converters' fs.FS helpers, reading a tool's directory layout);
// sources are never modified. A Tree is the fs.FS to read a directory of
// sources through: opened without blocking, regular files only, nothing
// outside it, every read under a context.
//
// # Usage
//
//	tr, err := claudecode.Parse(f, claudecode.Options{}) // only read errors fail
//	// tr.Report says what was read, used and skipped, and why.
//	id := tr.SessionID() // the same source gives the same ID
//	for s, err := range tr.Revisions(tr.Config(id, env)) {
//		snap, _ := sessnap.Of(s) // one revision per step of the source
//		… Create the session with the first, Append the others …
//	}
//
// Importing again continues the stored session: restore its latest
// revision and Apply the new transcript to it. Apply appends only the steps
// the session lacks (none, for an unchanged source) and fails with
// ErrDiverged when the stored conversation is not the start of the
// source's (the source was rewritten, or the session went on in this
// store); it never rewrites history.
//
// # What a transcript is
//
// A transcript's conversation is the source's, message for message, with
// what a source writes twice written once: a message copied again on
// resume, an API response written a content block a line, an event that
// mirrors a history item. Each message is a step: the revisions of an
// import grow the conversation the way the source grew, at least one per
// turn, and each is the conversation so far. A message's content is what
// the whole source says it is (the blocks of a response that are written
// after its first tool results still belong to it).
//
// Sub-agents are sessions of their own (kind subagent) whose relationship
// names the parent, the role and the parent's tool call that spawned them
// (see sessnap's documentation): a converter returns them as Children, or
// as transcripts with a Link that Transcript.Adopt and Nest attach to
// their parent.
//
// # Origin, not labels
//
// An imported session records its source in its origin (session.Origin):
// the tool, the source's own session ID (and a sub-agent's agent ID) for
// good, and the path, version, size and SHA-256 of the latest read. Labels
// stay the user's: an importer adds only labels that describe the work
// (a git remote), never its own bookkeeping, so relabelling a session can
// never break its re-import.
//
// # Reports
//
// A converter never fails on a line. Every line is either used or skipped
// for one Reason (Report.Balanced holds), and what a used line carried
// that the session does not keep (unknown fields and blocks) is counted in
// Report.Dropped.
package importer
