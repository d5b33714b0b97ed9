package shell

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// pyRepr quotes s as Python's repr() quotes a str, since the reference's
// messages embed commands, operators and IDs that way: single quotes, or
// double quotes when s holds a single quote and no double quote; the
// backslash, the chosen quote and non-printable characters escaped. A byte
// that is not UTF-8 shows as Python shows an undecodable byte, \udcXX.
func pyRepr(s string) string {
	quote := byte('\'')
	if strings.IndexByte(s, '\'') >= 0 && strings.IndexByte(s, '"') < 0 {
		quote = '"'
	}
	b := make([]byte, 0, len(s)+2)
	b = append(b, quote)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = fmt.Appendf(b, `\udc%02x`, s[i])
			i++
			continue
		}
		i += size
		switch {
		case r == rune(quote) || r == '\\':
			b = append(b, '\\', byte(r))
		case r == '\t':
			b = append(b, `\t`...)
		case r == '\n':
			b = append(b, `\n`...)
		case r == '\r':
			b = append(b, `\r`...)
		case unicode.IsPrint(r):
			b = utf8.AppendRune(b, r)
		case r < 0x100:
			b = fmt.Appendf(b, `\x%02x`, r)
		case r < 0x10000:
			b = fmt.Appendf(b, `\u%04x`, r)
		default:
			b = fmt.Appendf(b, `\U%08x`, r)
		}
	}
	return string(append(b, quote))
}

// pyFloat formats f as Python's str(float) does for the values a timeout
// takes: the shortest representation that reads back, with ".0" added to a
// whole number (30 -> "30.0", 0.5 -> "0.5") and exponent form from 1e16 up
// or below 1e-4, as Python switches.
func pyFloat(f float64) string {
	abs := f
	if abs < 0 {
		abs = -abs
	}
	if abs != 0 && (abs >= 1e16 || abs < 1e-4) {
		s := strconv.FormatFloat(f, 'e', -1, 64)
		// Python writes at least two exponent digits, as Go does.
		return s
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.ContainsAny(s, ".") {
		s += ".0"
	}
	return s
}
