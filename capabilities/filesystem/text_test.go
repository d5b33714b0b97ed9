package filesystem

import (
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"testing/iotest"
	"unicode/utf8"

	"github.com/agentspec/agentspec/internal/text"
	"github.com/stretchr/testify/assert"
)

func TestContentHashConstants(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"":                       "e3b0c44298fc",
		"Hello, world!\n":        "d9014c462484",
		"\x00\x01\x02\x03":       "054edec1d021",
		"new\n":                  "7aa7a5359173",
		"ab\ncd\n":               "5141648ccbe9",
		"hello \xff\xfe world\n": "b94566309835", // D1: raw bytes, even when not UTF-8
	} {
		assert.Equal(t, want, contentHash([]byte(in)), "%q", in)
	}
}

// lineReader must cut and count lines exactly as package text does on the
// decoded text, whatever the chunking of the stream.
func TestLineReaderAgreesWithText(t *testing.T) {
	t.Parallel()
	inputs := []string{
		"", "a", "a\n", "a\r\nb\r", "\r", "\r\n\r\n", "x\u2028y\u2029z\u0085",
		"héllo wörld\nçà\r\n", "bad \xff\xfe bytes\n\xe2\x80\n\xe2\x80A\xf0\x9f\x98", strings.Repeat("0123456789abcdef", 5000) + "\r\n" + "tail",
		"ascii\tcontrol\x01chars\x7f and more text\n", "\xc2\x85", "\xed\xa0\x80 surrogate",
	}
	for _, in := range inputs {
		var want []string
		for rest := string(text.Decode([]byte(in))); rest != ""; {
			n := text.LineEnd(rest)
			want, rest = append(want, rest[:n]), rest[n:]
		}
		for _, r := range []func() *lineReader{
			func() *lineReader { return newLineReader(strings.NewReader(in)) },
			func() *lineReader { return newLineReader(iotest.OneByteReader(strings.NewReader(in))) },
			func() *lineReader {
				k := min(len(in), 3)
				return newLineReader(io.MultiReader(strings.NewReader(in[:k]), iotest.HalfReader(strings.NewReader(in[k:]))))
			},
		} {
			lr := r()
			var got []string
			for {
				line, n, ok := lr.next(nil, -1)
				if !ok {
					break
				}
				assert.Equal(t, utf8.RuneCount(line), n)
				got = append(got, string(line))
			}
			assert.Equal(t, want, got, "%.40q", in)
			assert.Equal(t, contentHash([]byte(in)), lr.hash(), "every byte read is hashed")
			lr.release()
		}
		// keep bounds what is kept, not what is counted.
		lr := newLineReader(strings.NewReader(in))
		defer lr.release()
		for _, w := range want {
			line, n, ok := lr.next(nil, 5)
			assert.True(t, ok)
			assert.Equal(t, runeCount(w), n)
			assert.Equal(t, string([]rune(w)[:min(5, runeCount(w))]), string(line))
		}
	}
}

func TestPyRepr(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"hello.txt":  `'hello.txt'`,
		"it's":       `"it's"`,
		`it's "x"`:   `'it\'s "x"'`,
		`say "hi"`:   `'say "hi"'`,
		"back\\s":    `'back\\s'`,
		"tab\tnl\n":  `'tab\tnl\n'`,
		"\r\x00\x7f": `'\r\x00\x7f'`,
		"é ü 日本":     `'é ü 日本'`,
		"\u2028":     `'\u2028'`,
		"\u00a0":     `'\xa0'`,
		"bad\xff":    `'bad\udcff'`,
		"\U000e0001": `'\U000e0001'`,
	} {
		assert.Equal(t, want, pyRepr(in), "%q", in)
	}
}

func TestGroupThousands(t *testing.T) {
	t.Parallel()
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", 52428801: "52,428,801"} {
		assert.Equal(t, want, groupThousands(n))
	}
}

// countRest counts what next would, line by line, whatever the chunking of
// the stream and wherever it starts.
func TestLineReaderCountRest(t *testing.T) {
	t.Parallel()
	alphabet := []string{"a", "bcd", "\n", "\r", "\r\n", "\v", "\u0085", "\u2028", "\xe2", "\xc2", "é",
		strings.Repeat("x", 70000)}
	rng := rand.New(rand.NewPCG(17, 18))
	for range 300 {
		var sb strings.Builder
		for range rng.IntN(30) {
			sb.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		in := sb.String()
		want := text.LineCount(text.Decode([]byte(in)))
		skip := rng.IntN(3)
		for _, r := range []io.Reader{strings.NewReader(in), iotest.HalfReader(strings.NewReader(in))} {
			lr := newLineReader(r)
			got := 0
			for range skip {
				if _, _, ok := lr.next(nil, 0); ok {
					got++
				}
			}
			got += lr.countRest()
			assert.Equal(t, want, got, "%.60q after %d lines", in, skip)
			assert.Equal(t, contentHash([]byte(in)), lr.hash())
			lr.release()
		}
	}
}
