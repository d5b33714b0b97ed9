package search

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"testing/iotest"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/internal/text"
)

type source struct {
	io.Reader
	io.ReaderAt
}

func matchAll(m *Matcher, data []byte) []hit {
	var out []hit
	m.Match(data, func(n int, line []byte) bool {
		out = append(out, hit{n, string(line)})
		return true
	})
	return out
}

// Scan, through buffers smaller than the lines, finds what Match finds in
// the whole text; lines longer than maxChars come back as a window that
// holds their first match.
func TestScanAgreesWithMatch(t *testing.T) {
	t.Parallel()
	alphabet := []string{"foo", "bar", "a", " ", "\n", "\r", "\r\n", "\v", "\u0085", "\u2028",
		"\xe2", "\xe2\x80", "\xc2", "\xff", "é", "x", "xx", "foo bar"}
	patterns := []string{`foo`, `^foo`, `foo$`, `o+ ?b`, `\bbar\b`, `(?i)FOO`, `.`, `^$`, `é|\x{FFFD}`, ``, `r\s*$`, `\n`, `a.*x`}
	rng := rand.New(rand.NewPCG(21, 22))
	ctx := context.Background()
	for round := range 80 {
		var sb strings.Builder
		for range rng.IntN(60) {
			piece := alphabet[rng.IntN(len(alphabet))]
			if rng.IntN(20) == 0 {
				piece = strings.Repeat(piece, 20+rng.IntN(80))
			}
			sb.WriteString(piece)
		}
		data := []byte(sb.String())
		for _, p := range patterns {
			m, err := Compile(p)
			require.NoError(t, err)
			want := matchAll(m, data)
			for _, size := range []int{5, 32, 1 << 10} {
				s := NewScanner(size)
				var r io.Reader = bytes.NewReader(data)
				if round%2 == 1 {
					r = iotest.HalfReader(r)
				}
				var got []hit
				err := s.Scan(ctx, m, source{r, bytes.NewReader(data)}, 1<<30, false, func(l Line) bool {
					assert.Zero(t, l.Before+l.After)
					got = append(got, hit{l.N, string(l.Text)})
					return true
				})
				require.NoError(t, err)
				assert.Equal(t, want, got, "pattern %q, buffer %d, text %q", p, size, data)

				// With a small maxChars every long line is a window.
				const maxChars = 9
				k := 0
				err = s.Scan(ctx, m, source{bytes.NewReader(data), bytes.NewReader(data)}, maxChars, false, func(l Line) bool {
					require.Less(t, k, len(want))
					line := []rune(want[k].Line)
					k++
					assert.Equal(t, want[k-1].N, l.N)
					shown := utf8.RuneCountInString(string(l.Text))
					assert.Equal(t, len(line), l.Before+shown+l.After, "pattern %q, line %q", p, string(line))
					assert.Equal(t, string(line[l.Before:l.Before+shown]), string(l.Text))
					assert.LessOrEqual(t, shown, maxChars)
					if len(line) > maxChars {
						assert.Equal(t, maxChars, shown)
						at := utf8.RuneCount([]byte(string(line))[:m.Index([]byte(string(line)))])
						assert.True(t, l.Before <= at && at < l.Before+maxChars || at == len(line),
							"the window %d..%d holds the match at %d of %q", l.Before, l.Before+shown, at, string(line))
					}
					return true
				})
				require.NoError(t, err)
				assert.Equal(t, len(want), k)
			}
		}
	}
}

func TestScanStopsAndSkipsBinary(t *testing.T) {
	t.Parallel()
	m, err := Compile("x")
	require.NoError(t, err)
	s := NewScanner(2 * text.BinaryProbe)
	data := []byte(strings.Repeat("x\n", 100))
	var got []int
	require.NoError(t, s.Scan(context.Background(), m, source{bytes.NewReader(data), bytes.NewReader(data)}, 100, true,
		func(l Line) bool { got = append(got, l.N); return len(got) < 3 }))
	assert.Equal(t, []int{1, 2, 3}, got)

	bin := append(bytes.Repeat([]byte("x"), text.BinaryProbe-1), 0)
	err = s.Scan(context.Background(), m, source{bytes.NewReader(bin), bytes.NewReader(bin)}, 100, true, func(Line) bool { return true })
	assert.ErrorIs(t, err, ErrBinary)
	late := append(bytes.Repeat([]byte("x"), text.BinaryProbe), 0)
	n := 0
	err = s.Scan(context.Background(), m, source{bytes.NewReader(late), bytes.NewReader(late)}, 100, true, func(Line) bool { n++; return true })
	assert.NoError(t, err, "a NUL after the probe is text")
	assert.Equal(t, 1, n)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	long := bytes.Repeat([]byte("y"), 1000)
	err = s.Scan(ctx, m, source{bytes.NewReader(long), bytes.NewReader(long)}, 100, false, func(Line) bool { return true })
	assert.ErrorIs(t, err, context.Canceled)
}

// In a line longer than the buffer, the literal prefilter finds an
// occurrence wherever the reads cut it, and the window shows it.
func TestScanLongLineLiteralAcrossReads(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, p := range []string{"needle", `needl[e]y`, `ne+dle`} {
		m, err := Compile(p)
		require.NoError(t, err)
		for at := 0; at < 70; at++ {
			line := strings.Repeat("é", at/2) + strings.Repeat("x", at%2) + "needle" + strings.Repeat("y", 40)
			data := []byte(line + "\r\nnext needley\n")
			s := NewScanner(16)
			var got []Line
			require.NoError(t, s.Scan(ctx, m, source{iotest.HalfReader(bytes.NewReader(data)), bytes.NewReader(data)}, 8, false,
				func(l Line) bool { l.Text = bytes.Clone(l.Text); got = append(got, l); return true }))
			require.Len(t, got, 2, "%s at %d", p, at)
			chars := []rune(line)
			assert.Equal(t, 1, got[0].N)
			assert.Equal(t, string(chars[got[0].Before:got[0].Before+8]), string(got[0].Text), "%s at %d", p, at)
			assert.Equal(t, len(chars), got[0].Before+8+got[0].After)
			assert.Contains(t, string(chars[got[0].Before:]), "ne", "%s at %d", p, at)
			assert.Equal(t, 2, got[1].N)
		}
	}
}

// A read that fails part way is Scan's error, after the lines before it.
func TestScanReadError(t *testing.T) {
	t.Parallel()
	m, err := Compile("x")
	require.NoError(t, err)
	data := []byte(strings.Repeat("x\n", 50))
	failing := io.MultiReader(bytes.NewReader(data), iotest.ErrReader(io.ErrUnexpectedEOF))
	s := NewScanner(32)
	n := 0
	err = s.Scan(context.Background(), m, source{failing, bytes.NewReader(data)}, 100, false, func(Line) bool { n++; return true })
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
	assert.Equal(t, 50, n)
}

// A source that knows its size and is larger than firstRead is probed with
// one small read first; the rule is the same: a NUL in the first
// text.BinaryProbe bytes.
func TestScanLargeSourceBinaryProbe(t *testing.T) {
	t.Parallel()
	m, err := Compile("x$")
	require.NoError(t, err)
	s := NewScanner(1 << 20)
	big := func(nulAt int) []byte {
		b := bytes.Repeat([]byte("abcdefx\n"), (firstRead+1000)/8)
		b[nulAt] = 0
		return b
	}
	count := func(data []byte) (int, error) {
		n := 0
		err := s.Scan(context.Background(), m, bytes.NewReader(data), 100, true, func(Line) bool { n++; return true })
		return n, err
	}
	_, err = count(big(text.BinaryProbe - 1))
	assert.ErrorIs(t, err, ErrBinary)
	n, err := count(big(text.BinaryProbe))
	require.NoError(t, err)
	assert.Equal(t, (firstRead+1000)/8, n, "the NUL replaced a line's first letter: every line matches")
}
