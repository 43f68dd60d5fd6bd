// Package transcript writes a session's conversation for people to read:
// WriteMarkdown and WriteText show every message with its role, time,
// model and usage, text in full, and reasoning, tool calls, tool results,
// images and files folded to a line each with their sizes. What a
// session holds never makes structure of its own: values on one line
// (title, model, tool names, IDs) have their line breaks escaped, and in
// Markdown their markup; a message's text is a fenced code block in
// Markdown and indented beneath its header in text.
//
//	err := transcript.WriteMarkdown(os.Stdout, s, transcript.Options{})
package transcript
