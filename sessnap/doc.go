// Package sessnap provides a stable, JSON-friendly serialization
// ("snapshot") of a session.Session that the store adapters (memstore,
// jsonlstore) share.
//
// Of captures a Session as a Snapshot; Marshal encodes it deterministically
// (the same session always gives the same bytes); Unmarshal decodes,
// ignoring unknown keys from newer writers; Snapshot.Restore rebuilds an
// equivalent Session, validating everything and failing with an error that
// names the problem. RestoreState is the single place that drives a fresh
// idle Session to a target lifecycle state.
//
// The session aggregate keeps two pieces of state unexported:
//   - the pending ask, readable via Session.PendingAsk (only while
//     awaiting) and restorable via Session.PauseForApproval (only from
//     running). The snapshot round-trips it for the awaiting case.
//   - the recorded terminal stop reason, captured faithfully via
//     Session.RecordedStopReason (no limit derivation) and restored via the
//     matching terminal transition Complete/Stop/Cancel/Fail, so terminal
//     round-trips are exact.
//
// # Wire shape
//
// The top level is Snapshot (every field documents its key and its
// default when omitted). Nested shapes (keys marked ² arrive with schema
// version 2; every one is optional and omitted when empty):
//
//	message      {"id"?²: str, "role": "user"|"assistant"|"system"|"tool", "parts": [part…],
//	              "provider_phase"?: str, "created_at"?: time, "response_id"?²: str,
//	              "model"?²: str, "usage"?²: usage, "injected"?²: true, "error"?²: str,
//	              "compaction"?²: {"trigger"?: "auto"|"manual", "pre_tokens"?: int}}
//	part         {"type": "text"|"reasoning"²|"tool_call"|"tool_result"|"image"|"blob",
//	              "text"?, "tool_call_id"?, "name"?, "input"?: raw JSON,
//	              "output"?: str, "is_error"?: bool, "media_type"?, "data"?: base64,
//	              "url"?², "signature"?², "encrypted"?², "provider_executed"?²: true,
//	              "content"?²: [part…], "result"?²: raw JSON}
//	limits       {"max_turns"?, "max_tool_calls"?, "max_run_tokens"?, "max_duration_ms"?}
//	             (absent or 0 means unlimited)
//	counters     {"turns", "tool_calls", "approvals"}
//	usage        {"input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"}
//	pending      {"id", "tool_call_id", "tool", "input": raw JSON, "reason", "asked_at"}
//	owner        {"subject", "issuer"?, "display_name"?}
//	authority    {"capabilities": [str…]}  non-empty, sorted, no duplicates,
//	             each from session.Capabilities
//	environment_ref {"provider", "id", "revision"}  all required, non-empty
//	placement    {"host"?, "region"?, "labels"?: {str: str}}  display only
//	relationship {"parent_id"?, "root_id"?, "role"?, "tool_call_id"?²}
//	labels²      {str: str}  at most session.MaxLabels, keys and values as
//	             session.ValidateLabel says
//	workspace²   {"project"?, "dir"?, "branch"?}
//	origin²      {"tool", "session_id", "agent_id"?, "path"?, "version"?,
//	              "lines"?, "bytes"?, "sha256"?}
//
// Which part fields mean something for which part type is the
// documentation of session.Part; a schema-2 field on a part type that does
// not use it is refused on restore. A tool_result's content holds text,
// image and blob parts only, one level deep. Message ids are unique within
// a conversation. What each schema-2 field means, and which of them may
// change over a session's life, is documented on session.Message,
// session.Part, session.Workspace, session.Origin and Session.SetLabel.
//
// # Sub-agents
//
// A sub-agent's conversation is a session of its own, of kind subagent,
// whose relationship names the parent session, the root of the tree, the
// role it was given and the parent's tool call that spawned it
// (tool_call_id). The parent's conversation keeps only that tool call and
// its result; the store lists a parent's children with a ParentID query.
// Keeping each sub-agent apart gives it its own lifecycle, usage, model and
// revisions, as the agents that run them do.
//
// # Compatibility
//
// Omitted-value defaults are a public compatibility surface (see Snapshot).
// Every added field raises SchemaVersion; Format changes only on an
// incompatible change. A snapshot without any schema-2 key encodes exactly
// as schema 1 did. A reader ignores keys it does not know, but a new value
// of an enumeration is not a key: a schema-1 program refuses a part of
// type reasoning as invalid rather than drop it. testdata/sessnap holds a
// fixture for every state and every legacy shape; committed fixtures are
// never edited.
package sessnap
