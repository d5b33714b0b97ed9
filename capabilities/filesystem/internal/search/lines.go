package search

import (
	"bytes"

	"github.com/agentspec/agentspec/internal/text"
)

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

// cursor numbers the lines of a text, as text.Lines cuts them, moving
// forward only.
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
			ts, te := text.NextBreak(c.text, c.start)
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
