package sandbox

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tree makes a directory named by its real path holding files (slash path
// to content) and symlinks (slash path to target), or skips the test where
// symlinks cannot be made.
func tree(t *testing.T, files, links map[string]string) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	for name, target := range links {
		p := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		if err := os.Symlink(filepath.FromSlash(target), p); err != nil {
			t.Skipf("symlinks unavailable: %v", err)
		}
	}
	return dir
}

func openDir(t *testing.T, path string) *Dir {
	t.Helper()
	d, err := OpenDir(path)
	require.NoError(t, err)
	t.Cleanup(d.Close)
	return d
}

func TestOpenDir(t *testing.T) {
	t.Parallel()
	root := tree(t, map[string]string{"a.txt": "a"}, nil)
	d := openDir(t, root)
	info, err := d.Lstat("a.txt")
	require.NoError(t, err)
	assert.True(t, info.Mode().IsRegular())

	_, err = OpenDir(filepath.Join(root, "missing"))
	assert.ErrorIs(t, err, fs.ErrNotExist)
	_, err = OpenDir(filepath.Join(root, "a.txt"))
	assert.Error(t, err, "a file is not a directory")
}

// A listing reports each name's own type: a symlink is a symlink, whatever
// it points to, and hidden names are listed like any other.
func TestCursorReadDir(t *testing.T) {
	t.Parallel()
	root := tree(t,
		map[string]string{"d/file": "f", "d/.hidden": "h", "d/sub/x": "x"},
		map[string]string{"d/to-file": "file", "d/to-sub": "sub", "d/dangling": "nowhere"})
	c, err := openDir(t, root).Walk("d")
	require.NoError(t, err)
	defer c.Close()

	entries, err := c.ReadDir()
	require.NoError(t, err)
	got := map[string]fs.FileMode{}
	for _, e := range entries {
		got[e.Name] = e.Type
	}
	assert.Equal(t, map[string]fs.FileMode{
		"file": 0, ".hidden": 0, "sub": fs.ModeDir,
		"to-file": fs.ModeSymlink, "to-sub": fs.ModeSymlink, "dangling": fs.ModeSymlink,
	}, got)

	// The cursor's own descriptor may be one that cannot list; moving it
	// and listing again must work all the same.
	require.NoError(t, c.Down("sub"))
	entries, err = c.ReadDir()
	require.NoError(t, err)
	assert.Equal(t, []DirEntry{{Name: "x"}}, entries)
}

func TestCursorOpenReader(t *testing.T) {
	t.Parallel()
	root := tree(t, map[string]string{"d/file": "content", "d/sub/x": "x"},
		map[string]string{"d/link": "file"})
	c, err := openDir(t, root).Walk("d")
	require.NoError(t, err)
	defer c.Close()

	r, err := c.OpenReader("file")
	require.NoError(t, err)
	data, err := io.ReadAll(r)
	r.Close()
	require.NoError(t, err)
	assert.Equal(t, "content", string(data))
	assert.EqualValues(t, len("content"), r.Size())

	_, err = c.OpenReader("sub")
	assert.Error(t, err, "a directory")
	_, err = c.OpenReader("missing")
	assert.ErrorIs(t, err, fs.ErrNotExist)
	if _, err := c.OpenReader("link"); assert.Error(t, err, "a symlink is never followed") {
		assert.False(t, errors.Is(err, fs.ErrNotExist), "%v", err)
	}
}

// A name given to a Cursor is one component of the directory it is at, and
// a rel given to a Dir stays below it: ".." and slashes in a name never lead
// out, even where openat2 would refuse the path and the walk goes on by
// component.
func TestNamesStayBelow(t *testing.T) {
	t.Parallel()
	top := tree(t, map[string]string{"top.txt": "outside", "in/d/x": "x"}, nil)
	d := openDir(t, filepath.Join(top, "in"))
	c, err := d.Walk("d")
	require.NoError(t, err)
	defer c.Close()
	for _, name := range []string{"..", "../..", "../../top.txt", "x/../../../top.txt"} {
		_, err := c.Lstat(name)
		assert.Error(t, err, "Lstat %s", name)
		_, err = c.OpenReader(name)
		assert.Error(t, err, "OpenReader %s", name)
		_, err = c.Readlink(name)
		assert.Error(t, err, "Readlink %s", name)
		assert.False(t, c.Regular(name), "Regular %s", name)
		assert.Error(t, c.Down(name), "Down %s", name)
	}
	for _, rel := range []string{"..", "d/../..", "d/../../top.txt"} {
		_, err := d.Lstat(rel)
		assert.Error(t, err, "Dir.Lstat %s", rel)
		_, err = d.OpenReader(rel)
		assert.Error(t, err, "Dir.OpenReader %s", rel)
		w, err := d.Walk(rel)
		if assert.Error(t, err, "Dir.Walk %s", rel) {
			continue
		}
		w.Close()
	}
	data, err := os.ReadFile(filepath.Join(top, "top.txt"))
	require.NoError(t, err)
	assert.Equal(t, "outside", string(data))
}

// A strict resolution follows symlinks as the kernel would, never beyond
// the root and never through a name that is not there.
func TestStrictResolver(t *testing.T) {
	t.Parallel()
	outside := tree(t, map[string]string{"secret": "s"}, nil)
	alias := filepath.Join(t.TempDir(), "alias")
	root := tree(t, map[string]string{"real/t.md": "t", "file": "f"}, nil)
	if err := os.Symlink(root, alias); err != nil {
		t.Skipf("symlinks unavailable: %v", err)
	}
	links := map[string]string{
		"rel":       "real/t.md",
		"abs":       filepath.ToSlash(filepath.Join(root, "real", "t.md")),
		"via-alias": filepath.ToSlash(filepath.Join(alias, "real", "t.md")),
		"out":       filepath.ToSlash(filepath.Join(outside, "secret")),
		"back-in":   "../" + filepath.Base(root) + "/real/t.md",
		"dir":       "real",
		"chain":     "abs",
		"dangling":  "nowhere",
		"loop":      "loop",
		"via-gap":   "missing/../real/t.md",
		"via-file":  "file/../real/t.md",
	}
	for name, target := range links {
		if err := os.Symlink(filepath.FromSlash(target), filepath.Join(root, name)); err != nil {
			t.Skipf("symlinks unavailable: %v", err)
		}
	}
	rv := NewStrictResolver(openDir(t, root), root)

	tests := []struct {
		path string
		want string // "" when the resolution must fail
		err  error  // the failure, when it is one of the package's
	}{
		{".", ".", nil},
		{"real/t.md", "real/t.md", nil},
		{"rel", "real/t.md", nil},
		{"abs", "real/t.md", nil},
		{"chain", "real/t.md", nil},
		{"back-in", "real/t.md", nil},
		{"dir/t.md", "real/t.md", nil},
		{"dir/../file", "file", nil},
		{"via-alias", "", ErrOutside}, // the root spelled another way is not looked at
		{"out", "", ErrOutside},
		{"loop", "", ErrSymlinkLoop},
		{"dangling", "", nil},
		{"missing", "", nil},
		{"via-gap", "", nil},
		{"via-file", "", nil},
		{"file/x", "", nil},
	}
	for _, tt := range tests {
		got, err := rv.Resolve(nil, tt.path)
		if tt.want != "" {
			assert.NoError(t, err, tt.path)
			assert.Equal(t, tt.want, got, tt.path)
			continue
		}
		assert.Error(t, err, "%s resolved to %q", tt.path, got)
		if tt.err != nil {
			assert.ErrorIs(t, err, tt.err, tt.path)
		}
	}
	_, err := rv.Resolve(nil, "file/x")
	assert.ErrorIs(t, err, syscall.ENOTDIR)
	_, err = rv.Resolve(nil, "dangling")
	assert.ErrorIs(t, err, fs.ErrNotExist)

	// The resolver the tools use keeps what is missing literally, so a write
	// target resolves; the strict one must not have changed that.
	lax := NewResolver(openDir(t, root), root, rv.rootParts, nil)
	got, err := lax.Resolve(nil, "via-gap")
	require.NoError(t, err)
	assert.Equal(t, "real/t.md", got)
	got, err = lax.Resolve(nil, "missing/new")
	require.NoError(t, err)
	assert.Equal(t, "missing/new", got)
}
