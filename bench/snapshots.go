package main

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// The bench module sits under the library's module path, so Go lets it
// import the library's internal packages: snapshots are built with the
// same sessiontest builders the library's own benchmarks use.

// words is a vocabulary of random lower-case words: message texts made of
// them compress and diff like prose, not like a repeated byte.
type words struct {
	r     *rand.Rand
	vocab []string
}

func newWords(seed uint64) *words {
	r := rand.New(rand.NewPCG(seed, 7))
	v := make([]string, 2000)
	for i := range v {
		w := make([]byte, 2+r.IntN(9))
		for j := range w {
			w[j] = 'a' + byte(r.IntN(26))
		}
		v[i] = string(w)
	}
	return &words{r: r, vocab: v}
}

// text returns about n bytes of words.
func (w *words) text(n int) string {
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(w.vocab[w.r.IntN(len(w.vocab))])
		b.WriteByte(' ')
	}
	return b.String()
}

// snapshotOfSize returns a snapshot of session id — a running session
// with a short conversation (sessiontest.InState) and messages of words —
// whose encoding is about size bytes; variant seeds the words.
func snapshotOfSize(id string, size int, variant uint64) (sessnap.Snapshot, error) {
	s := sessiontest.InState(id, session.StateRunning)
	w := newWords(uint64(size)<<8 | variant)
	at := sessiontest.Epoch.Add(time.Minute)
	for i := 0; ; i++ {
		enc, err := sessnap.Encode(s)
		if err != nil {
			return sessnap.Snapshot{}, err
		}
		left := size - len(enc) - 120 // a message's envelope
		if left <= 0 {
			break
		}
		role := session.RoleUser
		if i%2 == 1 {
			role = session.RoleAssistant
		}
		if err := s.AppendMessage(session.TextMessage(role, w.text(min(left, 2<<10)), at)); err != nil {
			return sessnap.Snapshot{}, err
		}
	}
	return sessnap.Of(s)
}

// conversation is W2's growing session: every step adds one message of
// about msgBytes, alternating user and assistant, with the usage and tool
// call counters an agent's turn changes alongside.
type conversation struct {
	s        *session.Session
	w        *words
	msgBytes int
	step     int
}

func newConversation(id string, msgBytes int, seed uint64) *conversation {
	return &conversation{s: sessiontest.InState(id, session.StateRunning), w: newWords(seed), msgBytes: msgBytes}
}

// next advances the conversation by one step and returns its snapshot.
func (c *conversation) next() (sessnap.Snapshot, error) {
	c.step++
	at := sessiontest.Epoch.Add(time.Duration(c.step) * time.Second)
	role := session.RoleUser
	if c.step%2 == 0 {
		role = session.RoleAssistant
		if err := c.s.AddUsage(session.Usage{InputTokens: 300, OutputTokens: 120, CacheReadTokens: 250}); err != nil {
			return sessnap.Snapshot{}, fmt.Errorf("step %d: %w", c.step, err)
		}
		if err := c.s.RecordToolCall(); err != nil {
			return sessnap.Snapshot{}, fmt.Errorf("step %d: %w", c.step, err)
		}
	}
	if err := c.s.AppendMessage(session.TextMessage(role, c.w.text(c.msgBytes), at)); err != nil {
		return sessnap.Snapshot{}, fmt.Errorf("step %d: %w", c.step, err)
	}
	return sessnap.Of(c.s)
}
