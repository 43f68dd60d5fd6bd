package mcpserver

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/summary"
)

// SearchArgs are search_sessions' arguments.
type SearchArgs struct {
	Query   string            `json:"query" jsonschema:"what to look for: words (all in one message), \"a phrase\", prefixes (work*)"`
	Limit   int               `json:"limit,omitempty" jsonschema:"the most hits to return (default 20, at most 100)"`
	Project string            `json:"project,omitempty" jsonschema:"only sessions of the project in this directory (absolute, or relative to the server's working directory)"`
	Labels  map[string]string `json:"labels,omitempty" jsonschema:"only sessions with all of these labels"`
	NoTools bool              `json:"no_tools,omitempty" jsonschema:"leave tool calls and tool results out of the search"`
}

// SearchResult is search_sessions' answer.
type SearchResult struct {
	Hits []Hit `json:"hits"`
	// More says that the limit was reached: other messages may match.
	More bool `json:"more,omitempty"`
	// Unreadable are sessions that could not be searched, with why.
	Unreadable []Unreadable `json:"unreadable,omitempty"`
}

// Hit is one message, or one session's title, that matches a search.
type Hit struct {
	Session string `json:"session"`
	Title   string `json:"title,omitempty"`
	// Message is the message's index in the conversation, from 0 (-1:
	// the session's title); Role is its role.
	Message int    `json:"message"`
	Role    string `json:"role,omitempty"`
	// Field is where the words are: title, text, or tool (tool calls and
	// results).
	Field     string `json:"field"`
	UpdatedAt string `json:"updated_at,omitempty"`
	// Snippet is text around the first match, the matches between « and ».
	Snippet string `json:"snippet"`
}

// Unreadable is a session a search or listing could not read.
type Unreadable struct {
	Session string `json:"session"`
	Reason  string `json:"reason"`
}

func (t *tools) search(ctx context.Context, _ *mcp.CallToolRequest, in SearchArgs) (*mcp.CallToolResult, SearchResult, error) {
	limit, err := bound("limit", in.Limit, DefaultHits, MaxHits)
	if err != nil {
		return nil, SearchResult{}, err
	}
	proj, err := projectDir(in.Project)
	if err != nil {
		return nil, SearchResult{}, err
	}
	q, err := sessionstore.SearchQuery{Text: in.Query, Labels: in.Labels, Project: proj, NoTools: in.NoTools, Limit: limit}.Normalize()
	if err != nil {
		return nil, SearchResult{}, err
	}
	res, err := t.st.Search(ctx, q)
	if err != nil {
		return nil, SearchResult{}, fmt.Errorf("search: %w", err)
	}
	out := SearchResult{Hits: make([]Hit, 0, len(res.Hits)), More: len(res.Hits) >= limit, Unreadable: unreadable(res.Unreadable)}
	for _, h := range res.Hits {
		out.Hits = append(out.Hits, Hit{Session: string(h.ID), Title: h.Title, Message: h.Message, Role: string(h.Role),
			Field: h.Field, UpdatedAt: stamp(h.UpdatedAt), Snippet: marked(h.Snippet, h.Marks)})
	}
	return nil, out, nil
}

// marked is snippet with its matches between « and ».
func marked(snippet string, marks []sessionstore.TextSpan) string {
	var b strings.Builder
	at := 0
	for _, m := range marks {
		if m.Start < at || m.End > len(snippet) || m.Start >= m.End {
			continue
		}
		b.WriteString(snippet[at:m.Start])
		b.WriteString("«" + snippet[m.Start:m.End] + "»")
		at = m.End
	}
	b.WriteString(snippet[at:])
	return b.String()
}

// ListArgs are list_sessions' arguments.
type ListArgs struct {
	Limit   int               `json:"limit,omitempty" jsonschema:"the most sessions to return (default 20, at most 200)"`
	Project string            `json:"project,omitempty" jsonschema:"only sessions of the project in this directory (absolute, or relative to the server's working directory)"`
	Labels  map[string]string `json:"labels,omitempty" jsonschema:"only sessions with all of these labels"`
	States  []string          `json:"states,omitempty" jsonschema:"only sessions in one of these states (idle, running, awaiting, completed, stopped, cancelled, failed)"`
}

// ListResult is list_sessions' answer.
type ListResult struct {
	Sessions []Session `json:"sessions"`
	// More says that more sessions match than were returned.
	More       bool         `json:"more,omitempty"`
	Unreadable []Unreadable `json:"unreadable,omitempty"`
}

// Session is one session in a listing.
type Session struct {
	ID        string            `json:"id"`
	Title     string            `json:"title,omitempty"`
	State     string            `json:"state"`
	Kind      string            `json:"kind,omitempty"`
	Project   string            `json:"project,omitempty"`
	Labels    map[string]string `json:"labels,omitempty"`
	Messages  int               `json:"messages"`
	CreatedAt string            `json:"created_at"`
	UpdatedAt string            `json:"updated_at"`
	// Lease is who may be writing to it now: free, held or stale.
	Lease string `json:"lease,omitempty"`
}

func (t *tools) list(ctx context.Context, _ *mcp.CallToolRequest, in ListArgs) (*mcp.CallToolResult, ListResult, error) {
	limit, err := bound("limit", in.Limit, DefaultList, MaxList)
	if err != nil {
		return nil, ListResult{}, err
	}
	proj, err := projectDir(in.Project)
	if err != nil {
		return nil, ListResult{}, err
	}
	q := summary.Query{Labels: in.Labels, Project: proj, Order: summary.OrderUpdatedDesc, Limit: limit}
	for _, s := range in.States {
		q.States = append(q.States, session.State(s))
	}
	if q, err = q.Normalize(); err != nil {
		return nil, ListResult{}, fmt.Errorf("%w: %w", ErrBadArgument, err)
	}
	page, err := t.st.List(ctx, q)
	if err != nil {
		return nil, ListResult{}, fmt.Errorf("list: %w", err)
	}
	out := ListResult{Sessions: make([]Session, 0, len(page.Items)), More: page.Next != "", Unreadable: unreadable(page.Unreadable)}
	for _, s := range page.Items {
		out.Sessions = append(out.Sessions, Session{ID: string(s.ID), Title: s.Title, State: string(s.State), Kind: string(s.Kind),
			Project: s.Project, Labels: s.Labels, Messages: s.MessageCount, CreatedAt: stamp(s.CreatedAt),
			UpdatedAt: stamp(s.UpdatedAt), Lease: string(s.Lease.State)})
	}
	return nil, out, nil
}

func unreadable(us []summary.Unreadable) []Unreadable {
	var out []Unreadable
	for _, u := range us {
		out = append(out, Unreadable{Session: string(u.ID), Reason: u.Reason})
	}
	return out
}

// stamp is t in RFC 3339, UTC, or "" for the zero time.
func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}
