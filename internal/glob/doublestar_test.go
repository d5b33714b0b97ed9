package glob

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// The doublestar dialect, as input_globs and expected_output_files use it:
// '*' stays within one directory, "**" spans any number, hidden names are
// not special, {a,b} and [ab] work.
func TestDoublestar(t *testing.T) {
	t.Parallel()
	tests := []struct {
		pattern string
		yes, no []string
	}{
		{"*.md", []string{"a.md", ".draft.md"}, []string{"docs/a.md", "a.mdx"}},
		{"**/*.md", []string{"a.md", "docs/a.md", "a/b/c.md", ".git/x.md"}, []string{"a.txt"}},
		{"src/**", []string{"src/a", "src/a/b.go"}, []string{"other/a"}},
		{"src/*.go", []string{"src/a.go"}, []string{"src/a/b.go", "a.go"}},
		{"*.{go,md}", []string{"a.go", "b.md"}, []string{"c.txt"}},
		{"[ab].txt", []string{"a.txt", "b.txt"}, []string{"c.txt"}},
		{"?.txt", []string{"a.txt"}, []string{"ab.txt", "a/b.txt"}},
		{"data/input.csv", []string{"data/input.csv"}, []string{"data/input.csv.bak"}},
	}
	for _, tt := range tests {
		assert.True(t, ValidDoublestar(tt.pattern), tt.pattern)
		for _, s := range tt.yes {
			assert.True(t, MatchDoublestar(tt.pattern, s), "%q should match %q", s, tt.pattern)
		}
		for _, s := range tt.no {
			assert.False(t, MatchDoublestar(tt.pattern, s), "%q should not match %q", s, tt.pattern)
		}
	}
	assert.False(t, ValidDoublestar("[ab"), "an unclosed class is not a pattern")
	for pattern, base := range map[string]string{"src/**/*.go": "src", "*.md": ".", "a/b/c.txt": "a/b"} {
		got, _ := SplitDoublestar(pattern)
		assert.Equal(t, base, got, pattern)
	}
}
