// Package search finds the lines of a text that match a regular expression,
// with the line semantics of Python's str.splitlines, fast.
//
// A line matches when the expression matches anywhere in it (re.search). The
// expression is Go's RE2 syntax, searched in linear time. Three strategies,
// chosen when the expression is compiled, give the same answers:
//
//   - A literal every match must contain (taken from the parsed expression)
//     is looked for in the whole text; only the lines holding it are
//     matched against the expression.
//   - Without such a literal, an expression with no anchors is rewritten so
//     that it cannot match a line terminator and is searched over the whole
//     text at once; each match start names a matching line.
//   - Otherwise each line is matched on its own.
package search

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode/utf8"

	"github.com/agentspec/agentspec/internal/text"
)

// MaxPattern is the longest pattern Compile accepts, in bytes.
const MaxPattern = 4096

// Matcher reports the lines of a text that an expression matches. It is safe
// for concurrent use.
type Matcher struct {
	re      *regexp.Regexp // the expression, matched against one line
	lit     finder         // a literal every match contains; lit.lit is nil when there is none
	litOnly bool           // the expression is exactly the literal
	never   bool           // every match needs a line terminator, so no line matches
	whole   *regexp.Regexp // the expression unable to cross a line boundary, or nil
}

// Compile parses pattern. Its error text is the detail a caller shows after
// "Invalid regex pattern: ".
func Compile(pattern string) (*Matcher, error) {
	if len(pattern) > MaxPattern {
		return nil, fmt.Errorf("pattern is %d bytes long; the limit is %d", len(pattern), MaxPattern)
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, fmt.Errorf("%s", strings.TrimPrefix(err.Error(), "error parsing regexp: "))
	}
	parsed, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return nil, err // unreachable: regexp.Compile parsed it
	}
	parsed = parsed.Simplify()
	m := &Matcher{re: re}
	// A literal holding U+FFFD cannot be looked for in the raw bytes:
	// decoding produces it from bytes that are not in the file.
	if lit := requiredLiteral(parsed); lit != "" && !strings.ContainsRune(lit, utf8.RuneError) {
		if strings.ContainsFunc(lit, text.IsBreak) {
			m.never = true
			return m, nil
		}
		m.lit = newFinder([]byte(lit))
		m.litOnly = parsed.Op == syntax.OpLiteral
		return m, nil
	}
	if confined, ok := confine(parsed); ok {
		m.whole, _ = regexp.Compile(confined.String())
	}
	return m, nil
}

// Match calls fn with the number (from 1) and text of each line of data the
// expression matches, in order, until fn returns false. A line's text has no
// terminator and is valid UTF-8: invalid bytes are replaced by U+FFFD the way
// Python's decoder replaces them, before matching. line is only valid during
// the call.
func (m *Matcher) Match(data []byte, fn func(n int, line []byte) bool) {
	switch {
	case m.never || len(data) == 0:
	case m.lit.lit != nil:
		m.matchLiteral(data, fn)
	case m.whole != nil:
		m.matchWhole(text.Decode(data), fn)
	default:
		m.matchLines(data, fn)
	}
}

func (m *Matcher) matchLiteral(data []byte, fn func(int, []byte) bool) {
	var c cursor
	for pos := 0; pos < len(data); {
		i := m.lit.index(data[pos:])
		if i < 0 {
			return
		}
		if c.text == nil {
			c = newCursor(data)
		}
		n, start, end, next := c.line(pos + i)
		line := text.Decode(data[start:end])
		if (m.litOnly || m.re.Match(line)) && !fn(n, line) {
			return
		}
		pos = next
	}
}

func (m *Matcher) matchWhole(data []byte, fn func(int, []byte) bool) {
	c := newCursor(data)
	trailing := text.EndsWithBreak(data)
	for pos := 0; pos <= len(data); {
		loc := m.whole.FindIndex(data[pos:])
		if loc == nil {
			return
		}
		off := pos + loc[0]
		if off == len(data) && trailing {
			return // the end of a text ending in a terminator starts no line
		}
		if off > 0 && off < len(data) && data[off-1] == '\r' && data[off] == '\n' {
			pos = off + 1 // an empty match inside \r\n, a position no line has
			continue
		}
		n, start, end, next := c.line(off)
		if !fn(n, data[start:end]) || next == end {
			return
		}
		pos = next
	}
}

func (m *Matcher) matchLines(data []byte, fn func(int, []byte) bool) {
	n := 0
	text.Lines(data, func(line []byte) bool {
		n++
		line = text.Decode(line)
		return !m.re.Match(line) || fn(n, line)
	})
}

// notBreak is every rune but the line terminators.
var notBreak = []rune{
	0x00, 0x09,
	0x0e, 0x1b,
	0x1f, 0x84,
	0x86, 0x2027,
	0x202a, utf8.MaxRune,
}

// confine returns re rewritten so that no part of it matches a line
// terminator, and whether that preserves its meaning per line: it does not
// when re has anchors, whose meaning depends on where the text ends.
// Word-boundary assertions keep their meaning, since every terminator is a
// non-word character, like the edge of a text.
func confine(re *syntax.Regexp) (*syntax.Regexp, bool) {
	out := *re
	switch re.Op {
	case syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText:
		return nil, false
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		out.Op, out.Rune = syntax.OpCharClass, notBreak
		return &out, true
	case syntax.OpCharClass:
		out.Rune = intersect(re.Rune, notBreak)
		return &out, true
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			if text.IsBreak(r) {
				return &syntax.Regexp{Op: syntax.OpNoMatch}, true
			}
		}
		return &out, true
	}
	if len(re.Sub) > 0 {
		out.Sub = make([]*syntax.Regexp, len(re.Sub))
		for i, sub := range re.Sub {
			s, ok := confine(sub)
			if !ok {
				return nil, false
			}
			out.Sub[i] = s
		}
	}
	return &out, true
}

// intersect returns the intersection of two sorted, non-overlapping range
// lists (pairs lo, hi).
func intersect(a, b []rune) []rune {
	var out []rune
	for i, j := 0, 0; i < len(a) && j < len(b); {
		lo, hi := max(a[i], b[j]), min(a[i+1], b[j+1])
		if lo <= hi {
			out = append(out, lo, hi)
		}
		if a[i+1] < b[j+1] {
			i += 2
		} else {
			j += 2
		}
	}
	if out == nil {
		out = []rune{} // an empty class: matches nothing
	}
	return out
}
