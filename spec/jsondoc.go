package spec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// parseJSON parses a JSON spec into a document, with the same positions,
// duplicate-key checks and environment expansion as a YAML one.
func parseJSON(file string, src []byte, lookup func(string) (string, bool)) *document {
	d := newDocument(file, src)
	if len(bytes.TrimSpace(src)) == 0 {
		d.add("", Position{File: file, Line: 1, Col: 1}, emptyFileMsg)
		return d
	}
	// encoding/json's scanner reports exact offsets; its token stream, which
	// gives positions below, does not. So syntax is checked first.
	if err := json.Unmarshal(src, new(json.RawMessage)); err != nil {
		off := len(src)
		var se *json.SyntaxError
		if errors.As(err, &se) {
			off = int(se.Offset) - 1
		}
		msg := strings.TrimPrefix(err.Error(), "json: ")
		if msg == "unexpected end of JSON input" {
			msg = "unexpected end of file (is a brace, a bracket or a quote left open?)"
			off = len(bytes.TrimRight(src, " \t\r\n")) // just after the last token
		}
		d.add("", d.offsetPos(max(off, 0)), "invalid JSON: "+msg)
		return d
	}
	p := &jsonParser{d: d, src: src, dec: json.NewDecoder(bytes.NewReader(src)), lookup: lookup}
	p.dec.UseNumber()
	if start := p.skip(); src[start] != '{' {
		var v any
		_ = decodeJSON(src, &v) // numbers as written
		d.add("", d.offsetPos(start), notMappingMsg(describeValue(v, true)))
		return d
	}
	root, err := p.value("", 0)
	if err != nil {
		if !errors.Is(err, errCut) { // cannot happen for valid JSON; reported rather than ignored
			d.add("", Position{File: file}, "invalid JSON: "+err.Error())
		}
		return d
	}
	d.root = root
	return d
}

// errCut stops the parse of a spec nested too deeply or too large, which
// has been reported.
var errCut = errors.New("nested too deeply or too large")

type jsonParser struct {
	d      *document
	src    []byte
	dec    *json.Decoder
	lookup func(string) (string, bool)
}

// skip returns the offset of the next token: the decoder's offset is the end
// of the previous token, before any separator.
func (p *jsonParser) skip() int {
	i := int(p.dec.InputOffset())
	for i < len(p.src) && strings.IndexByte(" \t\r\n,:", p.src[i]) >= 0 {
		i++
	}
	return i
}

func (p *jsonParser) pos(off int) Position { return p.d.offsetPos(off) }

// value reads the value at ptr from the token stream.
func (p *jsonParser) value(ptr string, depth int) (any, error) {
	start := p.skip()
	tok, err := p.dec.Token()
	if err != nil {
		return nil, err
	}
	at := p.pos(start)
	p.d.values[ptr] = at
	if depth > maxDepth {
		p.d.add(ptr, at, prefixed(ptr, fmt.Sprintf("nested more than %d levels deep", maxDepth)))
		return nil, errCut
	}
	size := len(ptr) + 1 // the pointer is kept, with the position
	if t, ok := tok.(string); ok {
		size += len(t)
	}
	if !p.d.grow(size) {
		p.d.add(ptr, at, prefixed(ptr, p.d.tooLarge()))
		return nil, errCut
	}
	switch t := tok.(type) {
	case json.Delim:
		if t == '{' {
			return p.object(ptr, depth)
		}
		var list []any
		for i := 0; p.dec.More(); i++ {
			v, err := p.value(index(ptr, i), depth+1)
			if err != nil {
				return nil, err
			}
			list = append(list, v)
		}
		_, err := p.dec.Token() // ]
		if list == nil {
			list = []any{}
		}
		return list, err
	case string:
		s, problems := expandEnv(t, p.lookup)
		if !p.d.grow(len(s) - len(t)) {
			p.d.add(ptr, at, prefixed(ptr, p.d.tooLarge()))
			return nil, errCut
		}
		for _, e := range problems {
			p.d.add(ptr, p.d.refine(at, true, t[:e.offset], e.ref), prefixed(ptr, e.msg))
		}
		if len(problems) == 0 && wholeRef(t) {
			p.d.quotedRef(ptr, t)
		}
		return s, nil
	case json.Number:
		if beyondFloat(t.String()) {
			p.d.add(ptr, at, prefixed(ptr, nonFiniteMsg(t.String())))
			return nil, nil
		}
		n := jsonNumber(t)
		if n != t {
			p.d.numbers[ptr] = t.String()
		}
		return n, nil
	}
	return tok, nil // bool or nil
}

func (p *jsonParser) object(ptr string, depth int) (any, error) {
	m := map[string]any{}
	for p.dec.More() {
		start := p.skip()
		tok, err := p.dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string)
		k := child(ptr, key)
		at := p.pos(start)
		if _, dup := m[key]; dup {
			p.d.add(noValue, at, prefixed(ptr, fmt.Sprintf("duplicate key %q (already set on line %d)", key, p.d.keys[k].Line)))
			if err := p.drop(depth + 1); err != nil {
				return nil, err
			}
			continue
		}
		p.d.keys[k] = at
		v, err := p.value(k, depth+1)
		if err != nil {
			return nil, err
		}
		m[key] = v
	}
	_, err := p.dec.Token() // }
	return m, err
}

// drop reads a value that is not kept (a duplicate key's), leaving no
// positions behind.
func (p *jsonParser) drop(depth int) error {
	const scratch = "\x00dropped"
	values, keys := p.d.values, p.d.keys
	p.d.values, p.d.keys = map[string]Position{}, map[string]Position{}
	_, err := p.value(scratch, depth)
	p.d.values, p.d.keys = values, keys
	return err
}

// jsonNumber writes integral numbers as integers (1.0 and 1e2 become 1 and
// 100), as the YAML side does, so that they decode into int fields.
func jsonNumber(n json.Number) json.Number {
	if !strings.ContainsAny(string(n), ".eE") {
		return n
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil {
		return n
	}
	if num, ok := floatNumber(f); ok {
		return num
	}
	return n
}
