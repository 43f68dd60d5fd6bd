package jsonlstore_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/jsonlstore"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// BenchmarkHandleAdd compares adding one message to a session of n
// messages through the handle (sessionstore.Handle.Add) with the same
// append through sessnap.Of and Writer.Append (the baseline), and a
// rewind of one message (Handle.Rewind) beside them: ratios in one run.
// The messages carry IDs in both, so that the work differs only by the
// handle's own.
func BenchmarkHandleAdd(b *testing.B) {
	msg := func(i int) session.Message {
		m := session.TextMessage(session.RoleTool, fmt.Sprintf("tool output %d: %0200d", i, i), sessiontest.Epoch)
		m.ID = fmt.Sprintf("b-%d", i)
		return m
	}
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("baseline/messages=%d", n), func(b *testing.B) {
			st, err := jsonlstore.Open(b.TempDir(), jsonlstore.Options{})
			require.NoError(b, err)
			defer st.Close()
			s := sessiontest.New("bench")
			for i := range n {
				require.NoError(b, s.AppendMessage(msg(i)))
			}
			w, err := st.Create(b.Context(), sessiontest.Snap(b, s), sessionstore.AcquireOptions{})
			require.NoError(b, err)
			defer w.Release(b.Context())
			rev := w.Revision()
			b.ResetTimer()
			for i := range b.N {
				require.NoError(b, s.AppendMessage(msg(n+i)))
				snap, err := sessnap.Of(s)
				require.NoError(b, err)
				rev, err = w.Append(b.Context(), rev, snap)
				require.NoError(b, err)
			}
		})
		b.Run(fmt.Sprintf("handle/messages=%d", n), func(b *testing.B) {
			st, err := jsonlstore.Open(b.TempDir(), jsonlstore.Options{})
			require.NoError(b, err)
			defer st.Close()
			s := sessiontest.New("bench")
			for i := range n {
				require.NoError(b, s.AppendMessage(msg(i)))
			}
			w, err := st.Create(b.Context(), sessiontest.Snap(b, s), sessionstore.AcquireOptions{})
			require.NoError(b, err)
			h, err := sessionstore.Hold(b.Context(), w)
			require.NoError(b, err)
			defer h.Close(b.Context())
			b.ResetTimer()
			for i := range b.N {
				_, err := h.Add(b.Context(), msg(n+i))
				require.NoError(b, err)
			}
		})
		b.Run(fmt.Sprintf("rewind/messages=%d", n), func(b *testing.B) {
			st, err := jsonlstore.Open(b.TempDir(), jsonlstore.Options{})
			require.NoError(b, err)
			defer st.Close()
			s := sessiontest.New("bench")
			for i := range n {
				require.NoError(b, s.AppendMessage(msg(i)))
			}
			w, err := st.Create(b.Context(), sessiontest.Snap(b, s), sessionstore.AcquireOptions{})
			require.NoError(b, err)
			h, err := sessionstore.Hold(b.Context(), w)
			require.NoError(b, err)
			defer h.Close(b.Context())
			b.ResetTimer()
			for i := range b.N {
				_, err := h.Rewind(b.Context(), n-1-i%(n/2))
				require.NoError(b, err)
			}
		})
	}
}
