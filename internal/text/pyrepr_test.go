package text

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestPyRepr(t *testing.T) {
	t.Parallel()
	// Python's repr() of each.
	for s, want := range map[string]string{
		"vim notes.txt":             `'vim notes.txt'`,
		"it's":                      `"it's"`,
		`a"b'c`:                     `'a"b\'c'`,
		"tab\there\n":               `'tab\there\n'`,
		"\x00\x7f\u200b\U0001F600é": `'\x00\x7f\u200b😀é'`,
		`\`:                         `'\\'`,
		">":                         `'>'`,
		"\xff":                      `'\udcff'`,
	} {
		assert.Equal(t, want, PyRepr(s), "%q", s)
	}
}
