package filesystem

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFindFilesGolden(t *testing.T) {
	t.Parallel()
	c, _ := newWalkerFS(t, Options{})
	goldenCompare(t, "find_files_all", result(callTool(context.Background(), t, c, ToolFindFiles,
		map[string]any{"pattern": "**/*"})))
}

func TestFindFiles(t *testing.T) {
	t.Parallel()
	runWalkerCases(t, ToolFindFiles, []walkerCase{
		{name: "top level only", args: map[string]any{"pattern": "*.txt"}, want: lines(
			"a.txt", "alias.txt", "cr.txt", "crlf.txt", "hello.txt", "latin1.txt", "multi.txt", "secret-alias.txt")},
		{name: "recursive, component-wise order", args: map[string]any{"pattern": "**/*.txt"}, want: lines(
			"a/b.txt", "a.txt", "alias.txt", "config/secret.txt", "cr.txt", "crlf.txt", "hello.txt", "latin1.txt",
			"multi.txt", "secret-alias.txt")},
		{name: "directories only", args: map[string]any{"pattern": "*/"}, want: lines(
			"a/", "config/", "empty/", "linkdir/", "subdir/")},
		{name: "below a path, relative to cwd", args: map[string]any{"pattern": "*", "path": "subdir"},
			want: "subdir/nested.py"},
		{name: "symlinked directories are not entered", args: map[string]any{"pattern": "linkdir/*"}, want: "No matches found."},
		{name: "nor walked through by **", args: map[string]any{"pattern": "**/nested.py"}, want: "subdir/nested.py"},
		{name: "hidden entries never match", args: map[string]any{"pattern": "**/.*"}, want: "No matches found."},
		{name: "hidden root", args: map[string]any{"pattern": "*", "path": ".github"}, want: "No matches found."},
		{name: "escaping and dangling links are dropped", args: map[string]any{"pattern": "*escape*"}, want: "No matches found."},
		{name: "dangling", args: map[string]any{"pattern": "dangling*"}, want: "No matches found."},
		{name: "fifo", args: map[string]any{"pattern": "pi?e"}, want: "pipe"},
		{name: "character class", args: map[string]any{"pattern": "[ab]*.txt"}, want: lines("a.txt", "alias.txt")},
		{name: "allowed patterns apply to results, not to the walk", opts: Options{AllowedPatterns: []string{"*.py"}},
			args: map[string]any{"pattern": "**/*"}, want: "subdir/nested.py"},
		{name: "allowed pattern checked on the link target", opts: Options{AllowedPatterns: []string{"*.md"}},
			args: map[string]any{"pattern": "*"}, want: lines("alias.py", "notes.md")},
		{name: "denied patterns", opts: Options{DeniedPatterns: []string{"*.secret", "a"}},
			args: map[string]any{"pattern": "**/*.txt"}, want: lines(
				"a.txt", "alias.txt", "config/secret.txt", "cr.txt", "crlf.txt", "hello.txt", "latin1.txt", "multi.txt")},
		{name: "cwd-relative output with ..", opts: Options{Cwd: "subdir"},
			args: map[string]any{"pattern": "**/b*", "path": ".."}, want: lines("../a/b.txt", "../bin.dat")},
		{name: "not a directory", args: map[string]any{"pattern": "*", "path": "hello.txt"},
			want: "RETRY: Not a directory: hello.txt"},
		{name: "missing", args: map[string]any{"pattern": "*", "path": "nope"}, want: "RETRY: Not a directory: nope"},
		{name: "absolute pattern", args: map[string]any{"pattern": "/etc/*"},
			want: "RETRY: Pattern '/etc/*' must be relative to the search path, not absolute."},
		{name: "parent pattern", args: map[string]any{"pattern": "../*"},
			want: "RETRY: Pattern '../*' is not a valid glob pattern."},
		{name: "empty pattern", args: map[string]any{"pattern": ""},
			want: "RETRY: Pattern '' is not a valid glob pattern."},
		{name: "nothing", args: map[string]any{"pattern": "*.nothing"}, want: "No matches found."},
	})
}

func TestFindFilesCap(t *testing.T) {
	t.Parallel()
	tree := map[string]string{"a/x.go": "", "a.go": "", "b.go": "", "c.txt": ""}
	for _, tc := range []struct {
		max       int
		want      string
		truncated bool
	}{
		{1, lines("a/x.go", "[... truncated at 1 matches]"), true},
		{3, lines("a/x.go", "a.go", "b.go"), false}, // exactly 3: no marker
		{10, lines("a/x.go", "a.go", "b.go"), false},
	} {
		c, _ := newTestFS(t, Options{Tools: []string{ToolFindFiles}, MaxFindResults: tc.max}, tree)
		var rec recorder
		got, err := callTool(rec.ctx(), t, c, ToolFindFiles, map[string]any{"pattern": "**/*.go"})
		require.NoError(t, err)
		assert.Equal(t, tc.want, got, "max %d", tc.max)
		require.Len(t, rec.events, 1)
		ev := rec.events[0].(*FilesSearchedEvent)
		assert.Equal(t, FilesSearchedEvent{
			EventBase: ev.EventBase, Pattern: "**/*.go", Search: SearchFind, MatchCount: min(tc.max, 3), Truncated: tc.truncated,
		}, *ev)
		assert.Equal(t, ".", ev.Path)
	}
}
