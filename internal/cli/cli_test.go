package cli

import (
	"bytes"
	"encoding/json"
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestEscape(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"plain", "Fix the tests", "Fix the tests"},
		{"unicode", "Résumé 日本語 👍", "Résumé 日本語 👍"},
		{"CSI", "a\x1b[2Jb", `a\x1b[2Jb`},
		{"OSC title", "\x1b]0;pwned\x07x", `\x1b]0;pwned\x07x`},
		{"newline and tab", "a\nb\tc\r", `a\x0ab\x09c\x0d`},
		{"DEL", "a\x7fb", `a\x7fb`},
		{"C1 CSI", "a\u009b2Jb", `a\u009b2Jb`},
		{"bidi override", "abc\u202edcba", `abc\u202edcba`},
		{"invalid UTF-8", "a\xffb", `a\xffb`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, Escape(tc.in))
		})
	}
	require.Equal(t, `two words \x1b`, Cell("  two\n words \x1b"))
}

func TestEscapeJSON(t *testing.T) {
	b, err := json.Marshal(map[string]string{"title": "a\x1b\x7f\u009b\u202eb é"})
	require.NoError(t, err)
	got := EscapeJSON(b)
	require.NotContains(t, string(got), "\x7f")
	require.NotContains(t, string(got), "\u009b")
	require.Contains(t, string(got), `\u001b\u007f\u009b\u202eb é`)
	var back map[string]string
	require.NoError(t, json.Unmarshal(got, &back))
	require.Equal(t, "a\x1b\x7f\u009b\u202eb é", back["title"], "the same document")
	plain := []byte(`{"a":"b"}`)
	require.Equal(t, plain, EscapeJSON(plain))
}

func TestTruncate(t *testing.T) {
	for _, tc := range []struct {
		in    string
		width int
		want  string
	}{
		{"short", 10, "short"},
		{"exactly ten", 11, "exactly ten"},
		{"a longer title", 8, "a longe…"},
		{"日本語のタイトル", 7, "日本語…"}, // two cells a character
		{"e\u0301e\u0301e\u0301e\u0301", 3, "e\u0301e\u0301…"},
		{"👍👍👍", 4, "👍…"},
		{"anything", 0, ""},
	} {
		got := Truncate(tc.in, tc.width)
		require.Equal(t, tc.want, got, "%q in %d", tc.in, tc.width)
		require.LessOrEqual(t, Width(got), max(tc.width, 0))
	}
}

func TestLocation(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"/home/me/.local/share/sessionstore", "/home/me/.local/share/sessionstore"},
		{"postgres://agent:s3cret@db:5432/sessions", "postgres://agent:xxxxx@db:5432/sessions"},
		{"postgres://agent@db/sessions?password=hunter2&sslmode=disable", "postgres://agent@db/sessions?password=xxxxx&sslmode=disable"},
		{"postgresql://a:b@h/d?PASSWORD=c", "postgresql://a:xxxxx@h/d?PASSWORD=xxxxx"},
		{"postgres://db/sessions", "postgres://db/sessions"},
	} {
		got := Location(tc.in)
		require.Equal(t, tc.want, got)
		require.NotContains(t, got, "s3cret")
		require.NotContains(t, got, "hunter2")
	}
	require.NotContains(t, Location("postgres://u:p@[bad"), "p@")
}

func TestPluralAndBytes(t *testing.T) {
	require.Equal(t, "0 sessions", Plural(0, "session"))
	require.Equal(t, "1 session", Plural(1, "session"))
	require.Equal(t, "2 sound records", Plural(2, "sound record"))
	require.Equal(t, "512 B", HumanBytes(512))
	require.Equal(t, "1.5 KiB", HumanBytes(1536))
	require.Equal(t, "12 MiB", HumanBytes(12<<20))
}

// TestTableFits: a table wider than its limit shrinks its shrinkable
// columns (the widest first), then leaves out droppable ones, highest
// Drop first; with no limit it is as wide as its cells.
func TestTableFits(t *testing.T) {
	tab := Table{Columns: []Column{
		{Header: "ID"},
		{Header: "TITLE", Want: 12, Min: 5},
		{Header: "KIND", Drop: 2},
		{Header: "REV", Right: true, Drop: 1},
	}, Rows: [][]string{
		{"01KB3C0ZJ6AAAA", "A rather long title for a session", "scheduled", "123"},
		{"s2", "short", "primary", "7"},
	}}
	for _, tc := range []struct {
		name      string
		width     int
		wantCols  []string
		wantTitle string
	}{
		{"no limit", 0, []string{"ID", "TITLE", "KIND", "REV"}, "A rather long title for a session"},
		{"shrinks the title", 48, []string{"ID", "TITLE", "KIND", "REV"}, "A rather long t…"},
		{"drops KIND before the title goes below Want", 35, []string{"ID", "TITLE", "REV"}, "A rather long…"},
		{"drops REV too", 30, []string{"ID", "TITLE"}, "A rather long…"},
		{"then every column again, the title down to Min", 27, []string{"ID", "TITLE", "REV"}, "A rat…"},
		{"and drops again", 22, []string{"ID", "TITLE"}, "A rat…"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			require.NoError(t, tab.Write(&b, tc.width))
			lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
			require.Len(t, lines, 3)
			require.Equal(t, tc.wantCols, strings.Fields(lines[0]))
			require.Contains(t, lines[1], tc.wantTitle)
			for _, l := range lines {
				if tc.width > 0 {
					require.LessOrEqual(t, Width(l), tc.width, "%q", l)
				}
				require.Equal(t, strings.TrimRight(l, " "), l, "no trailing blanks")
			}
		})
	}
}

func TestPaletteAndUseColor(t *testing.T) {
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	var buf bytes.Buffer
	require.False(t, UseColor(&buf, env()), "not a terminal")
	require.False(t, UseColor(&buf, env("NO_COLOR", "1")))
	on, off := PaletteFor(true), PaletteFor(false)
	require.Equal(t, "stale", off.Wait("stale"))
	require.Equal(t, "stale", Palette{}.Wait("stale"))
	require.Contains(t, on.Wait("stale"), "\x1b[")
	require.Contains(t, on.Bad("failed"), "failed")
}

func TestParseAndDuration(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	n := fs.Int("n", 0, "")
	var d Duration
	fs.Var(&d, "d", "")
	pos, err := Parse(fs, []string{"a", "--n", "3", "b", "--d", "7d", "--", "--n"})
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b", "--n"}, pos)
	require.Equal(t, 3, *n)
	require.Equal(t, 7*24*time.Hour, time.Duration(d))
	require.Error(t, d.Set("soon"))
	require.Error(t, d.Set("xd"))
}
