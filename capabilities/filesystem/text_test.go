package filesystem

import (
	"bytes"
	"strings"
	"testing"
	"testing/iotest"
	"unicode/utf8"

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

func TestIsBinary(t *testing.T) {
	t.Parallel()
	at := func(i int) []byte {
		b := bytes.Repeat([]byte("a"), i+1)
		b[i] = 0
		return b
	}
	assert.False(t, isBinary(nil))
	assert.False(t, isBinary([]byte("text\n")))
	assert.True(t, isBinary(at(0)))
	assert.True(t, isBinary(at(8191)), "index 8191 counts")
	assert.False(t, isBinary(at(8192)), "index 8192 does not")
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
		got := splitLines(tt.in)
		assert.Equal(t, tt.want, got, "%q", tt.in)
		assert.Equal(t, len(tt.want), lineCount(tt.in), "%q", tt.in)
		assert.Equal(t, tt.in, strings.Join(got, ""))
	}
	for line, want := range map[string]string{
		"a\r\n": "a", "a\n": "a", "a\r": "a", "a\u2028": "a", "a\u0085": "a", "a": "a", "": "", "a\x1e": "a",
	} {
		assert.Equal(t, want, trimTerminator(line), "%q", line)
	}
}

// lineReader must cut and count lines exactly as splitLines does on the
// decoded text, whatever the chunking of the stream.
func TestLineReaderAgreesWithSplitLines(t *testing.T) {
	t.Parallel()
	inputs := []string{
		"", "a", "a\n", "a\r\nb\r", "\r", "\r\n\r\n", "x\u2028y\u2029z\u0085",
		"héllo wörld\nçà\r\n", "bad \xff\xfe bytes\n\xe2\x80\n\xe2\x80A\xf0\x9f\x98", strings.Repeat("0123456789abcdef", 5000) + "\r\n" + "tail",
		"ascii\tcontrol\x01chars\x7f and more text\n", "\xc2\x85", "\xed\xa0\x80 surrogate",
	}
	for _, in := range inputs {
		want := splitLines(decodeUTF8Replace([]byte(in)))
		for _, r := range []func() *lineReader{
			func() *lineReader { return newLineReader(strings.NewReader(in), nil) },
			func() *lineReader { return newLineReader(iotest.OneByteReader(strings.NewReader(in)), nil) },
			func() *lineReader {
				k := min(len(in), 3)
				return newLineReader(iotest.HalfReader(strings.NewReader(in[k:])), []byte(in[:k]))
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
		}
		// keep bounds what is kept, not what is counted.
		lr := newLineReader(strings.NewReader(in), nil)
		for _, w := range want {
			line, n, ok := lr.next(nil, 5)
			assert.True(t, ok)
			assert.Equal(t, runeCount(w), n)
			assert.Equal(t, string([]rune(w)[:min(5, runeCount(w))]), string(line))
		}
	}
}

func TestDecodeUTF8(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, replaced, strictErr string
	}{
		{"plain", "plain", ""},
		{"hello \xff\xfe world\n", "hello \ufffd\ufffd world\n", "'utf-8' codec can't decode byte 0xff in position 6: invalid start byte"},
		{"\xe2\x80A", "\ufffdA", "'utf-8' codec can't decode bytes in position 0-1: invalid continuation byte"},
		{"ab\xe2\x80", "ab\ufffd", "'utf-8' codec can't decode bytes in position 2-3: unexpected end of data"},
		{"\xe2", "\ufffd", "'utf-8' codec can't decode byte 0xe2 in position 0: unexpected end of data"},
		{"\xe2A", "\ufffdA", "'utf-8' codec can't decode byte 0xe2 in position 0: invalid continuation byte"},
		{"\xed\xa0\x80", "\ufffd\ufffd\ufffd", "'utf-8' codec can't decode byte 0xed in position 0: invalid continuation byte"},
		{"\xf0\x9f\x98", "\ufffd", "'utf-8' codec can't decode bytes in position 0-2: unexpected end of data"},
		{"\xc0\xaf", "\ufffd\ufffd", "'utf-8' codec can't decode byte 0xc0 in position 0: invalid start byte"},
		{"\xef\xbf\xbd", "\ufffd", ""},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.replaced, decodeUTF8Replace([]byte(tt.in)), "%q", tt.in)
		s, err := decodeUTF8Strict([]byte(tt.in))
		if tt.strictErr == "" {
			assert.NoError(t, err)
			assert.Equal(t, tt.in, s)
		} else {
			assert.EqualError(t, err, tt.strictErr, "%q", tt.in)
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
