package text

import (
	"fmt"
	"unicode/utf8"
)

// Decode returns b with each maximal invalid UTF-8 subpart replaced by
// U+FFFD, as Python's bytes.decode('utf-8', 'replace') does. Valid input is
// returned as is.
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
		_, n, ok := DecodeRune(b[i:])
		if ok {
			out = append(out, b[i:i+n]...)
		} else {
			out = utf8.AppendRune(out, utf8.RuneError)
		}
		i += n
	}
	return out
}

// CountChars returns the number of code points of b decoded as Decode
// decodes it, without decoding it.
func CountChars(b []byte) int {
	if utf8.Valid(b) {
		return utf8.RuneCount(b)
	}
	n := 0
	for i := 0; i < len(b); n++ {
		if b[i] < utf8.RuneSelf {
			i++
			continue
		}
		_, size, _ := DecodeRune(b[i:])
		i += size
	}
	return n
}

// DecodeRune decodes the code point at the start of b. For an invalid
// sequence it returns ok false and the length of its maximal subpart, the
// unit Python replaces or reports.
func DecodeRune(b []byte) (r rune, size int, ok bool) {
	r, size = utf8.DecodeRune(b)
	if r != utf8.RuneError || size > 1 {
		return r, size, true
	}
	size, _ = InvalidLen(b)
	return utf8.RuneError, size, false
}

// InvalidLen measures the maximal subpart of the ill-formed UTF-8 sequence
// at the start of b (Unicode 15, section 3.9, "U+FFFD Substitution of
// Maximal Subparts", which CPython's decoder follows: the lead byte and as
// many following bytes as could continue it) and says, in CPython's words,
// why it is invalid.
func InvalidLen(b []byte) (int, string) {
	lo, hi, need := byte(0x80), byte(0xBF), 0
	switch c := b[0]; {
	case c >= 0xC2 && c <= 0xDF:
		need = 1
	case c == 0xE0:
		lo, need = 0xA0, 2
	case c == 0xED:
		hi, need = 0x9F, 2
	case c >= 0xE1 && c <= 0xEF:
		need = 2
	case c == 0xF0:
		lo, need = 0x90, 3
	case c >= 0xF1 && c <= 0xF3:
		need = 3
	case c == 0xF4:
		hi, need = 0x8F, 3
	default:
		return 1, "invalid start byte"
	}
	for i := 1; i <= need; i++ {
		if i >= len(b) {
			return i, "unexpected end of data"
		}
		if b[i] < lo || b[i] > hi {
			return i, "invalid continuation byte"
		}
		lo, hi = 0x80, 0xBF
	}
	return need + 1, "" // valid after all; callers only ask about invalid input
}

// CheckStrict reports the error Python's bytes.decode('utf-8') raises for b,
// with the same message at the first invalid sequence, or nil.
func CheckStrict(b []byte) error {
	if utf8.Valid(b) {
		return nil
	}
	for pos := 0; pos < len(b); {
		r, size := utf8.DecodeRune(b[pos:])
		if r != utf8.RuneError || size > 1 {
			pos += size
			continue
		}
		n, reason := InvalidLen(b[pos:])
		if n == 1 {
			return fmt.Errorf("'utf-8' codec can't decode byte 0x%02x in position %d: %s", b[pos], pos, reason)
		}
		return fmt.Errorf("'utf-8' codec can't decode bytes in position %d-%d: %s", pos, pos+n-1, reason)
	}
	return nil
}

// ByteOfColumn is the byte index in s of its col-th character (1-based),
// as the spec and pipeline positions count columns; len(s) past its end.
func ByteOfColumn(s string, col int) int {
	i := 0
	for ; col > 1 && i < len(s); col-- {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return i
}
