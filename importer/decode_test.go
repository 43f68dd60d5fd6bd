package importer_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sessionstore/sessionstore/importer"
	"github.com/sessionstore/sessionstore/internal/testing/importtest"
)

// The decoder is held to encoding/json: on every line of the real
// transcripts, of a generated corpus and of the fixtures, and on inputs
// made to break it, the scanner accepts what json.Valid accepts and
// compacts as json.Compact does, and Unmarshal sets what json.Unmarshal
// sets (and fails where it fails) for the kinds of value the converters
// decode into.

// probe has a field of every kind the decoder supports, named as the
// converters' lines name theirs (so the real lines set them), and some
// whose names only fold to the lines' keys.
type probe struct {
	Type        string          `json:"type"`
	UUID        string          `json:"uuid"`
	ParentUUID  *string         `json:"parentUuid"`
	SessionID   string          `json:"sessionId"`
	Timestamp   string          `json:"timestamp"`
	IsSidechain bool            `json:"isSidechain"`
	IsMeta      *bool           `json:"isMeta"`
	Version     string          `json:"version"`
	Cwd         string          `json:"CWD"` // folds to "cwd"
	GitBranch   string          `json:"gitBranch,omitempty"`
	Message     *probeMessage   `json:"message"`
	Payload     *probe          `json:"payload"` // Codex: a line within a line
	Content     json.RawMessage `json:"content"`
	Result      json.RawMessage `json:"toolUseResult"`
	Role        string          `json:"role"`
	Name        string          `json:"name"`
	Arguments   string          `json:"arguments"`
	Output      json.RawMessage `json:"output"`
	Summary     []struct {
		Text string `json:"text"`
	} `json:"summary"`
	Info   map[string]json.RawMessage `json:"info"`
	Tokens map[string]int64           `json:"total_token_usage"`
	Rate   float64                    `json:"rate"`
	Small  int8                       `json:"small"`
	Count  uint32                     `json:"count"`
	Labels map[string]string          `json:"labels"`
	Tags   []string                   `json:"tags"`
	Keys   importer.Keys              `json:"input"`
	hidden string                     //nolint:unused // unexported: never set
	Skip   string                     `json:"-"`
}

type probeMessage struct {
	ID      string         `json:"id"`
	Role    string         `json:"role"`
	Model   string         `json:"model"`
	Content []probeBlock   `json:"content"`
	Usage   map[string]any `json:"-"` // any is not a kind the decoder supports
	Tokens  *probeUsage    `json:"usage"`
	Stop    *string        `json:"stop_reason"`
}

type probeBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	IsError   *bool           `json:"is_error"`
	Content   json.RawMessage `json:"content"`
	Source    *struct {
		Type      string `json:"type"`
		MediaType string `json:"media_type"`
		Data      string `json:"data"`
	} `json:"source"`
}

type probeUsage struct {
	Input       int64 `json:"input_tokens"`
	Output      int64 `json:"output_tokens"`
	CacheRead   int   `json:"cache_read_input_tokens"`
	CacheCreate int32 `json:"cache_creation_input_tokens"`
}

// checkLine holds the decoder to encoding/json on one input.
func checkLine(t *testing.T, line []byte) {
	t.Helper()
	ok, compact := importer.Scan(line)
	require.Equal(t, json.Valid(line), ok, "scan accepts %q as json.Valid does", line)
	var lineErr error
	var p probe
	lineErr = importer.DecodeLine(line, &p)
	if !ok {
		require.ErrorIs(t, lineErr, importer.ErrSyntax, "%q", line)
		_ = importer.Unmarshal(line, &p) // invalid input: an error or part of it, never a panic
		return
	}
	var buf bytes.Buffer
	require.NoError(t, json.Compact(&buf, line))
	require.Equal(t, bytes.Equal(buf.Bytes(), line), compact, "compact, for %q", line)
	require.Equal(t, buf.String(), string(importer.CompactTo(nil, line)), "compacted %q", line)
	if buf.String() != "null" { // RawJSON drops a null
		require.Equal(t, buf.String(), string(importer.RawJSON(line)), "RawJSON of %q", line)
	}

	var want probe
	wantErr := json.Unmarshal(line, &want)
	require.Equal(t, wantErr == nil, lineErr == nil, "decoding %q: %v, encoding/json: %v", line, lineErr, wantErr)
	require.Equal(t, want, p, "decoding %q", line)

	var wantMap, gotMap map[string]json.RawMessage
	wantErr = json.Unmarshal(line, &wantMap)
	err := importer.Unmarshal(line, &gotMap)
	require.Equal(t, wantErr == nil, err == nil, "%q as a map: %v, encoding/json: %v", line, err, wantErr)
	require.Equal(t, wantMap, gotMap, "%q as a map", line)
	var keys importer.Keys
	err = importer.Unmarshal(line, &keys)
	require.Equal(t, wantErr == nil, err == nil, "%q as keys", line)
	if wantErr == nil {
		require.Len(t, keys, len(wantMap))
		for k, v := range wantMap {
			require.Contains(t, keys, k)
			require.Equal(t, string(v), string(importer.Member(line, k)), "member %q of %q", k, line)
		}
		require.Nil(t, importer.Member(line, "\x00absent"))
	}

	var wantList, gotList []probeBlock
	wantErr = json.Unmarshal(line, &wantList)
	err = importer.Unmarshal(line, &gotList)
	require.Equal(t, wantErr == nil, err == nil, "%q as a list: %v, encoding/json: %v", line, err, wantErr)
	require.Equal(t, wantList, gotList, "%q as a list", line)

	var wantStrings, gotStrings map[string]string
	wantErr = json.Unmarshal(line, &wantStrings)
	err = importer.Unmarshal(line, &gotStrings)
	require.Equal(t, wantErr == nil, err == nil, "%q as strings: %v, encoding/json: %v", line, err, wantErr)
	require.Equal(t, wantStrings, gotStrings, "%q as strings", line)
}

// tricky are inputs at the edges of JSON's grammar and of the decoder's
// ways.
var tricky = []string{
	``, ` `, `{}`, `[]`, `null`, `true`, `false`, `0`, `-0`, `01`, `-`, `1.`, `.5`, `1e`, `1e+`, `1E-7`, `-12.5e3`,
	`"`, `"\"`, `"\\"`, `"\\\""`, `"\u00e9"`, `"\u00E9"`, `"\u12"`, `"\x"`, "\"a\tb\"", "\"\x7f\"",
	`"\ud83d\ude00"`, `"\ud83d"`, `"\ude00"`, `"\ud83d\u0041"`, `"\ud83dx"`, `"\ud83d\ud83d\ude00"`,
	"\"\xff\"", "\"a\xc3\"", "\"\xed\xa0\x80\"", "\"é\"", "{\"\xff\":1}",
	`[1,]`, `[,1]`, `{"a":1,}`, `{"a"}`, `{"a":}`, `{,}`, `{"a":1 "b":2}`, `{"a":1}}`, `[1]]`, `[1`, `{"a":[}`,
	` {"type" : "user" , "uuid":"u"} `, "{\"type\":\"user\"}\n", "\t[ 1 , 2 ]\r\n",
	`{"type":"a","type":"b"}`, `{"TYPE":"folded"}`, `{"Type":"x","type":"y"}`, `{"cwd":"/a","CWD":"/b"}`,
	`{"ſ":1}`, `{"K":1,"k":2}`, `{"uuid":"ſ"}`,
	`{"type":1}`, `{"type":null}`, `{"message":"x"}`, `{"message":null}`, `{"message":{"content":{}}}`,
	`{"message":{"content":[1,"x",{"type":"text"}]}}`, `{"message":{"usage":{"input_tokens":1.5}}}`,
	`{"message":{"usage":{"input_tokens":9223372036854775808}}}`, `{"small":200}`, `{"small":-128}`,
	`{"count":-1}`, `{"count":1e3}`, `{"rate":1e400}`, `{"rate":"1"}`, `{"tags":[]}`, `{"tags":null}`,
	`{"tags":["a",null,2]}`, `{"labels":{"a":"b","c":null}}`, `{"labels":[]}`, `{"info":{"a":[1,{"b":"}"}]}}`,
	`{"input":{"a":1,"a":2}}`, `{"input":null}`, `{"input":[1]}`, `{"payload":{"type":"x","payload":{"uuid":"y"}}}`,
	`{"content":"x\"y"}`, `{"content": [ 1 , "]" ] }`, `{"toolUseResult":null}`, `{"-":"dash","Skip":"s","hidden":"h"}`,
	`[{"type":"text","text":"a"},{"type":"image","source":{"type":"base64","data":"QQ=="}}]`,
	`[{"is_error":"yes"}]`, `{"a":"\/"}`, `{"a":"\b\f\n\r\t"}`,
	strings.Repeat("[", 10000) + strings.Repeat("]", 10000),
	strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
	`{"text":"` + strings.Repeat("x", 100) + `\"` + strings.Repeat("é", 20) + `"}`,
}

func TestDecoderAgainstEncodingJSON(t *testing.T) {
	for _, s := range tricky {
		checkLine(t, []byte(s))
	}
	dirs := []string{filepath.Join("..", "testdata", "transcripts"), "claudecode", "codex"}
	if d := importtest.Lookup(filepath.Join("..", "..", "shared", "transcripts")); d != "" {
		dirs = append(dirs, d)
	}
	gen := t.TempDir()
	_, err := importtest.WriteCorpus(gen, 16, 8)
	require.NoError(t, err)
	dirs = append(dirs, gen)
	files := 0
	for _, d := range dirs {
		require.NoError(t, filepath.WalkDir(d, func(p string, e os.DirEntry, err error) error {
			if err != nil || e.IsDir() || !strings.HasSuffix(p, ".jsonl") {
				return err
			}
			data, err := os.ReadFile(p)
			require.NoError(t, err)
			for line := range bytes.Lines(data) {
				checkLine(t, bytes.TrimRight(line, "\n"))
				// A torn copy of the line: the scanner, and the decoder
				// given it anyway, must stop at its end.
				checkLine(t, line[:len(line)/2])
			}
			files++
			return nil
		}))
	}
	require.Greater(t, files, 24)
}

// FuzzDecode holds the decoder to encoding/json on arbitrary input,
// seeded with pieces of the real transcripts and the inputs above.
func FuzzDecode(f *testing.F) {
	if d := importtest.Lookup(filepath.Join("..", "..", "shared", "transcripts")); d != "" {
		importtest.Seeds(f, d, "*/*.jsonl", "*/*/*.jsonl", "*/*/*/*.jsonl")
	}
	for _, s := range tricky {
		if len(s) < 1000 {
			f.Add([]byte(s))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkLine(t, data)
		for line := range bytes.Lines(data) {
			checkLine(t, bytes.TrimRight(line, "\n"))
		}
	})
}
