package shell

import (
	"os"
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
	h, err := findHidden(w, home, s.access, false)
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

	h, err = findHidden(w, "", s.access, true)
	require.NoError(t, err)
	assert.Empty(t, h.readOnly, "allow_git_writes")
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
	h, err := findHidden(w, "", s.access, false)
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
	h, err = findHidden(w, "", s.access, false)
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
	h, err := findHidden(w, "", s.access, false)
	require.NoError(t, err)
	// The first directory of the chain whose path the kernel refuses.
	first := filepath.Join(w, "a")
	for len(first) < 4096 {
		first = filepath.Join(first, name)
	}
	assert.ElementsMatch(t, []string{first, filepath.Join(w, "b/.env")}, h.masks)
	assert.Empty(t, h.readOnly, "the .git below is covered by the mask")

	_, err = findHidden(filepath.Join(w, "gone"), "", s.access, false)
	assert.ErrorIs(t, err, os.ErrNotExist)
}
