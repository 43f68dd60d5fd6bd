// Package transcript writes a session's conversation for people to read:
// WriteMarkdown and WriteText show every message with its role, time,
// model and usage, text in full, and reasoning, tool calls, tool results,
// images and files folded to a line each with their sizes.
//
//	err := transcript.WriteMarkdown(os.Stdout, s, transcript.Options{})
package transcript
