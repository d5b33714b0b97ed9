package search

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentspec/agentspec/internal/text"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type hit struct {
	N    int
	Line string
}

// naive matches each line on its own, as text.Lines cuts and text.Decode
// decodes it (both checked against an oracle in package text): what every
// strategy must agree with.
func naive(t *testing.T, pattern, data string) []hit {
	re := regexp.MustCompile(pattern)
	var hits []hit
	n := 0
	text.Lines([]byte(data), func(line []byte) bool {
		n++
		if l := string(text.Decode(line)); re.MatchString(l) {
			hits = append(hits, hit{n, l})
		}
		return true
	})
	return hits
}

func collect(t *testing.T, pattern, text string) []hit {
	t.Helper()
	m, err := Compile(pattern)
	require.NoError(t, err)
	var hits []hit
	m.Match([]byte(text), func(n int, line []byte) bool {
		assert.True(t, utf8.Valid(line), "line %d is not valid UTF-8", n)
		hits = append(hits, hit{n, string(line)})
		return true
	})
	return hits
}

func TestMatchStrategiesAgree(t *testing.T) {
	t.Parallel()
	texts := []string{
		"",
		"hello world\nfunc NewThing(x int)\n",
		"no newline at end: func NewX(",
		"crlf\r\nfunc NewCR(\r\nlast\r\n",
		"cr only\rfunc NewR(\rtail",
		"vt\vff\fseps\x1c\x1d\x1efunc NewV(\x85u\u2028func NewU(\u2029end",
		"invalid \xff\xfe func NewBad( \xe2\x80 here\nnext a\xe2\x80b",
		"\n\n\nempty lines\n\n",
		"trailing cr\r",
		"Handler( at start\nx Handler( y\n  fooHandler(\n",
		"digits 123-4567 and 12-34\n555-1234\r\n",
	}
	patterns := []string{
		`func New[A-Z]\w*\(`, `\w+Handler\(`, `Handler\(`, `^func`, `\($`, `^$`, `x*`, `\b`, `\B`,
		`\d{3}-\d{4}`, `(?i)handler`, `a.b`, `.`, `\s`, `[^a-z]`, `(?s).+`, `end$`, `\x{FFFD}`,
		`a\nb`, `\r`, `(?m)^l`, `[\x{2028}x]`, `e\b`, `(a|b)+`, `\A\w`, `lines?\z`, `\x{0085}`,
	}
	for _, p := range patterns {
		for _, text := range texts {
			assert.Equal(t, naive(t, p, text), collect(t, p, text), "pattern %q on %q", p, text)
		}
	}
}

// TestMatchRandom compares the strategies with the line-by-line oracle on
// random texts built from a small alphabet rich in terminators.
func TestMatchRandom(t *testing.T) {
	t.Parallel()
	alphabet := []string{"a", "b", "x", " ", "_", "1", "\n", "\r", "\r\n", "\v", "\u0085", "\u2028", "\xe2\x80", "\xff", "é"}
	patterns := []string{`a+b`, `x`, `\bx`, `\Bb`, `a.?b`, `[^x]b`, `b\s*a`, `1*`, `\w\W`, `ab|ba`, `(?i)X`, `^a`, `b$`, `\p{L}`}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 400 {
		var sb strings.Builder
		for range rng.IntN(40) {
			sb.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		text := sb.String()
		p := patterns[i%len(patterns)]
		assert.Equal(t, naive(t, p, text), collect(t, p, text), "pattern %q on %q", p, text)
	}
}

func TestCompile(t *testing.T) {
	t.Parallel()
	_, err := Compile("(")
	require.EqualError(t, err, "missing closing ): `(`")
	_, err = Compile(`(?<=x)y`)
	require.Error(t, err)
	_, err = Compile(strings.Repeat("a", MaxPattern+1))
	require.EqualError(t, err, fmt.Sprintf("pattern is %d bytes long; the limit is %d", MaxPattern+1, MaxPattern))
	_, err = Compile(strings.Repeat("a", MaxPattern))
	require.NoError(t, err)

	for pattern, strategy := range map[string]string{
		`func New[A-Z]\w*\(`: "literal",
		`\w+Handler\(`:       "literal",
		`^import`:            "literal",
		`\d+`:                "whole",
		`(?i)handler`:        "whole",
		`^\s*$`:              "lines",
		`a\nb`:               "never",
	} {
		m, err := Compile(pattern)
		require.NoError(t, err)
		got := "lines"
		switch {
		case m.never:
			got = "never"
		case m.lit.lit != nil:
			got = "literal"
		case m.whole != nil:
			got = "whole"
		}
		assert.Equal(t, strategy, got, pattern)
	}
}

func TestMatchStops(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"a", `\w`, `^a`} {
		m, err := Compile(p)
		require.NoError(t, err)
		calls := 0
		m.Match([]byte("a\na\na\n"), func(int, []byte) bool { calls++; return calls < 2 })
		assert.Equal(t, 2, calls, p)
	}
}

func TestFinder(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ lit, text string }{
		{"func New", "x func Ne func New"},
		{"Handler(", "Handler("},
		{"Handler(", "andler( Handler"},
		{"ab", "aab"},
		{"N", "abc"},
		{"zz", "z"},
	} {
		f := newFinder([]byte(tc.lit))
		assert.Equal(t, strings.Index(tc.text, tc.lit), f.index([]byte(tc.text)), "%q in %q", tc.lit, tc.text)
	}
}

// The break set written out here for speed is the one of package text.
func TestBreakSetsAgreeWithText(t *testing.T) {
	t.Parallel()
	inClass := func(r rune) bool {
		for i := 0; i < len(notBreak); i += 2 {
			if notBreak[i] <= r && r <= notBreak[i+1] {
				return true
			}
		}
		return false
	}
	for r := rune(0); r <= 0x3000; r++ {
		assert.Equal(t, !text.IsBreak(r), inClass(r), "notBreak and U+%04X", r)
		if text.IsBreak(r) && r != '\n' {
			assert.False(t, onlyNewlines([]byte("a\n"+string(r)+"b")), "onlyNewlines misses U+%04X", r)
		}
	}
	assert.True(t, inClass(utf8.MaxRune))
	assert.True(t, onlyNewlines([]byte("a\nb\n")))
}
