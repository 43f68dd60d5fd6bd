// Package claudecode converts Claude Code transcripts (the JSONL files in
// ~/.claude/projects) into importer transcripts, and writes sessions back
// out in that format.
//
// Parse reads one file; Load reads a session with its sub-agents' files
// from an fs.FS holding the projects directory, and LoadProject all the
// sessions of one project, folding a resumed session into the one that
// continues it. Write writes a session as a transcript Parse reads back to
// the same conversation.
//
// # What is kept
//
//   - user lines: a prompt is a user message (an isMeta one is injected);
//     a line of tool results is a tool message, each tool_result a part
//     with its text or its nested text, image and document blocks, and the
//     line's toolUseResult as the part's structured result; images and
//     documents keep their bytes (base64 sources) or their URL.
//   - assistant lines: the lines of one API response (one message.id) are
//     one message, until a prompt, with the response's ID, model and last
//     usage; text, thinking (text and signature), redacted_thinking
//     (encrypted), tool_use, server_tool_use and mcp_tool_use (provider
//     run) and the provider's *_tool_result blocks become parts; an
//     isApiErrorMessage response is an error message.
//   - system lines with text are system messages (api_error ones error
//     messages); a compact_boundary marks the summary that follows it as a
//     compaction message, with its trigger and token count.
//   - each line's uuid is its message's ID (duplicates of a uuid, and
//     lines seen before, are skipped); cwd and gitBranch are the
//     workspace (the first cwd the project); sessionId, version and
//     permissionMode the session's; summary, custom-title and ai-title
//     lines its title.
//   - sub-agents: 1.0's inline sidechains become children linked to the
//     Task call whose prompt started them; a 2.x sub-agent file (every line
//     a sidechain with an agentId) is a transcript whose parent finds its
//     Task call through the call's toolUseResult.agentId or the
//     agent_progress lines; agent-acompact-* files are the compaction
//     summarizer (role "compaction").
//
// # What is dropped
//
// Lines of progress, attachments, file history snapshots, queue operations,
// permission-mode and last-prompt records, stop-hook and turn-duration
// summaries are skipped as not conversation (and counted by type); unknown
// line types are skipped as unknown; the parentUuid tree is not kept
// (the conversation is the file's order, which is the order Claude Code
// wrote it in), nor requestId, slug, stop reasons, userType, entrypoint,
// todos and thinkingMetadata. Unknown fields and blocks are counted in the
// report's Dropped.
package claudecode
