package sessnap

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"runtime"
	"sync"

	"github.com/sessionstore/sessionstore/session"
)

// The fast decoder reads a snapshot's messages, which are nearly all of a
// snapshot's bytes, without encoding/json's reflection and its separate
// validation pass, and on every core for a long conversation. It reads
// what writers store: keys as written, no null, no \u escape of a
// surrogate, no key that only a case-insensitive match would fill. For
// anything else it declines and Unmarshal decodes the whole snapshot with
// encoding/json, so that every snapshot decodes to what encoding/json
// makes of it (FuzzFastUnmarshal holds the two to that).

var (
	messageKeys = []string{"id", "role", "parts", "provider_phase", "created_at", "response_id", "model",
		"usage", "injected", "error", "compaction"}
	partKeys = []string{"type", "text", "tool_call_id", "name", "input", "output", "is_error", "media_type",
		"data", "url", "signature", "encrypted", "provider_executed", "content", "result", "blob"}
	blobKeys = []string{"of", "sha256", "size"}
)

// parallelMessageBytes is the size of a messages array above which the
// fast decoder splits it between cores.
const parallelMessageBytes = 256 << 10

// unmarshalFast decodes data, a snapshot in valid UTF-8, or reports false
// for encoding/json to decode it.
func unmarshalFast(data []byte) (Snapshot, bool) {
	return unmarshalFastWith(data, (*scanner).messages)
}

// unmarshalElementsFast decodes the snapshot head with elems in its
// messages array, whose empty value "[]" is head[at:] (UnmarshalElements),
// in valid UTF-8, or reports false for encoding/json to decode it.
func unmarshalElementsFast(head []byte, at int, elems [][]byte) (Snapshot, bool) {
	return unmarshalFastWith(head, func(s *scanner) (Messages, bool) {
		if s.i != at || !s.literal("[]") {
			return nil, false
		}
		return decodeElements(elems)
	})
}

// unmarshalFastWith decodes data, a snapshot in valid UTF-8, its messages
// array read by messages (with the scanner at its value, which it steps
// over), or reports false for encoding/json to decode it.
func unmarshalFastWith(data []byte, messages func(s *scanner) (Messages, bool)) (Snapshot, bool) {
	s := scanner{b: data}
	msgStart, msgEnd := -1, -1
	var msgs Messages
	ok := s.object(func(key []byte, esc bool) bool {
		if !esc && string(key) == "messages" {
			if msgStart >= 0 {
				return false
			}
			msgStart = s.i
			var ok bool
			msgs, ok = messages(&s)
			msgEnd = s.i
			return ok
		}
		if !foreignKey(key, esc, []string{"messages"}) {
			return false
		}
		_, ok := s.value(1)
		return ok
	})
	if s.ws(); !ok || s.i != len(s.b) {
		return Snapshot{}, false
	}
	head := data
	if msgStart >= 0 {
		head = make([]byte, 0, len(data)-(msgEnd-msgStart)+4)
		head = append(head, data[:msgStart]...)
		head = append(head, "null"...)
		head = append(head, data[msgEnd:]...)
	}
	var d struct {
		Snapshot
		Messages []messageDTO `json:"messages"`
	}
	if err := json.Unmarshal(head, &d); err != nil {
		return Snapshot{}, false
	}
	snap := d.Snapshot
	snap.Messages = msgs
	return snap, true
}

// messages reads the messages array: its elements are found first, then
// decoded (decodeElements).
func (s *scanner) messages() (Messages, bool) {
	if s.peek() == 'n' {
		return nil, false // null: encoding/json's business
	}
	var elems [][]byte
	ok := s.array(func() bool {
		from := s.i
		if !s.skipFast() {
			return false
		}
		elems = append(elems, s.b[from:s.i])
		return true
	})
	if !ok {
		return nil, false
	}
	return decodeElements(elems)
}

// decodeElements decodes each of elems, a messages array's elements, into
// its own slot of the result, on every core when they are long: chunks of
// about equal bytes, one per core, so the result does not depend on the
// split.
func decodeElements(elems [][]byte) (Messages, bool) {
	out := make(Messages, len(elems))
	total := 0
	for _, e := range elems {
		total += len(e) + 1
	}
	workers := runtime.GOMAXPROCS(0)
	if total < parallelMessageBytes || workers < 2 || len(elems) < 2 {
		return out, decodeMessages(elems, out)
	}
	var wg sync.WaitGroup
	results := make([]bool, workers)
	per := total / workers
	lo := 0
	for w := range workers {
		hi, n := lo, 0
		for hi < len(elems) && (hi == lo || w == workers-1 || n < per) {
			n += len(elems[hi]) + 1
			hi++
		}
		wg.Add(1)
		go func(w, lo, hi int) {
			defer wg.Done()
			results[w] = decodeMessages(elems[lo:hi], out[lo:hi])
		}(w, lo, hi)
		lo = hi
	}
	wg.Wait()
	for _, r := range results {
		if !r {
			return nil, false
		}
	}
	return out, true
}

// decodeMessages decodes each element elems[k] into out[k].
func decodeMessages(elems [][]byte, out Messages) bool {
	for k, e := range elems {
		s := scanner{b: e}
		m, ok := s.message()
		if !ok || s.i != len(e) {
			return false
		}
		out[k] = m
	}
	return true
}

// skipFast steps over a value without checking it (the element's decoder
// checks it): brackets are counted outside strings, and a string ends at
// a quote after an even number of backslashes.
func (s *scanner) skipFast() bool {
	depth := 0
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch c {
		case '"':
			j := s.i + 1
			for {
				k := bytes.IndexByte(s.b[j:], '"')
				if k < 0 {
					return false
				}
				j += k
				n := 0
				for p := j - 1; p > s.i && s.b[p] == '\\'; p-- {
					n++
				}
				if n%2 == 0 {
					break
				}
				j++
			}
			s.i = j + 1
		case '{', '[':
			depth++
			s.i++
		case '}', ']':
			if depth == 0 {
				return true // the array's own end, or a member's
			}
			depth--
			s.i++
		case ',':
			if depth == 0 {
				return true
			}
			s.i++
		default:
			s.i++
			continue
		}
		if depth == 0 && c != ',' {
			// a string or a closed container: the value ends here
			// unless it was an opening bracket.
			return true
		}
	}
	return depth == 0
}

// message reads one message object.
func (s *scanner) message() (session.Message, bool) {
	var m session.Message
	ok := s.fields(messageKeys, 3, func(name string) bool {
		var ok bool
		switch name {
		case "id":
			m.ID, ok = s.text()
		case "role":
			var r string
			r, ok = s.text()
			m.Role = session.Role(r)
		case "parts":
			m.Parts, ok = s.parts(4)
		case "provider_phase":
			m.ProviderPhase, ok = s.text()
		case "created_at":
			var raw []byte
			if s.peek() != '"' {
				return false
			}
			if raw, ok = s.value(3); ok {
				ok = m.CreatedAt.UnmarshalJSON(raw) == nil
			}
		case "response_id":
			m.ResponseID, ok = s.text()
		case "model":
			m.Model, ok = s.text()
		case "usage":
			m.Usage = new(session.Usage)
			ok = s.decodeWithJSON(m.Usage)
		case "injected":
			m.Injected, ok = s.boolean()
		case "error":
			m.Error, ok = s.text()
		case "compaction":
			m.Compaction = new(session.Compaction)
			ok = s.decodeWithJSON(m.Compaction)
		}
		return ok
	})
	return m, ok
}

// decodeWithJSON reads an object value into v with encoding/json (small
// values of fixed shape).
func (s *scanner) decodeWithJSON(v any) bool {
	if s.peek() != '{' {
		return false
	}
	raw, ok := s.value(3)
	return ok && json.Unmarshal(raw, v) == nil
}

// parts reads an array of parts at depth.
func (s *scanner) parts(depth int) ([]session.Part, bool) {
	if depth > maxFastDepth || s.peek() != '[' {
		return nil, false
	}
	out := []session.Part{}
	ok := s.array(func() bool {
		p, ok := s.part(depth + 1)
		out = append(out, p)
		return ok
	})
	return out, ok
}

// part reads one part object at depth.
func (s *scanner) part(depth int) (session.Part, bool) {
	var p session.Part
	ok := s.fields(partKeys, depth+1, func(name string) bool {
		var ok bool
		switch name {
		case "type":
			var t string
			t, ok = s.text()
			p.Type = session.PartType(t)
		case "text":
			p.Text, ok = s.text()
		case "tool_call_id":
			p.ToolCallID, ok = s.text()
		case "name":
			p.Name, ok = s.text()
		case "input":
			p.Input, ok = s.raw(depth + 1)
		case "output":
			p.Output, ok = s.text()
		case "is_error":
			p.IsError, ok = s.boolean()
		case "media_type":
			p.MediaType, ok = s.text()
		case "data":
			var b64 []byte
			if b64, ok = s.bytesValue(); ok {
				// As encoding/json decodes a []byte.
				b := make([]byte, base64.StdEncoding.DecodedLen(len(b64)))
				n, err := base64.StdEncoding.Decode(b, b64)
				p.Data, ok = b[:n], err == nil
			}
		case "url":
			p.URL, ok = s.text()
		case "signature":
			p.Signature, ok = s.text()
		case "encrypted":
			p.Encrypted, ok = s.text()
		case "provider_executed":
			p.ProviderExecuted, ok = s.boolean()
		case "content":
			p.Content, ok = s.parts(depth + 1)
		case "result":
			p.Result, ok = s.raw(depth + 1)
		case "blob":
			p.Ref, ok = s.blob()
		}
		return ok
	})
	return p, ok
}

// raw reads a value as json.RawMessage keeps it: a copy of its bytes.
func (s *scanner) raw(depth int) (json.RawMessage, bool) {
	v, ok := s.value(depth)
	if !ok {
		return nil, false
	}
	return append(json.RawMessage(nil), v...), true
}

// blob reads a part's content reference.
func (s *scanner) blob() (*session.ContentRef, bool) {
	if s.peek() != '{' {
		return nil, false
	}
	var r session.ContentRef
	ok := s.fields(blobKeys, maxFastDepth/2, func(name string) bool {
		var ok bool
		switch name {
		case "of":
			r.Field, ok = s.text()
		case "sha256":
			r.SHA256, ok = s.text()
		case "size":
			r.Size, ok = s.integer()
		}
		return ok
	})
	return &r, ok
}

// fields reads an object whose keys are names, calling field with each
// one: a known key at most once and never null (encoding/json's business
// otherwise, so false), a foreign key skipped as a value at depth.
func (s *scanner) fields(names []string, depth int, field func(name string) bool) bool {
	var seen uint32
	return s.object(func(key []byte, esc bool) bool {
		k := -1
		if !esc {
			k = keyIndex(key, names)
		}
		if k < 0 {
			if !foreignKey(key, esc, names) {
				return false
			}
			_, ok := s.value(depth)
			return ok
		}
		if seen&(1<<k) != 0 || s.peek() == 'n' {
			return false // a repeated key or a null
		}
		seen |= 1 << k
		return field(names[k])
	})
}

// keyIndex is key's index in names, or -1.
func keyIndex(key []byte, names []string) int {
	for i, n := range names {
		if string(key) == n {
			return i
		}
	}
	return -1
}
