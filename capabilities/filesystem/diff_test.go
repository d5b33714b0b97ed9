package filesystem

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestUnifiedDiff(t *testing.T) {
	t.Parallel()
	eight := "1\n2\n3\n4\n5\n6\n7\n8\n"
	tests := []struct {
		name, old, new, path, want string
	}{
		{"equal", "same\n", "same\n", "f.txt", ""},
		{"new file", "", "a\nb\n", "f.txt", "--- a/f.txt\n+++ b/f.txt\n@@ -0,0 +1,2 @@\n+a\n+b"},
		{"emptied file", "a\nb\n", "", "f.txt", "--- a/f.txt\n+++ b/f.txt\n@@ -1,2 +0,0 @@\n-a\n-b"},
		{"one line", "old\n", "new\n", "f.txt", "--- a/f.txt\n+++ b/f.txt\n@@ -1 +1 @@\n-old\n+new"},
		{"line 4 of 8", eight, strings.Replace(eight, "4\n", "four\n", 1), "n.txt",
			"--- a/n.txt\n+++ b/n.txt\n@@ -1,7 +1,7 @@\n 1\n 2\n 3\n-4\n+four\n 5\n 6\n 7"},
		{"no newline either side", "a", "b", "f", "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+b\n\\ No newline at end of file"},
		{"final newline removed", "a\n", "a", "f", "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+a\n\\ No newline at end of file"},
		{"final newline added, context kept", "x\ny", "x\ny\n", "f", "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n x\n-y\n\\ No newline at end of file\n+y"},
		{"split on \\n only", "a\r\nb\r\n", "a\r\nc\r\n", "f", "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\r\n-b\r\n+c\r"},
		{"two hunks", strings.Repeat("x\n", 10) + "a\n" + strings.Repeat("y\n", 10) + "b\n", strings.Repeat("x\n", 10) + "A\n" + strings.Repeat("y\n", 10) + "B\n", "f",
			"--- a/f\n+++ b/f\n@@ -8,7 +8,7 @@\n x\n x\n x\n-a\n+A\n y\n y\n y\n@@ -19,4 +19,4 @@\n y\n y\n y\n-b\n+B"},
		{"odd path quoted", "", "x\n", "we\nird.txt", "--- \"a/we\\nird.txt\"\n+++ \"b/we\\nird.txt\"\n@@ -0,0 +1 @@\n+x"},
		{"quote and backslash", "", "x\n", `a"b\c`, `--- "a/a\"b\\c"` + "\n" + `+++ "b/a\"b\\c"` + "\n@@ -0,0 +1 @@\n+x"},
		{"printable unicode not quoted", "", "x\n", "café.txt", "--- a/café.txt\n+++ b/café.txt\n@@ -0,0 +1 @@\n+x"},
		{"bytes that are not UTF-8 quoted", "", "x\n", "bad\xff.txt", `--- "a/bad\377.txt"` + "\n" + `+++ "b/bad\377.txt"` + "\n@@ -0,0 +1 @@\n+x"},
		{"U+FFFD itself not quoted", "", "x\n", "rep\ufffd.txt", "--- a/rep\ufffd.txt\n+++ b/rep\ufffd.txt\n@@ -0,0 +1 @@\n+x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, truncated := unifiedDiff(tt.old, tt.new, tt.path)
			assert.Equal(t, tt.want, got)
			assert.False(t, truncated)
		})
	}
}

func TestDiffBounds(t *testing.T) {
	t.Parallel()
	headers := "--- a/big.txt\n+++ b/big.txt"

	atLimit := strings.Repeat("é", MaxDiffSourceChars) // code points, not bytes
	d, tr := unifiedDiff("", atLimit, "big.txt")
	assert.True(t, strings.HasPrefix(d, headers+"\n@@"), "a text of exactly MaxDiffSourceChars is diffed")
	assert.True(t, tr, "but its diff is longer than MaxEventDiffChars")
	assert.Equal(t, headers, d[:len(headers)])

	d, tr = unifiedDiff("", atLimit+"x", "big.txt")
	assert.Equal(t, headers, d)
	assert.True(t, tr)

	d, tr = unifiedDiff(atLimit+"x", "small", "big.txt")
	assert.Equal(t, headers, d)
	assert.True(t, tr)

	// 256 x 256 lines is at the product bound; one more line is over it.
	lines := func(n int, s string) string { return strings.Repeat(s+"\n", n-1) + s }
	d, tr = unifiedDiff(lines(256, "a"), lines(256, "b"), "big.txt")
	assert.NotEqual(t, headers, d)
	assert.False(t, tr, "a diff at the bound is whole")
	d, tr = unifiedDiff(lines(257, "a"), lines(256, "b"), "big.txt")
	assert.Equal(t, headers, d)
	assert.True(t, tr)
}

func TestDiffClippedAtLineBoundary(t *testing.T) {
	t.Parallel()
	var old, new []string
	for i := range 250 { // 251 x 251 lines stays under the line-product bound
		old = append(old, fmt.Sprintf("old line %03d ü, long enough to overflow\n", i))
		new = append(new, fmt.Sprintf("new line %03d ü, long enough to overflow\n", i))
	}
	full := allReplaced(old, new, "f.txt")
	got, truncated := unifiedDiff(strings.Join(old, ""), strings.Join(new, ""), "f.txt")
	assert.True(t, truncated)
	assert.LessOrEqual(t, runeCount(got), MaxEventDiffChars)
	assert.True(t, strings.HasPrefix(full, got+"\n"), "whole lines of the full diff")
	nextLine, _, _ := strings.Cut(full[len(got)+1:], "\n")
	assert.Greater(t, runeCount(got)+1+runeCount(nextLine), MaxEventDiffChars, "cut at the last line that fits")

	// A diff of exactly MaxEventDiffChars code points is kept whole.
	exact := strings.Repeat("x", MaxEventDiffChars)
	clipped, tr := clipDiff(exact)
	assert.Equal(t, exact, clipped)
	assert.False(t, tr)
	// One more, with a line break right at the limit, keeps the line before.
	over := strings.Repeat("y", MaxEventDiffChars) + "\nz"
	clipped, tr = clipDiff(over)
	assert.Equal(t, strings.Repeat("y", MaxEventDiffChars), clipped)
	assert.True(t, tr)
}

// allReplaced is the full diff of two texts that share no line: one hunk
// removing every old line and adding every new one.
func allReplaced(old, new []string, path string) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s\n@@ -1,%d +1,%d @@", diffHeaders(path), len(old), len(new))
	for _, l := range old {
		sb.WriteString("\n-" + strings.TrimSuffix(l, "\n"))
	}
	for _, l := range new {
		sb.WriteString("\n+" + strings.TrimSuffix(l, "\n"))
	}
	return sb.String()
}
