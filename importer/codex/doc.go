// Package codex converts Codex CLI rollouts (the JSONL files in
// ~/.codex/sessions/YYYY/MM/DD) into importer transcripts, and writes
// sessions back out in that format.
//
// Parse reads one rollout; Discover and Load read the sessions directory
// from an fs.FS, and LoadAll reads every rollout and attaches sub-agents'
// threads to their parents. Write writes a session as a rollout Parse
// reads back to the same conversation.
//
// # What is kept
//
//   - response_item lines are the conversation. A user message is a user
//     message, injected when no user_message event typed it and it starts
//     like the context Codex injects (AGENTS.md, environment context);
//     developer messages are system messages. The items of one model
//     response (reasoning, assistant messages, function, custom, local
//     shell and web search calls) are one assistant message, which its
//     token_count event closes; its phase is the message's provider phase.
//     Reasoning keeps its summary (or content) text and encrypted content;
//     a function call's JSON arguments are its input, a custom tool's free
//     text a JSON string; a web search is a provider-run call. Each output
//     is a tool message.
//   - event_msg lines add what the history lacks: token counts (the last
//     response's, as per-message usage; a repeated total is a duplicate),
//     the structured result of a tool run (exec_command_end,
//     patch_apply_end, mcp_tool_call_end, without their copies of the
//     output text; a non-zero exit code or failed patch makes the result
//     an error), errors (an error message), the thread's name (its title)
//     and sub-agent spawns.
//   - compacted lines are compaction messages (the summary text, or the
//     encrypted compaction item), followed by the replacement history's
//     kept messages.
//   - session_meta gives the thread ID, version, provider, project and
//     branch, and the labels git.remote, git.commit and codex.forked-from;
//     a sub-agent's meta names its parent thread and role; turn_context
//     gives the model, the effort and the working directory.
//   - the oldest rollouts (bare items after a bare meta line) are read too.
//
// # What is dropped
//
// Events that mirror the history (user_message, agent_message,
// agent_reasoning, web_search_end) are skipped as duplicates, as are lines
// written twice; task lifecycle and begin events as not conversation;
// unknown line, item and event types as unknown. The base instructions,
// sandbox and approval policies, rate limits and reasoning token counts
// are not kept, nor a function's namespace (counted in Dropped).
package codex
