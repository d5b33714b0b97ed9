package text

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
)

func TestDecode(t *testing.T) {
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
		// Maximal subparts, one U+FFFD each.
		{"a\xffb", "a\ufffdb", "'utf-8' codec can't decode byte 0xff in position 1: invalid start byte"},
		{"a\xe2\x80b", "a\ufffdb", "'utf-8' codec can't decode bytes in position 1-2: invalid continuation byte"},
		{"a\xe2\x80\xe2\x80b", "a\ufffd\ufffdb", "'utf-8' codec can't decode bytes in position 1-2: invalid continuation byte"},
		{"\xf0\x9f\x98\x80", "\U0001F600", ""},
		{"\xf4\x90\x80\x80", "\ufffd\ufffd\ufffd\ufffd", "'utf-8' codec can't decode byte 0xf4 in position 0: invalid continuation byte"},
		{"end\xe2", "end\ufffd", "'utf-8' codec can't decode byte 0xe2 in position 3: unexpected end of data"},
		{"\xe0\x80\x80", "\ufffd\ufffd\ufffd", "'utf-8' codec can't decode byte 0xe0 in position 0: invalid continuation byte"},
		{"\xe0\xa0\x80 valid!", "\u0800 valid!", ""},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.replaced, string(Decode([]byte(tt.in))), "%q", tt.in)
		s, err := decodeStrict([]byte(tt.in))
		if tt.strictErr == "" {
			assert.NoError(t, err)
			assert.Equal(t, tt.in, s)
		} else {
			assert.EqualError(t, err, tt.strictErr, "%q", tt.in)
		}
	}
}

// TestDecodeRandom checks properties every replacement must have, on random
// mixes of valid and invalid sequences: the result is valid UTF-8, valid
// input and decoded output are left as they are, each U+FFFD added stands for
// exactly one maximal subpart, and decoding agrees with DecodeRune stepping.
func TestDecodeRandom(t *testing.T) {
	t.Parallel()
	pieces := []string{"a", "é", "\u2028", "\U0001F600", "\ufffd", "\x80", "\xbf", "\xc2", "\xe0", "\xe0\xa0",
		"\xed\xa0", "\xf0\x9f", "\xf0\x9f\x98", "\xf4\x90", "\xff", "\xc0"}
	rng := rand.New(rand.NewPCG(5, 6))
	for range 2000 {
		var sb strings.Builder
		for range rng.IntN(12) {
			sb.WriteString(pieces[rng.IntN(len(pieces))])
		}
		in := []byte(sb.String())
		out := Decode(in)
		assert.True(t, utf8.Valid(out), "%q", in)
		assert.Equal(t, out, Decode(out), "decoding twice changes nothing: %q", in)
		var stepped []byte
		for i := 0; i < len(in); {
			r, n, ok := DecodeRune(in[i:])
			if !ok {
				r = utf8.RuneError
				m, _ := InvalidLen(in[i:])
				assert.Equal(t, m, n, "%q at %d", in, i)
			}
			stepped = utf8.AppendRune(stepped, r)
			i += n
		}
		assert.Equal(t, string(stepped), string(out), "%q", in)
		assert.Equal(t, utf8.RuneCount(out), CountChars(in), "%q", in)
		if _, err := decodeStrict(in); utf8.Valid(in) {
			assert.NoError(t, err)
		} else {
			assert.Error(t, err, "%q", in)
		}
	}
}

// decodeStrict decodes b as Python's bytes.decode('utf-8') does, failing
// with CheckStrict's message.
func decodeStrict(b []byte) (string, error) {
	if err := CheckStrict(b); err != nil {
		return "", err
	}
	return string(b), nil
}
