// Package importtest holds what the converters' tests share: where the
// real transcripts are, building a transcript's revisions with every one
// checked through the snapshot codec, a corpus of damaged copies of a
// source, and comparing conversations.
package importtest
