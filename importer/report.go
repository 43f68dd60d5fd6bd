package importer

import "maps"

// Reason says why a converter did not use a line of its source.
type Reason string

// Reasons a line is skipped. Every line a converter reads is either used
// or skipped for exactly one of them, so Report.Lines is Report.Used plus
// the sum of Report.Skipped.
const (
	// SkipEmpty: a line holding nothing but white space.
	SkipEmpty Reason = "empty"
	// SkipTorn: the last line, without a newline, that is not complete
	// JSON: a write the tool had not finished (or a crash cut short).
	SkipTorn Reason = "torn_last_line"
	// SkipInvalidJSON: a line that is not a JSON object.
	SkipInvalidJSON Reason = "invalid_json"
	// SkipTooLong: a line longer than the converter's line limit; it is
	// read past, never held in memory.
	SkipTooLong Reason = "too_long"
	// SkipUnknownType: a JSON object of a type the converter does not
	// know (a newer tool's); Report.SkippedTypes names the types.
	SkipUnknownType Reason = "unknown_type"
	// SkipNotConversation: a line of a known type that carries nothing the
	// session keeps (progress ticks, UI state, telemetry); SkippedTypes
	// names the types.
	SkipNotConversation Reason = "not_conversation"
	// SkipDuplicate: a line that repeats what the import already holds (a
	// message copied again on resume, an event mirroring a history item).
	SkipDuplicate Reason = "duplicate"
	// SkipInvalid: a line of a known type whose content cannot be used (a
	// message without content, a tool call without an ID).
	SkipInvalid Reason = "invalid"
)

// Report is what a converter did with its source: how much it read, what
// it used, what it skipped and why, and what it dropped from lines it used.
// Nothing is left out silently: every line is counted as used or skipped.
type Report struct {
	// Lines and Bytes are the source's size as read (a last line without
	// a newline counts). SHA256 is the hex SHA-256 of those bytes.
	Lines  int64  `json:"lines"`
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
	// Used counts the lines that contributed to the transcript: messages,
	// parts merged into an earlier message (Merged of them), and metadata
	// such as titles, working directories and token counts.
	Used   int64 `json:"used"`
	Merged int64 `json:"merged,omitempty"`
	// Messages is the number of messages in the conversation.
	Messages int `json:"messages"`
	// Skipped counts the lines not used, by reason.
	Skipped map[Reason]int64 `json:"skipped,omitempty"`
	// SkippedTypes counts the skipped lines of unknown or unused types,
	// by type.
	SkippedTypes map[string]int64 `json:"skipped_types,omitempty"`
	// Dropped counts what used lines carried that the session does not
	// keep: unknown fields ("field assistant.foo") and content blocks
	// ("block tool_reference"), and values the converter had to change
	// ("invalid_json arguments").
	Dropped map[string]int64 `json:"dropped,omitempty"`
}

// Use counts a used line.
func (r *Report) Use() { r.Used++ }

// Merge counts a used line whose content joined an earlier message.
func (r *Report) Merge() { r.Used++; r.Merged++ }

// Skip counts a skipped line; typ names its type for SkipUnknownType and
// SkipNotConversation (ignored otherwise).
func (r *Report) Skip(reason Reason, typ string) {
	if r.Skipped == nil {
		r.Skipped = make(map[Reason]int64)
	}
	r.Skipped[reason]++
	if typ != "" && (reason == SkipUnknownType || reason == SkipNotConversation) {
		if r.SkippedTypes == nil {
			r.SkippedTypes = make(map[string]int64)
		}
		r.SkippedTypes[typ]++
	}
}

// Drop counts something a used line carried that the session does not
// keep.
func (r *Report) Drop(what string) {
	if r.Dropped == nil {
		r.Dropped = make(map[string]int64)
	}
	r.Dropped[what]++
}

// SkippedTotal is the number of skipped lines.
func (r *Report) SkippedTotal() int64 {
	var n int64
	for _, c := range r.Skipped {
		n += c
	}
	return n
}

// Balanced reports whether every line is counted exactly once: Lines is
// Used plus SkippedTotal.
func (r *Report) Balanced() bool { return r.Lines == r.Used+r.SkippedTotal() }

// Add adds o's counts to r (for a report over several files). SHA256 is
// kept only when r had none.
func (r *Report) Add(o Report) {
	r.Lines += o.Lines
	r.Bytes += o.Bytes
	r.Used += o.Used
	r.Merged += o.Merged
	r.Messages += o.Messages
	if r.SHA256 == "" {
		r.SHA256 = o.SHA256
	}
	for k, v := range o.Skipped {
		if r.Skipped == nil {
			r.Skipped = map[Reason]int64{}
		}
		r.Skipped[k] += v
	}
	r.SkippedTypes = addCounts(r.SkippedTypes, o.SkippedTypes)
	r.Dropped = addCounts(r.Dropped, o.Dropped)
}

func addCounts(a, b map[string]int64) map[string]int64 {
	if len(b) == 0 {
		return a
	}
	if a == nil {
		return maps.Clone(b)
	}
	for k, v := range b {
		a[k] += v
	}
	return a
}
