package pipeline

import (
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/agentspec/agentspec/internal/text"
	"github.com/agentspec/agentspec/spec"
)

// textPos is where the byte at offset of t's text is written in the
// pipeline file, through the scalar's quoting, escapes, line folding and
// block indentation; t.Pos, where the value starts, when the source does
// not read back as t's text (a ${VAR} filled in it, say).
func (c *checker) textPos(t *Template, offset int) spec.Position {
	return c.textPositions(t)(offset)
}

// textPositions is textPos for each offset of t's text, reading the
// source once.
func (c *checker) textPositions(t *Template) func(offset int) spec.Position {
	var at []spec.Position
	if t.Pos.Line != 0 {
		at = scalarPositions(c.doc.Line, t.Pos, t.Text)
	}
	return func(offset int) spec.Position {
		if offset < 0 || offset >= len(at) {
			return t.Pos
		}
		return at[offset]
	}
}

// scalarPositions reads the string scalar that starts at start (its quote,
// its | or > indicator, or its first character) from the source's lines
// and returns where each byte of its value is written, then where the
// value ends: len(value)+1 positions, value being what the loader read.
// An escape's bytes are where its backslash is; a line break, folded into
// a space or kept, is at the end of its line. nil when the source does not
// read as text, so that a position is never a guess.
func scalarPositions(line func(int) string, start spec.Position, value string) []spec.Position {
	first := strings.TrimSuffix(line(start.Line), "\r")
	i := text.ByteOfColumn(first, start.Col)
	if i >= len(first) {
		return nil
	}
	r := &scalarReader{line: line, file: start.File, first: start.Line, n: start.Line, text: first, i: i, want: value}
	switch first[i] {
	case '"':
		r.i++
		r.flow('"')
	case '\'':
		r.i++
		r.flow('\'')
	case '|', '>':
		r.block(first[i] == '>')
	default:
		r.flow(0)
	}
	if r.failed || r.out.String() != value {
		return nil
	}
	return append(r.at, r.pos())
}

// scalarReader decodes a scalar from the source a line at a time, keeping
// where each byte it writes came from. It stops once it has written as
// many bytes as the value it is to find holds.
type scalarReader struct {
	line   func(int) string
	file   string
	first  int    // the scalar's first line
	n      int    // the current line's number
	text   string // the current line
	i      int    // where in it
	want   string
	out    strings.Builder
	at     []spec.Position
	blank  int // bytes at the end of out that are white space as written on this line
	failed bool
	// col is the column of the byte colAt of line colLine, counted in
	// characters from 0: pos counts on from it, so that a long line is
	// read in time in proportion to its length.
	colLine, colAt, col int
}

// maxLines bounds how many lines a scalar is read over.
const maxLines = 5000

func (r *scalarReader) pos() spec.Position {
	if r.colLine != r.n || r.colAt > r.i {
		r.colLine, r.colAt, r.col = r.n, 0, 0
	}
	r.col += utf8.RuneCountInString(r.text[r.colAt:r.i])
	r.colAt = r.i
	return spec.Position{File: r.file, Line: r.n, Col: r.col + 1}
}

func (r *scalarReader) done() bool { return r.failed || r.out.Len() >= len(r.want) }

func (r *scalarReader) write(s string, at spec.Position) {
	r.out.WriteString(s)
	for range len(s) {
		r.at = append(r.at, at)
	}
	r.blank = 0
}

// next moves to the start of the next line.
func (r *scalarReader) next() bool {
	if r.n-r.first >= maxLines {
		r.failed = true
		return false
	}
	r.n++
	r.text, r.i = strings.TrimSuffix(r.line(r.n), "\r"), 0
	return true
}

// flow reads a plain (quote 0), single-quoted or double-quoted scalar, or
// a JSON string: a line break between lines is a space, empty lines between
// are a line break each, and white space around a break is not the value's.
func (r *scalarReader) flow(quote byte) {
	for !r.done() {
		if r.i >= len(r.text) {
			r.fold()
			continue
		}
		c := r.text[r.i]
		switch {
		case quote == '\'' && c == '\'':
			if !strings.HasPrefix(r.text[r.i:], "''") {
				return
			}
			r.write("'", r.pos())
			r.i += 2
			continue
		case quote == '"' && c == '"':
			return
		case quote == '"' && c == '\\':
			r.escape()
			continue
		}
		_, size := utf8.DecodeRuneInString(r.text[r.i:])
		r.write(r.text[r.i:r.i+size], r.pos())
		r.i += size
		if c == ' ' || c == '\t' {
			r.blank = size
		}
	}
}

// fold reads the line break at the end of the line and the empty lines
// after it: a space when there are none, else a line break for each.
func (r *scalarReader) fold() {
	if r.blank > 0 {
		// White space before a break is not the value's; count it back.
		s := r.out.String()
		kept := strings.TrimRight(s, " \t")
		r.out.Reset()
		r.out.WriteString(kept)
		r.at = r.at[:len(kept)]
	}
	end := r.pos()
	empty := 0
	for {
		if !r.next() {
			return
		}
		if strings.TrimLeft(r.text, " \t") != "" {
			break
		}
		empty++
	}
	r.i = len(r.text) - len(strings.TrimLeft(r.text, " \t"))
	if empty == 0 {
		r.write(" ", end)
		return
	}
	r.write(strings.Repeat("\n", empty), end)
}

// escapes are a double-quoted scalar's one-character escapes, JSON's among
// them.
var escapes = map[byte]string{
	'0': "\x00", 'a': "\a", 'b': "\b", 't': "\t", '\t': "\t", 'n': "\n", 'v': "\v", 'f': "\f", 'r': "\r",
	'e': "\x1b", ' ': " ", '"': "\"", '/': "/", '\\': "\\", 'N': "\u0085", '_': "\u00a0", 'L': "\u2028", 'P': "\u2029",
}

// escape reads the escape at the backslash r.i points at.
func (r *scalarReader) escape() {
	at := r.pos()
	if r.i+1 >= len(r.text) {
		// An escaped line break: the next line goes on without a space.
		if r.next() {
			r.i = len(r.text) - len(strings.TrimLeft(r.text, " \t"))
			r.blank = 0
		}
		return
	}
	c := r.text[r.i+1]
	if s, ok := escapes[c]; ok {
		r.write(s, at)
		r.i += 2
		return
	}
	digits := map[byte]int{'x': 2, 'u': 4, 'U': 8}[c]
	if digits == 0 || r.i+2+digits > len(r.text) {
		r.failed = true
		return
	}
	n, err := strconv.ParseUint(r.text[r.i+2:r.i+2+digits], 16, 32)
	if err != nil {
		r.failed = true
		return
	}
	r.i += 2 + digits
	ch := rune(n)
	if utf16.IsSurrogate(ch) && strings.HasPrefix(r.text[r.i:], `\u`) && r.i+6 <= len(r.text) {
		// JSON writes a character past U+FFFF as a pair of escapes.
		if low, err := strconv.ParseUint(r.text[r.i+2:r.i+6], 16, 32); err == nil {
			if pair := utf16.DecodeRune(ch, rune(low)); pair != utf8.RuneError {
				ch = pair
				r.i += 6
			}
		}
	}
	r.write(string(ch), at)
}

// block reads a literal (|) or folded (>) block scalar: its indicator's
// line, then lines less their indentation, which is the first non-empty
// line's unless the header gives it.
func (r *scalarReader) block(folded bool) {
	header := r.text[r.i+1:]
	indent := -1
	for _, c := range []byte(header) {
		if c >= '1' && c <= '9' {
			// Indented that much more than the key's line.
			indent = len(r.text) - len(strings.TrimLeft(r.text, " ")) + int(c-'0')
		}
	}
	const (
		none = iota
		normal
		spaced // more indented, or starting with a tab: its breaks are kept
	)
	prev, empty := none, 0
	var end spec.Position // the end of the last content line
	for !r.done() {
		if !r.next() {
			return
		}
		body := strings.TrimLeft(r.text, " ")
		lead := len(r.text) - len(body)
		if indent < 0 && body != "" {
			indent = lead
		}
		if body == "" && (indent < 0 || lead <= indent) {
			if empty++; empty > maxLines/10 {
				break // past the end of the file, as far as can be told
			}
			continue
		}
		if lead < indent {
			break // the block has ended
		}
		kind := normal
		if c := r.text[indent]; c == ' ' || c == '\t' {
			kind = spaced
		}
		switch {
		case prev == none:
			r.write(strings.Repeat("\n", empty), r.pos())
		case folded && prev == normal && kind == normal && empty == 0:
			r.write(" ", end)
		case folded && prev == normal && kind == normal:
			r.write(strings.Repeat("\n", empty), end)
		default:
			r.write(strings.Repeat("\n", empty+1), end)
		}
		r.i = indent
		for r.i < len(r.text) && !r.done() {
			_, size := utf8.DecodeRuneInString(r.text[r.i:])
			r.write(r.text[r.i:r.i+size], r.pos())
			r.i += size
		}
		end = r.pos()
		prev, empty = kind, 0
	}
	if !r.done() && prev != none {
		// The last line's break, and with keep (+) the empty lines after.
		// (As many as the value has: past the file's end, lines read empty.)
		r.write(strings.Repeat("\n", min(empty+1, len(r.want)-r.out.Len())), end)
	}
}
