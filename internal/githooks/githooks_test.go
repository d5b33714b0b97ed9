package githooks

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func gitIn(t *testing.T, dir string, args ...string) {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
	require.NoError(t, err, "%s", out)
}

// Holding names the hooks directory core.hooksPath puts in the tree, for
// the repository at its top and a nested one, and nothing for a path
// elsewhere, for hooks in .git, or for a hooks directory outside the tree.
func TestHolding(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	root, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	gitIn(t, root, "init", "-q")
	gitIn(t, root, "config", "core.hooksPath", ".githooks")
	for _, d := range []string{"nested", "plain", "away"} {
		require.NoError(t, os.MkdirAll(filepath.Join(root, d), 0o755))
		gitIn(t, filepath.Join(root, d), "init", "-q")
	}
	gitIn(t, filepath.Join(root, "nested"), "config", "core.hooksPath", "tools/hooks")
	gitIn(t, filepath.Join(root, "away"), "config", "core.hooksPath", t.TempDir())

	d := NewDirs(root, nil)
	for rel, want := range map[string]string{
		".githooks/pre-commit":        ".githooks",
		".githooks":                   ".githooks",
		".GITHOOKS/pre-commit":        ".githooks",
		".githooks2/pre-commit":       "",
		"src/main.go":                 "",
		"nested/tools/hooks/pre-push": "nested/tools/hooks",
		"nested/.githooks/pre-commit": "", // nested's own hooks are elsewhere
		"plain/.git/hooks/pre-commit": "", // in .git: guarded as .git
		"plain/.githooks/pre-commit":  "",
		"away/pre-commit":             "",
	} {
		got, whole := d.Holding(rel)
		assert.Equal(t, want, got, rel)
		assert.Equal(t, want != "", whole, rel)
	}

	// Outside any repository, nothing is asked and nothing is held.
	bare, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	got, _ := NewDirs(bare, nil).Holding(".githooks/pre-commit")
	assert.Equal(t, "", got)
}

// A hooks directory that is the root itself, or a nested work tree's top
// (core.hooksPath "."), holds the files in it named as git's hooks, and
// nothing else: not the rest of the work tree, not a hook's name deeper.
func TestHoldingHookNames(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	root, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	gitIn(t, root, "init", "-q")
	gitIn(t, root, "config", "core.hooksPath", ".")
	require.NoError(t, os.MkdirAll(filepath.Join(root, "sub"), 0o755))
	gitIn(t, filepath.Join(root, "sub"), "init", "-q")
	gitIn(t, filepath.Join(root, "sub"), "config", "core.hooksPath", ".")

	d := NewDirs(root, nil)
	for rel, want := range map[string]string{
		"pre-commit":        ".",
		"Post-Checkout":     ".",
		"update":            ".",
		"README.md":         "",
		"pre-commit.sample": "",
		"src/pre-commit":    "",
		"sub/pre-push":      "sub",
		"sub/main.go":       "",
		"sub/x/pre-push":    "",
		// Names NTFS or HFS+ take for a hook's.
		"pre-commit.":         ".",
		"PRE-COMMIT ":         ".",
		"pre-commit::$DATA":   ".",
		"pre\u200c-commit":    ".",
		"sub/pre-push.":       "sub",
		"pre-commit.sample.":  "",
		"pre-commit.exe":      ".", // Git for Windows runs it
		"Post-Checkout.EXE. ": ".",
		"sub/update.exe":      "sub",
		"pre-commit.exe.bak":  "",
		"pre-commit.com":      "",
	} {
		got, whole := d.Holding(rel)
		assert.Equal(t, want, got, rel)
		assert.False(t, whole, rel)
	}
}

// The answers about directories above a root are dropped once stale, so
// that a process making FileSystems under ever new directories does not
// keep them all.
func TestAboveRootsArePruned(t *testing.T) {
	base := t.TempDir()
	for i := range 2 * pruneEvery {
		inRepositoryRecently(filepath.Join(base, "d", strconv.Itoa(i)))
	}
	aboveRoots.Range(func(k, v any) bool {
		aboveRoots.Store(k, aboveAnswer{inRepo: v.(aboveAnswer).inRepo, at: time.Now().Add(-2 * aboveTTL)})
		return true
	})
	for i := range pruneEvery {
		inRepositoryRecently(filepath.Join(base, "e", strconv.Itoa(i)))
	}
	n := 0
	aboveRoots.Range(func(any, any) bool { n++; return true })
	assert.LessOrEqual(t, n, pruneEvery, "stale answers were dropped")
}

// The hooks directory of an outer repository is guarded where it lies in a
// nested one, a submodule of shared hooks say: git run in the outer
// repository runs the hooks named there, whatever repository holds them.
// So too when the root is that nested repository's top.
func TestHoldingOuterHooksInANestedRepository(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	outer, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	gitIn(t, outer, "init", "-q")
	gitIn(t, outer, "config", "core.hooksPath", "hooks")
	hooks := filepath.Join(outer, "hooks")
	require.NoError(t, os.MkdirAll(filepath.Join(hooks, "lib"), 0o755))
	gitIn(t, hooks, "init", "-q")

	for root, cases := range map[string]map[string]string{
		outer: {"hooks/pre-commit": "hooks", "hooks/Post-Merge": "hooks", "hooks/README.md": "", "hooks/lib/pre-commit": "", "pre-commit": ""},
		hooks: {"pre-commit": ".", "README.md": "", "lib/pre-commit": ""},
	} {
		d := NewDirs(root, nil)
		for rel, want := range cases {
			got, whole := d.Holding(rel)
			assert.Equal(t, want, got, "%s in %s", rel, root)
			assert.False(t, whole, rel)
		}
	}
}

// Config names the configuration files git reads for the repositories
// around a path that lie in the tree outside .git: the files included,
// whether they exist or not, relative names taken from the including
// file's directory, those an includeIf names whatever its condition, and
// those an included file includes in turn; ~ is the home directory.
func TestConfig(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	root, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	t.Setenv("HOME", filepath.Join(root, "home"))
	gitIn(t, root, "init", "-q")
	gitIn(t, root, "config", "include.path", "../gitconfig.local")
	gitIn(t, root, "config", "--add", "include.path", filepath.Join(root, "conf", "shared.gitconfig"))
	gitIn(t, root, "config", "includeIf.onbranch:nowhere.path", "../conf/branch.gitconfig")
	gitIn(t, root, "config", "includeIf.gitdir:/elsewhere/.path", "~/work.gitconfig")
	require.NoError(t, os.MkdirAll(filepath.Join(root, "conf"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "conf", "shared.gitconfig"), []byte("[include]\n\tpath = more.gitconfig\n"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "nested"), 0o755))
	gitIn(t, filepath.Join(root, "nested"), "init", "-q")
	gitIn(t, filepath.Join(root, "nested"), "config", "include.path", "../own.gitconfig")
	gitIn(t, root, "config", "--add", "include.path", "../nested/outer.gitconfig")

	d := NewDirs(root, nil)
	for rel, want := range map[string]string{
		"gitconfig.local":            "gitconfig.local",
		"GITCONFIG.local":            "gitconfig.local",
		"gitconfig.local.":           "gitconfig.local", // NTFS drops the dot
		"conf/shared.gitconfig":      "conf/shared.gitconfig",
		"conf/more.gitconfig":        "conf/more.gitconfig",
		"conf/branch.gitconfig":      "conf/branch.gitconfig",
		"home/work.gitconfig":        "home/work.gitconfig",
		"nested/own.gitconfig":       "nested/own.gitconfig",
		"nested/outer.gitconfig":     "nested/outer.gitconfig", // the outer repository's
		"own.gitconfig":              "",
		"gitconfig":                  "",
		"conf/gitconfig.local":       "",
		"gitconfig.local/x":          "",
		".git/config":                "", // in .git: guarded as .git
		"nested/gitconfig.local":     "",
		"nested/conf/more.gitconfig": "",
	} {
		assert.Equal(t, want, d.Config(rel), rel)
	}

	// Outside any repository, nothing is asked and nothing is named.
	bare, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	assert.Equal(t, "", NewDirs(bare, nil).Config("gitconfig.local"))
}

// The files that an included file git does not read today (its includeIf
// condition false) includes in turn are named too, to any depth, whatever
// their own conditions: git reads them all once the first condition holds.
func TestConfigFollowsIncludesOfFilesGitDoesNotRead(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	root, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	gitIn(t, root, "init", "-q")
	gitIn(t, root, "config", "includeIf.onbranch:release.path", "../conf/release.gitconfig")
	for name, content := range map[string]string{
		"conf/release.gitconfig": "[include]\n\tpath = chained.gitconfig\n",
		"conf/chained.gitconfig": "[includeIf \"gitdir:/elsewhere/\"]\n\tpath = ../deeper/one.gitconfig\n",
		"deeper/one.gitconfig":   "[core]\n\tquotePath = false\n[include]\n\tpath = two.gitconfig\n",
	} {
		require.NoError(t, os.MkdirAll(filepath.Join(root, filepath.Dir(name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(root, name), []byte(content), 0o644))
	}

	d := NewDirs(root, nil)
	for rel, want := range map[string]string{
		"conf/release.gitconfig": "conf/release.gitconfig",
		"conf/chained.gitconfig": "conf/chained.gitconfig",
		"deeper/one.gitconfig":   "deeper/one.gitconfig",
		"deeper/two.gitconfig":   "deeper/two.gitconfig", // missing: git reads it once made
		"conf/two.gitconfig":     "",
		"chained.gitconfig":      "",
	} {
		assert.Equal(t, want, d.Config(rel), rel)
	}
}

// Holding is Check's hooks answer alone, asked of every repository around
// rel until one has a hooks directory that holds it.
func (d *Dirs) Holding(rel string) (dir string, whole bool) {
	d.around(rel, func(r repo) bool {
		dir, whole = r.hooks.holding(rel)
		return dir != ""
	})
	return dir, whole
}

// Config is Check's config answer alone, asked of every repository around
// rel until one reads it.
func (d *Dirs) Config(rel string) (file string) {
	d.around(rel, func(r repo) bool {
		file = r.config(rel)
		return file != ""
	})
	return file
}
