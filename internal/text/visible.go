package text

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Text a terminal must not interpret
//
// Whatever a model, a tool, an MCP server or a job on the queue wrote can
// reach a terminal through what the CLI prints, and a terminal acts on some
// of it: an escape sequence erases a line or moves the cursor, a carriage
// return lets the next text overwrite what was shown, a bidirectional
// override shows "txt.exe" as "exe.txt". Visible and VisibleLines show such
// characters as escapes a reader sees: \n, \r and \t, \xNN for the other C0
// controls, DEL and each byte that is not UTF-8, \uNNNN for the C1 controls,
// the line and paragraph separators and the bidirectional controls.
// Everything else, backslashes included, is shown as it is: the escaping is
// for a reader, not reversible.

// Visible returns s with every character a terminal would act on, newlines
// and tabs included, shown escaped, for text meant as one line. s is
// returned as it is when it has none.
func Visible(s string) string { return visible(s, false) }

// VisibleLines is Visible keeping newlines and tabs, for text whose lines
// are meant: a diff, a description, a multi-line error.
func VisibleLines(s string) string { return visible(s, true) }

// escapedRune reports whether r, a valid code point, is shown escaped.
func escapedRune(r rune, lines bool) bool {
	switch {
	case r == '\n' || r == '\t':
		return !lines
	case r < 0x20, r >= 0x7f && r <= 0x9f:
		return true // C0 controls, DEL, C1 controls
	case r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true // bidirectional marks, embeddings, overrides and isolates
	case r == 0x2028, r == 0x2029:
		return true // line and paragraph separators
	}
	return false
}

func visible(s string, lines bool) string {
	var b strings.Builder
	shown := 0 // s[:shown] is written to b, escaped; 0 until the first escape
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		invalid := r == utf8.RuneError && size == 1
		if !invalid && !escapedRune(r, lines) {
			i += size
			continue
		}
		if shown == 0 {
			b.Grow(len(s) + 16)
		}
		b.WriteString(s[shown:i])
		switch {
		case invalid:
			writeHex(&b, s[i])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < utf8.RuneSelf:
			writeHex(&b, byte(r))
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
		i += size
		shown = i
	}
	if shown == 0 {
		return s // nothing to escape
	}
	b.WriteString(s[shown:])
	return b.String()
}

func writeHex(b *strings.Builder, c byte) {
	const digits = "0123456789abcdef"
	b.WriteString(`\x`)
	b.WriteByte(digits[c>>4])
	b.WriteByte(digits[c&0xf])
}
