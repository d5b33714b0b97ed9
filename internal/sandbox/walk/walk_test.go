//go:build unix

package walk

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func write(t *testing.T, root, rel, content string) {
	t.Helper()
	p := filepath.Join(root, rel)
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
}

func mustOpenRoot(t *testing.T, dir string) *os.Root {
	t.Helper()
	root, err := os.OpenRoot(dir)
	require.NoError(t, err)
	t.Cleanup(func() { root.Close() })
	return root
}

// New and NewTracked start walks below root the way the sandbox does on
// Unix, from its directory's descriptor (NewAt, NewTrackedAt).
func New[S any](root *os.Root, dir string, state S) (*Walker[S], error) {
	f, err := root.Open(".")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return NewAt(int(f.Fd()), dir, state)
}

func NewTracked[S any](root *os.Root, dir string, state S, last Stamp) (*Walker[S], Stamp, error) {
	f, err := root.Open(".")
	if err != nil {
		return nil, Stamp{}, err
	}
	defer f.Close()
	return NewTrackedAt(int(f.Fd()), dir, state, last)
}

// all walks dir entering every directory, and returns "path type" lines.
func all(t *testing.T, root *os.Root, dir string) []string {
	t.Helper()
	w, err := New(root, dir, 0)
	require.NoError(t, err)
	defer w.Close()
	var out []string
	for w.Next() {
		e := w.Entry()
		out = append(out, fmt.Sprintf("%s %s %d", e.Path, e.Type, e.Depth))
		if e.Type == Dir {
			w.Descend(0)
		}
	}
	return out
}

func TestWalkOrder(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, rel := range []string{"a.txt", "a/b.txt", "a/b/c", "B", "a-", "é", "z/y/x/w"} {
		write(t, dir, rel, "x")
	}
	require.NoError(t, os.Symlink("a.txt", filepath.Join(dir, "link")))
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644))
	root := mustOpenRoot(t, dir)

	// Component-wise, byte order: "a/..." before "a-" and "a.txt", upper
	// case before lower case, a directory right before its contents.
	assert.Equal(t, []string{
		"B file 1",
		"a dir 1", "a/b dir 2", "a/b/c file 3", "a/b.txt file 2",
		"a- file 1", "a.txt file 1", "fifo other 1", "link symlink 1",
		"z dir 1", "z/y dir 2", "z/y/x dir 3", "z/y/x/w file 4",
		"é file 1",
	}, all(t, root, "."))
	assert.Equal(t, []string{"a/b dir 1", "a/b/c file 2", "a/b.txt file 1"}, all(t, root, "a"))
}

func TestWalkEntersOnlyWhenAsked(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write(t, dir, "keep/in/deep.txt", "x")
	write(t, dir, "skip/out.txt", "x")
	root := mustOpenRoot(t, dir)
	w, err := New(root, "", "root")
	require.NoError(t, err)
	defer w.Close()
	var got []string
	for w.Next() {
		e := w.Entry()
		got = append(got, e.Path+" in "+w.State())
		if e.Type == Dir && e.Name() != "skip" {
			w.Descend(e.Name())
		}
	}
	assert.Equal(t, []string{"keep in root", "keep/in in keep", "keep/in/deep.txt in in", "skip in root"}, got)
}

func TestWalkRootErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write(t, dir, "file.txt", "x")
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644))
	root := mustOpenRoot(t, dir)
	_, err := New(root, "missing", 0)
	assert.ErrorIs(t, err, os.ErrNotExist)
	_, err = New(root, "file.txt", 0)
	assert.ErrorIs(t, err, syscall.ENOTDIR)
	_, err = New(root, "fifo", 0) // must fail, not block waiting for a writer
	assert.ErrorIs(t, err, syscall.ENOTDIR)
}

// A directory swapped for a symlink after it was listed is not followed.
func TestWalkDoesNotFollowSwappedDirectory(t *testing.T) {
	t.Parallel()
	dir, outside := t.TempDir(), t.TempDir()
	write(t, dir, "a/inside.txt", "x")
	write(t, outside, "secret.txt", "x")
	root := mustOpenRoot(t, dir)
	w, err := New(root, "", 0)
	require.NoError(t, err)
	defer w.Close()
	require.True(t, w.Next())
	require.Equal(t, "a", w.Entry().Path)
	require.NoError(t, os.Rename(filepath.Join(dir, "a"), filepath.Join(dir, "moved")))
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "a")))
	w.Descend(0)
	assert.False(t, w.Next(), "walked into %s", w.Entry().Path)
}

// A File is read through Open, the way search_files reads it.
func TestFileOpen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	big := bytes.Repeat([]byte("text line\n"), 40_000)
	write(t, dir, "small.txt", "hello\n")
	write(t, dir, "empty", "")
	write(t, dir, "big.txt", string(big))
	write(t, dir, "big.bin", "\x00"+string(big))
	require.NoError(t, os.Symlink("small.txt", filepath.Join(dir, "swapped")))
	root := mustOpenRoot(t, dir)

	files := map[string]*File{}
	w, err := New(root, "", 0)
	require.NoError(t, err)
	for w.Next() {
		files[w.Entry().Name()] = w.File()
	}
	w.Close() // the files stay readable after the walk is closed

	for name, want := range map[string]string{
		"small.txt": "hello\n",
		"empty":     "",
		"big.txt":   string(big),
		"big.bin":   "\x00" + string(big),
	} {
		s, err := files[name].Open()
		require.NoError(t, err, name)
		assert.EqualValues(t, len(want), s.Size(), name)
		data, err := io.ReadAll(s)
		require.NoError(t, err, name)
		assert.Equal(t, want, string(data), name)
		if len(want) > 1 {
			at := make([]byte, len(want)-1)
			n, err := s.ReadAt(at, 1)
			require.NoError(t, err, name)
			assert.Equal(t, want[1:], string(at[:n]), name)
		}
		require.NoError(t, s.Close())
	}

	// The symlink is not followed when opened.
	_, err = files["swapped"].Open()
	assert.ErrorIs(t, err, syscall.ELOOP)
	for _, f := range files {
		f.Close()
	}
	_, err = files["small.txt"].Open()
	assert.ErrorIs(t, err, os.ErrClosed)
}

func TestLargeDirectory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var want []string
	for i := range 1500 { // more entries than one listing buffer holds
		name := fmt.Sprintf("%04d-%s", i, strings.Repeat("n", 40))
		write(t, dir, name, "")
		want = append(want, name+" file 1")
	}
	assert.Equal(t, want, all(t, mustOpenRoot(t, dir), ""))
}

func TestLstat(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write(t, dir, "d/f.txt", "12345")
	root := mustOpenRoot(t, dir)
	w, err := New(root, "d", 0)
	require.NoError(t, err)
	defer w.Close()
	require.True(t, w.Next())
	typ, size, err := w.Lstat()
	require.NoError(t, err)
	assert.Equal(t, Regular, typ)
	assert.EqualValues(t, 5, size)
}

func BenchmarkWalkGOROOT(b *testing.B) {
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		b.Skipf("go env GOROOT: %v", err)
	}
	root, err := os.OpenRoot(filepath.Join(strings.TrimSpace(string(goroot)), "src"))
	if err != nil {
		b.Fatal(err)
	}
	defer root.Close()
	for b.Loop() {
		w, err := New(root, "", struct{}{})
		if err != nil {
			b.Fatal(err)
		}
		for w.Next() {
			if w.Entry().Type == Dir {
				w.Descend(struct{}{})
			}
		}
		w.Close()
	}
}

// The walk root is reached without following symlinks: a component swapped
// for one (here, to a directory the caller may have denied) fails the walk.
func TestWalkRootThroughSymlinkFails(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write(t, dir, "private/key.txt", "x")
	require.NoError(t, os.Symlink("private", filepath.Join(dir, "public")))
	root := mustOpenRoot(t, dir)
	_, err := New(root, "public", 0)
	assert.True(t, errors.Is(err, syscall.ENOTDIR) || errors.Is(err, syscall.ELOOP), "%v", err)
	_, err = New(root, "public/sub", 0)
	assert.Error(t, err)
	assert.Equal(t, []string{"private/key.txt file 1"}, all(t, root, "private"))
}
