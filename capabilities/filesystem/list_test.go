package filesystem

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentspec/agentspec/internal/sandbox/walk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Shared fixtures of the walker tests (list_directory, search_files,
// find_files, list_files, grep).

// walkerTree is the sample workspace the walker tests run over.
var walkerTree = map[string]string{
	"hello.txt":            "Hello, world!\n",
	"multi.txt":            "line one\nline two\nline three\n",
	"notes.md":             "# Notes\n",
	"subdir/nested.py":     "print('nested')\n",
	"config/secret.txt":    "s3cret\n",
	".env":                 "TOKEN=abc\n",
	".github/workflow.yml": "on: push\n",
	"subdir/.hidden.txt":   "hidden line\n",
	"a/b.txt":              "a line in a/b\n",
	"a.txt":                "a line at the top\n",
	"creds.secret":         "password line\n",
	"crlf.txt":             "first\r\nsecond line\r\n",
	"cr.txt":               "one\rtwo line\rthree",
	"bin.dat":              "line\x00binary\n",
	"latin1.txt":           "caf\xe9 line\n",
}

// walkerLinks are the symlinks added to walkerTree: link -> target, where
// "$OUT" is a directory outside the root.
var walkerLinks = map[string]string{
	"alias.txt":        "hello.txt",
	"alias.py":         "notes.md",
	"secret-alias.txt": "creds.secret",
	"linkdir":          "subdir",
	"escape.txt":       "$OUT/outside.txt",
	"escape-dir":       "$OUT",
	"dangling.txt":     "missing.txt",
}

// newWalkerFS builds a FileSystem with the walker tools over walkerTree, its
// links, an empty directory "empty" and a FIFO "pipe".
func newWalkerFS(t *testing.T, opts Options) (*Capability, string) {
	t.Helper()
	if opts.Tools == nil {
		opts.Tools = []string{ToolListDirectory, ToolSearchFiles, ToolFindFiles, ToolListFiles, ToolGrep}
	}
	root := t.TempDir()
	out := t.TempDir()
	mustWrite(t, out, "outside.txt", "outside line\n")
	for rel, content := range walkerTree {
		mustWrite(t, root, rel, content)
	}
	for link, target := range walkerLinks {
		mustSymlink(t, strings.ReplaceAll(target, "$OUT", out), filepath.Join(root, link))
	}
	require.NoError(t, os.Mkdir(filepath.Join(root, "empty"), 0o755))
	mkfifo(t, filepath.Join(root, "pipe"))
	c, err := New(opts, root)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c, root
}

// walkerCase is one call of a walker tool and what it must return: the output,
// or "RETRY: message".
type walkerCase struct {
	name string
	opts Options
	args map[string]any
	want string
}

func runWalkerCases(t *testing.T, tool string, cases []walkerCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, _ := newWalkerFS(t, tc.opts)
			// Three times: list_directory tracks a directory from its
			// second listing on and shows its third from what it kept.
			for range 3 {
				got := result(callTool(context.Background(), t, c, tool, tc.args))
				assert.Equal(t, tc.want, got)
			}
		})
	}
}

// lines joins its arguments with newlines, so expected outputs read as lists.
func lines(ls ...string) string { return strings.Join(ls, "\n") }

func TestListDirectoryGolden(t *testing.T) {
	t.Parallel()
	c, _ := newWalkerFS(t, Options{})
	goldenCompare(t, "list_directory_root", result(callTool(context.Background(), t, c, ToolListDirectory, map[string]any{})))
}

func TestListDirectory(t *testing.T) {
	t.Parallel()
	runWalkerCases(t, ToolListDirectory, []walkerCase{
		{name: "subdirectory paths relative to cwd", args: map[string]any{"path": "subdir"},
			want: "subdir/nested.py  (16 bytes)"},
		{name: "symlinked directory lists its target", args: map[string]any{"path": "linkdir"},
			want: "subdir/nested.py  (16 bytes)"},
		{name: "empty directory", args: map[string]any{"path": "empty"}, want: "(empty directory)"},
		{name: "dot directory shows nothing", args: map[string]any{"path": ".github"}, want: "(empty directory)"},
		{name: "file", args: map[string]any{"path": "hello.txt"}, want: "RETRY: Not a directory: hello.txt"},
		{name: "missing", args: map[string]any{"path": "nope"}, want: "RETRY: Not a directory: nope"},
		{name: "fifo", args: map[string]any{"path": "pipe"}, want: "RETRY: Not a directory: pipe"},
		{name: "outside", args: map[string]any{"path": "../x"}, want: "RETRY: Path '../x' resolves outside the root directory."},
		{name: "symlink out of the root", args: map[string]any{"path": "escape-dir"},
			want: "RETRY: Path 'escape-dir' resolves outside the root directory."},
		{name: "allowed patterns filter entries, not the root", opts: Options{AllowedPatterns: []string{"*.py"}},
			args: map[string]any{"path": "."}, want: "(empty directory)"},
		{name: "allowed patterns below", opts: Options{AllowedPatterns: []string{"*.py"}},
			args: map[string]any{"path": "subdir"}, want: "subdir/nested.py  (16 bytes)"},
		{name: "allowed pattern checked on the link target", opts: Options{AllowedPatterns: []string{"*.txt"}},
			args: map[string]any{"path": "."}, want: lines(
				"a.txt  (18 bytes)", "alias.txt  (14 bytes)", "cr.txt  (18 bytes)", "crlf.txt  (20 bytes)",
				"hello.txt  (14 bytes)", "latin1.txt  (10 bytes)", "multi.txt  (29 bytes)")},
		{name: "denied patterns hide entries and links to them",
			opts: Options{DeniedPatterns: []string{"*.secret", "config", "a", "*.md", "*.py", "*.dat", "*.txt"}},
			args: map[string]any{}, want: lines("empty/", "linkdir/", "pipe  (0 bytes)", "subdir/")},
		{name: "denied root", opts: Options{DeniedPatterns: []string{"config"}}, args: map[string]any{"path": "config"},
			want: "RETRY: Path 'config' is denied by pattern 'config'."},
		{name: "denied root through an ancestor", opts: Options{DeniedPatterns: []string{"sub*"}},
			args: map[string]any{"path": "subdir"}, want: "RETRY: Path 'subdir' is denied by pattern 'sub*'."},
		{name: "protected entries stay visible", opts: Options{ProtectedPatterns: []string{"*"}},
			args: map[string]any{"path": "subdir"}, want: "subdir/nested.py  (16 bytes)"},
		{name: "cwd", opts: Options{Cwd: "subdir"}, args: map[string]any{}, want: "nested.py  (16 bytes)"},
		{name: "cwd parent, links judged by their targets", opts: Options{Cwd: "subdir", AllowedPatterns: []string{"a*"}},
			args: map[string]any{"path": ".."}, want: lines("../a/", "../a.txt  (18 bytes)")},
		{name: "cwd sibling", opts: Options{Cwd: "subdir"}, args: map[string]any{"path": "../a"}, want: "../a/b.txt  (14 bytes)"},
	})
}

func TestListDirectoryCap(t *testing.T) {
	t.Parallel()
	tree := map[string]string{"a": "1", "b": "22", "c/d": "", ".e": ""}
	for _, tc := range []struct {
		max  int
		want string
	}{
		{1, lines("a  (1 bytes)", "[... truncated at 1 entries]")},
		{2, lines("a  (1 bytes)", "b  (2 bytes)", "[... truncated at 2 entries]")},
		{3, lines("a  (1 bytes)", "b  (2 bytes)", "c/")}, // exactly 3 visible: no marker
		{4, lines("a  (1 bytes)", "b  (2 bytes)", "c/")},
	} {
		c, _ := newTestFS(t, Options{Tools: []string{ToolListDirectory}, MaxListResults: tc.max}, tree)
		var rec recorder
		got, err := callTool(rec.ctx(), t, c, ToolListDirectory, map[string]any{"path": "."})
		require.NoError(t, err)
		assert.Equal(t, tc.want, got, "max %d", tc.max)
		require.Len(t, rec.events, 1)
		ev := rec.events[0].(*DirectoryListedEvent)
		assert.Equal(t, min(tc.max, 3), ev.EntryCount, "entry_count counts the entries shown")
	}
}

func TestListDirectoryEvent(t *testing.T) {
	t.Parallel()
	c, root := newWalkerFS(t, Options{Cwd: "subdir"})
	var rec recorder
	_, err := callTool(rec.ctx(), t, c, ToolListDirectory, map[string]any{"path": "../linkdir"})
	require.NoError(t, err)
	require.Len(t, rec.events, 1)
	ev := rec.events[0].(*DirectoryListedEvent)
	real, err := filepath.EvalSymlinks(root)
	require.NoError(t, err)
	assert.Equal(t, DirectoryListedEvent{EventBase: EventBase{
		Path: "subdir", RootDir: real, CapabilityID: CapabilityID, ToolCallID: "call-1", ToolName: "tool",
	}, EntryCount: 1}, *ev)

	// A failed listing emits nothing.
	rec = recorder{}
	_, err = callTool(rec.ctx(), t, c, ToolListDirectory, map[string]any{"path": "nope"})
	require.Error(t, err)
	assert.Empty(t, rec.events)
}

// TestListDirectorySeesChangesBetweenCalls lists a directory over and over
// while it changes, through the tools and behind their back: each listing
// shows the directory as it is, though list_directory keeps the last one
// and shows it again while the directory is unchanged.
func TestListDirectorySeesChangesBetweenCalls(t *testing.T) {
	t.Parallel()
	c, root := newTestFS(t, Options{Tools: []string{ToolListDirectory, ToolWriteFile}},
		map[string]string{"a.txt": "aaa", "sub/x": "x", "target/t": "tt"})
	mustSymlink(t, filepath.Join(root, "target", "t"), filepath.Join(root, "sub", "link"))
	other := t.TempDir()
	list := func(path string) string {
		t.Helper()
		return result(callTool(context.Background(), t, c, ToolListDirectory, map[string]any{"path": path}))
	}
	for range 3 {
		require.Equal(t, lines("a.txt  (3 bytes)", "sub/", "target/"), list("."))
	}
	if st, _ := c.fs.listings.get("."); st.stamp == (walk.Stamp{}) {
		t.Log("directories are not tracked on this file system: every listing reads the directory")
	}
	steps := []struct {
		name   string
		change func()
		want   string
	}{
		{"nothing", func() {}, lines("a.txt  (3 bytes)", "sub/", "target/")},
		{"append behind the tools' back", func() { appendFile(t, filepath.Join(root, "a.txt"), "aa") },
			lines("a.txt  (5 bytes)", "sub/", "target/")},
		{"write_file", func() {
			_, err := callTool(context.Background(), t, c, ToolWriteFile, map[string]any{"path": "a.txt", "content": "1"})
			require.NoError(t, err)
		}, lines("a.txt  (1 bytes)", "sub/", "target/")},
		{"a hard link outside the root written to", func() {
			link := filepath.Join(other, "hard")
			require.NoError(t, os.Link(filepath.Join(root, "a.txt"), link))
			appendFile(t, link, "2345")
		}, lines("a.txt  (5 bytes)", "sub/", "target/")},
		{"a new file", func() { mustWrite(t, root, "b.txt", "") }, lines("a.txt  (5 bytes)", "b.txt  (0 bytes)", "sub/", "target/")},
		{"a file gone", func() { require.NoError(t, os.Remove(filepath.Join(root, "b.txt"))) },
			lines("a.txt  (5 bytes)", "sub/", "target/")},
		{"a directory turned file", func() {
			require.NoError(t, os.RemoveAll(filepath.Join(root, "sub")))
			mustWrite(t, root, "sub", "file now")
		}, lines("a.txt  (5 bytes)", "sub  (8 bytes)", "target/")},
	}
	for _, st := range steps {
		st.change()
		for i := range 2 {
			assert.Equal(t, st.want, list("."), "%s, listing %d", st.name, i+1)
		}
	}

	// A listing that shows a symlink is never kept: its target may
	// change anywhere.
	require.NoError(t, os.Mkdir(filepath.Join(root, "links"), 0o755))
	mustSymlink(t, filepath.Join(root, "target", "t"), filepath.Join(root, "links", "t"))
	for range 3 {
		require.Equal(t, "links/t  (2 bytes)", list("links"))
	}
	appendFile(t, filepath.Join(root, "target", "t"), "ttt")
	assert.Equal(t, "links/t  (5 bytes)", list("links"))
}

func appendFile(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.WriteString(s)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

// A listing cut at the cap is kept too, and follows the directory: the
// marker goes when the entries past the cap do.
func TestListDirectoryCapFollowsChanges(t *testing.T) {
	t.Parallel()
	c, root := newTestFS(t, Options{Tools: []string{ToolListDirectory}, MaxListResults: 2},
		map[string]string{"a": "1", "b": "22", "c": "333"})
	list := func() string {
		t.Helper()
		return result(callTool(context.Background(), t, c, ToolListDirectory, map[string]any{"path": "."}))
	}
	for range 3 {
		require.Equal(t, lines("a  (1 bytes)", "b  (2 bytes)", "[... truncated at 2 entries]"), list())
	}
	appendFile(t, filepath.Join(root, "b"), "2")
	assert.Equal(t, lines("a  (1 bytes)", "b  (3 bytes)", "[... truncated at 2 entries]"), list())
	require.NoError(t, os.Remove(filepath.Join(root, "c")))
	for range 2 {
		assert.Equal(t, lines("a  (1 bytes)", "b  (3 bytes)"), list())
	}
	mustWrite(t, root, "0", "")
	assert.Equal(t, lines("0  (0 bytes)", "a  (1 bytes)", "[... truncated at 2 entries]"), list())
}
