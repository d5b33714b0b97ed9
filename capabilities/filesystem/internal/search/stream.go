package search

import (
	"bytes"
	"context"
	"errors"
	"io"
	"unicode/utf8"

	"github.com/agentspec/agentspec/internal/text"
)

// ErrBinary is returned by Scan for a text with a NUL byte in its first
// text.BinaryProbe bytes.
var ErrBinary = errors.New("binary file")

// Line is a matching line as Scan reports it.
type Line struct {
	N int // its number, from 1
	// Text is the line without its terminator, valid UTF-8, or, for a line
	// longer than Scan's maxChars, the part of it shown: maxChars characters
	// around the line's first match. It is only valid during the call.
	Text []byte
	// Before and After count the characters (code points) of the line
	// before and after Text: both 0 when Text is the whole line.
	Before, After int
}

// Source is a file Scan reads: in sequence, and at an offset to show the
// match of a line longer than its buffer.
type Source interface {
	io.Reader
	io.ReaderAt
}

// Scanner searches streams through a buffer of fixed size, so that the
// memory a search takes does not depend on the size of the files or of
// their lines. It is not safe for concurrent use.
type Scanner struct {
	buf        []byte
	start, end int   // the unread bytes of buf
	off        int64 // offset in the stream of buf[0]
	eof        bool
	err        error
	src        Source
	ctx        context.Context
	carry      []byte
	empty      int // reads in a row that returned nothing
	aside      []byte
}

// asideSize is the scratch a Scanner reads a long line's match into.
const asideSize = 64 << 10

// firstRead bounds the first read of a stream not larger than it, or whose
// size is not known: enough for most text files whole and for the binary
// probe, little for a binary that is skipped.
const firstRead = 256 << 10

// NewScanner returns a Scanner with a buffer of size bytes: lines up to that
// long are matched as a whole in memory; longer ones are matched as they
// stream past, in linear time, in the same memory. For Scan's memory to stay
// within the buffer, size must be at least 4 × the maxChars of its calls
// (a longer line then always has more characters than are shown).
func NewScanner(size int) *Scanner {
	return &Scanner{buf: make([]byte, max(size, utf8.UTFMax))}
}

// Scan reads src to its end and calls fn with each line that m matches, in
// order, until fn returns false, like Matcher.Match on the whole text. A
// line longer than maxChars characters is reported as the maxChars of it
// around its first match. With skipBinary, a binary text (a NUL byte in its
// first text.BinaryProbe bytes, which the buffer must be able to hold)
// yields ErrBinary and no lines. Scan stops with ctx's error when ctx is
// done, and with a read error when reading fails.
func (s *Scanner) Scan(ctx context.Context, m *Matcher, src Source, maxChars int, skipBinary bool,
	fn func(Line) bool) error {
	s.start, s.end, s.off, s.eof, s.err, s.empty, s.src, s.ctx = 0, 0, 0, false, nil, 0, src, ctx
	defer func() { s.src, s.ctx = nil, nil }()
	// A large file's first read is the binary probe alone: a binary is then
	// skipped for one small read, a text read on in reads of the buffer's
	// size. A file whose size is not known is read in firstRead bytes first.
	first := firstRead
	if sized, ok := src.(interface{ Size() int64 }); ok && sized.Size() > firstRead {
		first = text.BinaryProbe
	}
	for s.end < text.BinaryProbe && s.fill(min(first, len(s.buf))) {
		first = len(s.buf)
	}
	if s.err != nil {
		return s.err
	}
	if skipBinary && text.IsBinary(s.buf[:s.end]) {
		return ErrBinary
	}
	base := 0 // lines before buf[start]
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		data := s.buf[s.start:s.end]
		cut := len(data)
		if !s.eof {
			cut = text.LastLineEnd(data)
		}
		if cut > 0 {
			chunk := data[:cut]
			stop := false
			m.Match(chunk, func(n int, line []byte) bool {
				l := Line{N: base + n, Text: line}
				if len(line) > maxChars {
					l = m.window(l, maxChars)
				}
				stop = !fn(l)
				return !stop
			})
			if stop {
				return nil
			}
			if s.eof && cut == len(data) {
				return s.err
			}
			base += lineCount(chunk)
			s.start += cut
			continue
		}
		if s.eof {
			return s.err // nothing left
		}
		if s.start == 0 && s.end == len(s.buf) {
			// One line fills the buffer: match it as it streams past.
			base++
			l, ok, err := s.longLine(m, maxChars, base)
			if err != nil {
				return err
			}
			if ok && !fn(l) {
				return nil
			}
			continue
		}
		if !s.fill(len(s.buf)) && s.err != nil {
			return s.err
		}
	}
}

// fill moves the unread bytes to the front of the buffer and reads at most
// n bytes more, in one read. It reports whether it read any.
func (s *Scanner) fill(n int) bool {
	if s.eof {
		return false
	}
	if s.start > 0 {
		s.end = copy(s.buf, s.buf[s.start:s.end])
		s.off += int64(s.start)
		s.start = 0
	}
	if s.end == len(s.buf) {
		return false
	}
	k, err := s.src.Read(s.buf[s.end:min(len(s.buf), s.end+n)])
	s.end += k
	if k == 0 && err == nil {
		if s.empty++; s.empty > 100 {
			err = io.ErrNoProgress
		}
	}
	if err != nil {
		s.eof = true
		if err != io.EOF {
			s.err = err
		}
	}
	return k > 0
}

// lineCount counts the lines of chunk, which ends with a terminator or the
// text.
func lineCount(chunk []byte) int {
	if onlyNewlines(chunk) {
		n := bytes.Count(chunk, newline)
		if chunk[len(chunk)-1] != '\n' {
			n++
		}
		return n
	}
	return text.LineCount(chunk)
}

// Index returns the offset of the first match in line, a line's text, or -1.
func (m *Matcher) Index(line []byte) int {
	if loc := m.re.FindIndex(line); loc != nil {
		return loc[0]
	}
	return -1
}

// window cuts l, a matching line longer than maxChars bytes, to the
// maxChars characters shown around its first match.
func (m *Matcher) window(l Line, maxChars int) Line {
	total := utf8.RuneCount(l.Text)
	if total <= maxChars {
		return l
	}
	at := max(m.Index(l.Text), 0)
	first := windowStart(utf8.RuneCount(l.Text[:at]), total, maxChars)
	from := runeOffset(l.Text, 0, first)
	to := runeOffset(l.Text, from, maxChars)
	return Line{N: l.N, Text: l.Text[from:to], Before: first, After: total - first - maxChars}
}

// windowStart returns the first character shown of a line of total
// characters whose first match starts at character at: the line's start
// when the match is in the first three quarters of a window, else a
// quarter of a window before the match, but never so late that the window
// runs past the line's end.
func windowStart(at, total, maxChars int) int {
	if at < maxChars-maxChars/4 {
		return 0
	}
	return max(min(at-maxChars/4, total-maxChars), 0)
}

// runeOffset returns the byte offset in b, valid UTF-8, n code points after
// offset from.
func runeOffset(b []byte, from, n int) int {
	i := from
	for ; n > 0 && i < len(b); n-- {
		if b[i] < utf8.RuneSelf {
			i++
			continue
		}
		_, size := utf8.DecodeRune(b[i:])
		i += size
	}
	return i
}

// longLine matches the line at the start of the buffer, longer than the
// buffer, and consumes it, terminator included. It takes two passes, in the
// buffer's memory. The first streams the line to its end, counting its
// characters and looking for the literal every match contains, at the speed
// of bytes.Index. Only a line that holds the literal, or any line for an
// expression without one, is read again, at its offset, for the expression
// to run over its code points (io.RuneReader), in linear time; a match is
// then shown by reading the part of the line around it.
func (s *Scanner) longLine(m *Matcher, maxChars, n int) (Line, bool, error) {
	lineOff := s.off + int64(s.start)
	total, length, litAt, err := s.measureLine(m.lit.lit)
	if err != nil || m.never || (m.lit.lit != nil && litAt < 0) {
		return Line{}, false, err
	}
	at := litAt
	if !m.litOnly {
		r := s.runesAt(lineOff, length)
		loc := m.re.FindReaderIndex(&r)
		if r.err != nil {
			return Line{}, false, r.err
		}
		if loc == nil {
			return Line{}, false, nil
		}
		at = int64(loc[0])
	}
	shown, before, err := s.reread(lineOff, at, total, maxChars)
	if err != nil {
		return Line{}, false, err
	}
	return Line{N: n, Text: shown, Before: before, After: total - before - utf8.RuneCount(shown)}, true, nil
}

// measureLine consumes the line at the start of the unread bytes and its
// terminator, and returns its length in characters and in bytes (without
// the terminator) and the offset in it of the first occurrence of lit, or
// -1 (when lit is nil too).
func (s *Scanner) measureLine(lit []byte) (chars int, length, litAt int64, err error) {
	litAt = -1
	keep := max(len(lit)-1, 0) // bytes passed that a later occurrence may start in
	if cap(s.carry) < 2*keep {
		s.carry = make([]byte, 0, 2*keep)
	}
	carry := s.carry[:0]
	for {
		if err := s.ctx.Err(); err != nil {
			return 0, 0, -1, err
		}
		data := s.buf[s.start:s.end]
		// This part of the line ends at its terminator, or before the
		// bytes at the end that the next read could complete: a \r before
		// \n, a sequence cut short.
		stop, atBreak := len(data), false
		if ts, _ := text.NextBreak(data, text.FirstBreakLead(data)); ts >= 0 {
			stop, atBreak = ts, s.eof || ts < len(data)-1 || data[ts] != '\r'
		} else if !s.eof {
			stop = completeCut(data)
		}
		part := data[:stop]
		if litAt < 0 && lit != nil {
			if i := indexAcross(carry, part, lit); i != noIndex {
				litAt = length + int64(i)
			}
			carry = keepTail(carry, part, keep)
		}
		chars += text.CountChars(part)
		length += int64(len(part))
		s.start += stop
		switch {
		case atBreak:
			s.skipBreak()
			return chars, length, litAt, nil
		case s.eof && s.start == s.end:
			return chars, length, litAt, s.err
		}
		if !s.fill(len(s.buf)) && s.err != nil {
			return 0, 0, -1, s.err
		}
	}
}

// noIndex is indexAcross's "not found": -1 is a found offset there.
const noIndex = -1 << 62

// indexAcross returns the offset in part of the first occurrence of lit in
// carry (the bytes just before part, fewer than lit) followed by part,
// negative when it starts in carry, or noIndex.
func indexAcross(carry, part, lit []byte) int {
	if len(carry) > 0 {
		head := part[:min(len(part), len(lit)-1)]
		joined := append(append(make([]byte, 0, len(carry)+len(head)), carry...), head...)
		if i := bytes.Index(joined, lit); i >= 0 {
			return i - len(carry)
		}
	}
	if i := bytes.Index(part, lit); i >= 0 {
		return i
	}
	return noIndex
}

// keepTail returns the last keep bytes of carry followed by part, in
// carry's storage (of at least 2 × keep bytes, carry holding at most keep).
func keepTail(carry, part []byte, keep int) []byte {
	carry = append(carry, part[max(len(part)-keep, 0):]...)
	return append(carry[:0], carry[max(len(carry)-keep, 0):]...)
}

// completeCut returns len(b), or the start of a UTF-8 sequence cut short at
// b's end, which the next read may complete.
func completeCut(b []byte) int {
	for i := len(b) - 1; i >= 0 && i > len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return i
			}
			break
		}
	}
	return len(b)
}

// runesAt returns the code points of the length bytes of the source at
// offset off, read through the Scanner's small second buffer.
func (s *Scanner) runesAt(off, length int64) runeSource {
	if s.aside == nil {
		s.aside = make([]byte, max(min(asideSize, len(s.buf)), 2*utf8.UTFMax))
	}
	return runeSource{r: io.NewSectionReader(s.src, off, length), buf: s.aside, ctx: s.ctx}
}

// skipBreak consumes the line terminator at the start of the unread bytes,
// if there is one.
func (s *Scanner) skipBreak() {
	if s.end-s.start < utf8.UTFMax-1 {
		s.fill(len(s.buf))
	}
	if s.start < s.end {
		s.start += text.BreakAt(s.buf[s.start:s.end], 0)
	}
}

// reread reads again the line of total characters at offset lineOff whose
// first match starts at byte at of it, and returns the up to maxChars
// characters of it shown around the match, decoded, and how many
// characters precede them. It reads the line from its start, through a
// small buffer of its own, to count those characters.
func (s *Scanner) reread(lineOff, at int64, total, maxChars int) ([]byte, int, error) {
	r := s.runesAt(lineOff, 1<<62)
	chars := 0
	for pos := int64(0); pos < at; chars++ {
		_, size, err := r.ReadRune()
		if err != nil {
			return nil, 0, err
		}
		pos += int64(size)
	}
	// Start over at the window's first character.
	first := windowStart(chars, total, maxChars)
	r = s.runesAt(lineOff, 1<<62)
	for range first {
		if _, _, err := r.ReadRune(); err != nil {
			return nil, 0, err
		}
	}
	out := make([]byte, 0, min(maxChars, total-first))
	for range min(maxChars, total-first) {
		c, _, err := r.ReadRune()
		if err != nil || text.IsBreak(c) {
			break // the file changed since: show what there is
		}
		out = utf8.AppendRune(out, c)
	}
	return out, first, nil
}

// runeSource decodes the code points of a reader through buf, as Python
// decodes them (a maximal invalid subpart is one U+FFFD), each with its size
// in the reader. It stops when ctx is done. It is the io.RuneReader an
// expression runs over.
type runeSource struct {
	r          io.Reader
	buf        []byte
	start, end int
	eof        bool
	ctx        context.Context
	err        error // why it stopped before the reader's end
}

func (r *runeSource) ReadRune() (rune, int, error) {
	if r.end-r.start < utf8.UTFMax && !r.eof {
		if err := r.ctx.Err(); err != nil {
			r.err = err
			return 0, 0, err
		}
		r.end = copy(r.buf, r.buf[r.start:r.end])
		r.start = 0
		for r.end < utf8.UTFMax && !r.eof {
			n, err := r.r.Read(r.buf[r.end:])
			r.end += n
			if err != nil {
				r.eof = true
				if err != io.EOF {
					r.err = err
					return 0, 0, err
				}
			}
		}
	}
	if r.start == r.end {
		return 0, 0, io.EOF
	}
	c, size, ok := text.DecodeRune(r.buf[r.start:r.end])
	if !ok {
		c = utf8.RuneError
	}
	r.start += size
	return c, size, nil
}
