package claudecode

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/sessionstore/sessionstore/importer"
)

// Claude Code keeps a project's sessions in ~/.claude/projects/<project>/,
// where <project> is the working directory with '/' and '.' replaced by
// '-':
//
//	<project>/<session>.jsonl                        a session
//	<project>/<session>/subagents/agent-<id>.jsonl   its sub-agents (2.1)
//	<project>/<session>/subagents/agent-<id>.meta.json  {agentType, description} (2.1.1xx)
//	<project>/agent-<id>.jsonl                       a sub-agent (2.0), whose lines carry its parent's session ID
//
// The functions below read that layout from an fs.FS rooted at the
// projects directory; they never write.

// Discover returns the session transcripts of fsys, a Claude Code projects
// directory: every "<project>/<name>.jsonl" that is a regular file and not
// a sub-agent's, in lexical order. Links are not followed, and a project
// directory that cannot be read is left out (as fs.Glob leaves it).
func Discover(fsys fs.FS) ([]string, error) {
	out, err := importer.FilesAt(fsys, 1, IsTranscript) // <project>/<name>.jsonl
	if err != nil {
		return nil, fmt.Errorf("claudecode: discover: %w", err)
	}
	return out, nil
}

// IsTranscript reports whether a file's name is a session transcript's:
// "<name>.jsonl", not a sub-agent's "agent-<id>.jsonl".
func IsTranscript(name string) bool {
	return strings.HasSuffix(name, ".jsonl") && !strings.HasPrefix(name, "agent-")
}

func isAgentFile(name string) bool {
	return strings.HasPrefix(name, "agent-") && strings.HasSuffix(name, ".jsonl")
}

// Load reads the session transcript name of fsys and its sub-agents'
// files (2.1's subagents directory and 2.0's sibling agent files), and
// attaches each sub-agent to it (Transcript.Adopt). Paths are recorded as
// given. A sub-agent file that cannot be read fails the load; lines that
// cannot be used are counted in each transcript's report as Parse counts
// them.
func Load(fsys fs.FS, name string, opts Options) (*importer.Transcript, error) {
	t, err := parseFile(fsys, name, opts)
	if err != nil {
		return nil, err
	}
	agents, err := SubagentFiles(fsys, name, t.SourceID)
	if err != nil {
		return nil, err
	}
	for _, a := range agents {
		child, err := parseFile(fsys, a, opts)
		if err != nil {
			return nil, err
		}
		if child.Link == nil {
			continue // not a sub-agent transcript after all
		}
		if role, ok := metaRole(fsys, strings.TrimSuffix(a, ".jsonl")+".meta.json"); ok && child.Link.Role == "" {
			child.Link.Role = role
		}
		t.Adopt(child)
	}
	return t, nil
}

// SubagentFiles returns the files of fsys that may hold sub-agents of the
// session transcript name, whose session ID is sessionID, in lexical
// order: the files of its subagents directory (2.1) and the sibling
// agent-*.jsonl files whose first lines carry sessionID (2.0), regular
// files only (links are not followed). Load reads them with the session;
// an import that skips unchanged sources checks them too.
func SubagentFiles(fsys fs.FS, name, sessionID string) ([]string, error) {
	dir := path.Dir(name)
	sessionDir := strings.TrimSuffix(name, ".jsonl")
	agents, err := importer.RegularFiles(fsys, path.Join(sessionDir, "subagents"), isAgentFile)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("claudecode: load %s: %w", name, err)
	}
	siblings, err := importer.RegularFiles(fsys, dir, isAgentFile)
	if err != nil {
		return nil, fmt.Errorf("claudecode: load %s: %w", name, err)
	}
	for _, s := range siblings {
		id, err := firstSessionID(fsys, s)
		if err != nil {
			return nil, err
		}
		if id == sessionID && id != "" {
			agents = append(agents, s)
		}
	}
	slices.Sort(agents)
	return agents, nil
}

// Peek reads the first lines of the transcript name of fsys and returns
// its session ID (the first sessionId, else the file's name without
// ".jsonl", as Load takes it for a file whose lines name none) and the
// uuid of its first message ("" when its first lines hold none). A
// session resumed in another file shares its first message's uuid with
// that file: an import reads such files together (Fold), and any other
// file on its own.
func Peek(fsys fs.FS, name string) (sessionID, firstUUID string, err error) {
	sessionID, firstUUID, err = peek(fsys, name, peekLines, true)
	if err == nil && sessionID == "" {
		sessionID = strings.TrimSuffix(path.Base(name), ".jsonl")
	}
	return sessionID, firstUUID, err
}

// peekLines bounds the lines Peek reads: the first message comes after a
// few metadata lines (summaries, file history snapshots).
const peekLines = 64

// LoadProject loads every session of the project directory dir of fsys
// (Load), and folds resumed sessions: Claude Code continues a resumed
// session in a new file that starts with copies of the earlier one's
// messages, so a transcript whose conversation another one begins with
// (message for message) is left out, and the one that contains it records
// the earlier session's ID in its label ResumesLabel.
func LoadProject(fsys fs.FS, dir string, opts Options) ([]*importer.Transcript, error) {
	names, err := importer.RegularFiles(fsys, dir, IsTranscript)
	if err != nil {
		return nil, fmt.Errorf("claudecode: load project %s: %w", dir, err)
	}
	var ts []*importer.Transcript
	for _, n := range names {
		t, err := Load(fsys, n, opts)
		if err != nil {
			return nil, err
		}
		ts = append(ts, t)
	}
	return Fold(ts), nil
}

// ResumesLabel is the label a transcript that continues a resumed session
// carries: the earlier session's source ID.
const ResumesLabel = "claude-code.resumes"

// Fold leaves out of ts each transcript whose whole conversation another
// one begins with (a session resumed in a new file that starts with
// copies of its messages), labelling the one that continues it with
// ResumesLabel; it returns the others, in their order.
func Fold(ts []*importer.Transcript) []*importer.Transcript {
	var out []*importer.Transcript
	for i, a := range ts {
		var by *importer.Transcript
		for j, b := range ts {
			if i != j && len(a.Messages) > 0 && len(b.Messages) > len(a.Messages) && a.SourceID != b.SourceID && startsWith(b, a) {
				by = b
				break
			}
		}
		if by == nil {
			out = append(out, a)
			continue
		}
		if by.Labels == nil {
			by.Labels = map[string]string{}
		}
		by.Labels[ResumesLabel] = a.SourceID
	}
	return out
}

func startsWith(b, a *importer.Transcript) bool {
	for k, m := range a.Messages {
		if m.ID == "" || !m.Equal(b.Messages[k]) {
			return false
		}
	}
	return true
}

func parseFile(fsys fs.FS, name string, opts Options) (*importer.Transcript, error) {
	t, err := importer.ParseFile(fsys, name, func(r io.Reader) (*importer.Transcript, error) { return Parse(r, opts) })
	if err != nil {
		return nil, fmt.Errorf("claudecode: %w", err)
	}
	if t.SourceID == "" && t.Link == nil {
		// A session file is named by its session's ID.
		t.SourceID = strings.TrimSuffix(path.Base(name), ".jsonl")
	}
	for _, c := range t.Children {
		c.Path = name
	}
	return t, nil
}

// firstSessionID returns the sessionId of the first line of name that has
// one, reading at most the first few lines.
func firstSessionID(fsys fs.FS, name string) (string, error) {
	id, _, err := peek(fsys, name, 16, false)
	return id, err
}

// peek reads at most n lines of name for the first sessionId and, when
// message is set, the uuid of the first message of the main
// conversation (a user or assistant line that is not a sidechain).
func peek(fsys fs.FS, name string, n int, message bool) (sessionID, firstUUID string, err error) {
	f, err := fsys.Open(name)
	if err != nil {
		return "", "", fmt.Errorf("claudecode: %w", err)
	}
	defer f.Close() //nolint:errcheck // read-only: closing cannot lose data
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, importer.DefaultMaxLineBytes)
	for ; n > 0 && sc.Scan(); n-- {
		var e struct {
			Type        string `json:"type"`
			UUID        string `json:"uuid"`
			SessionID   string `json:"sessionId"`
			IsSidechain bool   `json:"isSidechain"`
		}
		if importer.DecodeLine(sc.Bytes(), &e) != nil {
			continue
		}
		if sessionID == "" {
			sessionID = e.SessionID
		}
		if message && firstUUID == "" && (e.Type == "user" || e.Type == "assistant") && !e.IsSidechain {
			firstUUID = e.UUID
		}
		if sessionID != "" && (firstUUID != "" || !message) {
			break
		}
	}
	if err := sc.Err(); err != nil && !errors.Is(err, bufio.ErrTooLong) {
		return "", "", fmt.Errorf("claudecode: %s: %w", name, err)
	}
	return sessionID, firstUUID, nil
}

// metaRole reads a sub-agent's .meta.json for its agent type.
func metaRole(fsys fs.FS, name string) (string, bool) {
	b, err := fs.ReadFile(fsys, name)
	if err != nil || len(b) > 1<<20 {
		return "", false
	}
	var meta struct {
		AgentType string `json:"agentType"`
	}
	if json.Unmarshal(b, &meta) != nil || meta.AgentType == "" {
		return "", false
	}
	return meta.AgentType, true
}
