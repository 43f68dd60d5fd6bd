package sessnap

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/sessionstore/sessionstore/session"
)

// MaxSafeInteger is the largest integer every JSON reader (including those
// that parse numbers as IEEE doubles, such as JavaScript and jq) reads
// exactly: 2^53−1.
const MaxSafeInteger = 1<<53 - 1

// Marshal encodes snap as compact JSON. The encoding is deterministic: the
// same snapshot always gives the same bytes (struct fields in declaration
// order, map keys sorted, no HTML escaping, no trailing newline).
//
// Marshal refuses, with ErrUnencodable and the JSON path of the value, any
// value a reader could not read back exactly: an integer beyond
// ±MaxSafeInteger, a string that is not valid UTF-8 (Go would silently
// replace the bad bytes), a non-UTC time, or raw JSON (tool inputs) that is
// not valid UTF-8 JSON.
func Marshal(snap Snapshot) ([]byte, error) {
	v := reflect.ValueOf(snap)
	if err := checkEncodable(v, "$", false); err != nil {
		return nil, err
	}
	return encode(v, "$")
}

// encode is the JSON of v as the snapshot's encoding writes it: no HTML
// escaping, no trailing newline. v passed checkEncodable without raw; an
// error is ErrUnencodable, naming the value under root (encodeError).
func encode(v reflect.Value, root string) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v.Interface()); err != nil {
		return nil, encodeError(v, root, err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// Unmarshal decodes a snapshot. It fails with ErrMalformed when data is not
// valid UTF-8 or not JSON of the snapshot's shape (a wrong JSON type names
// the key), and with ErrUnsupportedFormat for an unknown format tag.
// Unknown keys are ignored. Unmarshal does not check the lifecycle rules;
// Restore does.
func Unmarshal(data []byte) (Snapshot, error) {
	var snap Snapshot
	if !utf8.Valid(data) {
		return snap, fmt.Errorf("%w: not valid UTF-8", ErrMalformed)
	}
	if fast, ok := unmarshalFast(data); ok {
		return checkFormat(fast)
	}
	return unmarshalJSON(data)
}

// UnmarshalElements decodes the snapshot whose JSON is head with elems,
// joined by commas, in its messages array, whose empty value "[]" is
// head[at:at+2]: what Unmarshal decodes of those bytes, with the same
// errors, without writing them out (a stored conversation's elements are
// read where they lie: the record and the pages it references).
func UnmarshalElements(head []byte, at int, elems [][]byte) (Snapshot, error) {
	if at < 0 || at+2 > len(head) || string(head[at:at+2]) != "[]" {
		return Snapshot{}, fmt.Errorf("%w: no empty messages array at byte %d", ErrMalformed, at)
	}
	// The joined bytes are valid UTF-8 when every piece is: a comma or a
	// bracket is between them.
	valid := utf8.Valid(head)
	for _, e := range elems {
		valid = valid && utf8.Valid(e)
	}
	if !valid {
		return Snapshot{}, fmt.Errorf("%w: not valid UTF-8", ErrMalformed)
	}
	if fast, ok := unmarshalElementsFast(head, at, elems); ok {
		return checkFormat(fast)
	}
	n := len(head) + len(elems)
	for _, e := range elems {
		n += len(e)
	}
	joined := append(make([]byte, 0, n), head[:at+1]...)
	for i, e := range elems {
		if i > 0 {
			joined = append(joined, ',')
		}
		joined = append(joined, e...)
	}
	return unmarshalJSON(append(joined, head[at+1:]...))
}

// unmarshalJSON is Unmarshal through encoding/json alone, for what the
// fast decoder declines (fastdecode.go).
func unmarshalJSON(data []byte) (Snapshot, error) {
	var snap Snapshot
	// The messages decoded in the same pass as the rest (not through
	// Messages.UnmarshalJSON, whose own json.Unmarshal would validate
	// and scan them again): the outer field shadows the embedded one.
	var d struct {
		Snapshot
		Messages []messageDTO `json:"messages"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		return Snapshot{}, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	snap = d.Snapshot
	if d.Messages != nil {
		snap.Messages = make(Messages, len(d.Messages))
		for i, m := range d.Messages {
			snap.Messages[i] = m.message()
		}
	}
	return checkFormat(snap)
}

// checkFormat refuses a snapshot of an unknown format.
func checkFormat(snap Snapshot) (Snapshot, error) {
	if snap.Format != "" && snap.Format != Format {
		return Snapshot{}, fmt.Errorf("%w: %q", ErrUnsupportedFormat, snap.Format)
	}
	return snap, nil
}

// Encode is Of followed by Marshal.
func Encode(s *session.Session) ([]byte, error) {
	snap, err := Of(s)
	if err != nil {
		return nil, err
	}
	return Marshal(snap)
}

// Decode is Unmarshal followed by Restore.
func Decode(data []byte) (*session.Session, error) {
	snap, err := Unmarshal(data)
	if err != nil {
		return nil, err
	}
	return snap.Restore()
}

var (
	timeType     = reflect.TypeFor[time.Time]()
	rawType      = reflect.TypeFor[json.RawMessage]()
	messagesType = reflect.TypeFor[Messages]()
)

// checkEncodable walks v (a Snapshot or part of one) and reports the first
// value that cannot be encoded exactly, naming it by its JSON path (root
// names v). The path is built only for a failure: the walk of a value
// that encodes allocates nothing. With raw, it also checks that raw JSON
// parses; without, it checks only its UTF-8, and leaves the rest to the
// encoder that follows the walk, which checks raw JSON as it compacts it
// (encodeError then names the value).
func checkEncodable(v reflect.Value, root string, raw bool) error {
	e := walkEncodable(v, raw)
	if e == nil {
		return nil
	}
	var b strings.Builder
	b.WriteString(root)
	for i := len(e.path) - 1; i >= 0; i-- {
		b.WriteString(e.path[i])
	}
	return fmt.Errorf("%w: %s: %s", ErrUnencodable, b.String(), e.what)
}

// encodeError is the error of the encoding of v (root names it) that
// failed with err after checkEncodable without raw passed: the value the
// walk finds when it checks raw JSON too, or err.
func encodeError(v reflect.Value, root string, err error) error {
	if werr := checkEncodable(v, root, true); werr != nil {
		return werr
	}
	return fmt.Errorf("%w: %w", ErrUnencodable, err)
}

// unencodable is walkEncodable's failure: what is wrong, and the path to
// it, innermost step first.
type unencodable struct {
	what string
	path []string
}

func (e *unencodable) at(step string) *unencodable {
	e.path = append(e.path, step)
	return e
}

func fail(format string, args ...any) *unencodable {
	return &unencodable{what: fmt.Sprintf(format, args...)}
}

// jsonFields caches each struct type's fields as JSON names them ("" for
// a field json skips).
var jsonFields sync.Map // reflect.Type -> []string

func fieldNames(t reflect.Type) []string {
	if names, ok := jsonFields.Load(t); ok {
		return names.([]string)
	}
	names := make([]string, t.NumField())
	for i := range names {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-" || !f.IsExported():
			name = ""
		case name == "":
			name = f.Name
		}
		names[i] = name
	}
	jsonFields.Store(t, names)
	return names
}

func walkEncodable(v reflect.Value, raw bool) *unencodable {
	switch v.Type() {
	case timeType:
		t := v.Interface().(time.Time)
		if !t.IsZero() && t.Location() != time.UTC {
			return fail("time %s is not UTC", t)
		}
		if t.Year() < 0 || t.Year() > 9999 {
			return fail("time %s outside years 0000-9999", t)
		}
		return nil
	case rawType:
		b := v.Bytes()
		if len(b) > 0 && (!utf8.Valid(b) || raw && !json.Valid(b)) {
			return fail("raw JSON is not valid UTF-8 JSON")
		}
		return nil
	case messagesType:
		// Each message as it is encoded, so that paths use its JSON keys.
		for i, m := range v.Interface().(Messages) {
			if e := walkEncodable(reflect.ValueOf(dtoOf(m)), raw); e != nil {
				return e.at("[" + strconv.Itoa(i) + "]")
			}
		}
		return nil
	}
	switch v.Kind() {
	case reflect.String:
		if !utf8.ValidString(v.String()) {
			return fail("string is not valid UTF-8")
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if n := v.Int(); n > MaxSafeInteger || n < -MaxSafeInteger {
			return fail("integer %d beyond ±2^53−1", n)
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if n := v.Uint(); n > MaxSafeInteger {
			return fail("integer %d beyond 2^53−1", n)
		}
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			return walkEncodable(v.Elem(), raw)
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return nil // []byte: base64, any bytes are fine
		}
		for i := range v.Len() {
			if e := walkEncodable(v.Index(i), raw); e != nil {
				return e.at("[" + strconv.Itoa(i) + "]")
			}
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			k := it.Key()
			if k.Kind() == reflect.String && !utf8.ValidString(k.String()) {
				return fail("map key is not valid UTF-8")
			}
			if e := walkEncodable(it.Value(), raw); e != nil {
				return e.at("." + k.String())
			}
		}
	case reflect.Struct:
		for i, name := range fieldNames(v.Type()) {
			if name == "" {
				continue
			}
			if e := walkEncodable(v.Field(i), raw); e != nil {
				return e.at("." + name)
			}
		}
	}
	return nil
}
