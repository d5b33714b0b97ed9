package filesystem

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func needRipgrep(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("rg"); err != nil {
		t.Skip("rg is not installed")
	}
}

// rgTree adds ignore files to walkerTree: a git repository whose .gitignore
// ignores *.log, and a plain directory (no repository) whose .gitignore must
// not apply but whose .ignore does.
var rgTree = map[string]string{
	"repo/.git/HEAD":   "ref: refs/heads/main\n",
	"repo/.gitignore":  "*.log\n",
	"repo/app.log":     "log line\n",
	"repo/keep.txt":    "kept line\n",
	"plain/.gitignore": "*.tmp\n",
	"plain/x.tmp":      "tmp line\n",
	"plain/.ignore":    "skip.me\n",
	"plain/skip.me":    "skipped line\n",
	"long.txt":         strings.Repeat("x", 5000) + " needle\n",
	"ctx.txt":          "c1\nc2 hit\nc3\nc4\nc5\nc6\nc7 hit\nc8\n",
}

func newRGFS(t *testing.T, opts Options) *Capability {
	t.Helper()
	needRipgrep(t)
	c, root := newWalkerFS(t, opts)
	for rel, content := range rgTree {
		mustWrite(t, root, rel, content)
	}
	return c
}

func runRGCases(t *testing.T, tool string, cases []walkerCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newRGFS(t, tc.opts)
			assert.Equal(t, tc.want, result(callTool(context.Background(), t, c, tool, tc.args)))
		})
	}
}

// Not parallel: it empties PATH.
func TestRipgrepMissing(t *testing.T) {
	c, _ := newTestFS(t, Options{Tools: RipgrepToolNames}, map[string]string{"a.txt": "x\n"})
	t.Setenv("PATH", t.TempDir())
	const want = "RETRY: ripgrep (rg) is not installed. Install it, or use the pure-Python search tools."
	var rec recorder
	assert.Equal(t, want, result(callTool(rec.ctx(), t, c, ToolListFiles, map[string]any{})))
	assert.Equal(t, want, result(callTool(rec.ctx(), t, c, ToolGrep, map[string]any{"pattern": "x"})))
	assert.Empty(t, rec.events)
}

// TestRipgrepPathChecks drives the check of printed paths directly, for the
// cases rg never prints when nothing changes under it: a directory replaced
// by a symlink after rg walked it, a file replaced by a symlink, a FIFO or a
// directory, names that would climb out. All are dropped.
func TestRipgrepPathChecks(t *testing.T) {
	t.Parallel()
	c, root := newWalkerFS(t, Options{DeniedPatterns: []string{"*.secret"}})
	require.NoError(t, os.Rename(filepath.Join(root, "a"), filepath.Join(root, "a-moved")))
	mustSymlink(t, "subdir", filepath.Join(root, "a"))
	for _, tc := range []struct {
		base  string
		paths map[string]string // printed path -> canonical rel, "" when dropped
	}{
		{".", map[string]string{
			"hello.txt":              "hello.txt",
			"subdir/nested.py":       "subdir/nested.py",
			"a-moved/b.txt":          "a-moved/b.txt",
			"a/nested.py":            "", // a directory swapped for a link
			"linkdir/nested.py":      "",
			"escape-dir/outside.txt": "",
			"escape.txt":             "", // a file swapped for a link
			"alias.txt":              "",
			"pipe":                   "",
			"empty":                  "",
			"nope/x.txt":             "",
			"creds.secret":           "",
			".env":                   "",
			"subdir/.hidden.txt":     "",
			"subdir/../hello.txt":    "",
			"subdir//nested.py":      "",
			"/hello.txt":             "",
			"":                       "",
		}},
		{"subdir", map[string]string{
			"nested.py":     "subdir/nested.py",
			"../hello.txt":  "",
			".hidden.txt":   "",
			"nested.py/x":   "",
			"./nested.py":   "",
			"missing/x.txt": "",
		}},
	} {
		paths, err := c.fs.openRGPaths(tc.base)
		require.NoError(t, err)
		// Map order shuffles the paths, so the cursor climbs up and down.
		for range 3 {
			for rel, want := range tc.paths {
				got, ok := paths.check(rel)
				assert.Equal(t, want != "", ok, "%s in %s", rel, tc.base)
				assert.Equal(t, want, got, "%s in %s", rel, tc.base)
			}
		}
		paths.close()
	}
	_, err := c.fs.openRGPaths("a")
	assert.ErrorIs(t, err, syscall.ELOOP, "the directory rg runs in is reached without following a link")
}
