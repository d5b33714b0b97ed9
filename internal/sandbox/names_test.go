package sandbox

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// Names that would mislead a reader are shown escaped, and the escaped form
// reverses to the raw name.
func TestNameEscaping(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ raw, shown string }{
		{"plain.txt", "plain.txt"},
		{`back\slash`, `back\slash`},
		{"new\nline", `new\x0aline`},
		{"esc\x1b[31m", `esc\x1b[31m`},
		{"bad\xffbyte", `bad\xffbyte`},
		{"txt.\u202eexe", `txt.\u202eexe`},
		{"mixed\\\n", `mixed\\\x0a`},
		{"repl\ufffd", `repl\ufffd`},
		{"del\x7f", `del\x7f`},
		{"c1\u0085", `c1\u0085`},
		{"日本語.md", "日本語.md"},
	} {
		assert.Equal(t, tc.shown, DisplayName(tc.raw), "%q", tc.raw)
		if tc.raw != tc.shown {
			back, ok := UnescapeName(tc.shown)
			assert.True(t, ok, tc.shown)
			assert.Equal(t, tc.raw, back, "reversible")
		}
	}
	for _, s := range []string{`a\qb`, `a\x4`, `a\x41`, `\\`, `x\`} {
		_, ok := UnescapeName(s)
		assert.False(t, ok, "%s is not an escaped form", s)
	}
}
