package purge

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"regexp"
	"strconv"
	"strings"

	"github.com/sessionstore/sessionstore"
	"github.com/sessionstore/sessionstore/internal/blob"
	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/internal/vfs"
	"github.com/sessionstore/sessionstore/jsonlstore/internal/blobfile"
	"github.com/sessionstore/sessionstore/redact"
	"github.com/sessionstore/sessionstore/session"
	"github.com/sessionstore/sessionstore/sessnap"
)

// transform redacts stored snapshots (pages and blobs as references) of
// one session, remembering what it did to each distinct message, page,
// blob and head so that a long history costs each once.
type transform struct {
	fs    vfs.FS
	id    session.SessionID
	r     *redact.Redactor
	blobs *blobfile.Writer
	// elems maps a message element's SHA-256 to its redacted form (nil:
	// unchanged); heads likewise for a snapshot's members but messages.
	elems map[[32]byte][]byte
	heads map[[32]byte][]byte
	// refs maps an old blob or page hash to the reference text that
	// replaces its own (`"sha256":"…","size":N` or, for a page,
	// `"sha256":"…","messages":M,"size":N`), for forensic copies.
	refs map[string][2]string
	// secrets counts the secrets replaced, by rule.
	secrets  map[string]int
	newBlobs int
	// clean holds the blobs forensic copies reference that hold no
	// secret.
	clean map[string]bool
}

func newTransform(fsys vfs.FS, id session.SessionID, r *redact.Redactor, blobs *blobfile.Writer) *transform {
	return &transform{
		fs: fsys, id: id, r: r, blobs: blobs,
		elems: map[[32]byte][]byte{}, heads: map[[32]byte][]byte{},
		refs: map[string][2]string{}, secrets: map[string]int{}, clean: map[string]bool{},
	}
}

var messagesKey = []byte(`"messages"`)

// snapshot returns snap, a stored snapshot, with its secrets replaced
// (snap itself when it holds none).
func (t *transform) snapshot(snap []byte) ([]byte, error) {
	members, err := record.Members(snap)
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	head, err := t.head(snap, members)
	if err != nil {
		return nil, err
	}
	changed := head != nil
	out := make([]record.Member, len(members))
	copy(out, members)
	if head != nil {
		for i := range out {
			if v, ok := head[string(out[i].Key)]; ok {
				out[i].Value = v
			}
		}
	}
	for i := range out {
		if !bytes.Equal(out[i].Key, messagesKey) {
			continue
		}
		arr, ch, err := t.messages(out[i].Value)
		if err != nil {
			return nil, err
		}
		if ch {
			out[i].Value, changed = arr, true
		}
	}
	if !changed {
		return snap, nil
	}
	b := make([]byte, 0, len(snap))
	b = append(b, '{')
	for i, m := range out {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(append(append(b, m.Key...), ':'), m.Value...)
	}
	return append(b, '}'), nil
}

// head redacts the snapshot's members other than its conversation
// (title, last error, pending approval), as redact.Redactor.Snapshot
// does: it decodes the snapshot without its messages, redacts it, and
// encodes it again, and returns the members whose value changed (nil
// when none did).
func (t *transform) head(snap []byte, members []record.Member) (map[string][]byte, error) {
	var b []byte
	b = append(b, '{')
	for i, m := range members {
		if i > 0 {
			b = append(b, ',')
		}
		v := m.Value
		if bytes.Equal(m.Key, messagesKey) {
			v = []byte("[]")
		}
		b = append(append(append(b, m.Key...), ':'), v...)
	}
	b = append(b, '}')
	key := sha256.Sum256(b)
	if done, ok := t.heads[key]; ok {
		if done == nil {
			return nil, nil
		}
		return headMembers(done)
	}
	s, err := sessnap.Unmarshal(b)
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	red, n := t.r.Snapshot(s)
	if n == 0 {
		t.heads[key] = nil
		return nil, nil
	}
	enc, err := sessnap.Marshal(red)
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	got, err := headMembers(enc)
	if err != nil {
		return nil, err
	}
	// Only the members the redactor changes are taken from the new
	// encoding: every other byte stays as it was written.
	for k, v := range got {
		old := memberValue(members, k)
		if old == nil || bytes.Equal(old, v) {
			delete(got, k)
			continue
		}
		t.count(old, v)
	}
	t.heads[key] = enc
	if len(got) == 0 {
		t.heads[key] = nil
		return nil, nil
	}
	return got, nil
}

// headKeys are the snapshot members the redactor changes.
var headKeys = []string{`"title"`, `"last_error"`, `"pending"`}

func headMembers(enc []byte) (map[string][]byte, error) {
	ms, err := record.Members(enc)
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	out := map[string][]byte{}
	for _, k := range headKeys {
		if v := memberValue(ms, k); v != nil {
			out[k] = v
		}
	}
	return out, nil
}

func memberValue(ms []record.Member, key string) []byte {
	for _, m := range ms {
		if string(m.Key) == key {
			return m.Value
		}
	}
	return nil
}

// count adds the placeholders new holds beyond old's to the report.
func (t *transform) count(old, new []byte) {
	for rule, n := range placeholders(new) {
		if k := n - placeholders(old)[rule]; k > 0 {
			t.secrets[rule] += k
		}
	}
}

// placeholders counts the placeholders in b, by rule.
func placeholders(b []byte) map[string]int {
	out := map[string]int{}
	const open = "[REDACTED:"
	for {
		i := bytes.Index(b, []byte(open))
		if i < 0 {
			return out
		}
		b = b[i+len(open):]
		if j := bytes.IndexByte(b, ':'); j > 0 {
			out[string(b[:j])]++
		}
	}
}

// messages redacts arr, a stored conversation (pages as references).
func (t *transform) messages(arr []byte) ([]byte, bool, error) {
	elems, err := elements(arr)
	if err != nil {
		return nil, false, fmt.Errorf("messages: %w", err)
	}
	changed := false
	for i, e := range elems {
		var ne []byte
		var err error
		if record.IsPage(e) {
			ne, err = t.page(e)
		} else {
			ne, err = t.message(e)
		}
		if err != nil {
			return nil, false, err
		}
		if ne != nil {
			elems[i], changed = ne, true
		}
	}
	if !changed {
		return arr, false, nil
	}
	return append(append([]byte{'['}, bytes.Join(elems, []byte{','})...), ']'), true, nil
}

// elements splits a JSON array into its elements' bytes, verbatim.
func elements(arr []byte) ([][]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(arr))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		return nil, errors.New("not an array")
	}
	var out [][]byte
	for dec.More() {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, err
		}
		out = append(out, raw)
	}
	if _, err := dec.Token(); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return out, nil
}

// page returns the element of the page that replaces the page e
// references with its messages redacted, or nil when none changed.
func (t *transform) page(e []byte) ([]byte, error) {
	key := sha256.Sum256(e)
	if done, ok := t.elems[key]; ok {
		return done, nil
	}
	p, err := record.ParsePage(e)
	if err != nil {
		return nil, err
	}
	content, err := blobfile.Read(t.fs, t.id, session.ContentRef{Field: session.ContentText, SHA256: p.SHA256, Size: p.Size})
	if err != nil {
		return nil, err
	}
	msgs, err := record.PageMessages(p, content)
	if err != nil {
		return nil, err
	}
	changed := false
	for i, m := range msgs {
		nm, err := t.message(m)
		if err != nil {
			return nil, err
		}
		if nm != nil {
			msgs[i], changed = nm, true
		}
	}
	if !changed {
		t.elems[key] = nil
		return nil, nil
	}
	nc := bytes.Join(msgs, []byte{','})
	hash, err := t.blobs.PutPage(nc)
	if err != nil {
		return nil, err
	}
	t.newBlobs++
	np := record.PageRef{SHA256: hash, Messages: p.Messages, Size: int64(len(nc))}
	t.refs[p.SHA256] = [2]string{pageRefText(p), pageRefText(np)}
	ne := record.EncodePage(np)
	t.elems[key] = ne
	return ne, nil
}

func pageRefText(p record.PageRef) string {
	return fmt.Sprintf(`"sha256":"%s","messages":%d,"size":%d`, p.SHA256, p.Messages, p.Size)
}

func blobRefText(hash string, size int64) string {
	return fmt.Sprintf(`"sha256":"%s","size":%d`, hash, size)
}

// message returns the message element e with its secrets replaced (its
// content kept out of line read, redacted, and kept out of line again
// under its new hash), or nil when it holds none.
func (t *transform) message(e []byte) ([]byte, error) {
	key := sha256.Sum256(e)
	if done, ok := t.elems[key]; ok {
		return done, nil
	}
	var ms sessnap.Messages
	arr := make([]byte, 0, len(e)+2)
	arr = append(append(append(arr, '['), e...), ']')
	if err := json.Unmarshal(arr, &ms); err != nil || len(ms) != 1 {
		return nil, fmt.Errorf("message: %w", errors.Join(err, errors.New("not one message")))
	}
	old := placedRefs(ms[0].Parts)
	if err := ms.Resolve(func(ref session.ContentRef) ([]byte, error) {
		return blobfile.Read(t.fs, t.id, ref)
	}); err != nil {
		return nil, err
	}
	found := t.r.FindMessage(ms[0])
	if len(found) == 0 {
		t.elems[key] = nil
		return nil, nil
	}
	red, n := t.r.Message(ms[0])
	if n == 0 {
		t.elems[key] = nil
		return nil, nil
	}
	for _, f := range found {
		t.secrets[f.Rule]++
	}
	// Content that was out of line goes out of line again (its new
	// hash); a message written inline stays inline.
	var ext sessnap.Externalizer
	if len(old) > 0 {
		ext = &counting{w: t.blobs, n: &t.newBlobs}
	}
	ne, err := sessnap.AppendMessage(nil, red, ext)
	if err != nil {
		return nil, fmt.Errorf("message: %w", err)
	}
	if len(old) > 0 {
		if err := t.renameRefs(old, ne); err != nil {
			return nil, err
		}
	}
	t.elems[key] = ne
	return ne, nil
}

// placedRefs maps each part of parts (nested ones included) that holds a
// content reference to it, by the part's place ("2", "2.0").
func placedRefs(parts []session.Part) map[string]session.ContentRef {
	out := map[string]session.ContentRef{}
	walkParts(parts, "", func(place string, p *session.Part) {
		if p.Ref != nil {
			out[place] = *p.Ref
		}
	})
	return out
}

// walkParts calls fn with every part of parts, nested ones after their
// parent, and its place.
func walkParts(parts []session.Part, prefix string, fn func(place string, p *session.Part)) {
	for i := range parts {
		place := prefix + strconv.Itoa(i)
		fn(place, &parts[i])
		walkParts(parts[i].Content, place+".", fn)
	}
}

// renameRefs records, for forensic copies, what replaces each old
// reference (old, by place) of a message that redaction rewrote as ne:
// the new reference at the same place. Content that went back inline
// (smaller than the blob threshold once redacted) has none: forensic
// copies that reference its old blob get a blob of their own
// (forensicRefs).
func (t *transform) renameRefs(old map[string]session.ContentRef, ne []byte) error {
	var nms sessnap.Messages
	if err := json.Unmarshal(append(append([]byte{'['}, ne...), ']'), &nms); err != nil || len(nms) != 1 {
		return fmt.Errorf("message: %w", errors.Join(err, errors.New("not one message")))
	}
	now := placedRefs(nms[0].Parts)
	for place, ref := range old {
		if nr, ok := now[place]; ok && nr.Field == ref.Field && nr.SHA256 != ref.SHA256 {
			t.refs[ref.SHA256] = [2]string{blobRefText(ref.SHA256, ref.Size), blobRefText(nr.SHA256, nr.Size)}
		}
	}
	return nil
}

// counting is an Externalizer that counts the blobs it makes.
type counting struct {
	w *blobfile.Writer
	n *int
}

func (c *counting) Externalize(field string, content []byte) (session.ContentRef, bool, error) {
	ref, ok, err := c.w.Externalize(field, content)
	if ok && err == nil {
		*c.n++
	}
	return ref, ok, err
}

// forensic returns b, a forensic copy's bytes, with the secrets in it
// replaced and the references to blobs and pages that redaction replaced
// renamed, and how many secrets it replaced (b itself when none).
func (t *transform) forensic(b []byte) ([]byte, int, error) {
	if err := t.forensicRefs(b); err != nil {
		return nil, 0, err
	}
	out, n := t.r.Bytes(b)
	if n > 0 {
		t.count(b, out)
	}
	if len(t.refs) > 0 && bytes.Contains(out, []byte(`"sha256":"`)) {
		s := string(out)
		for _, rr := range t.refs {
			if strings.Contains(s, rr[0]) {
				s = strings.ReplaceAll(s, rr[0], rr[1])
				n++
			}
		}
		out = []byte(s)
	}
	return out, n, nil
}

// Blob and page references as forensic copies hold them (sessnap's part
// reference, record.EncodePage).
var (
	forensicBlobRef = regexp.MustCompile(`"sha256":"([0-9a-f]{64})","size":([0-9]{1,19})`)
	forensicPageRef = regexp.MustCompile(`\{"page":\{"sha256":"([0-9a-f]{64})","messages":([0-9]{1,9}),"size":([0-9]{1,19})\}\}`)
)

// forensicRefs gives each blob and page a forensic copy b references, and
// that the history's redaction did not replace, its redacted
// replacement when it holds a secret: a page through page (its messages
// redacted as the history's are), a blob as a new blob of its content
// with the secrets replaced. That covers the blobs whose redacted content
// went back inline, and a rerun after a crash that left the forensic
// copies unrewritten (the history, already redacted, replaces nothing).
// An unreadable blob or page is left as it is (the copy is evidence of a
// damaged session; a blob collection keeps what it references).
func (t *transform) forensicRefs(b []byte) error {
	for _, m := range forensicPageRef.FindAllSubmatch(b, -1) {
		hash := string(m[1])
		if _, ok := t.refs[hash]; ok {
			continue
		}
		msgs, err1 := strconv.Atoi(string(m[2]))
		size, err2 := strconv.ParseInt(string(m[3]), 10, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		if _, err := t.page(record.EncodePage(record.PageRef{SHA256: hash, Messages: msgs, Size: size})); err != nil {
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, sessionstore.ErrCorrupt) {
				continue
			}
			return err
		}
	}
	for _, m := range forensicBlobRef.FindAllSubmatch(b, -1) {
		hash := string(m[1])
		if _, ok := t.refs[hash]; ok || t.clean[hash] {
			continue
		}
		size, err := strconv.ParseInt(string(m[2]), 10, 64)
		if err != nil {
			continue
		}
		content, err := blobfile.Read(t.fs, t.id, session.ContentRef{Field: session.ContentText, SHA256: hash, Size: size})
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, sessionstore.ErrCorrupt) {
				continue
			}
			return err
		}
		red, n := t.r.Bytes(content)
		if n == 0 {
			t.clean[hash] = true
			continue
		}
		t.count(content, red)
		nh := blob.Hash(red)
		if err := t.blobs.Put(nh, red); err != nil {
			return err
		}
		t.newBlobs++
		t.refs[hash] = [2]string{blobRefText(hash, size), blobRefText(nh, int64(len(red)))}
	}
	return nil
}
