package filesystem

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRE2Hint(t *testing.T) {
	t.Parallel()
	tests := []struct {
		pattern string
		names   string // a word the hint must contain; "" for no hint
	}{
		{`foo(?=bar)`, "Look-ahead"},
		{`foo(?!bar)`, "Negative look-ahead"},
		{`(?<=a)b`, "Look-behind"},
		{`(?<!a)b`, "Negative look-behind"},
		{`(\w+) \1`, "Back-references"},
		{`(a)(b)\9`, "Back-references"},
		{`(?P<w>\w+) (?P=w)`, "Back-references"},
		{`(?<x>a)\k<x>`, "Back-references"},
		{`a++`, "Possessive"},
		{`a*+b`, "Possessive"},
		{`a?+`, "Possessive"},
		{`a{2}+`, "Possessive"},
		{`(?>ab|a)c`, "Atomic groups"},
		{`end\Z`, `\z`},
		// Literal look-alikes and valid RE2 get no hint.
		{`[(?=]`, ""},
		{`[]\1]`, ""},
		{`[^](?=]`, ""},
		{`\(?=`, ""},
		{`\\1`, ""},
		{`(?<name>a)`, ""},
		{`(?P<name>a)`, ""},
		{`(?i)abc`, ""},
		{`a**`, ""},
		{`a+`, ""},
		{`\d+\.\d+`, ""},
		{`trailing\`, ""},
	}
	for _, tt := range tests {
		got := re2Hint(tt.pattern)
		if tt.names == "" {
			assert.Empty(t, got, "%s", tt.pattern)
			continue
		}
		assert.Contains(t, got, tt.names, "%s", tt.pattern)
		assert.Contains(t, got, "not supported (RE2 syntax)", "%s", tt.pattern)
		// The hint is only shown for patterns RE2 refuses.
		_, err := regexp.Compile(tt.pattern)
		assert.Error(t, err, "%s", tt.pattern)
	}
}

// Every suggested alternative quoted in a hint compiles.
func TestRE2HintSuggestionsCompile(t *testing.T) {
	t.Parallel()
	quoted := regexp.MustCompile(`'([^']+)' for`)
	var hints []string
	for _, g := range groupHints {
		hints = append(hints, g.hint)
	}
	hints = append(hints, escapeHint('1'))
	for _, h := range hints {
		for _, m := range quoted.FindAllStringSubmatch(h, -1) {
			_, err := regexp.Compile(m[1])
			assert.NoError(t, err, "suggestion %q in %q", m[1], h)
		}
	}
}

func TestSearchFilesRE2Message(t *testing.T) {
	t.Parallel()
	c, _ := newTestFS(t, Options{Tools: []string{ToolSearchFiles}}, map[string]string{"a.txt": "foobar\n"})
	for pattern, want := range map[string]string{
		`foo(?=bar)`: "Invalid regex pattern: invalid or unsupported Perl syntax: `(?=`. Look-ahead (?=...) is not supported (RE2 syntax)",
		`(\w+) \1`:   "Invalid regex pattern: invalid escape sequence: `\\1`. Back-references such as \\1 are not supported (RE2 syntax)",
		`a(`:         "Invalid regex pattern: missing closing ): `a(`",
	} {
		_, err := callTool(t.Context(), t, c, ToolSearchFiles, map[string]any{"pattern": pattern})
		require.Error(t, err, pattern)
		assert.True(t, strings.HasPrefix(err.Error(), want), "%s: %s", pattern, err)
	}
	_, err := callTool(t.Context(), t, c, ToolSearchFiles, map[string]any{"pattern": `a(`})
	assert.Equal(t, "Invalid regex pattern: missing closing ): `a(`", err.Error(), "no hint for a plain syntax error")
}
