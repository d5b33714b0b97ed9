package rg

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// rg started in /proc/self/fd/N (what sandbox.Cursor.WorkDir names)
// searches the directory descriptor N holds, even once its path has been
// swapped for a symlink to another directory: the child resolves the name
// itself, with a copy of this process's descriptors, before the exec closes
// them.
func TestStartInAHeldDirectory(t *testing.T) {
	t.Parallel()
	needRG(t)
	parent := tree(t, map[string]string{"held/held.txt": "", "other/other.txt": ""})
	held := filepath.Join(parent, "held")
	fd, err := unix.Open(held, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	defer unix.Close(fd)
	require.NoError(t, os.Rename(held, filepath.Join(parent, "moved")))
	require.NoError(t, os.Symlink("other", held))

	var st unix.Statfs_t
	if unix.Statfs("/proc/self/fd", &st) != nil || st.Type != unix.PROC_SUPER_MAGIC {
		t.Skip("/proc is not mounted")
	}
	p, err := Start(context.Background(), "/proc/self/fd/"+strconv.Itoa(fd), SplitPaths, "--null", "--files", "--sort", "path")
	require.NoError(t, err)
	assert.Equal(t, []string{"held.txt"}, records(t, p))
	assert.NoError(t, p.Wait())
}
