package filesystem

import (
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pathTree builds a root with symlinks pointing in, out and around, next to
// an "outside" directory, and returns a FileSystem on it (cwd = cwd).
func pathTree(t testing.TB, cwd string) (fs *FS, root string) {
	t.Helper()
	parent := t.TempDir()
	root = filepath.Join(parent, "root")
	outside := filepath.Join(parent, "outside")
	for _, d := range []string{root, outside, filepath.Join(root, "sub", "deep")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		"hello.txt":         "Hello, world!\n",
		"multi.txt":         "1\n2\n",
		"sub/file.txt":      "in sub\n",
		"sub/deep/leaf.txt": "leaf\n",
	}
	for rel, content := range files {
		if err := os.WriteFile(filepath.Join(root, rel), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("outside\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	links := map[string]string{
		"sub/alias":  "../hello.txt",
		"dirlink":    "sub",
		"out":        outside,
		"outfile":    filepath.Join(outside, "secret"),
		"outrel":     "../outside",
		"loop":       "loop",
		"a":          "b",
		"b":          "a",
		"dangling":   "ghost.txt",
		"absin":      filepath.Join(root, "sub"),
		"dotdot":     "sub/..",
		"updir":      "..",
		"chain1":     "chain2",
		"chain2":     "sub/alias",
		"sub/uplink": "../dirlink/deep",
		"devzero":    "/dev/zero",
	}
	for link, target := range links {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	c, err := New(Options{Tools: []string{}, Cwd: cwd}, root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c.fs, root
}

func TestResolve(t *testing.T) {
	t.Parallel()
	fs, root := pathTree(t, "")
	outside := func(p string) string { return "RETRY: Path " + pyRepr(p) + " resolves outside the root directory." }
	loop := func(p string) string { return "RETRY: Path " + pyRepr(p) + " resolves through a symlink loop." }
	long := strings.Repeat("x", 5000)
	deep := strings.Repeat("d/", 2500)
	tests := []struct{ in, want string }{
		{"hello.txt", "hello.txt"},
		{"./hello.txt", "hello.txt"},
		{"sub//file.txt", "sub/file.txt"},
		{"sub/", "sub"},
		{"sub/./file.txt", "sub/file.txt"},
		{"", "."},
		{".", "."},
		{"sub/..", "."},
		{"missing/../hello.txt", "hello.txt"},
		{"hello.txt/../multi.txt", "multi.txt"},
		{"hello.txt/x", "hello.txt/x"},
		{"new/dir/file.txt", "new/dir/file.txt"},
		{"sub/alias", "hello.txt"},
		{"chain1", "hello.txt"},
		{"dirlink/file.txt", "sub/file.txt"},
		{"dirlink/../hello.txt", "hello.txt"},
		{"dotdot/hello.txt", "hello.txt"},
		{"absin/file.txt", "sub/file.txt"},
		{"sub/uplink/leaf.txt", "sub/deep/leaf.txt"},
		{"dangling", "ghost.txt"},
		{"../root/hello.txt", "hello.txt"},
		{"sub/../../root/sub", "sub"},
		{root + "/sub/file.txt", "sub/file.txt"},
		{root, "."},
		{root + "/../root/hello.txt", "hello.txt"},
		{"bad\xffname", "bad\xffname"},
		{"..", outside("..")},
		{"../outside/secret", outside("../outside/secret")},
		{"/etc/passwd", outside("/etc/passwd")},
		{"out", outside("out")},
		{"out/secret", outside("out/secret")},
		{"outfile", outside("outfile")},
		{"outrel/secret", outside("outrel/secret")},
		{"updir", outside("updir")},
		{"updir/root/hello.txt", "hello.txt"},
		{"devzero", outside("devzero")},
		{"loop", loop("loop")},
		{"a", loop("a")},
		{"loop/x", loop("loop/x")},
		{"has\x00nul", "RETRY: The path name contains a NUL byte."},
		{long, "RETRY: The path name is too long."},
		{"sub/" + long + "/x", "RETRY: The path name is too long."},
		{deep, "RETRY: The path name is too long."},
	}
	for _, tt := range tests {
		got, err := fs.resolve(tt.in)
		assert.Equal(t, tt.want, result(got, err), "resolve(%.60q)", tt.in)
	}
}

func TestResolveFromCwd(t *testing.T) {
	t.Parallel()
	fs, root := pathTree(t, "sub")
	tests := []struct{ in, want string }{
		{"file.txt", "sub/file.txt"},
		{"", "sub"},
		{"../hello.txt", "hello.txt"},
		{"alias", "hello.txt"},
		{"deep/../file.txt", "sub/file.txt"},
		{root + "/multi.txt", "multi.txt"},
		{"../..", "RETRY: Path '../..' resolves outside the root directory."},
	}
	for _, tt := range tests {
		got, err := fs.resolve(tt.in)
		assert.Equal(t, tt.want, result(got, err), "resolve(%q)", tt.in)
	}
	got, err := fs.resolveEntry("dirlink/file.txt")
	assert.Equal(t, "sub/file.txt", result(got, err), "resolveEntry is root-relative")
}

// A root reached through a symlink can be named by either spelling in an
// absolute path.
func TestResolveRootAlias(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	mustWrite(t, ws, "real/f.txt", "f")
	mustSymlink(t, "real", filepath.Join(ws, "link"))
	c, err := New(Options{RootDir: "link", Tools: []string{}}, ws)
	require.NoError(t, err)
	defer c.Close()
	for _, p := range []string{filepath.Join(ws, "link", "f.txt"), filepath.Join(c.RootDir(), "f.txt")} {
		got, err := c.fs.resolve(p)
		assert.Equal(t, "f.txt", result(got, err), p)
	}
}

func TestResolveAtFilesystemRoot(t *testing.T) {
	t.Parallel()
	c, err := New(Options{RootDir: "/", Tools: []string{}}, "/")
	require.NoError(t, err)
	defer c.Close()
	for in, want := range map[string]string{"/etc/../etc": "etc", "..": ".", "/": ".", "../../tmp": "tmp"} {
		got, err := c.fs.resolve(in)
		assert.Equal(t, want, result(got, err), in)
	}
}

func TestRelToCwd(t *testing.T) {
	t.Parallel()
	tests := []struct{ cwd, rel, want string }{
		{".", "a/b", "a/b"},
		{".", ".", "."},
		{"a", "a", "."},
		{"a", "a/b/c", "b/c"},
		{"a", "ab/c", "../ab/c"},
		{"a/b", "a/c", "../c"},
		{"a/b", ".", "../.."},
		{"a/b", "x", "../../x"},
		{"a/b", "a", ".."},
	}
	for _, tt := range tests {
		fs := &FS{cwd: tt.cwd}
		if tt.cwd != "." {
			fs.cwdParts = strings.Split(tt.cwd, "/")
		}
		assert.Equal(t, tt.want, fs.relToCwd(tt.rel), "cwd %s rel %s", tt.cwd, tt.rel)
	}
}

func TestHidden(t *testing.T) {
	t.Parallel()
	for rel, want := range map[string]bool{
		".": false, "a": false, "a/b.txt": false, ".git": true, "a/.env": true, ".github/x.yml": true,
		"a/b/.c/d": true, "a.b/c": false, "a/..b": true,
		// Names a file system may take for .git are hidden as .git is.
		"GIT~1": true, "a/git~1/config": true, "a/\u200c.git/HEAD": true, "git": false, "a/git~2/x": false,
	} {
		assert.Equal(t, want, hidden(rel), rel)
	}
}

// FuzzResolve checks the containment property over a tree with symlinks in
// and out: whatever the path, resolve either refuses it or returns a clean
// root-relative path with no symlink in it, and for an existing path the
// same file the OS's realpath finds.
func FuzzResolve(f *testing.F) {
	for _, s := range []string{
		"hello.txt", "sub/alias", "out", "out/secret", "outrel/../root/hello.txt", "loop", "a", "dirlink/file.txt",
		"../x", "a/../../b", "updir/root/sub/uplink/leaf.txt", "dangling", "absin/../hello.txt", "chain1",
		"sub/uplink/../../outrel", "dotdot/dotdot/sub", "./././", "sub/deep/../../..", "devzero",
	} {
		f.Add(s)
	}
	fs, root := pathTree(f, "")
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, p string) {
		// Absolute paths are covered by the table; /proc would fool the oracle.
		p = strings.TrimLeft(p, "/")
		rel, err := fs.resolve(p)
		// Joined without cleaning, which would apply ".." before the symlinks.
		hostReal, herr := filepath.EvalSymlinks(root + "/" + p)
		if err != nil {
			if _, ok := capabilities.AsRetry(err); !ok {
				t.Fatalf("resolve(%q): non-retry error %v", p, err)
			}
			if herr == nil && within(hostReal, realRoot) && !strings.Contains(p, "\x00") &&
				!strings.Contains(err.Error(), "too long") && !strings.Contains(err.Error(), "loop") {
				t.Fatalf("resolve(%q) refused %v, but it is %s inside the root", p, err, hostReal)
			}
			return
		}
		if rel != "." && (path.Clean(rel) != rel || strings.HasPrefix(rel, "../") || rel == ".." || path.IsAbs(rel)) {
			t.Fatalf("resolve(%q) = %q: not a clean relative path", p, rel)
		}
		// No existing component of rel may be a symlink: the path the I/O
		// walks is the path that was checked.
		cur := realRoot
		if rel != "." {
			for _, c := range strings.Split(rel, "/") {
				cur = filepath.Join(cur, c)
				st, err := os.Lstat(cur)
				if err != nil {
					break
				}
				if st.Mode()&os.ModeSymlink != 0 {
					t.Fatalf("resolve(%q) = %q passes through symlink %s", p, rel, cur)
				}
			}
		}
		if herr == nil && filepath.Join(realRoot, rel) != hostReal {
			t.Fatalf("resolve(%q) = %q, but realpath is %s", p, rel, hostReal)
		}
	})
}
