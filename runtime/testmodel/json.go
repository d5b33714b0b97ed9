package testmodel

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
)

// object is a JSON object that keeps the order of its keys: a schema's
// properties are written in the order they are listed, and pydantic-ai's
// TestModel writes what it makes of them in that order.
type object struct {
	keys []string
	vals map[string]any
}

func newObject() *object { return &object{vals: map[string]any{}} }

// set sets key, which keeps its place when it is set again.
func (o *object) set(key string, v any) {
	if _, ok := o.vals[key]; !ok {
		o.keys = append(o.keys, key)
	}
	o.vals[key] = v
}

func (o *object) get(key string) any { return o.vals[key] }

func (o *object) lookup(key string) (any, bool) {
	v, ok := o.vals[key]
	return v, ok
}

// MarshalJSON writes the object with its keys in order.
func (o *object) MarshalJSON() ([]byte, error) { return marshal(o) }

// asObject reads v as an object: an *object, or a map[string]any, whose
// keys are taken in sorted order, as encoding/json writes them.
func asObject(v any) (*object, bool) {
	switch v := v.(type) {
	case *object:
		return v, true
	case map[string]any:
		o := &object{keys: make([]string, 0, len(v)), vals: v}
		for k := range v {
			o.keys = append(o.keys, k)
		}
		slices.Sort(o.keys)
		return o, true
	}
	return nil, false
}

// float is a generated number: pydantic-ai makes a number schema's value a
// Python float, which it writes with a fraction (0.0, 2.0).
type float float64

// MarshalJSON writes f as encoding/json does, with ".0" after an integer.
func (f float) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(float64(f))
	if err != nil {
		return nil, err
	}
	if !bytes.ContainsAny(b, ".eE") {
		b = append(b, ".0"...)
	}
	return b, nil
}

// decodeOrdered decodes JSON as encoding/json does with UseNumber, but
// objects into *object, in the order their keys are written (a key given
// twice keeps its first place and its last value).
func decodeOrdered(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	v, err := decodeValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("invalid JSON: more than one value")
	}
	return v, nil
}

func decodeValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch tok {
	case json.Delim('{'):
		o := newObject()
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return nil, err
			}
			v, err := decodeValue(dec)
			if err != nil {
				return nil, err
			}
			o.set(k.(string), v)
		}
		_, err := dec.Token() // }
		return o, err
	case json.Delim('['):
		a := []any{}
		for dec.More() {
			v, err := decodeValue(dec)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
		_, err := dec.Token() // ]
		return a, err
	}
	return tok, nil
}

// marshal writes v as compact JSON, objects in their order and without
// encoding/json's escapes of <, > and &: pydantic-ai writes the text as it
// is.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	if err := write(&b, v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func write(b *bytes.Buffer, v any) error {
	switch v := v.(type) {
	case *object:
		b.WriteByte('{')
		for i, k := range v.keys {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := write(b, k); err != nil {
				return err
			}
			b.WriteByte(':')
			if err := write(b, v.vals[k]); err != nil {
				return err
			}
		}
		b.WriteByte('}')
		return nil
	case map[string]any:
		o, _ := asObject(v)
		return write(b, o)
	case []any:
		b.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := write(b, e); err != nil {
				return err
			}
		}
		b.WriteByte(']')
		return nil
	case float:
		out, err := v.MarshalJSON()
		b.Write(out)
		return err
	}
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	b.Truncate(b.Len() - 1) // Encode's newline
	return nil
}
