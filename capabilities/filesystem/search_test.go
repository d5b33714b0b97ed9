package filesystem

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSearchFilesGolden(t *testing.T) {
	t.Parallel()
	c, _ := newWalkerFS(t, Options{})
	goldenCompare(t, "search_files_tree", result(callTool(context.Background(), t, c, ToolSearchFiles,
		map[string]any{"pattern": `line|Hello`})))
}

func TestSearchFiles(t *testing.T) {
	t.Parallel()
	runWalkerCases(t, ToolSearchFiles, []walkerCase{
		{name: "component-wise order", args: map[string]any{"pattern": "^a line"},
			want: lines("a/b.txt:1:a line in a/b", "a.txt:1:a line at the top")},
		{name: "crlf and cr-only lines", args: map[string]any{"pattern": `line$|^t`, "include_glob": "cr*.txt"},
			want: lines("cr.txt:2:two line", "cr.txt:3:three", "crlf.txt:2:second line")},
		{name: "binary files are skipped", args: map[string]any{"pattern": "binary"}, want: "No matches found."},
		{name: "hidden files are skipped", args: map[string]any{"pattern": "TOKEN|push|hidden"}, want: "No matches found."},
		{name: "hidden root", args: map[string]any{"pattern": "push", "path": ".github"}, want: "No matches found."},
		{name: "single file", args: map[string]any{"pattern": "two", "path": "multi.txt"}, want: "multi.txt:2:line two"},
		{name: "single file through a link is named by its target", args: map[string]any{"pattern": "Hello", "path": "alias.txt"},
			want: "hello.txt:1:Hello, world!"},
		{name: "missing path", args: map[string]any{"pattern": "x", "path": "nope"}, want: "No matches found."},
		{name: "path through a file", args: map[string]any{"pattern": "x", "path": "hello.txt/x"}, want: "No matches found."},
		{name: "fifo", args: map[string]any{"pattern": "x", "path": "pipe"}, want: "No matches found."},
		{name: "outside", args: map[string]any{"pattern": "x", "path": "escape.txt"},
			want: "RETRY: Path 'escape.txt' resolves outside the root directory."},
		{name: "links: in-root alias by its own name, escapes and dangling links dropped",
			args: map[string]any{"pattern": "Hello|outside", "path": "."},
			want: lines("alias.txt:1:Hello, world!", "hello.txt:1:Hello, world!")},
		{name: "symlinked directories are not entered", args: map[string]any{"pattern": "nested"},
			want: "subdir/nested.py:1:print('nested')"},
		{name: "denied targets hide their aliases", opts: Options{DeniedPatterns: []string{"*.secret"}},
			args: map[string]any{"pattern": "password"}, want: "No matches found."},
		{name: "denied directories", opts: Options{DeniedPatterns: []string{"a"}},
			args: map[string]any{"pattern": "^a line"}, want: "a.txt:1:a line at the top"},
		{name: "denied root", opts: Options{DeniedPatterns: []string{"a"}},
			args: map[string]any{"pattern": "x", "path": "a"}, want: "RETRY: Path 'a' is denied by pattern 'a'."},
		{name: "allowed patterns", opts: Options{AllowedPatterns: []string{"*.py"}},
			args: map[string]any{"pattern": "."}, want: "subdir/nested.py:1:print('nested')"},
		{name: "include_glob spans directories", args: map[string]any{"pattern": "line", "include_glob": "*b.txt"},
			want: "a/b.txt:1:a line in a/b"},
		{name: "include_glob is root-relative with cwd set", opts: Options{Cwd: "subdir"},
			args: map[string]any{"pattern": "print", "path": "..", "include_glob": "subdir/*"},
			want: "nested.py:1:print('nested')"},
		{name: "include_glob checks a link's own name", args: map[string]any{"pattern": "Hello", "include_glob": "alias*"},
			want: "alias.txt:1:Hello, world!"},
		{name: "cwd-relative paths with ..", opts: Options{Cwd: "subdir"},
			args: map[string]any{"pattern": "Hello", "path": ".."},
			want: lines("../alias.txt:1:Hello, world!", "../hello.txt:1:Hello, world!")},
		{name: "invalid regex", args: map[string]any{"pattern": "("},
			want: "RETRY: Invalid regex pattern: missing closing ): `(`"},
		{name: "lookbehind is not RE2", args: map[string]any{"pattern": "(?<=a)b"},
			want: "RETRY: Invalid regex pattern: invalid named capture: `(?<=a)b`. Look-behind (?<=...) is not supported (RE2 syntax); " +
				"match the preceding text as part of the pattern instead, e.g. 'price: \\d+' for '(?<=price: )\\d+'."},
		{name: "overlong pattern", args: map[string]any{"pattern": strings.Repeat("a", 4097)},
			want: "RETRY: Invalid regex pattern: pattern is 4097 bytes long; the limit is 4096"},
		{name: "missing pattern", args: map[string]any{}, want: "RETRY: Missing required argument 'pattern'."},
	})
}

func TestSearchFilesCap(t *testing.T) {
	t.Parallel()
	tree := map[string]string{"a.txt": "x1\nx2\n", "b.txt": "x3\n", "c.txt": "none\n"}
	for _, tc := range []struct {
		max       int
		want      string
		truncated bool
	}{
		{1, lines("a.txt:1:x1", "[... truncated at 1 matches]"), true},
		{2, lines("a.txt:1:x1", "a.txt:2:x2", "[... truncated at 2 matches]"), true},
		{3, lines("a.txt:1:x1", "a.txt:2:x2", "b.txt:1:x3"), false}, // exactly 3: no marker
		{4, lines("a.txt:1:x1", "a.txt:2:x2", "b.txt:1:x3"), false},
	} {
		c, _ := newTestFS(t, Options{Tools: []string{ToolSearchFiles}, MaxSearchResults: tc.max}, tree)
		var rec recorder
		got, err := callTool(rec.ctx(), t, c, ToolSearchFiles, map[string]any{"pattern": "x"})
		require.NoError(t, err)
		assert.Equal(t, tc.want, got, "max %d", tc.max)
		require.Len(t, rec.events, 1)
		ev := rec.events[0].(*FilesSearchedEvent)
		assert.Equal(t, min(tc.max, 3), ev.MatchCount)
		assert.Equal(t, tc.truncated, ev.Truncated)
	}
}

func TestSearchFilesEvent(t *testing.T) {
	t.Parallel()
	c, _ := newWalkerFS(t, Options{})
	var rec recorder
	_, err := callTool(rec.ctx(), t, c, ToolSearchFiles, map[string]any{"pattern": "line", "path": "linkdir/"})
	require.NoError(t, err)
	require.Len(t, rec.events, 1)
	ev := rec.events[0].(*FilesSearchedEvent)
	assert.Equal(t, "subdir", ev.Path)
	assert.Equal(t, "line", ev.Pattern)
	assert.Equal(t, SearchGrep, ev.Search)
	assert.Equal(t, 0, ev.MatchCount)
	assert.False(t, ev.Truncated)

	rec = recorder{}
	_, err = callTool(rec.ctx(), t, c, ToolSearchFiles, map[string]any{"pattern": "("})
	require.Error(t, err)
	assert.Empty(t, rec.events, "a failed search emits nothing")
}

// TestSearchFilesAgreesWithRipgrep compares search_files with rg -n --sort
// path over a generated tree whose files end lines with \n only and hold no
// hidden, ignored or binary files, so that both must print the same lines in
// the same order.
func TestSearchFilesAgreesWithRipgrep(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("rg"); err != nil {
		t.Skip("rg is not installed")
	}
	rng := rand.New(rand.NewPCG(7, 11))
	words := []string{"func", "New", "Handler(", "alpha", "beta", "x", "_", "(", ")", " ", "日本", "é", "a.b", "z9"}
	files := map[string]string{}
	dirs := []string{"", "a", "a/b", "a-b", "a.b", "B", "a/b/c", "é"}
	for i := range 120 {
		var sb strings.Builder
		for range rng.IntN(30) {
			for range rng.IntN(8) {
				sb.WriteString(words[rng.IntN(len(words))])
			}
			sb.WriteByte('\n')
		}
		dir := dirs[rng.IntN(len(dirs))]
		files[filepath.Join(dir, fmt.Sprintf("f%d%s", i%17, []string{".go", ".txt", "", "-x"}[i%4]))] = sb.String()
	}
	c, root := newTestFS(t, Options{Tools: []string{ToolSearchFiles}, MaxSearchResults: 1 << 20}, files)
	// Go's \w and \s are ASCII, ripgrep's Unicode: rg gets the ASCII
	// spelling of those classes.
	for pattern, rgPattern := range map[string]string{
		`func New[A-Z]\w*\(`: `func New[A-Z](?-u:\w)*\(`,
		`\w+Handler\(`:       `(?-u:\w)+Handler\(`,
		`alpha|beta`:         `alpha|beta`,
		`^x`:                 `^x`,
		`\)$`:                `\)$`,
		`a.b`:                `a.b`,
		`é|日`:                `é|日`,
		`z9\s`:               `z9(?-u:\s)`,
	} {
		got, err := callTool(context.Background(), t, c, ToolSearchFiles, map[string]any{"pattern": pattern})
		require.NoError(t, err)
		cmd := exec.Command("rg", "--no-config", "-uu", "-n", "--sort", "path", "--color=never", "--no-heading", "--regexp", rgPattern)
		cmd.Dir = root
		out, err := cmd.Output()
		if err != nil {
			require.Empty(t, out, "rg failed: %v", err)
		}
		want := strings.TrimSuffix(string(bytes.TrimSpace(out)), "\n")
		if want == "" {
			want = "No matches found."
		}
		assert.Equal(t, want, got, "pattern %q", pattern)
	}
}
