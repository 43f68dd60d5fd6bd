package importer

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"sync"
	"unicode"
	"unicode/utf8"
)

// The converters decode every line of their sources into Go structs, and
// values within a line again (a message, its content blocks). DecodeLine
// validates a line once, as encoding/json.Valid does, and the decoder
// below then reads it without validating it again: it decodes what the
// target has fields for and skips the rest, so a long string a converter
// does not want costs a search for its closing quote. The decoder gives
// the results encoding/json's Unmarshal gives, for the kinds of value the
// converters decode into (see plan); raw values are the exception, by
// design: they are not copied (see Unmarshal).

// ErrSyntax reports input that is not valid JSON.
var ErrSyntax = errors.New("importer: invalid JSON")

// DecodeLine decodes one JSON line of a source into each of vs, as
// encoding/json's Unmarshal does: an error when data is not valid JSON or
// does not fit one of vs (a wrong JSON type for a field: every field that
// fits is still set). The json.RawMessage values it sets are data's bytes,
// valid while data is.
func DecodeLine(data []byte, vs ...any) error {
	if ok, _ := scan(data); !ok {
		return fmt.Errorf("%w: line of %d bytes", ErrSyntax, len(data))
	}
	for _, v := range vs {
		if err := Unmarshal(data, v); err != nil {
			return err
		}
	}
	return nil
}

// Unmarshal decodes data, a value within a line DecodeLine decoded (valid
// JSON), into v as encoding/json's Unmarshal does, except that the
// json.RawMessage values it sets are data's bytes, not copies. Given
// data that is not valid JSON it returns an error or decodes part of it;
// it never reads past data.
func Unmarshal(data []byte, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return &json.InvalidUnmarshalError{Type: reflect.TypeOf(v)}
	}
	var d decoder
	i := skipSpace(data, 0)
	end := planOf(rv.Type().Elem()).decode(&d, data, i, rv.Elem())
	if end < 0 || skipSpace(data, end) != len(data) {
		return fmt.Errorf("%w: value of %d bytes", ErrSyntax, len(data))
	}
	return d.err
}

// Keys is the set of a JSON object's keys, for DecodeLine: what a
// converter needs of a line's fields to count those it does not know,
// without copying their values.
// It decodes with encoding/json too.
type Keys map[string]present

type present struct{}

// UnmarshalJSON ignores the value: only the key is kept.
func (*present) UnmarshalJSON([]byte) error { return nil }

// Member returns the value of the member of raw, a JSON object within a
// line DecodeLine decoded, whose key is key exactly (the last, when there
// are several): nil when there is none, or raw is not an object. Like
// Unmarshal's raw values, it is raw's bytes.
func Member(raw []byte, key string) json.RawMessage {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return nil
	}
	var out json.RawMessage
	members(raw, i, func(k []byte, j int) int {
		end := skip(raw, j)
		if end >= 0 && string(k) == key {
			out = raw[j:end:end]
		}
		return end
	})
	return out
}

// decoder is the state of one Unmarshal: the first value that did not fit
// its target, which encoding/json reports after decoding the rest.
type decoder struct {
	err error
}

func (d *decoder) mismatch(b []byte, i int, t reflect.Type) int {
	end := skip(b, i)
	if d.err == nil && end >= 0 {
		d.err = &json.UnmarshalTypeError{Value: kindOf(b[i]), Type: t, Offset: int64(i)}
	}
	return end
}

// kindOf names the JSON kind of a value by its first byte, as
// encoding/json's type errors do.
func kindOf(c byte) string {
	switch c {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "bool"
	case 'n':
		return "null"
	}
	return "number"
}

// A plan decodes the value starting at b[i] into v, of the plan's type,
// and returns the value's end (-1: b does not hold a value there).
type plan struct {
	decode func(d *decoder, b []byte, i int, v reflect.Value) int
}

var (
	plans   sync.Map   // reflect.Type → *plan, complete
	plansMu sync.Mutex // held while plans are built
	rawType = reflect.TypeFor[json.RawMessage]()
	keysTyp = reflect.TypeFor[Keys]()
)

func planOf(t reflect.Type) *plan {
	if p, ok := plans.Load(t); ok {
		return p.(*plan)
	}
	plansMu.Lock()
	defer plansMu.Unlock()
	building := map[reflect.Type]*plan{}
	p := planLocked(t, building)
	// The plans are published once all of them are complete: another
	// goroutine never finds one whose decoding is still being built.
	for t, q := range building {
		plans.Store(t, q)
	}
	return p
}

// planLocked returns the plan of t, building it (and the plans it uses)
// into building. A recursive type finds its plan there while it is being
// built; it is complete before any decoding uses it.
func planLocked(t reflect.Type, building map[reflect.Type]*plan) *plan {
	if p, ok := plans.Load(t); ok {
		return p.(*plan)
	}
	if p := building[t]; p != nil {
		return p
	}
	p := &plan{}
	building[t] = p
	p.decode = build(t, building)
	return p
}

// build returns the decoding of one type. The kinds are those the
// converters decode into; any other is a programming error, reported at
// once (the converters' tests decode every type they use).
func build(t reflect.Type, building map[reflect.Type]*plan) func(*decoder, []byte, int, reflect.Value) int {
	switch {
	case t == rawType:
		return decodeRaw
	case t == keysTyp:
		return decodeKeys
	case reflect.PointerTo(t).Implements(reflect.TypeFor[json.Unmarshaler]()):
		panic(fmt.Sprintf("importer: cannot decode %v: it has its own UnmarshalJSON", t))
	}
	switch t.Kind() {
	case reflect.String:
		return decodeString
	case reflect.Bool:
		return decodeBool
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return decodeInt
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return decodeUint
	case reflect.Float32, reflect.Float64:
		return decodeFloat
	case reflect.Pointer:
		return pointerPlan(t, building)
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			break // encoding/json's base64; no converter reads one
		}
		return slicePlan(t, building)
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			break
		}
		return mapPlan(t, building)
	case reflect.Struct:
		return structPlan(t, building)
	}
	panic(fmt.Sprintf("importer: cannot decode into %v", t))
}

func decodeRaw(_ *decoder, b []byte, i int, v reflect.Value) int {
	end := skip(b, i)
	if end >= 0 {
		v.SetBytes(b[i:end:end])
	}
	return end
}

func decodeKeys(d *decoder, b []byte, i int, v reflect.Value) int {
	switch {
	case i >= len(b):
		return -1
	case b[i] == 'n':
		v.SetZero()
		return scanLiteral(b, i, "null")
	case b[i] != '{':
		return d.mismatch(b, i, v.Type())
	}
	keys := v.Interface().(Keys)
	if keys == nil {
		keys = Keys{}
		v.Set(reflect.ValueOf(keys))
	}
	return members(b, i, func(key []byte, j int) int {
		if _, ok := keys[string(key)]; !ok {
			keys[string(key)] = present{}
		}
		return skip(b, j)
	})
}

// members calls value with each member's key (unquoted) and the start of
// its value, in order, in the object starting at b[i]; value returns the
// value's end. members returns the object's end, or -1.
func members(b []byte, i int, value func(key []byte, j int) int) int {
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return -1
		}
		key, end := unquote(b, i)
		if end < 0 {
			return -1
		}
		if i = skipSpace(b, end); i >= len(b) || b[i] != ':' {
			return -1
		}
		if i = value(key, skipSpace(b, i+1)); i < 0 {
			return -1
		}
		if i = skipSpace(b, i); i >= len(b) {
			return -1
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			return i + 1
		default:
			return -1
		}
	}
}

func decodeString(d *decoder, b []byte, i int, v reflect.Value) int {
	switch {
	case i >= len(b):
		return -1
	case b[i] == '"':
		s, end := stringAt(b, i)
		if end >= 0 {
			v.SetString(s)
		}
		return end
	case b[i] == 'n':
		return scanLiteral(b, i, "null")
	}
	return d.mismatch(b, i, v.Type())
}

func decodeBool(d *decoder, b []byte, i int, v reflect.Value) int {
	switch {
	case i >= len(b):
		return -1
	case b[i] == 't':
		v.SetBool(true)
		return scanLiteral(b, i, "true")
	case b[i] == 'f':
		v.SetBool(false)
		return scanLiteral(b, i, "false")
	case b[i] == 'n':
		return scanLiteral(b, i, "null")
	}
	return d.mismatch(b, i, v.Type())
}

// number returns the number starting at b[i], and its end; ok is false
// for a value that is not a number (a mismatch, or null).
func number(d *decoder, b []byte, i int, t reflect.Type) (s string, end int, ok bool) {
	switch {
	case i >= len(b):
		return "", -1, false
	case b[i] == 'n':
		return "", scanLiteral(b, i, "null"), false
	case b[i] != '-' && !isDigit(b[i]):
		return "", d.mismatch(b, i, t), false
	}
	end = scanNumber(b, i)
	if end < 0 {
		return "", -1, false
	}
	return string(b[i:end]), end, true
}

func (d *decoder) numberMismatch(s string, i int, t reflect.Type) {
	if d.err == nil {
		d.err = &json.UnmarshalTypeError{Value: "number " + s, Type: t, Offset: int64(i)}
	}
}

func decodeInt(d *decoder, b []byte, i int, v reflect.Value) int {
	s, end, ok := number(d, b, i, v.Type())
	if ok {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || v.OverflowInt(n) {
			d.numberMismatch(s, i, v.Type())
		} else {
			v.SetInt(n)
		}
	}
	return end
}

func decodeUint(d *decoder, b []byte, i int, v reflect.Value) int {
	s, end, ok := number(d, b, i, v.Type())
	if ok {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil || v.OverflowUint(n) {
			d.numberMismatch(s, i, v.Type())
		} else {
			v.SetUint(n)
		}
	}
	return end
}

func decodeFloat(d *decoder, b []byte, i int, v reflect.Value) int {
	s, end, ok := number(d, b, i, v.Type())
	if ok {
		n, err := strconv.ParseFloat(s, v.Type().Bits())
		if err != nil || v.OverflowFloat(n) {
			d.numberMismatch(s, i, v.Type())
		} else {
			v.SetFloat(n)
		}
	}
	return end
}

// pointerPlan: null sets the pointer nil; any other value is decoded into
// what it points to, allocated first when nil (even for a value of the
// wrong kind, as encoding/json does).
func pointerPlan(t reflect.Type, building map[reflect.Type]*plan) func(*decoder, []byte, int, reflect.Value) int {
	elem := planLocked(t.Elem(), building)
	return func(d *decoder, b []byte, i int, v reflect.Value) int {
		if i < len(b) && b[i] == 'n' {
			v.SetZero()
			return scanLiteral(b, i, "null")
		}
		if v.IsNil() {
			v.Set(reflect.New(t.Elem()))
		}
		return elem.decode(d, b, i, v.Elem())
	}
}

// slicePlan: an array's elements decoded into the slice's (grown as
// needed, then cut to the array's length; an empty array is an empty
// slice, not nil); null sets it nil.
func slicePlan(t reflect.Type, building map[reflect.Type]*plan) func(*decoder, []byte, int, reflect.Value) int {
	elem := planLocked(t.Elem(), building)
	return func(d *decoder, b []byte, i int, v reflect.Value) int {
		switch {
		case i >= len(b):
			return -1
		case b[i] == 'n':
			v.SetZero()
			return scanLiteral(b, i, "null")
		case b[i] != '[':
			return d.mismatch(b, i, t)
		}
		n := 0
		i = skipSpace(b, i+1)
		if i < len(b) && b[i] == ']' {
			i++
		} else {
			for {
				if n >= v.Cap() {
					v.Grow(1)
				}
				if n >= v.Len() {
					v.SetLen(n + 1)
				}
				if i = elem.decode(d, b, i, v.Index(n)); i < 0 {
					return -1
				}
				n++
				if i = skipSpace(b, i); i >= len(b) {
					return -1
				}
				if b[i] == ']' {
					i++
					break
				}
				if b[i] != ',' {
					return -1
				}
				i = skipSpace(b, i+1)
			}
		}
		if n < v.Len() {
			v.SetLen(n)
		}
		if n == 0 {
			v.Set(reflect.MakeSlice(t, 0, 0))
		}
		return i
	}
}

// mapPlan: an object's members set in the map (made when nil), each
// value decoded into a new element; null sets the map nil.
func mapPlan(t reflect.Type, building map[reflect.Type]*plan) func(*decoder, []byte, int, reflect.Value) int {
	elem := planLocked(t.Elem(), building)
	return func(d *decoder, b []byte, i int, v reflect.Value) int {
		switch {
		case i >= len(b):
			return -1
		case b[i] == 'n':
			v.SetZero()
			return scanLiteral(b, i, "null")
		case b[i] != '{':
			return d.mismatch(b, i, t)
		}
		if v.IsNil() {
			v.Set(reflect.MakeMap(t))
		}
		return members(b, i, func(key []byte, j int) int {
			e := reflect.New(t.Elem()).Elem()
			end := elem.decode(d, b, j, e)
			if end >= 0 {
				v.SetMapIndex(reflect.ValueOf(string(key)).Convert(t.Key()), e)
			}
			return end
		})
	}
}

// field is one struct field a key can set.
type field struct {
	index int
	plan  *plan
}

// structPlan: an object's members set the fields encoding/json would set
// for them: the field a key names exactly, else the first whose name
// equals it but for case (as encoding/json folds names); other members
// are skipped. Null leaves the struct as it is.
func structPlan(t reflect.Type, building map[reflect.Type]*plan) func(*decoder, []byte, int, reflect.Value) int {
	exact, folded := map[string]field{}, map[string]field{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if !f.IsExported() || tag == "-" {
			continue
		}
		if f.Anonymous {
			panic(fmt.Sprintf("importer: cannot decode into %v: embedded field %s", t, f.Name))
		}
		name, opts := tag, ""
		for j := range len(tag) {
			if tag[j] == ',' {
				name, opts = tag[:j], tag[j:]
				break
			}
		}
		if opts != "" && opts != ",omitempty" && opts != ",omitzero" {
			panic(fmt.Sprintf("importer: cannot decode into %v: field %s has options %q", t, f.Name, opts))
		}
		if name == "" {
			name = f.Name
		}
		if _, dup := exact[name]; dup {
			panic(fmt.Sprintf("importer: cannot decode into %v: two fields named %q", t, name))
		}
		fl := field{index: i, plan: planLocked(f.Type, building)}
		exact[name] = fl
		if k := string(foldName([]byte(name))); !hasKey(folded, k) {
			folded[k] = fl
		}
	}
	return func(d *decoder, b []byte, i int, v reflect.Value) int {
		switch {
		case i >= len(b):
			return -1
		case b[i] == 'n':
			return scanLiteral(b, i, "null")
		case b[i] != '{':
			return d.mismatch(b, i, t)
		}
		return members(b, i, func(key []byte, j int) int {
			f, ok := exact[string(key)]
			if !ok {
				var arr [32]byte
				f, ok = folded[string(appendFoldedName(arr[:0], key))]
			}
			if !ok {
				return skip(b, j)
			}
			return f.plan.decode(d, b, j, v.Field(f.index))
		})
	}
}

func hasKey(m map[string]field, k string) bool {
	_, ok := m[k]
	return ok
}

// foldName returns name folded as encoding/json folds a key to match it
// with a field's name: ASCII letters in upper case, every other rune the
// smallest of its case-folding orbit.
func foldName(name []byte) []byte { return appendFoldedName(nil, name) }

func appendFoldedName(out, in []byte) []byte {
	for i := 0; i < len(in); {
		if c := in[i]; c < utf8.RuneSelf {
			if 'a' <= c && c <= 'z' {
				c -= 'a' - 'A'
			}
			out = append(out, c)
			i++
			continue
		}
		r, n := utf8.DecodeRune(in[i:])
		out = utf8.AppendRune(out, foldRune(r))
		i += n
	}
	return out
}

func foldRune(r rune) rune {
	for {
		r2 := unicode.SimpleFold(r)
		if r2 <= r {
			return r2
		}
		r = r2
	}
}
