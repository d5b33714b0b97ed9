package search

import (
	"bytes"
	"unicode/utf8"
)

// Line boundaries are those of Python's str.splitlines: \n, \r\n, \r, \v, \f,
// \x1c, \x1d, \x1e, U+0085, U+2028 and U+2029, on text decoded from UTF-8
// with invalid bytes replaced. The scanners below work on the undecoded
// bytes, which is exact: an ASCII byte is never part of a multibyte
// sequence, and a decoder that replaces maximal invalid subparts (as Python's
// does) never swallows the lead byte of a valid sequence, so C2 85 and
// E2 80 A8/A9 are terminators wherever they occur.

// breakLead marks the bytes that can start a line terminator.
var breakLead = [256]bool{
	'\n': true, '\v': true, '\f': true, '\r': true,
	0x1c: true, 0x1d: true, 0x1e: true,
	0xc2: true, 0xe2: true,
}

// breakAt returns the length of the line terminator starting at b[i], or 0.
func breakAt(b []byte, i int) int {
	switch c := b[i]; c {
	case '\n', '\v', '\f', 0x1c, 0x1d, 0x1e:
		return 1
	case '\r':
		if i+1 < len(b) && b[i+1] == '\n' {
			return 2
		}
		return 1
	case 0xc2:
		if i+1 < len(b) && b[i+1] == 0x85 {
			return 2
		}
	case 0xe2:
		if i+2 < len(b) && b[i+1] == 0x80 && (b[i+2] == 0xa8 || b[i+2] == 0xa9) {
			return 3
		}
	}
	return 0
}

// nextBreak returns the bounds of the first line terminator at or after
// from, or -1, -1.
func nextBreak(b []byte, from int) (start, end int) {
	for i := from; i < len(b); i++ {
		if !breakLead[b[i]] {
			continue
		}
		if n := breakAt(b, i); n > 0 {
			return i, i + n
		}
	}
	return -1, -1
}

// onlyNewlines reports whether \n is the only line terminator in b, which
// lets line numbers be counted with bytes.Count.
func onlyNewlines(b []byte) bool {
	for _, c := range []byte{'\r', '\v', '\f', 0x1c, 0x1d, 0x1e} {
		if bytes.IndexByte(b, c) >= 0 {
			return false
		}
	}
	for _, s := range [][]byte{{0xc2, 0x85}, {0xe2, 0x80, 0xa8}, {0xe2, 0x80, 0xa9}} {
		if bytes.Index(b, s) >= 0 {
			return false
		}
	}
	return true
}

// endsWithBreak reports whether b ends with a line terminator, in which case
// the end of b starts no further line.
func endsWithBreak(b []byte) bool {
	for n := 1; n <= 3 && n <= len(b); n++ {
		if i := len(b) - n; breakLead[b[i]] && breakAt(b, i) == n {
			return true
		}
	}
	return false
}

// Lines calls fn with each line of text, as str.splitlines splits it (no
// terminators, no empty line after a final terminator), until fn returns
// false.
func Lines(text []byte, fn func(line []byte) bool) {
	for start := 0; start < len(text); {
		ts, te := nextBreak(text, start)
		if ts < 0 {
			fn(text[start:])
			return
		}
		if !fn(text[start:ts]) {
			return
		}
		start = te
	}
}

// cursor numbers the lines of a text, moving forward only.
type cursor struct {
	text   []byte
	start  int // start of line n
	n      int
	simple bool // \n is the only terminator in text
}

func newCursor(text []byte) cursor {
	return cursor{text: text, n: 1, simple: onlyNewlines(text)}
}

// line returns the line holding offset off, which must not precede the
// cursor: its number, its text's bounds and the start of the line after it.
// An offset at a terminator belongs to the line the terminator ends. The
// cursor moves past the line.
func (c *cursor) line(off int) (n, start, end, next int) {
	if c.simple {
		if k := bytes.Count(c.text[c.start:off], newline); k > 0 {
			c.n += k
			c.start = bytes.LastIndexByte(c.text[:off], '\n') + 1
		}
		end, next = len(c.text), len(c.text)
		if e := bytes.IndexByte(c.text[off:], '\n'); e >= 0 {
			end, next = off+e, off+e+1
		}
	} else {
		for {
			ts, te := nextBreak(c.text, c.start)
			if ts < 0 {
				end, next = len(c.text), len(c.text)
				break
			}
			if ts >= off {
				end, next = ts, te
				break
			}
			c.start = te
			c.n++
		}
	}
	n, start = c.n, c.start
	c.n, c.start = c.n+1, next
	return n, start, end, next
}

var newline = []byte{'\n'}

// Decode returns b with each maximal invalid UTF-8 subpart replaced by
// U+FFFD, as Python decodes with errors="replace". Valid input is returned
// as is.
func Decode(b []byte) []byte {
	if utf8.Valid(b) {
		return b
	}
	out := make([]byte, 0, len(b)+8)
	for i := 0; i < len(b); {
		if b[i] < utf8.RuneSelf {
			out = append(out, b[i])
			i++
			continue
		}
		if r, n := utf8.DecodeRune(b[i:]); r != utf8.RuneError || n > 1 {
			out = append(out, b[i:i+n]...)
			i += n
			continue
		}
		out = utf8.AppendRune(out, utf8.RuneError)
		i += invalidRun(b[i:])
	}
	return out
}

// invalidRun returns the length of the maximal subpart of an ill-formed
// sequence at the start of b: the lead byte and as many following bytes as
// could continue it (Unicode 15, section 3.9, "U+FFFD Substitution of Maximal
// Subparts").
func invalidRun(b []byte) int {
	lo, hi, need := byte(0x80), byte(0xbf), 0
	switch c := b[0]; {
	case c >= 0xc2 && c <= 0xdf:
		need = 1
	case c == 0xe0:
		lo, need = 0xa0, 2
	case c == 0xed:
		hi, need = 0x9f, 2
	case c >= 0xe1 && c <= 0xef:
		need = 2
	case c == 0xf0:
		lo, need = 0x90, 3
	case c == 0xf4:
		hi, need = 0x8f, 3
	case c >= 0xf1 && c <= 0xf3:
		need = 3
	default:
		return 1
	}
	n := 1
	for ; n <= need && n < len(b); n++ {
		if b[n] < lo || b[n] > hi {
			break
		}
		lo, hi = 0x80, 0xbf
	}
	return n
}
