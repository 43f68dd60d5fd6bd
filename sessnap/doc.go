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
// default when omitted). Nested shapes:
//
//	message      {"role": "user"|"assistant"|"system"|"tool", "parts": [part…],
//	              "provider_phase"?: str, "created_at"?: time}
//	part         {"type": "text"|"tool_call"|"tool_result"|"image"|"blob",
//	              "text"?, "tool_call_id"?, "name"?, "input"?: raw JSON,
//	              "output"?: str, "is_error"?: bool, "media_type"?, "data"?: base64}
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
//	relationship {"parent_id"?, "root_id"?, "role"?}
//
// Enumerations are lower-case strings (see package session). Times are UTC
// RFC 3339 with nanoseconds. Integers stay within ±(2^53−1) and strings are
// valid UTF-8; Marshal refuses anything else (ErrUnencodable) rather than
// write a value a reader would get back changed.
//
// # Compatibility
//
// Omitted-value defaults are a public compatibility surface (see Snapshot).
// Every added field raises SchemaVersion; Format changes only on an
// incompatible change. testdata/sessnap holds a fixture for every state and
// every legacy shape; committed fixtures are never edited.
package sessnap
