package text

import (
	"fmt"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
)

func TestVisible(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in  string
		one, many string // Visible, VisibleLines
	}{
		{"plain text is unchanged", "hello, wörld → 日本", "hello, wörld → 日本", "hello, wörld → 日本"},
		{"backslashes are shown as they are", `C:\tmp\x1b`, `C:\tmp\x1b`, `C:\tmp\x1b`},
		{"erase line and carriage return", "ok\x1b[2K\rcurl | sh", `ok\x1b[2K\rcurl | sh`, `ok\x1b[2K\rcurl | sh`},
		{"newline and tab", "a\tb\nc", `a\tb\nc`, "a\tb\nc"},
		{"carriage return before a newline", "a\r\nb", `a\r\nb`, "a\\r\nb"},
		{"other C0 controls", "\x00\x07\x08\x0b\x0c\x1f", `\x00\x07\x08\x0b\x0c\x1f`, `\x00\x07\x08\x0b\x0c\x1f`},
		{"DEL", "a\x7fb", `a\x7fb`, `a\x7fb`},
		{"C1 controls, CSI among them", "\u0080\u0085\u009b31m\u009f", `\u0080\u0085\u009b31m\u009f`, `\u0080\u0085\u009b31m\u009f`},
		{"right-to-left override", "invoice\u202egpj.exe", `invoice\u202egpj.exe`, `invoice\u202egpj.exe`},
		{"every bidirectional control",
			"\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069",
			`\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069`,
			`\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069`},
		{"line and paragraph separators", "a\u2028b\u2029c", `a\u2028b\u2029c`, `a\u2028b\u2029c`},
		{"neighbours of the escaped ranges are shown", "\u00a0\u200d\u2027\u202f\u2065\u206a\ufffd", "\u00a0\u200d\u2027\u202f\u2065\u206a\ufffd", "\u00a0\u200d\u2027\u202f\u2065\u206a\ufffd"},
		{"invalid UTF-8, byte by byte", "a\xffb\xe2\x80c\xc0\xaf", `a\xffb\xe2\x80c\xc0\xaf`, `a\xffb\xe2\x80c\xc0\xaf`},
		{"empty", "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.one, Visible(tt.in))
			assert.Equal(t, tt.many, VisibleLines(tt.in))
		})
	}
}

// Over every code point, alone and between letters, what Visible returns is
// valid UTF-8 without a character it escapes, and a code point it leaves is
// returned unchanged.
func TestVisibleLeavesNothingATerminalActsOn(t *testing.T) {
	t.Parallel()
	for r := rune(0); r <= utf8.MaxRune; r++ {
		if !utf8.ValidRune(r) {
			continue
		}
		in := "a" + string(r) + "b"
		for _, lines := range []bool{false, true} {
			out := visible(in, lines)
			if !utf8.ValidString(out) {
				t.Fatalf("visible(%q, %v) = %q: not UTF-8", in, lines, out)
			}
			if i := firstEscaped(out, lines); i >= 0 {
				t.Fatalf("visible(%q, %v) = %q: still holds %q", in, lines, out, out[i:])
			}
			if (out == in) == escapedRune(r, lines) {
				t.Fatalf("visible(%q, %v) = %q: escaped %v, want %v", in, lines, out, out != in, escapedRune(r, lines))
			}
		}
	}
	for c := 0x80; c <= 0xff; c++ { // a lone byte of 0x80 or above is never UTF-8
		in := "a" + string([]byte{byte(c)}) + "b"
		assert.Equal(t, fmt.Sprintf(`a\x%02xb`, c), Visible(in))
	}
}

// firstEscaped returns the index of the first byte of s shown escaped, or -1.
func firstEscaped(s string, lines bool) int {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if escapedRune(rune(c), lines) {
				return i
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || escapedRune(r, lines) {
			return i
		}
		i += size
	}
	return -1
}
