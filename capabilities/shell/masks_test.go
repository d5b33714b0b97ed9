package shell

import (
	"os"
	"path/filepath"
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
	h := findHidden(w, home, nil, s.fallback(), false)
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

	h = findHidden(w, "", nil, s.fallback(), true)
	assert.Empty(t, h.readOnly, "allow_git_writes")
}

// With a FileSystem in the spec, its patterns decide what it covers.
func TestFindHiddenPeer(t *testing.T) {
	t.Parallel()
	w := realTemp(t)
	touch(t, w, "data/private/a.csv", "data/public/b.csv", ".env", "other/.env")
	fs, err := filesystem.New(filesystem.Options{RootDir: "data", DeniedPatterns: []string{"private"}, SecretPatterns: []string{}}, w)
	require.NoError(t, err)
	defer fs.Close()
	s, err := New(Options{Sandbox: "off"}, w)
	require.NoError(t, err)
	require.NoError(t, s.Peers([]capabilities.Capability{s, fs}))
	assert.Same(t, fs, s.guard)
	h := findHidden(w, "", s.guard, s.fallback(), false)
	assert.ElementsMatch(t, []string{filepath.Join(w, "data/private"), filepath.Join(w, ".env"), filepath.Join(w, "other/.env")}, h.masks,
		"the FileSystem's denied pattern inside its root, D10's defaults outside it")
}
