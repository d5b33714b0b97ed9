package search

import (
	"bytes"
	"context"
	"errors"
	"io"
	"unicode/utf8"

	"github.com/agentspec/agentspec/capabilities/filesystem/internal/text"
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
	chars      int // code points read of the current long line
	empty      int // reads in a row that returned nothing
	aside      []byte
}

// asideSize is the scratch a Scanner reads a long line's match into.
const asideSize = 64 << 10

// firstRead bounds the first read of a stream: enough for most text files
// whole and for the binary probe, little for a large binary that is
// skipped.
const firstRead = 64 << 10

// NewScanner returns a Scanner with a buffer of size bytes: lines up to that
// long are matched as a whole in memory; longer ones are matched as they
// stream past, in linear time, in the same memory. For Scan's memory to stay
// within the buffer, size must be at least 4 × the maxChars of its calls
// (a longer line then always has more characters than are shown).
func NewScanner(size int) *Scanner {
	return &Scanner{buf: make([]byte, max(size, utf8.UTFMax))}
}

// Size returns the Scanner's buffer size, the memory it holds.
func (s *Scanner) Size() int { return len(s.buf) + cap(s.aside) }

// Scan reads src to its end and calls fn with each line that m matches, in
// order, until fn returns false, like Matcher.Match on the whole text. A
// line longer than maxChars characters is reported as the maxChars of it
// around its first match. With skipBinary, a binary text (a NUL byte in its
// first text.BinaryProbe bytes, which the buffer must be able to hold)
// yields ErrBinary and no lines. Scan stops
// with ctx's error when ctx is done.
func (s *Scanner) Scan(ctx context.Context, m *Matcher, src Source, maxChars int, skipBinary bool,
	fn func(Line) bool) error {
	s.start, s.end, s.off, s.eof, s.err, s.empty, s.src, s.ctx = 0, 0, 0, false, nil, 0, src, ctx
	defer func() { s.src, s.ctx = nil, nil }()
	for s.end < text.BinaryProbe && s.fill(min(firstRead, len(s.buf))) {
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
			if stop || (s.eof && cut == len(data)) {
				return nil
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
	if m.litOnly {
		return bytes.Index(line, m.lit.lit)
	}
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
// buffer, as it reads it: the expression runs over the line's code points
// (io.RuneReader), which takes linear time and no memory beyond the
// buffer. The line is consumed, terminator included. A match is shown by
// reading the part of the line around it again, at its offset.
func (s *Scanner) longLine(m *Matcher, maxChars, n int) (Line, bool, error) {
	lineOff := s.off + int64(s.start)
	s.chars = 0
	var loc []int
	if !m.never {
		loc = m.re.FindReaderIndex(s)
	}
	for { // the rest of the line
		if _, _, err := s.ReadRune(); err != nil {
			break
		}
	}
	if err := s.lineError(); err != nil {
		return Line{}, false, err
	}
	total := s.chars
	s.skipBreak()
	if loc == nil {
		return Line{}, false, nil
	}
	shown, before, err := s.reread(lineOff, int64(loc[0]), total, maxChars)
	if err != nil {
		return Line{}, false, err
	}
	return Line{N: n, Text: shown, Before: before, After: total - before - utf8.RuneCount(shown)}, true, nil
}

// errStopped ends a long line's reading when the search's context is done.
var errStopped = errors.New("search stopped")

// lineError returns why reading a long line stopped early, if it did.
func (s *Scanner) lineError() error {
	if s.err != nil {
		return s.err
	}
	return s.ctx.Err()
}

// ReadRune reads the next code point of the current line, as Python decodes
// it (a maximal invalid subpart is one U+FFFD), with its size in the
// stream. It returns io.EOF at the line's terminator, which it leaves
// unread, and at the end of the stream. It makes the Scanner the
// io.RuneReader a long line is matched through.
func (s *Scanner) ReadRune() (rune, int, error) {
	if s.end-s.start < utf8.UTFMax && !s.eof {
		if s.ctx.Err() != nil {
			return 0, 0, errStopped
		}
		s.fill(len(s.buf))
	}
	if s.start == s.end {
		return 0, 0, io.EOF
	}
	c := s.buf[s.start]
	if c < utf8.RuneSelf {
		if text.IsBreak(rune(c)) {
			return 0, 0, io.EOF
		}
		s.start++
		s.chars++
		return rune(c), 1, nil
	}
	r, size, ok := text.DecodeRune(s.buf[s.start:s.end])
	if ok && text.IsBreak(r) {
		return 0, 0, io.EOF
	}
	s.start += size
	s.chars++
	return r, size, nil
}

// skipBreak consumes the line terminator at the start of the unread bytes,
// if there is one.
func (s *Scanner) skipBreak() {
	if s.end-s.start < 2 {
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
	if s.aside == nil {
		s.aside = make([]byte, max(min(asideSize, len(s.buf)), 2*utf8.UTFMax))
	}
	r := runeSource{r: io.NewSectionReader(s.src, lineOff, 1<<62), buf: s.aside}
	chars := 0
	for pos := int64(0); pos < at; chars++ {
		_, size, err := r.next()
		if err != nil {
			return nil, 0, err
		}
		pos += int64(size)
	}
	// Start over at the window's first character.
	first := windowStart(chars, total, maxChars)
	r = runeSource{r: io.NewSectionReader(s.src, lineOff, 1<<62), buf: s.aside}
	for range first {
		if _, _, err := r.next(); err != nil {
			return nil, 0, err
		}
	}
	out := make([]byte, 0, min(maxChars, total-first))
	for range min(maxChars, total-first) {
		c, _, err := r.next()
		if err != nil || text.IsBreak(c) {
			break // the file changed since: show what there is
		}
		out = utf8.AppendRune(out, c)
	}
	return out, first, nil
}

// runeSource decodes the code points of a reader through buf.
type runeSource struct {
	r          io.Reader
	buf        []byte
	start, end int
	eof        bool
}

func (r *runeSource) next() (rune, int, error) {
	if r.end-r.start < utf8.UTFMax && !r.eof {
		r.end = copy(r.buf, r.buf[r.start:r.end])
		r.start = 0
		for r.end < utf8.UTFMax && !r.eof {
			n, err := r.r.Read(r.buf[r.end:])
			r.end += n
			if err != nil {
				r.eof = true
				if err != io.EOF {
					return 0, 0, err
				}
			}
		}
	}
	if r.start == r.end {
		return 0, 0, io.ErrUnexpectedEOF // the file shrank since
	}
	c, size, ok := text.DecodeRune(r.buf[r.start:r.end])
	if !ok {
		c = utf8.RuneError
	}
	r.start += size
	return c, size, nil
}
