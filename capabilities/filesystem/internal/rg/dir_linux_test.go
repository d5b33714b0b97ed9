package rg

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// rg started in DirOf(fd) searches the directory fd holds, even once its
// path has been swapped for a symlink to another directory.
func TestDirOfFollowsTheDescriptor(t *testing.T) {
	t.Parallel()
	needRG(t)
	parent := tree(t, map[string]string{"held/held.txt": "", "other/other.txt": ""})
	held := filepath.Join(parent, "held")
	fd, err := unix.Open(held, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	defer unix.Close(fd)
	require.NoError(t, os.Rename(held, filepath.Join(parent, "moved")))
	require.NoError(t, os.Symlink("other", held))

	dir, ok := DirOf(fd)
	require.True(t, ok, "/proc is not mounted")
	p, err := Start(context.Background(), dir, SplitPaths, "--null", "--files", "--sort", "path")
	require.NoError(t, err)
	assert.Equal(t, []string{"held.txt"}, records(t, p))
	assert.NoError(t, p.Wait())

	_, ok = DirOf(-1)
	assert.False(t, ok)
}
