package shell

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/capabilities/filesystem"
)

func touch(t *testing.T, root string, names ...string) {
	t.Helper()
	for _, n := range names {
		p := filepath.Join(root, n)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte("x"), 0o644))
	}
}

func realTemp(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	return d
}

func TestFindHiddenDefaults(t *testing.T) {
	t.Parallel()
	w := realTemp(t)
	touch(t, w, ".env", ".env.example", "app/.env.local", "key.pem", "src/main.go", ".git/config",
		"sub/.git", "deep/er/id_rsa", "secrets/x.txt", "README.md")
	require.NoError(t, os.Symlink(filepath.Join(w, "README.md"), filepath.Join(w, "link.pem")))
	home := realTemp(t)
	touch(t, home, ".ssh/id_ed25519", ".netrc", ".config/gh/hosts.yml", ".bashrc")

	s, err := New(Options{Sandbox: "off"}, w)
	require.NoError(t, err)
	h, err := findHidden(w, []string{home}, nil, s.access, false)
	require.NoError(t, err)
	j := func(root string, names ...string) []string {
		var out []string
		for _, n := range names {
			out = append(out, filepath.Join(root, n))
		}
		return out
	}
	assert.ElementsMatch(t, append(j(w, ".env", "app/.env.local", "key.pem", "deep/er/id_rsa", "secrets", "README.md"),
		j(home, ".ssh", ".netrc", ".config/gh")...), h.masks, "a masked symlink masks its target")
	assert.ElementsMatch(t, j(w, ".git", "sub/.git"), h.readOnly)

	h, err = findHidden(w, nil, nil, s.access, true)
	require.NoError(t, err)
	assert.Empty(t, h.readOnly, "allow_git_writes")
}

// A credential of the home directory that is a symlink is masked where it
// leads, the store its tools read, unless that is the workspace or a
// directory holding it: then the link itself is, and the workspace stays
// in sight.
func TestFindHiddenHomeLinkToTheWorkspace(t *testing.T) {
	t.Parallel()
	w, home, store := realTemp(t), realTemp(t), realTemp(t)
	for link, to := range map[string]string{".aws": w, ".kube": filepath.Dir(w), ".ssh": store} {
		require.NoError(t, os.Symlink(to, filepath.Join(home, link)))
	}
	s, err := New(Options{Sandbox: "off"}, w)
	require.NoError(t, err)
	h, err := findHidden(w, []string{home}, nil, s.access, false)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{filepath.Join(home, ".aws"), filepath.Join(home, ".kube"), store}, h.masks)
}

// With a FileSystem in the spec, its lists decide what is hidden in the
// whole workspace (D13.2): as its tools decide inside its root_dir, and
// matched against the path from the workspace outside it. D10's defaults
// no longer apply: its custom secret list is taken literally.
func TestFindHiddenPeer(t *testing.T) {
	t.Parallel()
	w := realTemp(t)
	touch(t, w, "data/private/a.csv", "data/public/b.csv", "data/y.secret", "data/.env",
		"private/c.csv", "other/private/d.csv", "keys/x.secret", ".env", "other/.env")
	fs, err := filesystem.New(filesystem.Options{RootDir: "data", DeniedPatterns: []string{"private"}, SecretPatterns: []string{"*.secret"}}, w)
	require.NoError(t, err)
	defer fs.Close()
	s, err := New(Options{Sandbox: "off"}, w)
	require.NoError(t, err)
	require.NoError(t, s.Peers([]capabilities.Capability{s, fs}))
	assert.Same(t, fs, s.guard)
	assert.Equal(t, filepath.Join(w, "data"), s.guardRoot)
	h, err := findHidden(w, nil, nil, s.access, false)
	require.NoError(t, err)
	j := func(names ...string) []string {
		var out []string
		for _, n := range names {
			out = append(out, filepath.Join(w, n))
		}
		return out
	}
	assert.ElementsMatch(t, j("data/private", "data/y.secret", "private", "keys/x.secret"), h.masks)

	// A guard that does not say its root leaves D10's defaults outside
	// what it covers.
	s.guard, s.guardRoot = struct{ capabilities.PathGuard }{fs}, ""
	h, err = findHidden(w, nil, nil, s.access, false)
	require.NoError(t, err)
	assert.ElementsMatch(t, j("data/private", "data/y.secret", ".env", "other/.env"), h.masks)
}

// A directory the walk cannot read may hold anything: it is masked whole,
// and nothing below it is looked for. Here its path is longer than
// PATH_MAX, as a command can make it by moving a directory down; see
// TestUnreadableDirectoryIsMasked for one whose permissions keep the walk
// out. A workspace the walk cannot read at all is an error.
func TestFindHiddenMasksWhatItCannotRead(t *testing.T) {
	t.Parallel()
	w := realTemp(t)
	r, err := os.OpenRoot(w)
	require.NoError(t, err)
	defer r.Close()
	name := strings.Repeat("d", 200)
	var chain []string
	for range 30 {
		chain = append(chain, name)
	}
	deep := filepath.Join(chain...)
	require.NoError(t, r.MkdirAll(filepath.Join("a", deep, "sub", ".git"), 0o755))
	require.NoError(t, r.WriteFile(filepath.Join("a", deep, ".env"), []byte("x"), 0o644))
	touch(t, w, "b/.env")

	s, err := New(Options{Sandbox: "off"}, w)
	require.NoError(t, err)
	h, err := findHidden(w, nil, nil, s.access, false)
	require.NoError(t, err)
	// The first directory of the chain whose path the kernel refuses.
	first := filepath.Join(w, "a")
	for len(first) < 4096 {
		first = filepath.Join(first, name)
	}
	assert.ElementsMatch(t, []string{first, filepath.Join(w, "b/.env")}, h.masks)
	assert.Empty(t, h.readOnly, "the .git below is covered by the mask")

	_, err = findHidden(filepath.Join(w, "gone"), nil, nil, s.access, false)
	assert.ErrorIs(t, err, os.ErrNotExist)
}

// The configuration files a repository of the workspace includes, and
// those of the one around it (here, around the workspace's own), and
// its hooks directory, are read-only when they lie in the
// workspace outside a .git: one missing is made, empty, unless it would
// lie in a .git or outside the workspace, where nothing is made.
func TestFindHiddenIncludedGitConfig(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	gitIn := func(dir string, args ...string) {
		t.Helper()
		out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	outer := realTemp(t)
	gitIn(outer, "init", "-q")
	gitIn(outer, "config", "include.path", "../w/outer.gitconfig")
	gitIn(outer, "config", "core.hooksPath", "w/hooks")
	w := filepath.Join(outer, "w")
	touch(t, w, "outer.gitconfig", "gitconfig.local", "hooks/pre-commit")
	gitIn(w, "init", "-q")
	gitIn(w, "config", "include.path", "../gitconfig.local")
	gitIn(w, "config", "--add", "include.path", "../conf/missing.gitconfig")
	gitIn(w, "config", "--add", "include.path", "in-git.gitconfig")
	gitIn(w, "config", "--add", "include.path", "../../outside.gitconfig")

	s, err := New(Options{Sandbox: "off"}, w)
	require.NoError(t, err)
	h, err := findHidden(w, nil, nil, s.access, false)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{filepath.Join(w, ".git"), filepath.Join(w, "gitconfig.local"),
		filepath.Join(w, "conf", "missing.gitconfig"), filepath.Join(w, "outer.gitconfig"), filepath.Join(w, "hooks")}, h.readOnly)
	got, err := os.ReadFile(filepath.Join(w, "conf", "missing.gitconfig"))
	require.NoError(t, err, "made so that it could be read-only")
	assert.Empty(t, got)
	assert.NoFileExists(t, filepath.Join(w, ".git", "in-git.gitconfig"), "the .git covers it")
	assert.NoFileExists(t, filepath.Join(outer, "outside.gitconfig"))

	h, err = findHidden(w, nil, nil, s.access, true)
	require.NoError(t, err)
	assert.Empty(t, h.readOnly, "allow_git_writes")
}

// A credential of the home that a symlink leads to in the workspace is
// remembered by its identity, and masked wherever it has been moved since
// in the workspace, the link then leading nowhere.
func TestFindHiddenHomeStoreMovedInTheWorkspace(t *testing.T) {
	t.Parallel()
	w, home := realTemp(t), realTemp(t)
	touch(t, w, "dot/aws/credentials", "dot/netrc", "README.md")
	require.NoError(t, os.Symlink(filepath.Join(w, "dot", "aws"), filepath.Join(home, ".aws")))
	require.NoError(t, os.Symlink(filepath.Join(w, "dot", "netrc"), filepath.Join(home, ".netrc")))
	s, err := New(Options{Sandbox: "off"}, w)
	require.NoError(t, err)
	h, err := findHidden(w, []string{home}, nil, s.access, false)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{filepath.Join(w, "dot", "aws"), filepath.Join(w, "dot", "netrc")}, h.masks)
	assert.Len(t, h.stores, 2)

	require.NoError(t, os.Rename(filepath.Join(w, "dot"), filepath.Join(w, "moved")))
	require.NoError(t, os.Rename(filepath.Join(w, "moved", "netrc"), filepath.Join(w, "netrc")))
	h, err = findHidden(w, []string{home}, h.stores, s.access, false)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{filepath.Join(w, "moved", "aws"), filepath.Join(w, "netrc"),
		filepath.Join(home, ".aws"), filepath.Join(home, ".netrc")}, h.masks, "the links, leading nowhere, are masked themselves")
	assert.Len(t, h.stores, 2)
}

// A credential of the home that is in the workspace under another name
// too, a hard link of it (dot/netrc and netrc.bak, or the home's own
// ~/.git-credentials and the workspace's git-credentials), is the same
// file: it is masked at every name the walk finds, from the first command
// on, not only once an earlier walk has learnt its identity.
func TestFindHiddenHomeStoreHardLinkedInTheWorkspace(t *testing.T) {
	t.Parallel()
	w, home := realTemp(t), realTemp(t)
	touch(t, w, "dot/netrc", "README.md")
	touch(t, home, ".git-credentials")
	require.NoError(t, os.Symlink(filepath.Join(w, "dot", "netrc"), filepath.Join(home, ".netrc")))
	require.NoError(t, os.Link(filepath.Join(w, "dot", "netrc"), filepath.Join(w, "netrc.bak")))
	require.NoError(t, os.Link(filepath.Join(home, ".git-credentials"), filepath.Join(w, "git-credentials")))
	s, err := New(Options{Sandbox: "off"}, w)
	require.NoError(t, err)
	h, err := findHidden(w, []string{home}, nil, s.access, false)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{filepath.Join(w, "dot", "netrc"), filepath.Join(w, "netrc.bak"),
		filepath.Join(w, "git-credentials"), filepath.Join(home, ".git-credentials")}, h.masks)
}
