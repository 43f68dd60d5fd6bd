package session

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A message appended without an ID keeps none while the conversation only
// grows, and gets one of its own where a dropped message was (Truncate) or
// in a session restored from a stored revision (MarkRestored).
func TestAppendGivesIDsWherePositionsWereHeld(t *testing.T) {
	s := newTestSession(t)
	text := func(i int) Message { return TextMessage(RoleUser, strings.Repeat("x", i+1), epoch) }
	for i := range 3 {
		require.NoError(t, s.AppendMessage(text(i)))
	}
	for i, m := range s.Conversation() {
		require.Empty(t, m.ID, "message %d of a session that only grew", i)
		require.Equal(t, PositionID(i), MessageIDAt(s.Conversation(), i))
	}

	require.NoError(t, s.Truncate(1, false))
	require.NoError(t, s.AppendMessage(text(3)))
	require.NoError(t, s.Truncate(2, false), "a rewind that keeps the new message")
	for i := 4; i < 6; i++ {
		require.NoError(t, s.AppendMessage(text(i)))
	}
	conv := s.Conversation()
	require.Empty(t, conv[0].ID, "a message kept is as it was")
	for i := 1; i < 3; i++ {
		require.True(t, strings.HasPrefix(conv[i].ID, messageIDPrefix), "message %d at a position held before: %q", i, conv[i].ID)
	}
	require.NotEqual(t, conv[1].ID, conv[2].ID)
	require.Empty(t, conv[3].ID, "past every position held, a message keeps none")
	m := text(9)
	m.ID = "mine"
	require.NoError(t, s.AppendMessage(m))
	require.Equal(t, "mine", s.Conversation()[4].ID, "a caller's ID is kept")

	r := newTestSession(t)
	require.NoError(t, r.AppendMessage(text(0)))
	r.MarkRestored()
	require.Empty(t, r.Conversation()[0].ID, "what was restored is as it was stored")
	require.NoError(t, r.AppendMessage(text(1)))
	require.True(t, strings.HasPrefix(r.Conversation()[1].ID, messageIDPrefix), "a restored session cannot know which positions were held")
}
