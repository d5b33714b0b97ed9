package filesystem

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func TestListRegular(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	want := map[string]bool{}
	// Long names, so that the listing takes several getdents64 calls.
	for i := range 300 {
		name := fmt.Sprintf("%03d-%s.txt", i, strings.Repeat("n", 200))
		mustWrite(t, dir, name, "")
		want[name] = true
	}
	mustWrite(t, dir, "sub/x.txt", "")
	mustSymlink(t, "000-"+strings.Repeat("n", 200)+".txt", filepath.Join(dir, "link.txt"))
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o644))

	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	defer unix.Close(fd)
	var buf []byte
	assert.Equal(t, want, listRegular(fd, &buf), "regular files only, through an O_PATH descriptor")

	f, err := os.Open(filepath.Join(dir, "sub", "x.txt"))
	require.NoError(t, err)
	defer f.Close()
	assert.Nil(t, listRegular(int(f.Fd()), &buf), "not a directory")
}

// A name whose type the listing did not report, or a directory that could
// not be listed, is looked up on its own.
func TestRGListingLooksUpUnknownTypes(t *testing.T) {
	t.Parallel()
	c, _ := newTestFS(t, Options{}, map[string]string{"a.txt": "", "d/x.txt": ""})
	cur, err := c.fs.dir.Walk(".")
	require.NoError(t, err)
	defer cur.Close()
	var buf []byte
	unknown := rgListing{read: true, names: map[string]bool{"a.txt": false, "d": false}}
	assert.True(t, unknown.regular(&cur, "a.txt", &buf))
	assert.False(t, unknown.regular(&cur, "d", &buf))
	assert.False(t, unknown.regular(&cur, "missing", &buf), "a name the listing lacks")
	unlisted := rgListing{read: true}
	assert.True(t, unlisted.regular(&cur, "a.txt", &buf))
	assert.False(t, unlisted.regular(&cur, "d", &buf))

	// The first names are looked up one by one, the rest in the listing.
	var l rgListing
	for i := range rgListAfter + 2 {
		assert.True(t, l.regular(&cur, "a.txt", &buf))
		assert.False(t, l.regular(&cur, "d", &buf))
		assert.Equal(t, i >= rgListAfter/2, l.read, "after %d names", 2*(i+1))
	}
	assert.Equal(t, map[string]bool{"a.txt": true}, l.names)
}
