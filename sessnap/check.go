package sessnap

import "fmt"

// Checker validates the snapshots a writer stores one after another as
// Restore would, checking each message once: every field but the
// conversation in full each time (it is small), and of the conversation
// only the messages after those it checked before. A writer that knows the
// first messages of the next snapshot are the ones it stored (the
// conversation only grows) so validates at a cost that follows the change.
//
// The zero value has checked nothing.
type Checker struct {
	n   int                 // messages checked and stored
	ids map[string]struct{} // their IDs
}

// Known returns how many messages the checker has checked and stored.
func (c *Checker) Known() int { return c.n }

// Check validates snap as Restore does, given that its first Known()
// messages are the ones checked before (the caller has made sure of it).
// It changes nothing: Advance records snap once it is stored.
func (c *Checker) Check(snap Snapshot) error {
	if len(snap.Messages) < c.n {
		return fmt.Errorf("%w: the snapshot has %d messages, fewer than the %d checked before", ErrInvalid, len(snap.Messages), c.n)
	}
	head := snap
	head.Messages = nil
	if _, err := head.Restore(); err != nil {
		return err
	}
	seen := map[string]struct{}{}
	for i, m := range snap.Messages[c.n:] {
		if err := m.Validate(); err != nil {
			return fmt.Errorf("%w: session %s: message %d: %w", ErrInvalid, snap.ID, c.n+i, err)
		}
		if m.ID == "" {
			continue
		}
		_, old := c.ids[m.ID]
		_, dup := seen[m.ID]
		if old || dup {
			return fmt.Errorf("%w: session %s: message %d: message id %q is already in the conversation", ErrInvalid, snap.ID, c.n+i, m.ID)
		}
		seen[m.ID] = struct{}{}
	}
	return nil
}

// Advance records that snap, checked by Check, was stored.
func (c *Checker) Advance(snap Snapshot) {
	for _, m := range snap.Messages[c.n:] {
		if m.ID != "" {
			if c.ids == nil {
				c.ids = map[string]struct{}{}
			}
			c.ids[m.ID] = struct{}{}
		}
	}
	c.n = len(snap.Messages)
}

// Truncate records that the next snapshot keeps the first n of the
// messages checked (msgs, the stored revision's): the IDs of the others
// are free again. Its cost is the messages dropped.
func (c *Checker) Truncate(msgs Messages, n int) {
	if n >= c.n {
		return
	}
	for _, m := range msgs[n:min(c.n, len(msgs))] {
		delete(c.ids, m.ID)
	}
	c.n = n
}

// Reset forgets what the checker checked: the next Check checks every
// message.
func (c *Checker) Reset() { *c = Checker{} }

// MarshalHead encodes snap as Marshal does, with an empty conversation:
// the members a writer compares with the previous revision's, beside the
// messages it encodes one by one (AppendMessage).
func MarshalHead(snap Snapshot) ([]byte, error) {
	snap.Messages = Messages{}
	return Marshal(snap)
}
