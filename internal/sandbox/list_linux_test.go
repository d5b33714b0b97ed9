package sandbox

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
