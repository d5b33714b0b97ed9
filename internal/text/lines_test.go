package text

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
)

// splitlines is str.splitlines(keepends) written the obvious way, over
// decoded text, one code point at a time: the oracle the byte-level scanners
// are checked against.
func splitlines(s string, keepends bool) []string {
	var lines []string
	rs := []rune(s)
	start := 0
	for i := 0; i < len(rs); i++ {
		if !IsBreak(rs[i]) {
			continue
		}
		end := i
		if rs[i] == '\r' && i+1 < len(rs) && rs[i+1] == '\n' {
			i++
		}
		if keepends {
			end = i + 1
		}
		lines = append(lines, string(rs[start:end]))
		start = i + 1
	}
	if start < len(rs) {
		lines = append(lines, string(rs[start:]))
	}
	return lines
}

// byLineEnd splits s into lines, terminators kept, with LineEnd.
func byLineEnd[T Bytes](s T) []string {
	var lines []string
	for len(s) > 0 {
		n := LineEnd(s)
		lines = append(lines, string(s[:n]))
		s = s[n:]
	}
	return lines
}

func TestSplitLines(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"a", []string{"a"}},
		{"a\n", []string{"a\n"}},
		{"a\n\n", []string{"a\n", "\n"}},
		{"a\r\nb\rc\n", []string{"a\r\n", "b\r", "c\n"}},
		{"\r\r\n", []string{"\r", "\r\n"}},
		{"a\vb\fc\x1cd\x1de\x1ef", []string{"a\v", "b\f", "c\x1c", "d\x1d", "e\x1e", "f"}},
		{"a\u0085b\u2028c\u2029d", []string{"a\u0085", "b\u2028", "c\u2029", "d"}},
		{"tab\there\x00nul", []string{"tab\there\x00nul"}},
		{"bad\xc2\n", []string{"bad\xc2\n"}},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, byLineEnd(tt.in), "%q", tt.in)
		assert.Equal(t, tt.want, byLineEnd([]byte(tt.in)), "%q as bytes", tt.in)
		assert.Equal(t, len(tt.want), LineCount(tt.in), "%q", tt.in)
	}
}

func TestLines(t *testing.T) {
	t.Parallel()
	for _, text := range []string{
		"", "a", "a\n", "a\nb", "a\r\nb\r\n", "a\rb\r", "\n\n", "\r\r\n\n",
		"a\vb\fc\x1cd\x1de\x1ef", "a\u0085b\u2028c\u2029d", "\u2028", "x\r",
		"bad \xe2\x80 bytes\n\xc2", "\xc2\x85", "tab\tstays\n",
	} {
		checkLines(t, text)
	}
}

// TestLinesRandom checks the scanners against the oracle on random texts
// built from a small alphabet rich in terminators and invalid bytes, whose
// pieces can combine into (or break up) multibyte terminators.
func TestLinesRandom(t *testing.T) {
	t.Parallel()
	alphabet := []string{"a", "b", " ", "\n", "\r", "\r\n", "\v", "\x1e", "\u0085", "\u2028", "\u2029",
		"\xe2", "\xe2\x80", "\x80", "\xa8", "\xc2", "\x85", "\xff", "é", "\xed\xa0\x80"}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		var sb strings.Builder
		for range rng.IntN(24) {
			sb.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		checkLines(t, sb.String())
	}
}

// checkLines compares every scanner with the oracle on text, raw and decoded.
func checkLines(t *testing.T, text string) {
	t.Helper()
	decoded := string(Decode([]byte(text)))
	var got []string
	Lines([]byte(text), func(line []byte) bool { got = append(got, string(Decode(line))); return true })
	assert.Equal(t, splitlines(decoded, false), got, "Lines(%q)", text)

	want := splitlines(decoded, true)
	assert.Equal(t, want, byLineEnd(decoded), "LineEnd on decoded %q", text)
	var raw []string
	for _, l := range byLineEnd([]byte(text)) {
		raw = append(raw, string(Decode([]byte(l))))
	}
	assert.Equal(t, want, raw, "LineEnd on raw %q", text)
	assert.Equal(t, len(want), LineCount(text), "LineCount(%q)", text)
	assert.Equal(t, len(want), CountLines([]byte(text)), "CountLines(%q)", text)

	last, _ := utf8.DecodeLastRuneInString(decoded)
	assert.Equal(t, text != "" && IsBreak(last), EndsWithBreak(text), "EndsWithBreak(%q)", text)
}

func TestLinesStops(t *testing.T) {
	t.Parallel()
	var got []string
	Lines([]byte("a\nb\nc\n"), func(line []byte) bool {
		got = append(got, string(line))
		return len(got) < 2
	})
	assert.Equal(t, []string{"a", "b"}, got)
}

// LastLineEnd cuts a prefix of a text where the lines of the whole text
// that the prefix holds entirely end.
func TestLastLineEnd(t *testing.T) {
	t.Parallel()
	alphabet := []string{"a", " ", "\n", "\r", "\r\n", "\v", "\x1e", "\u0085", "\u2028", "\u2029",
		"\xe2", "\xe2\x80", "\x80", "\xa8", "\xc2", "\x85", "\xff", "é"}
	rng := rand.New(rand.NewPCG(11, 12))
	for range 3000 {
		var sb strings.Builder
		for range rng.IntN(16) {
			sb.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		whole := []byte(sb.String())
		// The ends of the whole text's lines, terminators included.
		var ends []int
		for pos := 0; pos < len(whole); {
			pos += LineEnd(whole[pos:])
			ends = append(ends, pos)
		}
		for k := 0; k <= len(whole); k++ {
			prefix := whole[:k]
			want := 0
			for _, e := range ends {
				// A line the prefix holds whole, and whose end the prefix
				// can tell: a line ending in \r at the prefix's end might
				// go on with \n in a longer text.
				if e <= k && EndsWithBreak(whole[:e]) && !(e == k && whole[e-1] == '\r') {
					want = e
				}
			}
			assert.Equal(t, want, LastLineEnd(prefix), "%q cut at %d", whole, k)
			lead, _ := NextBreak(prefix, 0)
			if lead < 0 {
				lead = len(prefix)
			}
			assert.LessOrEqual(t, FirstBreakLead(prefix), lead, "%q cut at %d", whole, k)
			_, end := NextBreak(prefix, FirstBreakLead(prefix))
			_, want2 := NextBreak(prefix, 0)
			assert.Equal(t, want2, end, "NextBreak from FirstBreakLead, %q cut at %d", whole, k)
		}
	}
}

func TestLastIndexByte(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(13, 14))
	for range 300 {
		b := make([]byte, rng.IntN(20000))
		for range rng.IntN(4) {
			if len(b) > 0 {
				b[rng.IntN(len(b))] = '\n'
			}
		}
		assert.Equal(t, bytes.LastIndexByte(b, '\n'), lastIndexByte(b, '\n'))
	}
}

// CountLines' fast path, texts whose only terminators are \n and \r.
func TestCountLinesNewlinesOnly(t *testing.T) {
	t.Parallel()
	alphabet := []string{"a", "bc", "\n", "\r", "\r\n", "é", "\xff", "\n\r"}
	rng := rand.New(rand.NewPCG(15, 16))
	for range 3000 {
		var sb strings.Builder
		for range rng.IntN(20) {
			sb.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		assert.Equal(t, LineCount(sb.String()), CountLines([]byte(sb.String())), "%q", sb.String())
	}
}
