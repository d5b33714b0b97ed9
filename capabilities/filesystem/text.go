package filesystem

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// binarySniff is how many leading bytes are searched for a NUL byte.
const binarySniff = 8192

// isBinary reports whether b, a file's leading bytes, marks a binary file: a
// NUL byte within the first 8192 bytes.
func isBinary(b []byte) bool {
	if len(b) > binarySniff {
		b = b[:binarySniff]
	}
	return bytes.IndexByte(b, 0) >= 0
}

// contentHash is the hash the tools report and accept as expected_hash: the
// first 12 hex digits of the SHA-256 of the raw bytes.
func contentHash(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:6])
}

func hashSum(sum []byte) string { return hex.EncodeToString(sum[:6]) }

// splitLines splits s as Python's str.splitlines(keepends=True) does: at
// \n, \r\n, \r, \v, \f, \x1c, \x1d, \x1e, U+0085, U+2028 and U+2029. Each line
// keeps its terminator (trimTerminator removes it); a trailing terminator
// does not start another, empty line.
func splitLines(s string) []string {
	var lines []string
	for len(s) > 0 {
		n := lineEnd(s)
		lines = append(lines, s[:n])
		s = s[n:]
	}
	return lines
}

// lineCount is len(s.splitlines()).
func lineCount(s string) int {
	n := 0
	for len(s) > 0 {
		s = s[lineEnd(s):]
		n++
	}
	return n
}

// lineEnd returns the length of the first line of s, terminator included.
func lineEnd(s string) int {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch c {
			case '\n', '\v', '\f', 0x1c, 0x1d, 0x1e:
				return i + 1
			case '\r':
				if i+1 < len(s) && s[i+1] == '\n' {
					return i + 2
				}
				return i + 1
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		if r == 0x85 || r == 0x2028 || r == 0x2029 {
			return i
		}
	}
	return len(s)
}

// trimTerminator removes the line terminator splitLines left on line.
func trimTerminator(line string) string {
	switch {
	case strings.HasSuffix(line, "\r\n"):
		return line[:len(line)-2]
	case strings.HasSuffix(line, "\u0085"):
		return line[:len(line)-2]
	case strings.HasSuffix(line, "\u2028"), strings.HasSuffix(line, "\u2029"):
		return line[:len(line)-3]
	}
	if n := len(line); n > 0 {
		switch line[n-1] {
		case '\n', '\r', '\v', '\f', 0x1c, 0x1d, 0x1e:
			return line[:n-1]
		}
	}
	return line
}

// runeCount is Python's len() of a str.
func runeCount(s string) int { return utf8.RuneCountInString(s) }

// groupThousands formats n with ',' separators, as Python's f"{n:,}".
func groupThousands(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// pyRepr quotes s the way Python's repr() quotes a str: single quotes, or
// double quotes when s holds a single quote but no double quote; backslash,
// the quote and non-printable characters escaped. Bytes that are not UTF-8
// appear as Python shows undecodable bytes of a path, \udcXX.
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

// decodeUTF8Replace decodes b as Python's bytes.decode('utf-8', 'replace'):
// each maximal invalid subsequence becomes one U+FFFD.
func decodeUTF8Replace(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var sb strings.Builder
	sb.Grow(len(b) + 8)
	for len(b) > 0 {
		_, size, ok := decodeRune(b)
		if ok {
			sb.Write(b[:size])
		} else {
			sb.WriteRune(utf8.RuneError)
		}
		b = b[size:]
	}
	return sb.String()
}

// decodeRune decodes the rune at the start of b. For an invalid sequence it
// returns ok false and the length of its maximal subpart, the unit Python
// replaces or reports.
func decodeRune(b []byte) (r rune, size int, ok bool) {
	r, size = utf8.DecodeRune(b)
	if r != utf8.RuneError || size > 1 {
		return r, size, true
	}
	size, _ = invalidLen(b)
	return utf8.RuneError, size, false
}

// invalidLen measures the invalid UTF-8 sequence at the start of b the way
// CPython's decoder does, and says why it is invalid.
func invalidLen(b []byte) (int, string) {
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

// decodeUTF8Strict decodes b as Python's bytes.decode('utf-8') does, failing
// with the same message at the first invalid sequence.
func decodeUTF8Strict(b []byte) (string, error) {
	if utf8.Valid(b) {
		return string(b), nil
	}
	for pos := 0; pos < len(b); {
		r, size := utf8.DecodeRune(b[pos:])
		if r != utf8.RuneError || size > 1 {
			pos += size
			continue
		}
		n, reason := invalidLen(b[pos:])
		if n == 1 {
			return "", fmt.Errorf("'utf-8' codec can't decode byte 0x%02x in position %d: %s", b[pos], pos, reason)
		}
		return "", fmt.Errorf("'utf-8' codec can't decode bytes in position %d-%d: %s", pos, pos+n-1, reason)
	}
	return string(b), nil
}

// lineReader reads a stream as UTF-8 text line by line, with the line breaks
// of splitLines and the replacement of decodeUTF8Replace, without holding more
// of it than the caller keeps. It is how read_file and file_info take the
// measure of a file of any size.
type lineReader struct {
	r          io.Reader
	buf        []byte
	start, end int
	eof        bool
	err        error
}

func newLineReader(r io.Reader, head []byte) *lineReader {
	buf := make([]byte, max(64<<10, len(head)+utf8.UTFMax))
	n := copy(buf, head)
	return &lineReader{r: r, buf: buf, end: n}
}

// fill makes at least n bytes available after start, unless the stream ends.
func (lr *lineReader) fill(n int) bool {
	for lr.end-lr.start < n && !lr.eof {
		if lr.start > 0 {
			lr.end = copy(lr.buf, lr.buf[lr.start:lr.end])
			lr.start = 0
		}
		m, err := lr.r.Read(lr.buf[lr.end:])
		lr.end += m
		if err != nil {
			lr.eof = true
			if err != io.EOF {
				lr.err = err
			}
		}
	}
	return lr.end-lr.start >= n
}

// next reads one line. It appends up to keep code points of it, terminator
// included, to dst (keep < 0: all of it) and returns dst, the line's whole
// length in code points and whether there was a line.
func (lr *lineReader) next(dst []byte, keep int) ([]byte, int, bool) {
	n := 0
	for {
		if !lr.fill(1) {
			return dst, n, n > 0
		}
		b := lr.buf[lr.start:lr.end]
		if i := plainPrefix(b); i > 0 {
			if keep < 0 || n < keep {
				k := i
				if keep >= 0 {
					k = min(i, keep-n)
				}
				dst = append(dst, b[:k]...)
			}
			n += i
			lr.start += i
			continue
		}
		c := b[0]
		if c < utf8.RuneSelf {
			lr.start++
			n++
			dst = appendKept(dst, keep, n, c)
			if c == '\r' && lr.fill(1) && lr.buf[lr.start] == '\n' {
				lr.start++
				n++
				dst = appendKept(dst, keep, n, '\n')
			}
			return dst, n, true // plainPrefix stops only at terminators below 0x80
		}
		lr.fill(utf8.UTFMax)
		r, size, ok := decodeRune(lr.buf[lr.start:lr.end])
		if keep < 0 || n < keep {
			if ok {
				dst = append(dst, lr.buf[lr.start:lr.start+size]...)
			} else {
				dst = utf8.AppendRune(dst, utf8.RuneError)
			}
		}
		lr.start += size
		n++
		if r == 0x85 || r == 0x2028 || r == 0x2029 {
			return dst, n, true
		}
	}
}

func appendKept(dst []byte, keep, n int, c byte) []byte {
	if keep < 0 || n <= keep {
		return append(dst, c)
	}
	return dst
}

// isTerminator marks the ASCII bytes that end a line.
var isTerminator = [utf8.RuneSelf]bool{'\n': true, '\v': true, '\f': true, '\r': true, 0x1c: true, 0x1d: true, 0x1e: true}

// plainPrefix returns how many leading bytes of b are ASCII and not line
// terminators. It checks eight bytes at a time, since files can be large.
func plainPrefix(b []byte) int {
	const hi, lo = 0x8080808080808080, 0x2020202020202020
	i := 0
	for i < len(b) {
		if i+8 <= len(b) {
			// Skip whole words with no byte >= 0x80 and none < 0x20; any
			// other word is looked at byte by byte.
			if w := binary.LittleEndian.Uint64(b[i:]); w&hi == 0 && (w-lo)&^w&hi == 0 {
				i += 8
				continue
			}
		}
		if c := b[i]; c >= utf8.RuneSelf || isTerminator[c] {
			break
		}
		i++
	}
	return i
}
