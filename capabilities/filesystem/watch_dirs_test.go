package filesystem

// Tests of the directories one FileSystem watches (watch_dirs.go): events
// delivered, subdirectories, bounds, release on Close, containment.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Pending changes go out through the listener of the next call, whatever
// the tool, once each; a deletion too. A call without a listener drops them.
func TestExternalChangeDelivery(t *testing.T) {
	t.Parallel()
	c, root := newTestFS(t, Options{}, map[string]string{"f.txt": "one\n", "sub/g.txt": "g\n", "other.txt": "o\n"})
	var rec recorder
	ctx := rec.ctx()
	for _, p := range []string{"f.txt", "sub/g.txt"} {
		_, err := callTool(ctx, t, c, ToolReadFile, map[string]any{"path": p})
		require.NoError(t, err)
	}
	next := func() []*ExternalChangeEvent {
		t.Helper()
		rec.events = nil
		_, err := callTool(ctx, t, c, ToolFileInfo, map[string]any{"path": "other.txt"})
		require.NoError(t, err)
		return externalChanges(&rec)
	}
	require.Empty(t, next())

	mustWrite(t, root, "f.txt", "two\n")
	mustWrite(t, root, "sub/g.txt", "G\n")
	waitFor(t, "both changes", func() bool { return pending(c, "f.txt") && pending(c, "sub/g.txt") })
	evs := next()
	require.Len(t, evs, 2)
	assert.Equal(t, "f.txt", evs[0].Path)
	assert.Equal(t, hashOf("one\n"), evs[0].PreviousHash)
	assert.Equal(t, hashOf("two\n"), evs[0].CurrentHash)
	assert.Equal(t, "sub/g.txt", evs[1].Path)
	assert.Equal(t, KindExternalChange, rec.events[0].Kind(), "delivered before the call's own events")
	assert.Empty(t, next(), "reported once")

	require.NoError(t, os.Remove(filepath.Join(root, "f.txt")))
	waitFor(t, "the deletion", func() bool { return pending(c, "f.txt") })
	evs = next()
	require.Len(t, evs, 1)
	assert.Equal(t, ExternalChangeEvent{EventBase: evs[0].EventBase, PreviousHash: hashOf("one\n"), Deleted: true}, *evs[0])

	// Written back as the agent last saw it: nothing to report.
	mustWrite(t, root, "sub/g.txt", "g\n")
	waitFor(t, "the change back", func() bool { return pending(c, "sub/g.txt") })
	assert.Empty(t, next())

	// Without a listener the pending change is dropped; a write still finds it.
	mustWrite(t, root, "sub/g.txt", "later\n")
	settle(t, c, root, "sub")
	require.True(t, pending(c, "sub/g.txt"))
	_, err := callTool(context.Background(), t, c, ToolFileInfo, map[string]any{"path": "other.txt"})
	require.NoError(t, err)
	assert.Empty(t, next())
	rec.events = nil
	assert.Equal(t, changedMessage("sub/g.txt", "g\n", "later\n"), write(ctx, t, c, map[string]any{"path": "sub/g.txt", "content": "x"}))
	assert.Equal(t, "external_change", rec.kinds())
}

func TestSubdirectoriesAreWatchedAsTheyAppear(t *testing.T) {
	t.Parallel()
	c, root := newTestFS(t, Options{DeniedPatterns: []string{"private"}}, map[string]string{"a.txt": "a\n"})
	_, err := callTool(context.Background(), t, c, ToolReadFile, map[string]any{"path": "a.txt"})
	require.NoError(t, err)
	assert.Equal(t, []string{"."}, watchedDirs(c))
	for _, d := range []string{"new", ".hidden", "private"} {
		require.NoError(t, os.Mkdir(filepath.Join(root, d), 0o755))
	}
	waitFor(t, "new to be watched", func() bool { return slices.Contains(watchedDirs(c), "new") })
	require.NoError(t, os.Mkdir(filepath.Join(root, "new", "deeper"), 0o755))
	waitFor(t, "new/deeper to be watched", func() bool { return slices.Contains(watchedDirs(c), "new/deeper") })
	mustWrite(t, root, "file-not-dir", "x")
	settle(t, c, root, ".")
	dirs := watchedDirs(c)
	assert.NotContains(t, dirs, ".hidden")
	assert.NotContains(t, dirs, "private", "denied")
	assert.NotContains(t, dirs, "file-not-dir")
	assert.Equal(t, len(dirs), c.Watches())

	require.NoError(t, os.RemoveAll(filepath.Join(root, "new")))
	waitFor(t, "new to be unwatched", func() bool {
		return !slices.Contains(watchedDirs(c), "new") && !slices.Contains(watchedDirs(c), "new/deeper")
	})
}

// No watch is ever set outside the root: not through a symlink the agent
// reads through, nor one that appears in a watched directory.
func TestNoWatchOutsideRoot(t *testing.T) {
	t.Parallel()
	parent := t.TempDir()
	root := filepath.Join(parent, "root")
	outside := filepath.Join(parent, "outside")
	mustWrite(t, outside, "x.txt", "secret\n")
	mustWrite(t, root, "real/f.txt", "f\n")
	mustSymlink(t, "real", filepath.Join(root, "alias"))
	mustSymlink(t, outside, filepath.Join(root, "out"))
	c, err := New(Options{Tools: []string{ToolReadFile}}, root)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	ctx := context.Background()

	_, err = callTool(ctx, t, c, ToolReadFile, map[string]any{"path": "alias/f.txt"})
	require.NoError(t, err)
	out, err := callTool(ctx, t, c, ToolReadFile, map[string]any{"path": "out/x.txt"})
	assert.Equal(t, "RETRY: Path 'out/x.txt' resolves outside the root directory.", result(out, err))
	assert.Equal(t, []string{"real"}, watchedDirs(c), "the resolved directory")

	mustSymlink(t, outside, filepath.Join(root, "real", "out2"))
	settle(t, c, root, "real")
	assert.Equal(t, []string{"real"}, slices.DeleteFunc(watchedDirs(c), func(d string) bool { return strings.Contains(d, "settle-") }))

	// What the kernel watches, whatever the names the watcher was given.
	realRoot, err := filepath.EvalSymlinks(root)
	require.NoError(t, err)
	w := c.fs.changes.w
	require.NotNil(t, w)
	for _, key := range w.list() {
		dir := key
		if runtime.GOOS == "linux" {
			dir, err = os.Readlink(key)
			require.NoError(t, err)
		}
		assert.True(t, within(dir, realRoot), "%s watches %s, outside the root", key, dir)
	}
}

func TestWatchBound(t *testing.T) {
	t.Parallel()
	files := map[string]string{}
	for i := range 6 {
		files[fmt.Sprintf("d%d/f.txt", i)] = "f\n"
	}
	c, root := newTestFS(t, Options{}, files)
	c.fs.changes.limit = 4 // before the first call starts the watcher
	for i := range 6 {
		_, err := callTool(context.Background(), t, c, ToolReadFile, map[string]any{"path": fmt.Sprintf("d%d/f.txt", i)})
		require.NoError(t, err)
	}
	assert.Equal(t, 4, c.Watches())
	assert.Equal(t, []string{"d0", "d1", "d2", "d3"}, watchedDirs(c))

	// Past the bound the write-time check still protects.
	mustWrite(t, root, "d5/f.txt", "theirs\n")
	assert.Equal(t, changedMessage("d5/f.txt", "f\n", "theirs\n"), write(context.Background(), t, c, map[string]any{"path": "d5/f.txt", "content": "x"}))
}

// Directories that appear take at most half the budget.
func TestAppearingDirectoriesShareOfBound(t *testing.T) {
	t.Parallel()
	c, root := newTestFS(t, Options{}, map[string]string{"a.txt": "a\n", "b/b.txt": "b\n", "c/c.txt": "c\n"})
	c.fs.changes.limit = 6
	_, err := callTool(context.Background(), t, c, ToolReadFile, map[string]any{"path": "a.txt"})
	require.NoError(t, err)
	for i := range 5 {
		require.NoError(t, os.Mkdir(filepath.Join(root, fmt.Sprintf("n%d", i)), 0o755))
	}
	waitFor(t, "three appearing directories", func() bool { return len(watchedDirs(c)) == 4 })
	for _, p := range []string{"b/b.txt", "c/c.txt"} {
		_, err := callTool(context.Background(), t, c, ToolReadFile, map[string]any{"path": p})
		require.NoError(t, err)
	}
	dirs := watchedDirs(c)
	assert.Len(t, dirs, 6)
	assert.Contains(t, dirs, "b", "the agent's own directories still fit")
	assert.Contains(t, dirs, "c")
}

func TestCloseReleasesWatches(t *testing.T) {
	t.Parallel()
	c, err := New(Options{Tools: []string{ToolReadFile, ToolWriteFile}}, t.TempDir())
	require.NoError(t, err)
	root := c.RootDir()
	for _, p := range []string{"a.txt", "x/b.txt", "y/c.txt"} {
		mustWrite(t, root, p, "t\n")
		_, err := callTool(context.Background(), t, c, ToolReadFile, map[string]any{"path": p})
		require.NoError(t, err)
	}
	assert.Equal(t, 3, c.Watches())
	require.NoError(t, c.Close())
	assert.Zero(t, c.Watches())
	assert.Empty(t, watchedDirs(c))
	assert.NoError(t, c.Close(), "closing twice is harmless")

	for _, tool := range []string{ToolReadFile, ToolWriteFile} {
		out, err := callTool(context.Background(), t, c, tool, map[string]any{"path": "a.txt", "content": "x"})
		assert.ErrorIs(t, err, ErrClosed, out)
		_, retry := capabilities.AsRetry(err)
		assert.False(t, retry, "fatal, not for the model to retry")
	}
	assert.Equal(t, "t\n", readBack(t, root, "a.txt"))
}

// Tool calls from several goroutines while another process rewrites the
// files: for the race detector, and no call may fail fatally.
func TestWatchConcurrentCalls(t *testing.T) {
	t.Parallel()
	files := map[string]string{}
	for i := range 4 {
		files[fmt.Sprintf("d%d/f.txt", i)] = "start\n"
	}
	c, root := newTestFS(t, Options{}, files)
	var stop sync.WaitGroup
	done := make(chan struct{})
	stop.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			p := filepath.Join(root, fmt.Sprintf("d%d", i%4), "f.txt")
			if err := os.WriteFile(p, []byte(fmt.Sprintf("theirs %d\n", i)), 0o644); err != nil {
				t.Error(err)
				return
			}
			time.Sleep(100 * time.Microsecond)
		}
	})
	var calls sync.WaitGroup
	for g := range 4 {
		calls.Go(func() {
			var rec recorder
			ctx := rec.ctx()
			for i := range 50 {
				p := fmt.Sprintf("d%d/f.txt", (g+i)%4)
				var err error
				switch i % 3 {
				case 0:
					_, err = callTool(ctx, t, c, ToolReadFile, map[string]any{"path": p})
				case 1:
					_, err = callTool(ctx, t, c, ToolWriteFile, map[string]any{"path": p, "content": "mine\n"})
				case 2:
					_, err = callTool(ctx, t, c, ToolEditFile, map[string]any{"path": p, "old_text": "mine", "new_text": "mine"})
				}
				if _, retry := capabilities.AsRetry(err); err != nil && !retry {
					t.Errorf("fatal error: %v", err)
				}
			}
		})
	}
	calls.Wait()
	close(done)
	stop.Wait()
	require.NoError(t, c.Close())
	assert.Zero(t, c.Watches())
}

func TestListedDirectoryIsWatched(t *testing.T) {
	t.Parallel()
	c, _ := newTestFS(t, Options{Tools: []string{ToolListDirectory}}, map[string]string{"sub/a.txt": "a\n", "other/b.txt": "b\n"})
	out, err := callTool(context.Background(), t, c, ToolListDirectory, map[string]any{"path": "sub"})
	require.NoError(t, err, out)
	assert.Equal(t, []string{"sub"}, watchedDirs(c))
	assert.Equal(t, 1, c.Watches())
}

// A watched directory moved elsewhere in the root is unwatched, and watched
// afresh under its new name when the agent reads there.
func TestMovedDirectoryIsWatchedAgain(t *testing.T) {
	t.Parallel()
	c, root := newTestFS(t, Options{}, map[string]string{"a/f.txt": "f\n"})
	ctx := context.Background()
	_, err := callTool(ctx, t, c, ToolReadFile, map[string]any{"path": "a/f.txt"})
	require.NoError(t, err)
	require.Equal(t, []string{"a"}, watchedDirs(c))

	require.NoError(t, os.Rename(filepath.Join(root, "a"), filepath.Join(root, "b")))
	waitFor(t, "a to be unwatched", func() bool { return !slices.Contains(watchedDirs(c), "a") })
	_, err = callTool(ctx, t, c, ToolReadFile, map[string]any{"path": "b/f.txt"})
	require.NoError(t, err)
	assert.Equal(t, []string{"b"}, watchedDirs(c))
	mustWrite(t, root, "b/f.txt", "theirs\n")
	waitFor(t, "the change under the new name", func() bool { return pending(c, "b/f.txt") })
}
