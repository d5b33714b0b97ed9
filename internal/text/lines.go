package text

import "bytes"

// Line boundaries are those of Python's str.splitlines: \n, \r\n, \r, \v, \f,
// \x1c, \x1d, \x1e, U+0085, U+2028 and U+2029, on text decoded from UTF-8
// with invalid bytes replaced. The scanners below work on the undecoded
// bytes, which is exact: an ASCII byte is never part of a multibyte
// sequence, and a decoder that replaces maximal invalid subparts (as Python's
// does, see Decode) never swallows the lead byte of a valid sequence, so
// C2 85 and E2 80 A8/A9 are terminators wherever they occur. They work on
// decoded text alike.

// Bytes is text as a string or as a byte slice.
type Bytes interface{ ~string | ~[]byte }

// IsBreak reports whether the code point r ends a line.
func IsBreak(r rune) bool {
	switch r {
	case '\n', '\v', '\f', '\r', 0x1c, 0x1d, 0x1e, 0x85, 0x2028, 0x2029:
		return true
	}
	return false
}

// breakLead marks the bytes that can start a line terminator.
var breakLead = [256]bool{
	'\n': true, '\v': true, '\f': true, '\r': true,
	0x1c: true, 0x1d: true, 0x1e: true,
	0xc2: true, 0xe2: true,
}

// BreakAt returns the length of the line terminator starting at s[i], or 0.
func BreakAt[T Bytes](s T, i int) int {
	switch c := s[i]; c {
	case '\n', '\v', '\f', 0x1c, 0x1d, 0x1e:
		return 1
	case '\r':
		if i+1 < len(s) && s[i+1] == '\n' {
			return 2
		}
		return 1
	case 0xc2:
		if i+1 < len(s) && s[i+1] == 0x85 {
			return 2
		}
	case 0xe2:
		if i+2 < len(s) && s[i+1] == 0x80 && (s[i+2] == 0xa8 || s[i+2] == 0xa9) {
			return 3
		}
	}
	return 0
}

// NextBreak returns the bounds of the first line terminator at or after
// from, or -1, -1.
func NextBreak[T Bytes](s T, from int) (start, end int) {
	for i := from; i < len(s); i++ {
		if !breakLead[s[i]] {
			continue
		}
		if n := BreakAt(s, i); n > 0 {
			return i, i + n
		}
	}
	return -1, -1
}

// LineEnd returns the length of the first line of s, terminator included.
func LineEnd[T Bytes](s T) int {
	if _, end := NextBreak(s, 0); end >= 0 {
		return end
	}
	return len(s)
}

// EndsWithBreak reports whether s ends with a line terminator, in which case
// the end of s starts no further line.
func EndsWithBreak[T Bytes](s T) bool {
	for n := 1; n <= 3 && n <= len(s); n++ {
		if i := len(s) - n; breakLead[s[i]] && BreakAt(s, i) == n {
			return true
		}
	}
	return false
}

// LineCount is len(s.splitlines()).
func LineCount[T Bytes](s T) int {
	n := 0
	for start := 0; start < len(s); n++ {
		_, end := NextBreak(s, start)
		if end < 0 {
			return n + 1
		}
		start = end
	}
	return n
}

// Lines calls fn with each line of b, as str.splitlines splits it (no
// terminators, no empty line after a final terminator), until fn returns
// false.
func Lines(b []byte, fn func(line []byte) bool) {
	for start := 0; start < len(b); {
		ts, te := NextBreak(b, start)
		if ts < 0 {
			fn(b[start:])
			return
		}
		if !fn(b[start:ts]) {
			return
		}
		start = te
	}
}

// LastLineEnd returns the end of the last complete line of b, the offset
// just past its terminator, or 0 when b holds none. b is the start of a
// longer text, so a final \r does not end a line yet: it may be the first
// half of \r\n. Cutting a text there splits it into the same lines as
// splitlines on the whole, since every line the cut leaves whole ends
// before it.
func LastLineEnd(b []byte) int {
	// A terminator after the last \n can only be in the bytes after it; in
	// a text without \n, none ends after the last byte one can end with.
	nl := lastIndexByte(b, '\n') + 1
	hi := len(b)
	if nl == 0 {
		hi = 0
		for _, c := range []byte{'\r', '\v', '\f', 0x1c, 0x1d, 0x1e, 0x85, 0xa8, 0xa9} {
			hi = max(hi, lastIndexByte(b, c)+1)
		}
	}
	if end := lastBreakEnd(b, nl, hi); end > 0 {
		return end
	}
	return nl
}

// lastIndexByte is bytes.LastIndexByte, fast over a long text where c is
// rare or absent: bytes.IndexByte is vectorised and LastIndexByte is not, so
// the text is looked at in blocks from its end, each first checked by the
// former.
func lastIndexByte(b []byte, c byte) int {
	const block = 4 << 10
	for hi := len(b); hi > 0; hi -= block {
		lo := max(hi-block, 0)
		if bytes.IndexByte(b[lo:hi], c) >= 0 {
			return lo + bytes.LastIndexByte(b[lo:hi], c)
		}
	}
	return -1
}

// lastBreakEnd returns the end of the last terminator of b that ends in
// b[lo:hi], looking byte by byte from hi down, or 0.
func lastBreakEnd(b []byte, lo, hi int) int {
	for i := hi - 1; i >= lo; i-- {
		switch c := b[i]; c {
		case '\r':
			if i < len(b)-1 {
				return i + 1
			}
		case '\n', '\v', '\f', 0x1c, 0x1d, 0x1e:
			return i + 1
		case 0x85:
			if i >= 1 && b[i-1] == 0xc2 {
				return i + 1
			}
		case 0xa8, 0xa9:
			if i >= 2 && b[i-1] == 0x80 && b[i-2] == 0xe2 {
				return i + 1
			}
		}
	}
	return 0
}

// FirstBreakLead returns the offset of the first byte of b that can start a
// line terminator, or len(b): where NextBreak need start looking. It scans
// for each such byte at the speed of bytes.IndexByte.
func FirstBreakLead(b []byte) int {
	first := len(b)
	for _, c := range []byte{'\n', '\r', '\v', '\f', 0x1c, 0x1d, 0x1e, 0xc2, 0xe2} {
		if i := bytes.IndexByte(b[:first], c); i >= 0 {
			first = i
		}
	}
	return first
}

// CountLines is LineCount, faster on text whose only terminators are \n and
// \r (\r\n included): it then counts them with bytes.Count.
func CountLines(b []byte) int {
	if len(b) == 0 {
		return 0
	}
	for _, c := range []byte{'\v', '\f', 0x1c, 0x1d, 0x1e, 0xc2, 0xe2} {
		if bytes.IndexByte(b, c) >= 0 {
			return LineCount(b)
		}
	}
	n := bytes.Count(b, []byte{'\n'})
	if bytes.IndexByte(b, '\r') >= 0 {
		n += bytes.Count(b, []byte{'\r'}) - bytes.Count(b, []byte{'\r', '\n'})
	}
	if c := b[len(b)-1]; c != '\n' && c != '\r' {
		n++ // a last line without a terminator
	}
	return n
}
