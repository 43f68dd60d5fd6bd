package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/onejson"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
	"github.com/sessionstore/sessionstore/summary"
)

// The endpoints, as API.md documents them. Each handler decodes and
// checks its input before it writes anything: what a malformed request
// gets is a 4xx and a store unchanged.

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	route := func(pattern string, h func(w http.ResponseWriter, r *http.Request) error) {
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			sw := &statusWriter{ResponseWriter: w}
			if !s.authorized(r) {
				writeError(sw, apiErrorf(http.StatusUnauthorized, "unauthorized", "server: a TCP request needs the header \"Authorization: Bearer TOKEN\" with the server's token"))
			} else if err := h(sw, r); err != nil {
				writeError(sw, errorOf(err))
			}
			// The route, never the path: a handle's token is in some paths.
			s.logger().Info("request", "route", pattern, "status", sw.status, "client", clientOf(r), "duration", time.Since(start))
		})
	}
	route("GET /v1/health", s.health)
	route("POST /v1/sessions", s.create)
	route("GET /v1/sessions", s.list)
	route("GET /v1/sessions/{id}", s.get)
	route("DELETE /v1/sessions/{id}", s.delete)
	route("POST /v1/sessions/{id}/handles", s.resume)
	route("GET /v1/sessions/{id}/messages", s.messages)
	route("POST /v1/sessions/{id}/messages", s.addMessages)
	route("GET /v1/sessions/{id}/items", s.items)
	route("POST /v1/sessions/{id}/items", s.addItems)
	route("POST /v1/sessions/{id}/pop", s.pop)
	route("POST /v1/sessions/{id}/clear", s.clear)
	route("POST /v1/sessions/{id}/labels", s.labels)
	route("GET /v1/sessions/{id}/lease", s.lease)
	route("POST /v1/handles/{handle}/heartbeat", s.heartbeat)
	route("DELETE /v1/handles/{handle}", s.release)
	route("GET /v1/search", s.search)
	route("GET /v1/watch", s.watch)
	route("/", func(w http.ResponseWriter, r *http.Request) error {
		return apiErrorf(http.StatusNotFound, "no_endpoint", "server: no endpoint %s %s (API.md lists them)", r.Method, r.URL.Path)
	})
	return mux
}

// statusWriter remembers the status a handler answered, for the log.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Flush lets the watch stream through the wrapper.
func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) int {
	b, err := json.Marshal(v)
	if err != nil {
		return writeError(w, apiErrorf(http.StatusInternalServerError, "internal", "server: encode the answer: %v", err))
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n')) // a client gone is no error of ours
	return status
}

func writeError(w http.ResponseWriter, e *apiError) int {
	b, _ := json.Marshal(e) // strings and a lease status: always encodes
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.Status)
	_, _ = w.Write(append(b, '\n'))
	return e.Status
}

// decode reads r's body into v: one JSON object, no key v does not
// have, nothing after it, at most MaxBodyBytes.
func (s *Server) decode(w http.ResponseWriter, r *http.Request, v any) error {
	body := http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes)
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	err := onejson.Decode(dec, v)
	var mbe *http.MaxBytesError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &mbe):
		return apiErrorf(http.StatusRequestEntityTooLarge, "too_large", "server: the request body is larger than %d bytes", mbe.Limit)
	case errors.Is(err, io.EOF):
		return apiErrorf(http.StatusBadRequest, "malformed", "server: the request needs a JSON object as its body")
	}
	return apiErrorf(http.StatusBadRequest, "malformed", "server: the request body: %v", err)
}

// sessionID is the {id} of r's path, valid.
func sessionID(r *http.Request) (session.SessionID, error) {
	id := session.SessionID(r.PathValue("id"))
	if err := sessionstore.ValidateID(id); err != nil {
		return "", apiErrorf(http.StatusBadRequest, "invalid_id", "%v", err)
	}
	return id, nil
}

// sessionBody is the {id} of r's path, valid (sessionID), with r's body
// decoded into v (decode).
func (s *Server) sessionBody(w http.ResponseWriter, r *http.Request, v any) (session.SessionID, error) {
	id, err := sessionID(r)
	if err != nil {
		return "", err
	}
	return id, s.decode(w, r, v)
}

// writeAt is write for a request that says which revision it expects the
// session to be at: fn runs only if it is.
func (s *Server) writeAt(r *http.Request, id session.SessionID, req writeRequest, fn func(w *Writer) error) error {
	return s.write(r, id, req.Handle, func(wr *Writer) error {
		if err := wr.expect(req.Revision); err != nil {
			return err
		}
		return fn(wr)
	})
}

// write runs fn with the handle token names, for session id: the one way
// every write reaches a Writer. An error that leaves the writer unusable
// ends the handle, its lease released.
func (s *Server) write(r *http.Request, id session.SessionID, token string, fn func(w *Writer) error) error {
	if token == "" {
		return apiErrorf(http.StatusBadRequest, "no_handle", "server: a write names its handle (\"handle\": the token POST /v1/sessions or POST /v1/sessions/%s/handles returned)", id)
	}
	h, done, why, ok := s.handles.use(token)
	if !ok {
		return s.endedHandle(r, why)
	}
	defer done()
	if h.w.ID() != id {
		return apiErrorf(http.StatusBadRequest, "handle_mismatch", "server: the handle holds session %s, not %s", h.w.ID(), id)
	}
	err := fn(h.w)
	if reason, ended := ends(err); ended {
		if h := s.handles.end(token, reason); h != nil {
			s.releaseAll([]*handle{h})
		}
		e := errorOf(err)
		if reason == "lease_lost" {
			e.Lease = s.leaseOf(r, id)
		}
		return e
	}
	return err
}

// endedHandle says why a handle is no longer there.
func (s *Server) endedHandle(r *http.Request, why tomb) error {
	var e *apiError
	switch why.reason {
	case "":
		return apiErrorf(http.StatusNotFound, "unknown_handle", "server: no such handle (never issued, or ended long ago)")
	case "expired":
		e = apiErrorf(http.StatusConflict, "handle_expired", "server: the handle of session %s expired (no request or heartbeat for %s) and its lease was released; resume the session for a new one", why.id, s.opts.Grace)
	case "lease_lost":
		e = apiErrorf(http.StatusConflict, "lease_lost", "server: the handle of session %s lost its lease", why.id)
	case "deleted":
		return apiErrorf(http.StatusNotFound, "deleted", "server: session %s was deleted through this handle", why.id)
	default:
		e = apiErrorf(http.StatusConflict, "handle_"+why.reason, "server: the handle of session %s was %s", why.id, why.reason)
	}
	e.Lease = s.leaseOf(r, why.id)
	return e
}

// leaseOf is session id's lease now, for an answer about a lost one
// (nil when it cannot be read).
func (s *Server) leaseOf(r *http.Request, id session.SessionID) *summary.LeaseStatus {
	ls, err := s.st.Lease(r.Context(), id)
	if err != nil {
		return nil
	}
	return &ls
}

func (s *Server) health(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "grace_ms": s.opts.Grace.Milliseconds(), "max_body_bytes": s.opts.MaxBodyBytes})
	return nil
}

// handleAnswer is what create and resume return.
type handleAnswer struct {
	ID         session.SessionID            `json:"id"`
	Handle     string                       `json:"handle"`
	Revision   uint64                       `json:"revision"`
	Generation uint64                       `json:"generation"`
	Messages   int                          `json:"messages"`
	GraceMS    int64                        `json:"grace_ms"`
	Recovery   *sessionstore.RecoveryReport `json:"recovery,omitempty"`
}

// open registers w as a handle of r's client (reserved by reserve).
func (s *Server) open(w http.ResponseWriter, r *http.Request, wr *Writer, rec *sessionstore.RecoveryReport) error {
	token := s.handles.add(clientOf(r), wr)
	writeJSON(w, http.StatusCreated, handleAnswer{ID: wr.ID(), Handle: token, Revision: wr.Revision(), Generation: wr.Generation(),
		Messages: wr.Len(), GraceMS: s.opts.Grace.Milliseconds(), Recovery: rec})
	return nil
}

func (s *Server) reserve(r *http.Request) error {
	ok, total := s.handles.reserve(clientOf(r))
	switch {
	case ok:
		return nil
	case total:
		return apiErrorf(http.StatusTooManyRequests, "too_many_handles", "server: %d handles are open, the most this server keeps; release some", s.opts.MaxHandles)
	}
	return apiErrorf(http.StatusTooManyRequests, "too_many_handles", "server: this client holds %d handles, the most one client may; release some", s.opts.MaxHandlesPerClient)
}

func (s *Server) create(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		ID        session.SessionID `json:"id"`
		Title     string            `json:"title"`
		Labels    map[string]string `json:"labels"`
		Workspace session.Workspace `json:"workspace"`
		Holder    string            `json:"holder"`
	}
	if err := s.decode(w, r, &req); err != nil {
		return err
	}
	if req.ID != "" {
		if err := sessionstore.ValidateID(req.ID); err != nil {
			return err
		}
	}
	if err := s.reserve(r); err != nil {
		return err
	}
	s.opts.Hooks("create")
	wr, err := Create(r.Context(), s.st, CreateOptions{ID: req.ID, Title: req.Title, Labels: req.Labels, Workspace: req.Workspace},
		sessionstore.AcquireOptions{Label: holderLabel(req.Holder, r)})
	if err != nil {
		s.handles.unreserve(clientOf(r))
		return err
	}
	return s.open(w, r, wr, nil)
}

// holderLabel is the lease's label: the client's, and which process it is.
func holderLabel(client string, r *http.Request) string {
	if client == "" {
		client = "sessions-serve"
	}
	if p, _ := r.Context().Value(peerKey{}).(peer); p.unix && p.pid != 0 {
		client += fmt.Sprintf(" (client pid %d)", p.pid)
	}
	return client
}

func (s *Server) resume(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Holder string `json:"holder"`
		WaitMS int64  `json:"wait_ms"`
	}
	id, err := s.sessionBody(w, r, &req)
	if err != nil {
		return err
	}
	wait := time.Duration(req.WaitMS) * time.Millisecond
	if req.WaitMS < 0 || wait > s.opts.MaxWait {
		return apiErrorf(http.StatusBadRequest, "invalid", "server: wait_ms must be between 0 and %d", s.opts.MaxWait.Milliseconds())
	}
	if err := s.reserve(r); err != nil {
		return err
	}
	wr, err := Acquire(r.Context(), s.st, id, sessionstore.AcquireOptions{Label: holderLabel(req.Holder, r)}, wait)
	if err != nil {
		s.handles.unreserve(clientOf(r))
		return err
	}
	rec := wr.Recovery()
	return s.open(w, r, wr, &rec)
}

func (s *Server) release(w http.ResponseWriter, r *http.Request) error {
	h := s.handles.end(r.PathValue("handle"), "released")
	if h == nil {
		_, _, why, _ := s.handles.use(r.PathValue("handle"))
		if why.reason == "released" {
			writeJSON(w, http.StatusOK, map[string]any{"released": true}) // idempotent
			return nil
		}
		return s.endedHandle(r, why)
	}
	if err := h.w.Release(r.Context()); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"released": true, "id": h.w.ID()})
	return nil
}

func (s *Server) heartbeat(w http.ResponseWriter, r *http.Request) error {
	token := r.PathValue("handle")
	h, done, why, ok := s.handles.use(token)
	if !ok {
		return s.endedHandle(r, why)
	}
	id := h.w.ID()
	done()
	return s.write(r, id, token, func(wr *Writer) error {
		if err := wr.Heartbeat(r.Context()); err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, map[string]any{"id": id, "revision": wr.Revision(), "grace_ms": s.opts.Grace.Milliseconds()})
		return nil
	})
}

func (s *Server) delete(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Handle string `json:"handle"`
	}
	id, err := s.sessionBody(w, r, &req)
	if err != nil {
		return err
	}
	err = s.write(r, id, req.Handle, func(wr *Writer) error { return wr.Delete(r.Context()) })
	if err != nil {
		return err
	}
	s.handles.end(req.Handle, "deleted") // its writer is done: Delete released the lease
	writeJSON(w, http.StatusOK, map[string]any{"deleted": id})
	return nil
}

// writeRequest is the body of a write: its handle, and optionally the
// revision the client expects the session to be at.
type writeRequest struct {
	Handle   string `json:"handle"`
	Revision uint64 `json:"revision"`
}

func (s *Server) addMessages(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		writeRequest
		Messages []json.RawMessage `json:"messages"`
	}
	id, err := s.sessionBody(w, r, &req)
	if err != nil {
		return err
	}
	msgs := make([]session.Message, len(req.Messages))
	for i, raw := range req.Messages {
		if msgs[i], err = sessnap.UnmarshalMessage(raw); err != nil {
			return apiErrorf(http.StatusBadRequest, "invalid", "server: message %d: %v", i, err)
		}
	}
	return s.add(w, r, id, req.writeRequest, msgs)
}

func (s *Server) addItems(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		writeRequest
		Items []json.RawMessage `json:"items"`
	}
	id, err := s.sessionBody(w, r, &req)
	if err != nil {
		return err
	}
	now := time.Now()
	msgs := make([]session.Message, len(req.Items))
	for i, raw := range req.Items {
		if msgs[i], err = MessageOfItem(raw, now); err != nil {
			return apiErrorf(http.StatusBadRequest, "invalid", "server: item %d: %v", i, err)
		}
	}
	return s.add(w, r, id, req.writeRequest, msgs)
}

func (s *Server) add(w http.ResponseWriter, r *http.Request, id session.SessionID, req writeRequest, msgs []session.Message) error {
	return s.write(r, id, req.Handle, func(wr *Writer) error {
		s.opts.Hooks("append")
		rev, err := wr.AddMessages(r.Context(), req.Revision, msgs)
		if err != nil {
			return err
		}
		s.opts.Hooks("appended")
		writeJSON(w, http.StatusOK, map[string]any{"id": id, "revision": rev, "messages": wr.Len()})
		s.opts.Hooks("acknowledged")
		return nil
	})
}

func (s *Server) pop(w http.ResponseWriter, r *http.Request) error {
	var req writeRequest
	id, err := s.sessionBody(w, r, &req)
	if err != nil {
		return err
	}
	return s.writeAt(r, id, req, func(wr *Writer) error {
		m, rev, ok, err := wr.Pop(r.Context())
		if err != nil {
			return err
		}
		ans := map[string]any{"id": id, "revision": rev, "message": nil, "item": nil}
		if ok {
			enc, err := sessnap.AppendMessage(nil, m, nil)
			if err != nil {
				return err
			}
			ans["message"], ans["item"] = json.RawMessage(enc), ItemOfMessage(m)
		}
		writeJSON(w, http.StatusOK, ans)
		return nil
	})
}

func (s *Server) clear(w http.ResponseWriter, r *http.Request) error {
	var req writeRequest
	id, err := s.sessionBody(w, r, &req)
	if err != nil {
		return err
	}
	return s.writeAt(r, id, req, func(wr *Writer) error {
		rev, err := wr.Clear(r.Context())
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, map[string]any{"id": id, "revision": rev})
		return nil
	})
}

func (s *Server) labels(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		writeRequest
		Set    map[string]string `json:"set"`
		Remove []string          `json:"remove"`
	}
	id, err := s.sessionBody(w, r, &req)
	if err != nil {
		return err
	}
	return s.writeAt(r, id, req.writeRequest, func(wr *Writer) error {
		rev, labels, err := wr.SetLabels(r.Context(), req.Set, req.Remove)
		if err != nil {
			return err
		}
		if labels == nil {
			labels = map[string]string{}
		}
		writeJSON(w, http.StatusOK, map[string]any{"id": id, "revision": rev, "labels": labels})
		return nil
	})
}

// load is session id's latest revision, for the reads.
func (s *Server) load(r *http.Request) (sessionstore.Record, error) {
	id, err := sessionID(r)
	if err != nil {
		return sessionstore.Record{}, err
	}
	return s.st.Load(r.Context(), id)
}

// lastN reads the query parameter name: absent is all (-1).
func lastN(r *http.Request, name string) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return -1, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, apiErrorf(http.StatusBadRequest, "bad_query", "server: %s=%q is not a count", name, v)
	}
	return n, nil
}

func tail[T any](s []T, n int) []T {
	if n < 0 || n >= len(s) {
		return s
	}
	return s[len(s)-n:]
}

func (s *Server) get(w http.ResponseWriter, r *http.Request) error {
	rec, err := s.load(r)
	if err != nil {
		return err
	}
	sum := summary.Project(&rec.Snapshot, rec.Revision, rec.Generation, rec.Time)
	if ls, err := s.st.Lease(r.Context(), rec.ID); err == nil {
		sum.Lease = ls
	}
	writeJSON(w, http.StatusOK, sum)
	return nil
}

func (s *Server) messages(w http.ResponseWriter, r *http.Request) error {
	n, err := lastN(r, "last")
	if err != nil {
		return err
	}
	rec, err := s.load(r)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": rec.ID, "revision": rec.Revision, "total": len(rec.Snapshot.Messages),
		"messages": sessnap.Messages(tail(rec.Snapshot.Messages, n))})
	return nil
}

func (s *Server) items(w http.ResponseWriter, r *http.Request) error {
	n, err := lastN(r, "limit")
	if err != nil {
		return err
	}
	rec, err := s.load(r)
	if err != nil {
		return err
	}
	msgs := tail(rec.Snapshot.Messages, n)
	items := make([]json.RawMessage, len(msgs))
	for i, m := range msgs {
		items[i] = ItemOfMessage(m)
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": rec.ID, "revision": rec.Revision, "total": len(rec.Snapshot.Messages), "items": items})
	return nil
}

func (s *Server) lease(w http.ResponseWriter, r *http.Request) error {
	id, err := sessionID(r)
	if err != nil {
		return err
	}
	ls, err := s.st.Lease(r.Context(), id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, ls)
	return nil
}

// queryOf reads a listing's filters from r's query string.
func queryOf(r *http.Request) (summary.Query, error) {
	v := r.URL.Query()
	var q summary.Query
	for k := range v {
		switch k {
		case "state", "kind", "label", "parent", "project", "tree", "order", "limit", "cursor", "updated_since":
		default:
			return q, apiErrorf(http.StatusBadRequest, "bad_query", "server: unknown parameter %q", k)
		}
	}
	for _, st := range v["state"] {
		q.States = append(q.States, session.State(st))
	}
	for _, k := range v["kind"] {
		q.Kinds = append(q.Kinds, session.SessionKind(k))
	}
	labels, err := labelsOf(v["label"])
	if err != nil {
		return q, err
	}
	q.Labels = labels
	q.ParentID, q.Project, q.Order, q.Cursor = session.SessionID(v.Get("parent")), v.Get("project"), summary.Order(v.Get("order")), v.Get("cursor")
	q.ProjectTree = v.Get("tree") == "1" || v.Get("tree") == "true"
	if l := v.Get("limit"); l != "" {
		if q.Limit, err = strconv.Atoi(l); err != nil || q.Limit < 0 {
			return q, apiErrorf(http.StatusBadRequest, "bad_query", "server: limit=%q is not a count", l)
		}
	}
	if t := v.Get("updated_since"); t != "" {
		if q.UpdatedSince, err = time.Parse(time.RFC3339Nano, t); err != nil {
			return q, apiErrorf(http.StatusBadRequest, "bad_query", "server: updated_since=%q is not an RFC 3339 time", t)
		}
	}
	if _, err := q.Normalize(); err != nil {
		return q, apiErrorf(http.StatusBadRequest, "bad_query", "server: %v", err)
	}
	return q, nil
}

func labelsOf(kvs []string) (map[string]string, error) {
	if len(kvs) == 0 {
		return nil, nil
	}
	out := map[string]string{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, apiErrorf(http.StatusBadRequest, "bad_query", "server: label=%q is not KEY=VALUE", kv)
		}
		out[k] = v
	}
	return out, nil
}

func (s *Server) list(w http.ResponseWriter, r *http.Request) error {
	q, err := queryOf(r)
	if err != nil {
		return err
	}
	page, err := s.st.List(r.Context(), q)
	if err != nil {
		return err
	}
	if page.Items == nil {
		page.Items = []summary.Summary{}
	}
	writeJSON(w, http.StatusOK, page)
	return nil
}

func (s *Server) search(w http.ResponseWriter, r *http.Request) error {
	v := r.URL.Query()
	for k := range v {
		switch k {
		case "q", "label", "project", "tree", "no_tools", "limit":
		default:
			return apiErrorf(http.StatusBadRequest, "bad_query", "server: unknown parameter %q", k)
		}
	}
	labels, err := labelsOf(v["label"])
	if err != nil {
		return err
	}
	q := sessionstore.SearchQuery{Text: v.Get("q"), Labels: labels, Project: v.Get("project"),
		ProjectTree: v.Get("tree") == "1" || v.Get("tree") == "true", NoTools: v.Get("no_tools") == "1" || v.Get("no_tools") == "true"}
	if l := v.Get("limit"); l != "" {
		if q.Limit, err = strconv.Atoi(l); err != nil {
			return apiErrorf(http.StatusBadRequest, "bad_query", "server: limit=%q is not a count", l)
		}
	}
	res, err := s.st.Search(r.Context(), q)
	if err != nil {
		return err
	}
	if res.Hits == nil {
		res.Hits = []sessionstore.SearchHit{}
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}

// watch streams the store's changes as server-sent events: one "change"
// event per summary.Change, its JSON the data.
func (s *Server) watch(w http.ResponseWriter, r *http.Request) error {
	only := map[session.SessionID]bool{}
	for k, vs := range r.URL.Query() {
		if k != "id" {
			return apiErrorf(http.StatusBadRequest, "bad_query", "server: unknown parameter %q", k)
		}
		for _, v := range vs {
			only[session.SessionID(v)] = true
		}
	}
	fl, ok := w.(http.Flusher)
	if !ok {
		return apiErrorf(http.StatusInternalServerError, "internal", "server: the connection cannot stream")
	}
	// A watch ends when its client leaves or the server shuts down.
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stop := context.AfterFunc(s.ctx, cancel)
	defer stop()
	ch, err := s.st.Watch(ctx)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	fl.Flush()
	var buf bytes.Buffer
	for c := range ch {
		if len(only) > 0 && !only[c.ID] {
			continue
		}
		b, err := json.Marshal(c)
		if err != nil {
			continue // a change is plain data; it encodes
		}
		buf.Reset()
		buf.WriteString("event: change\ndata: ")
		buf.Write(b)
		buf.WriteString("\n\n")
		if _, err := w.Write(buf.Bytes()); err != nil {
			break // the client left; its context ends the watch
		}
		fl.Flush()
	}
	cancel()
	for range ch { // drain until Watch closes the channel, which it does once ctx is done
	}
	return nil
}
