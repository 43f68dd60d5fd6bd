package appender

import (
	"reflect"
	"sync"
	"time"

	"github.com/sessionstore/sessionstore/internal/record"
	"github.com/sessionstore/sessionstore/sessnap"
)

// headCache is the encoding of the stored revision's head (the snapshot's
// members but the conversation), kept with a copy of the head it encodes.
// A writer's appends mostly leave the head as it was, or change it in a
// few fields; comparing the head field by field with the copy costs a
// fraction of encoding it again (sessnap.MarshalHead) and splitting the
// encoding into members (record.Members), so an unchanged head is encoded
// once.
//
// The copy is deep (cloneValue): the caller's snapshot shares its maps,
// slices and pointed-to values with the caller, who may change them in
// place between appends, so the comparison must be with the values as
// they were when encoded, not with the same memory.
type headCache struct {
	ok      bool
	head    sessnap.Snapshot // Messages nil; deep copy
	enc     []byte           // sessnap.MarshalHead(head); never changed
	members []record.Member  // record.Members(enc); never changed
	out     []record.Member  // the copy of members lookup returned last
}

// lookup returns the head's encoding and members when head encodes as
// the cached one. The members are a copy, the caller's to change until
// the next lookup (record.Tracker keeps their bytes, not the slice).
func (c *headCache) lookup(head *sessnap.Snapshot) ([]byte, []record.Member, bool) {
	if !c.ok || !headCacheable() || !reflect.DeepEqual(&c.head, head) {
		return nil, nil, false
	}
	c.out = append(c.out[:0], c.members...)
	return c.enc, c.out, true
}

// store remembers enc and members as the encoding of head.
func (c *headCache) store(head *sessnap.Snapshot, enc []byte, members []record.Member) {
	if !headCacheable() {
		return
	}
	*c = headCache{ok: true, enc: enc, members: append([]record.Member(nil), members...), out: c.out}
	cloneValue(reflect.ValueOf(&c.head).Elem(), reflect.ValueOf(head).Elem())
}

// headCacheable reports whether the head type is one that cloneValue
// copies whole and whose equal values (reflect.DeepEqual) encode alike:
// made of exported fields, strings, integers, booleans, pointers, slices,
// arrays and maps of those, and time.Time (whose unexported fields are
// plain values and a *Location that is never changed). An interface, a
// func, a channel or another struct with unexported fields would hide
// state a copy does not capture; with one, no head is cached.
var headCacheable = sync.OnceValue(func() bool {
	return cacheableType(reflect.TypeFor[sessnap.Snapshot](), map[reflect.Type]bool{})
})

var timeType = reflect.TypeFor[time.Time]()

func cacheableType(t reflect.Type, seen map[reflect.Type]bool) bool {
	if seen[t] || t == timeType {
		return true
	}
	seen[t] = true
	switch t.Kind() {
	case reflect.Bool, reflect.String,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return true // not floats: -0 and 0 are DeepEqual, and encode apart
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return cacheableType(t.Elem(), seen)
	case reflect.Map:
		return cacheableType(t.Key(), seen) && cacheableType(t.Elem(), seen)
	case reflect.Struct:
		for i := range t.NumField() {
			if f := t.Field(i); !f.IsExported() || !cacheableType(f.Type, seen) {
				return false
			}
		}
		return true
	}
	return false
}

// cloneValue sets dst, settable, to a deep copy of src, of a type that
// cacheableType accepts: nothing of dst shares memory with src but
// strings (immutable) and time.Time's Location.
func cloneValue(dst, src reflect.Value) {
	switch src.Kind() {
	case reflect.Pointer:
		if src.IsNil() {
			return
		}
		p := reflect.New(src.Type().Elem())
		cloneValue(p.Elem(), src.Elem())
		dst.Set(p)
	case reflect.Slice:
		if src.IsNil() {
			return
		}
		s := reflect.MakeSlice(src.Type(), src.Len(), src.Len())
		for i := range src.Len() {
			cloneValue(s.Index(i), src.Index(i))
		}
		dst.Set(s)
	case reflect.Array:
		for i := range src.Len() {
			cloneValue(dst.Index(i), src.Index(i))
		}
	case reflect.Map:
		if src.IsNil() {
			return
		}
		m := reflect.MakeMapWithSize(src.Type(), src.Len())
		it := src.MapRange()
		for it.Next() {
			k := reflect.New(src.Type().Key()).Elem()
			cloneValue(k, it.Key())
			v := reflect.New(src.Type().Elem()).Elem()
			cloneValue(v, it.Value())
			m.SetMapIndex(k, v)
		}
		dst.Set(m)
	case reflect.Struct:
		if src.Type() == timeType {
			dst.Set(src)
			return
		}
		for i := range src.NumField() {
			cloneValue(dst.Field(i), src.Field(i))
		}
	default:
		dst.Set(src)
	}
}
