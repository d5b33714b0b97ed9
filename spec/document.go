package spec

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentspec/agentspec/internal/expansion"
)

// document is a parsed spec file: its content as a JSON value (map[string]any,
// []any, string, json.Number, bool, nil) and where every part of it sits in the
// file, by JSON pointer.
type document struct {
	file   string
	yaml   bool // the syntax is YAML (else JSON), for hints about YAML's pitfalls
	src    []byte
	root   any                 // nil when the file could not be parsed
	values map[string]Position // where each value starts
	keys   map[string]Position // where the key naming each mapping member starts
	errs   []problem
	// warnings are things the spec says that agentspec accepts without
	// acting on them.
	warnings []*Error
	capIDs   map[string]Position // capability ids seen, where each is written
	// nested maps the pointer of each nested entry (PrefixTools'
	// capability) to the pointer its options are written at, as that
	// depends on the entry's form.
	nested map[string]string
	// workspaceAt is where the entry that sets the run's workspace
	// (LocalWorkspace) is written; nil before one is seen.
	workspaceAt *Position
	parsed      int // how many of errs were found while parsing; see add

	// numbers holds the text of numbers written otherwise than the JSON
	// value they became (0x1F, 1e3, 99999999999999999999999), by pointer, so
	// that messages echo what the file says.
	numbers map[string]string

	// retyped holds the values an unquoted ${VAR} turned from a string into
	// a number or a boolean, by pointer, with the text as written.
	retyped map[string]string

	// refs holds the strings that are one whole ${VAR} reference written
	// quoted (in JSON, every string is), or unquoted and filled with text
	// YAML 1.2 reads as a string (yes, 1:30), by pointer, with the text as
	// written: where the schema wants a number or a boolean, they take the
	// type of their value (retypeRefs).
	refs map[string]string

	size      int // bytes of text the parsed document holds so far; see grow
	sizeLimit int // the most it may hold: expansion.Limit of the source
	cursor    Position
	cursorOff int // offsetPos's last answer and its offset, to go on from
}

// problem is an Error together with the JSON pointer of the value it is about,
// so that later checks can skip values already found wrong.
type problem struct {
	ptr string
	err *Error
}

// maxNodes bounds the values a file may expand to. YAML aliases can make a
// small file describe an enormous document ("billion laughs"); a real spec has
// a few hundred values.
const maxNodes = 100_000

// maxDepth bounds nesting, so that deeply nested input cannot exhaust the stack.
const maxDepth = 1000

// A parsed spec may hold expansion.Limit bytes of text (strings, keys, and
// the paths to its values, which positions are recorded by). A count of
// values alone is no bound on memory: aliases of a long string, or paths of
// long keys nested deeply, make a small file hold gigabytes with few values.
// A real spec holds about as much text as it is long.

// grow counts n more bytes of text in the parsed document, and tells
// whether it is still within its bound.
func (d *document) grow(n int) bool {
	d.size += n
	return d.size <= d.sizeLimit
}

// tooLarge says that the document has grown past its bound, and what that is.
func (d *document) tooLarge() string {
	return expansion.Exceeded("spec", "text and key paths", len(d.src))
}

func newDocument(file string, src []byte) *document {
	return &document{
		file:      file,
		src:       src,
		values:    make(map[string]Position, 64),
		keys:      make(map[string]Position, 64),
		numbers:   map[string]string{},
		sizeLimit: expansion.Limit(len(src)),
		cursor:    Position{File: file, Line: 1, Col: 1},
	}
}

// pos returns where the value at ptr starts, or where its nearest enclosing
// value does.
func (d *document) pos(ptr string) Position {
	for {
		if p, ok := d.values[ptr]; ok {
			return p
		}
		if ptr == "" {
			return Position{File: d.file}
		}
		ptr = parent(ptr)
	}
}

// keyPos returns where the key of the member at ptr starts, falling back to
// the value's position.
func (d *document) keyPos(ptr string) Position {
	if p, ok := d.keys[ptr]; ok {
		return p
	}
	return d.pos(ptr)
}

// noValue is the pointer of problems about no value in particular, such as
// a duplicate key: it matches no JSON pointer.
const noValue = "-"

// add records a problem about the value at ptr, reported at pos. A value
// found wrong while parsing is not reported again by later checks: what it
// was read as (an empty value in place of an unsupported tag, a string
// missing an unset variable) is not what the file says.
func (d *document) add(ptr string, pos Position, msg string) {
	for _, p := range d.errs[:d.parsed] {
		if p.ptr == ptr {
			return
		}
	}
	d.errs = append(d.errs, problem{ptr: ptr, err: &Error{Pos: pos, Msg: msg}})
}

// describe says what v, the value at ptr, is, for "found ...": numbers as
// written. withKind adds the kind of a scalar, for when the kind is the problem.
func (d *document) describe(ptr string, v any, withKind bool) string {
	// The check on v is needed: a capability's options object is reported
	// under the pointer of the positional value it was made from.
	if text, ok := d.numbers[ptr]; ok {
		if _, isNumber := v.(json.Number); isNumber {
			v = json.Number(text)
		}
	}
	return describeValue(v, withKind)
}

// mirror records that the value at ptr is the one written at src, so that
// messages about it point at src and echo its text.
func (d *document) mirror(ptr, src string) {
	d.values[ptr] = d.pos(src)
	if text, ok := d.numbers[src]; ok {
		d.numbers[ptr] = text
	}
	if text, ok := d.refs[src]; ok {
		d.refs[ptr] = text
	}
}

// mirrorValue mirrors src, holding v, at ptr, and each value inside it at
// the same place under ptr, keys included: a mapping given positionally
// (NativeTool's tool) is reported where its members are written.
func (d *document) mirrorValue(ptr, src string, v any) {
	d.mirror(ptr, src)
	if p, ok := d.keys[src]; ok {
		d.keys[ptr] = p
	}
	switch v := v.(type) {
	case map[string]any:
		for k, c := range v {
			d.mirrorValue(child(ptr, k), child(src, k), c)
		}
	case []any:
		for i, c := range v {
			d.mirrorValue(index(ptr, i), index(src, i), c)
		}
	}
}

// reported tells whether a problem was recorded at ptr or below it.
func (d *document) reported(ptr string) bool {
	for _, p := range d.errs {
		if p.ptr == ptr || strings.HasPrefix(p.ptr, ptr+"/") {
			return true
		}
	}
	return false
}

// errors returns the problems found, sorted by position; nil when there are none.
func (d *document) errors() Errors {
	if len(d.errs) == 0 {
		return nil
	}
	es := make(Errors, len(d.errs))
	for i, p := range d.errs {
		es[i] = p.err
	}
	return sortErrors(es)
}

// offsetPos converts a byte offset in the source to a position; columns count
// characters, as YAML parsers do. The JSON parser asks for every value's
// position in file order, so it goes on from the last answer: counting from
// the start each time would take time quadratic in the file's size.
func (d *document) offsetPos(off int) Position {
	off = min(max(off, 0), len(d.src))
	if off < d.cursorOff {
		d.cursor, d.cursorOff = Position{File: d.file, Line: 1, Col: 1}, 0
	}
	between := d.src[d.cursorOff:off]
	if nl := bytes.Count(between, []byte("\n")); nl > 0 {
		d.cursor.Line += nl
		d.cursor.Col = 1
		between = between[bytes.LastIndexByte(between, '\n')+1:]
	}
	d.cursor.Col += utf8.RuneCount(between)
	d.cursorOff = off
	return d.cursor
}

// refine narrows a position inside a scalar to the exact column of text when
// the source shows text there, for messages about part of a string (an
// environment variable reference). Quoting and escapes can shift the text, so
// it checks the source and otherwise keeps the scalar's position.
func (d *document) refine(at Position, quoted bool, prefix, text string) Position {
	col := at.Col + utf8.RuneCountInString(prefix)
	if quoted {
		col++
	}
	line := d.line(at.Line)
	i := 0
	for c := 1; c < col && i < len(line); c++ {
		_, size := utf8.DecodeRuneInString(line[i:])
		i += size
	}
	if strings.HasPrefix(line[i:], text) {
		at.Col = col
	}
	return at
}

// refineBlock narrows the position of a block scalar (| or >), at its
// indicator, to the (skip+1)th text in its content, which starts on the
// next line; the content's lines are the source's, less their indentation,
// and end at the first line indented less than its first. Where the text is
// not found there, the indicator's position is kept.
func (d *document) refineBlock(at Position, text string, skip int) Position {
	rest := string(d.src)
	for n := at.Line; n > 0; n-- { // to the line after the indicator's
		i := strings.IndexByte(rest, '\n')
		if i < 0 {
			return at
		}
		rest = rest[i+1:]
	}
	indent := -1
	for n := at.Line + 1; rest != ""; n++ {
		line := rest
		if i := strings.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i], rest[i+1:]
		} else {
			rest = ""
		}
		line = strings.TrimSuffix(line, "\r")
		body := strings.TrimLeft(line, " ")
		if body == "" {
			continue
		}
		if lead := len(line) - len(body); indent < 0 {
			indent = lead
		} else if lead < indent {
			break
		}
		for i := 0; ; {
			j := strings.Index(line[i:], text)
			if j < 0 {
				break
			}
			if skip == 0 {
				return Position{File: at.File, Line: n, Col: utf8.RuneCountInString(line[:i+j]) + 1}
			}
			skip--
			i += j + len(text)
		}
	}
	return at
}

// line returns the text of the 1-based line n, without its newline.
func (d *document) line(n int) string {
	s := string(d.src)
	for ; n > 1; n-- {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			return ""
		}
		s = s[i+1:]
	}
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSuffix(s, "\r")
}

// JSON pointers (RFC 6901).

func child(ptr, token string) string {
	if strings.ContainsAny(token, "~/") {
		token = strings.NewReplacer("~", "~0", "/", "~1").Replace(token)
	}
	return ptr + "/" + token
}

func index(ptr string, i int) string { return ptr + "/" + strconv.Itoa(i) }

func parent(ptr string) string {
	return ptr[:max(0, strings.LastIndexByte(ptr, '/'))]
}

// tokens splits a JSON pointer into its unescaped reference tokens.
func tokens(ptr string) []string {
	if ptr == "" {
		return nil
	}
	toks := strings.Split(ptr[1:], "/")
	for i, t := range toks {
		if strings.Contains(t, "~") {
			toks[i] = strings.NewReplacer("~1", "/", "~0", "~").Replace(t)
		}
	}
	return toks
}

// pointer joins reference tokens into a JSON pointer.
func pointer(base string, toks []string) string {
	for _, t := range toks {
		base = child(base, t)
	}
	return base
}

// label renders a JSON pointer the way people write paths into YAML:
// "/workspace/checks/0/file" becomes "workspace.checks[0].file".
func label(ptr string) string {
	var b strings.Builder
	for _, t := range tokens(ptr) {
		switch {
		case isIndex(t):
			b.WriteString("[" + t + "]")
		case isPlainKey(t):
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(t)
		default:
			b.WriteString("[" + strconv.Quote(t) + "]")
		}
	}
	return b.String()
}

func isIndex(t string) bool {
	if t == "" {
		return false
	}
	for _, r := range t {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

func isPlainKey(t string) bool {
	if t == "" {
		return false
	}
	for _, r := range t {
		if !(r == '_' || r == '-' || r == '$' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}

// valueAt returns the value at the JSON pointer ptr inside v, or nil.
func valueAt(v any, ptr string) any {
	for _, t := range tokens(ptr) {
		switch c := v.(type) {
		case map[string]any:
			v = c[t]
		case []any:
			i, err := strconv.Atoi(t)
			if err != nil || i < 0 || i >= len(c) {
				return nil
			}
			v = c[i]
		default:
			return nil
		}
	}
	return v
}
