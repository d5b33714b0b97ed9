package filesystem

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// kernelWatches returns how many watches the process's inotify instances
// hold on the directory dir, as the kernel lists them in fdinfo. The shared
// watcher's instance is the only one in these tests, but which descriptor it
// is is fsnotify's business: every instance is counted.
func kernelWatches(t *testing.T, dir string) int {
	t.Helper()
	var st unix.Stat_t
	require.NoError(t, unix.Stat(dir, &st))
	// fdinfo shows the kernel's dev_t: major in the bits above the 20 of minor.
	sdev := uint64(unix.Major(uint64(st.Dev)))<<20 | uint64(unix.Minor(uint64(st.Dev)))
	fds, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	n := 0
	for _, fd := range fds {
		if link, err := os.Readlink("/proc/self/fd/" + fd.Name()); err != nil || link != "anon_inode:inotify" {
			continue
		}
		f, err := os.Open("/proc/self/fdinfo/" + fd.Name())
		if err != nil {
			continue // closed meanwhile
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			// inotify wd:1 ino:8a2 sdev:800001 mask:... (numbers in hex)
			fields := strings.Fields(sc.Text())
			if len(fields) < 4 || fields[0] != "inotify" {
				continue
			}
			ino, err := strconv.ParseUint(strings.TrimPrefix(fields[2], "ino:"), 16, 64)
			require.NoError(t, err)
			dev, err := strconv.ParseUint(strings.TrimPrefix(fields[3], "sdev:"), 16, 64)
			require.NoError(t, err)
			if ino == uint64(st.Ino) && dev == sdev {
				n++
			}
		}
		require.NoError(t, sc.Err())
		f.Close()
	}
	return n
}

// Close removes the kernel's watches before it returns: none is left to
// report anything, while the shared watcher lives on.
func TestCloseRemovesKernelWatches(t *testing.T) {
	t.Parallel()
	c, root := newTestFS(t, Options{}, map[string]string{"a.txt": "a\n", "sub/b.txt": "b\n"})
	for _, p := range []string{"a.txt", "sub/b.txt"} {
		_, err := callTool(context.Background(), t, c, ToolReadFile, map[string]any{"path": p})
		require.NoError(t, err)
	}
	dirs := []string{root, filepath.Join(root, "sub")}
	for _, d := range dirs {
		require.Equal(t, 1, kernelWatches(t, d), "watched before Close")
	}
	require.NoError(t, c.Close())
	for _, d := range dirs {
		assert.Zero(t, kernelWatches(t, d), "no watch survives Close")
	}
	h, err := sharedHub()
	require.NoError(t, err)
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, s := range h.byID {
		for _, sub := range s.subs {
			assert.NotSame(t, &c.fs.changes.queue, sub.w.q, "a subscription outlived Close")
		}
	}
}

// Two FileSystems on one directory, under the same name or not, share one
// kernel watch: each hears of a change, and the watch stays until the last
// lets go.
func TestFileSystemsShareWatches(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		roots  [2]string // of each FileSystem, under the directory made
		reads  [2]string // the file each reads in the shared directory
		shared string    // the shared directory
	}{
		{"same root", [2]string{".", "."}, [2]string{"f.txt", "f.txt"}, "."},
		{"nested root", [2]string{".", "sub"}, [2]string{"sub/f.txt", "f.txt"}, "sub"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			top := t.TempDir()
			mustWrite(t, top, "sub/f.txt", "one\n")
			mustWrite(t, top, "f.txt", "one\n")
			shared := filepath.Join(top, tt.shared)
			var cs [2]*Capability
			for i := range cs {
				c, err := New(Options{Tools: []string{ToolReadFile, ToolFileInfo}}, filepath.Join(top, tt.roots[i]))
				require.NoError(t, err)
				t.Cleanup(func() { c.Close() })
				_, err = callTool(context.Background(), t, c, ToolReadFile, map[string]any{"path": tt.reads[i]})
				require.NoError(t, err)
				cs[i] = c
			}
			assert.Equal(t, 1, kernelWatches(t, shared), "one kernel watch for both")

			mustWrite(t, shared, "f.txt", "two\n")
			for i, c := range cs {
				waitFor(t, "the change to be noticed", func() bool { return pending(c, tt.reads[i]) })
			}

			require.NoError(t, cs[0].Close())
			assert.Equal(t, 1, kernelWatches(t, shared), "still held by the other")
			settle(t, cs[1], filepath.Join(top, tt.roots[1]), filepath.Dir(tt.reads[1])) // which the other still hears of

			require.NoError(t, cs[1].Close())
			assert.Zero(t, kernelWatches(t, shared))
		})
	}
}

// What fsnotify is given on Linux is the /proc/self/fd name of a descriptor
// held open, so the kernel watches the very directory the walk reached.
func TestWatchNamesDescriptor(t *testing.T) {
	t.Parallel()
	c, root := newTestFS(t, Options{}, map[string]string{"sub/f.txt": "f\n"})
	_, err := callTool(context.Background(), t, c, ToolReadFile, map[string]any{"path": "sub/f.txt"})
	require.NoError(t, err)
	paths := c.fs.changes.w.list()
	require.Len(t, paths, 1)
	assert.True(t, strings.HasPrefix(paths[0], "/proc/self/fd/"), paths[0])
	dir, err := os.Readlink(paths[0])
	require.NoError(t, err)
	realRoot, err := filepath.EvalSymlinks(root)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(realRoot, "sub"), dir)
}
