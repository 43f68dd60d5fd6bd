// Package onejson owns the rule that an input from outside the store is
// exactly one JSON value: the value, then nothing but white space. The
// strict message codec (sessnap.UnmarshalMessage), the HTTP server's
// request bodies and Agents SDK items, and the retire policy file all
// read their input through it.
//
//	dec := json.NewDecoder(r)
//	dec.DisallowUnknownFields()
//	err := onejson.Decode(dec, &v) // ErrTrailing for anything after v
//
// It must never choose how a value is decoded (unknown keys, numbers,
// size limits): the caller sets that on the decoder.
package onejson
