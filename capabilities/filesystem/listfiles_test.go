package filesystem

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestListFilesGolden(t *testing.T) {
	t.Parallel()
	c := newRGFS(t, Options{})
	goldenCompare(t, "list_files_root", result(callTool(context.Background(), t, c, ToolListFiles, map[string]any{})))
}

func TestListFiles(t *testing.T) {
	t.Parallel()
	runRGCases(t, ToolListFiles, []walkerCase{
		{name: "gitignore inside a repository", args: map[string]any{"path": "repo"}, want: "repo/keep.txt"},
		{name: "explicit glob overrides ignore files", args: map[string]any{"path": "repo", "glob": "*.log"},
			want: "repo/app.log"},
		{name: "ignore file anywhere, gitignore only in a repository", args: map[string]any{"path": "plain"},
			want: "plain/x.tmp"},
		{name: "glob overrides .ignore", args: map[string]any{"glob": "*.me"}, want: "plain/skip.me"},
		{name: "dotfiles stay hidden under a glob", args: map[string]any{"glob": ".*"}, want: "No files found."},
		{name: "dot directories stay hidden under a glob", args: map[string]any{"glob": "*.yml"}, want: "No files found."},
		{name: "hidden root", args: map[string]any{"path": ".github"}, want: "No files found."},
		{name: "symlinks are not listed", args: map[string]any{"glob": "*alias*"}, want: "No files found."},
		{name: "denied patterns", opts: Options{DeniedPatterns: []string{"*.secret", "a", "*.txt"}},
			args: map[string]any{"glob": "!*.{py,me,tmp,dat}"}, want: "notes.md"},
		{name: "denied root", opts: Options{DeniedPatterns: []string{"repo"}}, args: map[string]any{"path": "repo"},
			want: "RETRY: Path 'repo' is denied by pattern 'repo'."},
		{name: "allowed patterns", opts: Options{AllowedPatterns: []string{"*.py"}}, args: map[string]any{},
			want: "subdir/nested.py"},
		{name: "cwd-relative output", opts: Options{Cwd: "subdir"}, args: map[string]any{"path": "..", "glob": "*.{md,py}"},
			want: lines("../notes.md", "nested.py")},
		{name: "through a symlinked directory", args: map[string]any{"path": "linkdir"}, want: "subdir/nested.py"},
		{name: "not a directory", args: map[string]any{"path": "hello.txt"}, want: "RETRY: Path 'hello.txt' is not a directory."},
		{name: "missing", args: map[string]any{"path": "nope"}, want: "RETRY: Path 'nope' is not a directory."},
		{name: "outside", args: map[string]any{"path": "escape-dir"},
			want: "RETRY: Path 'escape-dir' resolves outside the root directory."},
	})
}

func TestListFilesCap(t *testing.T) {
	t.Parallel()
	needRipgrep(t)
	tree := map[string]string{"a/x.go": "", "a.go": "", "b.go": "", ".h.go": ""}
	for _, tc := range []struct {
		max       int
		want      string
		truncated bool
	}{
		{2, lines("a/x.go", "a.go", "[... truncated at 2 files]"), true},
		{3, lines("a/x.go", "a.go", "b.go"), false}, // exactly 3: no marker
	} {
		c, _ := newTestFS(t, Options{Tools: []string{ToolListFiles}, MaxFindResults: tc.max}, tree)
		var rec recorder
		got, err := callTool(rec.ctx(), t, c, ToolListFiles, map[string]any{"glob": "*.go"})
		require.NoError(t, err)
		assert.Equal(t, tc.want, got)
		require.Len(t, rec.events, 1)
		assert.Equal(t, FilesSearchedEvent{
			EventBase: rec.events[0].(*FilesSearchedEvent).EventBase,
			Pattern:   "*.go", Search: SearchFind, MatchCount: min(tc.max, 3), Truncated: tc.truncated,
		}, *rec.events[0].(*FilesSearchedEvent))
	}
}
