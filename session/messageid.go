package session

import (
	"crypto/rand"
	"encoding/base32"
	"strconv"
	"strings"
)

// This file is what a message's ID is when the message has none recorded,
// and how a point in a conversation is named.
//
// A writer that assigns IDs (sessionstore.Handle) gives each message
// without one a fresh random ID (NewMessageID): unique in the session
// across its whole history, so that an ID names one message even after a
// rewind puts another in its place. A message stored without an ID (by an
// older program, or by a writer that gave none) reads with the ID its
// position gives it (PositionID): the same on every read, and never one
// NewMessageID makes.
//
// A position's ID names one message only while no other message takes
// that position, so the aggregate gives a message appended without an ID
// one of its own wherever another may have been before
// (Session.AppendMessage): after a Truncate, and in a Session restored
// from a stored revision (Session.MarkRestored), which cannot know how
// many messages the revisions before held. A session built and grown in
// one Session stores its messages as they were given.

// messageIDPrefix starts every ID NewMessageID makes.
const messageIDPrefix = "msg_"

var idEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// NewMessageID returns a fresh random message ID: "msg_" and 20 letters
// and digits (100 random bits).
func NewMessageID() string {
	var b [13]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return messageIDPrefix + idEncoding.EncodeToString(b[:])[:20]
}

// PositionID is the ID of the message at index i (from 0) of a
// conversation when it has none recorded: "m" and its position from 1.
func PositionID(i int) string { return "m" + strconv.Itoa(i+1) }

// MessageIDAt returns the ID of conv[i]: its own, or PositionID(i).
func MessageIDAt(conv []Message, i int) string {
	if id := conv[i].ID; id != "" {
		return id
	}
	return PositionID(i)
}

// MessagePoint resolves ref, a point in conv, to a message count: a
// number K (0 to len(conv)) is the first K messages; anything else is a
// message ID (its own or its position ID, MessageIDAt), and names the
// messages up to and including that one. ok is false when ref names no
// point of conv.
func MessagePoint(conv []Message, ref string) (n int, ok bool) {
	ref = strings.TrimSpace(ref)
	if k, err := strconv.Atoi(ref); err == nil && ref != "" && ref[0] != '+' && ref[0] != '-' {
		return k, k >= 0 && k <= len(conv)
	}
	if ref == "" {
		return 0, false
	}
	for i := range conv {
		if conv[i].ID == ref {
			return i + 1, true
		}
	}
	for i := range conv {
		if conv[i].ID == "" && PositionID(i) == ref {
			return i + 1, true
		}
	}
	return 0, false
}
