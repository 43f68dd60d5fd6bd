package sessnap_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/internal/testing/sessiontest"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// sameAsJSON checks that the fast decoder, when it accepts data, decodes
// what encoding/json decodes, and declines what encoding/json refuses.
func sameAsJSON(t testing.TB, data []byte) (accepted bool) {
	t.Helper()
	if !utf8.Valid(data) {
		return false // Unmarshal refuses it before either decoder
	}
	fast, ok := sessnap.UnmarshalFast(data)
	slow, err := sessnap.UnmarshalJSON(data)
	if !ok {
		return false
	}
	if err != nil {
		// checkFormat is the only refusal after a decode.
		_, ferr := sessnap.CheckFormat(fast)
		require.Error(t, ferr, "the fast decoder accepted what encoding/json refuses (%v): %s", err, data)
		return true
	}
	require.Equal(t, slow, fast, "decoded differently: %s", data)
	return true
}

// richSnapshot is a session of n random steps, every field of a message
// in use, with some parts' content kept out of line, and bulk messages
// more.
func richSnapshot(t testing.TB, seed uint64, n, bulk int) []byte {
	r := rand.New(rand.NewPCG(seed, seed^0x51))
	s := sessiontest.New(fmt.Sprintf("fast-%d", seed))
	at := sessiontest.Epoch
	for range n {
		at = at.Add(time.Duration(r.IntN(5000)) * time.Millisecond)
		step := sessiontest.Step
		if r.IntN(2) == 0 {
			step = sessiontest.StepSchema2
		}
		_, _ = step(s, r, at)
	}
	if r.IntN(2) == 0 {
		text := strings.Repeat("tab\there \"quoted\" \\ é ✓ \u2028 ", 1+r.IntN(40))
		_ = s.AppendMessage(session.TextMessage(session.RoleUser, text, at.Add(time.Second)))
	}
	snap, err := sessnap.Of(s)
	require.NoError(t, err)
	msgs := make(sessnap.Messages, len(snap.Messages))
	for i, m := range snap.Messages {
		m = m.Clone()
		for j := range m.Parts {
			if r.IntN(4) == 0 && m.Parts[j].Text != "" {
				m.Parts[j].Ref = &session.ContentRef{Field: session.ContentText, SHA256: strings.Repeat("ab", 32), Size: int64(len(m.Parts[j].Text))}
				m.Parts[j].Text = ""
			}
		}
		msgs[i] = m
	}
	for i := range bulk {
		at = at.Add(time.Second)
		text := strings.Repeat(fmt.Sprintf("line %d of %d, \"quoted\"\n", i, r.IntN(1000)), 1+r.IntN(30))
		var m session.Message
		switch i % 3 {
		case 0:
			m = session.TextMessage(session.RoleUser, text, at)
		case 1:
			m = session.Message{Role: session.RoleAssistant, CreatedAt: at, Parts: []session.Part{
				{Type: session.PartText, Text: text},
				{Type: session.PartToolCall, ToolCallID: fmt.Sprintf("c%d", i), Name: "run", Input: json.RawMessage(`{"cmd": "ls -l", "n": 3}`)}}}
		default:
			m = session.Message{Role: session.RoleTool, CreatedAt: at, Parts: []session.Part{
				{Type: session.PartToolResult, ToolCallID: fmt.Sprintf("c%d", i-1), Output: text}}}
		}
		msgs = append(msgs, m)
	}
	snap.Messages = msgs
	b, err := sessnap.Marshal(snap)
	require.NoError(t, err)
	return b
}

// writerSnapshot is richSnapshot of seed, of 1 to 97 steps, with 3,000
// bulk messages (above sessnap.ParallelMessageBytes) for every long-th
// seed.
func writerSnapshot(t testing.TB, seed, long uint64) []byte {
	bulk := 0
	if seed%long == 0 {
		bulk = 3000
	}
	return richSnapshot(t, seed, 1+int(seed%97), bulk)
}

// TestFastDecodesWhatWritersWrite: every snapshot the encoder writes takes
// the fast path, and decodes as encoding/json decodes it, long ones (on
// every core) included.
func TestFastDecodesWhatWritersWrite(t *testing.T) {
	for seed := range uint64(300) {
		b := writerSnapshot(t, seed, 50)
		require.True(t, sameAsJSON(t, b), "seed %d: the fast decoder declined a snapshot the encoder wrote", seed)
	}
}

// TestFastParallelMatchesSerial: a long conversation decoded on one core
// and on several gives the same messages.
func TestFastParallelMatchesSerial(t *testing.T) {
	for seed := range uint64(8) {
		b := richSnapshot(t, 1000+seed, 30, 3000)
		require.Greater(t, len(b), sessnap.ParallelMessageBytes)
		par, ok := sessnap.UnmarshalFast(b)
		require.True(t, ok)
		prev := runtime.GOMAXPROCS(1)
		ser, ok := sessnap.UnmarshalFast(b)
		runtime.GOMAXPROCS(prev)
		require.True(t, ok)
		require.Equal(t, ser, par)
	}
}

// TestFastEdges: inputs a writer does not produce decode as encoding/json
// decodes them, or go to it.
func TestFastEdges(t *testing.T) {
	base := `{"format":"sessnap/v1","id":"s1","state":"idle","mode":"default","limits":{},"counters":{},"created_at":"2026-01-01T00:00:00Z","messages":%s}`
	msgs := []string{
		`[]`, `null`, `[null]`, `[{}]`, ` [ { "role" : "user" , "parts" : [ ] } ] `,
		`[{"role":"user","parts":[{"type":"text","text":"a\u00e9\n\"b\""}]}]`,
		`[{"role":"user","parts":[{"type":"text","text":"\ud83d\ude00"}]}]`,
		`[{"role":"user","parts":[{"type":"text","text":"\ud800"}]}]`,
		`[{"Role":"user"}]`, `[{"ROLE":"user","role":"tool"}]`, `[{"role":"user","role":"tool"}]`,
		`[{"r\u006fle":"user"}]`, `[{"rolé":"user"}]`, `[{"ſ":1}]`, `[{"id":null}]`,
		`[{"unknown":{"a":[1,2.5e3,-0,true,false,null]},"role":"user"}]`,
		`[{"role":1}]`, `[{"role":"user","injected":"yes"}]`, `[{"injected":true}]`,
		`[{"created_at":"2026-01-01T00:00:00.5+02:00"}]`, `[{"created_at":"bad"}]`, `[{"created_at":5}]`,
		`[{"usage":{"input_tokens":5,"output_tokens":1e2}}]`, `[{"usage":{"input_tokens":5}}]`,
		`[{"compaction":{"trigger":"auto","pre_tokens":3}}]`,
		`[{"parts":[{"type":"blob","data":"AAEC"}]}]`, `[{"parts":[{"data":""}]}]`, `[{"parts":[{"data":"A\nAEC"}]}]`,
		`[{"parts":[{"data":"!!"}]}]`, `[{"parts":[{"input":{"q": [1, {"x":"y"}]},"result":"s"}]}]`,
		`[{"parts":[{"input":null}]}]`, `[{"parts":[{"blob":{"of":"text","sha256":"x","size":12}}]}]`,
		`[{"parts":[{"blob":{"size":1.5}}]}]`, `[{"parts":[{"blob":{"size":99999999999999999999}}]}]`,
		`[{"parts":[{"blob":{"Size":1}}]}]`, `[{"parts":[{"content":[{"content":[{"text":"deep"}]}]}]}]`,
		`[{"parts":[{"text":"a"},]}]`, `[{"parts":[{"text":"a"}]},]`, `[{"parts":[{"text":"a"}]}`,
		`[{"parts":[{"text":"a` + "\x01" + `"}]}]`, `[{"parts":[{"text":"a\x"}]}]`, `[1]`, `["x"]`, `[[]]`,
		`[{"parts":[{"is_error":true,"provider_executed":false}]}]`, `[{"parts":{}}]`,
	}
	for _, m := range msgs {
		sameAsJSON(t, fmt.Appendf(nil, base, m))
	}
	for _, doc := range []string{
		`{"messages":[],"messages":[]}`, `{"Messages":[{"role":"user"}]}`, `{"id":"x","messages":[]} x`,
		`{"id":"x","messages":[]}` + "\x00", `{"format":"sessnap/v9","id":"x"}`, `[]`, ``, `{"id":"x","state":3}`,
		`{"id":"x"}`, `{"m\u0065ssages":[]}`,
	} {
		sameAsJSON(t, []byte(doc))
	}
}

// FuzzFastUnmarshal holds the fast decoder to encoding/json on any input.
func FuzzFastUnmarshal(f *testing.F) {
	entries, err := os.ReadDir(fixtureDir)
	require.NoError(f, err)
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(fixtureDir, e.Name()))
		require.NoError(f, err)
		f.Add(b)
	}
	for seed := range uint64(5) {
		f.Add(richSnapshot(f, seed, 12, 3))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		sameAsJSON(t, data)
		var v any
		if json.Unmarshal(data, &v) != nil {
			_, ok := sessnap.UnmarshalFast(data)
			require.False(t, ok, "accepted invalid JSON %q", data)
		}
	})
}
