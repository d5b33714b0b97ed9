package filesystem

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/internal/sandbox"
	"github.com/fsnotify/fsnotify"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// waitFor polls cond until it holds and fails the test if it does not within
// a few seconds. It never asserts how long the wait took.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// pending reports whether the watcher has marked rel as touched.
func pending(c *Capability, rel string) bool {
	t := c.fs.changes
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.dirty[rel]
	return ok
}

// watchedDirs lists the directories with a live watch, sorted.
func watchedDirs(c *Capability) []string {
	t := c.fs.changes
	t.mu.Lock()
	defer t.mu.Unlock()
	var dirs []string
	for rel, d := range t.dirs {
		if d.sub != nil {
			dirs = append(dirs, rel)
		}
	}
	slices.Sort(dirs)
	return dirs
}

// settle waits until the watcher has handled every event so far: it makes a
// fresh subdirectory of the watched directory dir and waits for it to be
// watched, which happens in event order.
func settle(t *testing.T, c *Capability, root, dir string) {
	t.Helper()
	name := sandbox.Join(dir, fmt.Sprintf("settle-%d", time.Now().UnixNano()))
	require.NoError(t, os.Mkdir(filepath.Join(root, filepath.FromSlash(name)), 0o755))
	waitFor(t, name+" to be watched", func() bool { return slices.Contains(watchedDirs(c), name) })
}

// externalChanges returns the external change events recorded.
func externalChanges(r *recorder) []*ExternalChangeEvent {
	var evs []*ExternalChangeEvent
	for _, ev := range r.events {
		if e, ok := ev.(*ExternalChangeEvent); ok {
			evs = append(evs, e)
		}
	}
	return evs
}

func hashOf(s string) string { return contentHash([]byte(s)) }

func changedMessage(path, read, now string) string {
	return "RETRY: Conflict: file '" + path + "' was changed on disk since you last read it (read hash:" +
		hashOf(read) + ", now hash:" + hashOf(now) + "). Re-read the file and retry."
}

// The core promise: a file changed on disk after the agent read it is never
// overwritten by a write or edit that gives no expected_hash, whether the
// watcher has noticed the change yet or not, in a run or in a direct call.
func TestChangedFileIsNotOverwritten(t *testing.T) {
	t.Parallel()
	const mine, theirs = "hello world\n", "hello there\n"
	change := map[string]func(ctx context.Context, t *testing.T, c *Capability) string{
		ToolWriteFile: func(ctx context.Context, t *testing.T, c *Capability) string {
			return write(ctx, t, c, map[string]any{"path": "f.txt", "content": "overwritten\n"})
		},
		ToolEditFile: func(ctx context.Context, t *testing.T, c *Capability) string {
			return edit(ctx, t, c, map[string]any{"path": "f.txt", "old_text": "hello", "new_text": "goodbye"})
		},
	}
	for _, tool := range []string{ToolWriteFile, ToolEditFile} {
		for _, inRun := range []bool{false, true} {
			for _, noticed := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/run=%v/noticed=%v", tool, inRun, noticed), func(t *testing.T) {
					t.Parallel()
					c, root := newTestFS(t, Options{}, map[string]string{"f.txt": mine})
					var rec recorder
					ctx := context.Background()
					if inRun {
						ctx = rec.ctx()
					}
					_, err := callTool(ctx, t, c, ToolReadFile, map[string]any{"path": "f.txt"})
					require.NoError(t, err)

					mustWrite(t, root, "f.txt", theirs)
					if noticed {
						waitFor(t, "the change to be noticed", func() bool { return pending(c, "f.txt") })
					}
					assert.Equal(t, changedMessage("f.txt", mine, theirs), change[tool](ctx, t, c))
					assert.Equal(t, theirs, readBack(t, root, "f.txt"), "the other writer's content survives")

					if inRun {
						settle(t, c, root, ".")
						_, err := callTool(ctx, t, c, ToolFileInfo, map[string]any{"path": "f.txt"})
						require.NoError(t, err)
						evs := externalChanges(&rec)
						require.Len(t, evs, 1, "reported once: %s", rec.kinds())
						assert.Equal(t, ExternalChangeEvent{
							EventBase:    EventBase{Path: "f.txt", RootDir: c.RootDir(), CapabilityID: CapabilityID, ToolCallID: "call-1", ToolName: "tool"},
							PreviousHash: hashOf(mine), CurrentHash: hashOf(theirs),
						}, *evs[0])
						assert.NotContains(t, rec.kinds(), "file_change_request", "refused before it is announced")
					}

					// Having read the new content, the agent may change it.
					_, err = callTool(ctx, t, c, ToolReadFile, map[string]any{"path": "f.txt"})
					require.NoError(t, err)
					assert.NotContains(t, change[tool](ctx, t, c), "RETRY")
				})
			}
		}
	}
}

// A change made while a listener considers the request is caught under the
// write's descriptor, and worded as a change on disk since the agent read it.
func TestChangeDuringApproval(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{ToolWriteFile, ToolEditFile} {
		t.Run(tool, func(t *testing.T) {
			t.Parallel()
			c, root := newTestFS(t, Options{}, map[string]string{"f.txt": "hello world\n"})
			rec := recorder{onRequest: func(*FileChangeRequestEvent) { mustWrite(t, root, "f.txt", "hello there\n") }}
			_, err := callTool(rec.ctx(), t, c, ToolReadFile, map[string]any{"path": "f.txt"})
			require.NoError(t, err)
			args := map[string]any{"path": "f.txt", "content": "mine\n"}
			if tool == ToolEditFile {
				args = map[string]any{"path": "f.txt", "old_text": "world", "new_text": "moon"}
			}
			out, err := callTool(rec.ctx(), t, c, tool, args)
			assert.Equal(t, changedMessage("f.txt", "hello world\n", "hello there\n"), result(out, err))
			assert.Equal(t, "hello there\n", readBack(t, root, "f.txt"))
			assert.Equal(t, "file_read,file_change_request,external_change", rec.kinds())
		})
	}
}

func TestOwnWritesAreNotChanges(t *testing.T) {
	t.Parallel()
	c, root := newTestFS(t, Options{}, map[string]string{"f.txt": "one\n"})
	var rec recorder
	ctx := rec.ctx()
	steps := []struct {
		tool string
		args map[string]any
	}{
		{ToolReadFile, map[string]any{"path": "f.txt"}},
		{ToolWriteFile, map[string]any{"path": "f.txt", "content": "two\n"}},
		{ToolWriteFile, map[string]any{"path": "f.txt", "content": "three\n"}},
		{ToolEditFile, map[string]any{"path": "f.txt", "old_text": "three", "new_text": "four"}},
		{ToolWriteFile, map[string]any{"path": "new.txt", "content": "a\n"}},
		{ToolWriteFile, map[string]any{"path": "new.txt", "content": "b\n"}},
	}
	for _, s := range steps {
		out, err := callTool(ctx, t, c, s.tool, s.args)
		require.NoError(t, err, "%s %v: %s", s.tool, s.args, out)
	}
	settle(t, c, root, ".")
	_, err := callTool(ctx, t, c, ToolFileInfo, map[string]any{"path": "f.txt"})
	require.NoError(t, err)
	assert.Empty(t, externalChanges(&rec), rec.kinds())
	assert.Equal(t, "four\n", readBack(t, root, "f.txt"))
}

// expected_hash keeps the reference's behaviour: the model's hash decides,
// not what the agent last saw.
func TestExpectedHashUnchanged(t *testing.T) {
	t.Parallel()
	const mine, theirs = "mine\n", "theirs\n"
	tests := []struct {
		name, tool, expected, want, after string
	}{
		{"write stale hash", ToolWriteFile, hashOf(mine),
			"RETRY: Conflict: file 'f.txt' has changed (expected hash:" + hashOf(mine) + ", got hash:" + hashOf(theirs) +
				"). Re-read the file and retry.", theirs},
		{"write current hash", ToolWriteFile, hashOf(theirs), "Wrote 4 chars (1 lines) to f.txt. [hash:" + hashOf("new\n") + "]", "new\n"},
		{"edit stale hash", ToolEditFile, hashOf(mine),
			"RETRY: Conflict: file 'f.txt' has changed (expected hash:" + hashOf(mine) + ", got hash:" + hashOf(theirs) +
				"). Re-read the file and retry.", theirs},
		{"edit current hash", ToolEditFile, hashOf(theirs), "Edited f.txt. [hash:" + hashOf("new\n") + "]", "new\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, root := newTestFS(t, Options{}, map[string]string{"f.txt": mine})
			ctx := context.Background()
			_, err := callTool(ctx, t, c, ToolReadFile, map[string]any{"path": "f.txt"})
			require.NoError(t, err)
			mustWrite(t, root, "f.txt", theirs)
			args := map[string]any{"path": "f.txt", "content": "new\n", "expected_hash": tt.expected}
			if tt.tool == ToolEditFile {
				args = map[string]any{"path": "f.txt", "old_text": "theirs", "new_text": "new", "expected_hash": tt.expected}
			}
			out, err := callTool(ctx, t, c, tt.tool, args)
			assert.Equal(t, tt.want, result(out, err))
			assert.Equal(t, tt.after, readBack(t, root, "f.txt"))
		})
	}
}

func TestDeletedSinceRead(t *testing.T) {
	t.Parallel()
	c, root := newTestFS(t, Options{}, map[string]string{"w.txt": "w\n", "e.txt": "e\n"})
	ctx := context.Background()
	for _, p := range []string{"w.txt", "e.txt"} {
		_, err := callTool(ctx, t, c, ToolReadFile, map[string]any{"path": p})
		require.NoError(t, err)
		require.NoError(t, os.Remove(filepath.Join(root, p)))
	}
	assert.Equal(t, "Wrote 4 chars (1 lines) to w.txt. [hash:"+hashOf("new\n")+"]",
		write(ctx, t, c, map[string]any{"path": "w.txt", "content": "new\n"}), "write_file creates it again")
	assert.Equal(t, "RETRY: File not found: e.txt", edit(ctx, t, c, map[string]any{"path": "e.txt", "old_text": "e", "new_text": "x"}))
	assert.NoFileExists(t, filepath.Join(root, "e.txt"))

	// Recreated by someone else: not what the agent saw either.
	mustWrite(t, root, "w.txt", "theirs\n")
	assert.Equal(t, changedMessage("w.txt", "new\n", "theirs\n"), write(ctx, t, c, map[string]any{"path": "w.txt", "content": "x"}))
}

func TestWatchChangesOff(t *testing.T) {
	t.Parallel()
	no := false
	c, root := newTestFS(t, Options{WatchChanges: &no}, map[string]string{"f.txt": "mine\n"})
	ctx := context.Background()
	_, err := callTool(ctx, t, c, ToolReadFile, map[string]any{"path": "f.txt"})
	require.NoError(t, err)
	assert.Zero(t, c.Watches(), "no watcher")
	mustWrite(t, root, "f.txt", "theirs\n")
	assert.Equal(t, "Wrote 4 chars (1 lines) to f.txt. [hash:"+hashOf("new\n")+"]",
		write(ctx, t, c, map[string]any{"path": "f.txt", "content": "new\n"}), "the reference's behaviour")
	assert.Equal(t, "new\n", readBack(t, root, "f.txt"))
}

func TestRequireReadBeforeWrite(t *testing.T) {
	t.Parallel()
	no := false
	for _, watch := range []*bool{nil, &no} {
		t.Run(fmt.Sprintf("watch_changes=%v", watch == nil), func(t *testing.T) {
			t.Parallel()
			c, root := newTestFS(t, Options{RequireReadBeforeWrite: true, WatchChanges: watch},
				map[string]string{"a.txt": "a\n", "b.txt": "b\n", "c.txt": "c\n"})
			ctx := context.Background()
			refused := func(p string) string {
				return "RETRY: Refusing to change '" + p + "': read it with read_file first, so you know what it holds."
			}
			assert.Equal(t, refused("a.txt"), write(ctx, t, c, map[string]any{"path": "a.txt", "content": "x"}))
			assert.Equal(t, refused("b.txt"), edit(ctx, t, c, map[string]any{"path": "b.txt", "old_text": "b", "new_text": "x"}))
			_, err := callTool(ctx, t, c, ToolFileInfo, map[string]any{"path": "c.txt"})
			require.NoError(t, err)
			assert.Equal(t, refused("c.txt"), write(ctx, t, c, map[string]any{"path": "c.txt", "content": "x"}), "a hash is not the content")
			assert.Equal(t, "a\n", readBack(t, root, "a.txt"))
			assert.Equal(t, "b\n", readBack(t, root, "b.txt"))

			assert.Equal(t, "Wrote 2 chars (1 lines) to new.txt. [hash:"+hashOf("n\n")+"]",
				write(ctx, t, c, map[string]any{"path": "new.txt", "content": "n\n"}), "new files are fine")
			assert.NotContains(t, edit(ctx, t, c, map[string]any{"path": "new.txt", "old_text": "n", "new_text": "m"}), "RETRY",
				"written counts as known")
			assert.Equal(t, "RETRY: File not found: gone.txt", edit(ctx, t, c, map[string]any{"path": "gone.txt", "old_text": "g", "new_text": "x"}))

			for _, p := range []string{"a.txt", "b.txt"} {
				_, err := callTool(ctx, t, c, ToolReadFile, map[string]any{"path": p})
				require.NoError(t, err)
			}
			assert.NotContains(t, write(ctx, t, c, map[string]any{"path": "a.txt", "content": "x"}), "RETRY")
			assert.NotContains(t, edit(ctx, t, c, map[string]any{"path": "b.txt", "old_text": "b", "new_text": "x"}), "RETRY")
		})
	}
}

// A change that gives the file's hash as expected_hash needs no read first:
// the hash proves the model knows the content. A wrong one is the
// reference's Conflict.
func TestRequireReadBeforeWriteExpectedHash(t *testing.T) {
	t.Parallel()
	no := false
	conflict := "RETRY: Conflict: file 'f.txt' has changed (expected hash:" + hashOf("other\n") + ", got hash:" + hashOf("f\n") +
		"). Re-read the file and retry."
	tests := []struct {
		name, tool, hash, want, after string
	}{
		{"write matching", ToolWriteFile, hashOf("f\n"), "Wrote 4 chars (1 lines) to f.txt. [hash:" + hashOf("new\n") + "]", "new\n"},
		{"edit matching", ToolEditFile, hashOf("f\n"), "Edited f.txt. [hash:" + hashOf("new\n") + "]", "new\n"},
		{"write wrong", ToolWriteFile, hashOf("other\n"), conflict, "f\n"},
		{"edit wrong", ToolEditFile, hashOf("other\n"), conflict, "f\n"},
	}
	for _, tt := range tests {
		for _, watch := range []*bool{nil, &no} {
			t.Run(fmt.Sprintf("%s/watch_changes=%v", tt.name, watch == nil), func(t *testing.T) {
				t.Parallel()
				c, root := newTestFS(t, Options{RequireReadBeforeWrite: true, WatchChanges: watch}, map[string]string{"f.txt": "f\n"})
				args := map[string]any{"path": "f.txt", "content": "new\n", "expected_hash": tt.hash}
				if tt.tool == ToolEditFile {
					args = map[string]any{"path": "f.txt", "old_text": "f", "new_text": "new", "expected_hash": tt.hash}
				}
				out, err := callTool(context.Background(), t, c, tt.tool, args)
				assert.Equal(t, tt.want, result(out, err))
				assert.Equal(t, tt.after, readBack(t, root, "f.txt"))
			})
		}
	}
}

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

func TestSeenFilesAreBounded(t *testing.T) {
	t.Parallel()
	files := map[string]string{}
	for i := range 10 {
		files[fmt.Sprintf("f%d.txt", i)] = "f\n"
	}
	c, root := newTestFS(t, Options{}, files)
	c.fs.changes.seenLimit = 4
	for i := range 10 {
		_, err := callTool(context.Background(), t, c, ToolReadFile, map[string]any{"path": fmt.Sprintf("f%d.txt", i)})
		require.NoError(t, err)
	}
	assert.LessOrEqual(t, len(c.fs.changes.seen), 4)
	_, _, ok := c.fs.lastSeen("f9.txt")
	assert.True(t, ok, "the most recent is kept")
	_, _, ok = c.fs.lastSeen("f0.txt")
	assert.False(t, ok, "the oldest is forgotten")
	mustWrite(t, root, "f9.txt", "theirs\n")
	assert.Equal(t, changedMessage("f9.txt", "f\n", "theirs\n"), write(context.Background(), t, c, map[string]any{"path": "f9.txt", "content": "x"}))
}

// A change found by a write that turns out to be the agent's own, landed by
// a concurrent call, is the reference's Conflict and no external change.
func TestOwnConcurrentWriteIsNotExternal(t *testing.T) {
	t.Parallel()
	c, _ := newTestFS(t, Options{}, map[string]string{"f.txt": "one\n"})
	c.fs.saw("f.txt", hashOf("two\n"), true) // what the concurrent call wrote
	var rec recorder
	err := c.fs.changedOnDisk(rec.ctx(), "f.txt", "f.txt", hashOf("one\n"), hashOf("two\n"))
	assert.Equal(t, "RETRY: Conflict: file 'f.txt' has changed (expected hash:"+hashOf("one\n")+", got hash:"+hashOf("two\n")+
		"). Re-read the file and retry.", result("", err))
	assert.Empty(t, rec.events)
}

// A write-only file the agent wrote before can be written again: it cannot
// be read to compare, as it never could.
func TestWriteOnlyFileWrittenAgain(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads any file")
	}
	t.Parallel()
	c, root := newTestFS(t, Options{}, map[string]string{"w.txt": ""})
	ctx := context.Background()
	require.NotContains(t, write(ctx, t, c, map[string]any{"path": "w.txt", "content": "one\n"}), "RETRY")
	require.NoError(t, os.Chmod(filepath.Join(root, "w.txt"), 0o200))
	assert.NotContains(t, write(ctx, t, c, map[string]any{"path": "w.txt", "content": "two\n"}), "RETRY")
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

func TestErrClosedWrapsName(t *testing.T) {
	t.Parallel()
	c, err := New(Options{Tools: []string{ToolFileInfo}}, t.TempDir())
	require.NoError(t, err)
	require.NoError(t, c.Close())
	_, err = callTool(context.Background(), t, c, ToolFileInfo, map[string]any{"path": "."})
	assert.True(t, errors.Is(err, ErrClosed))
	assert.Equal(t, "filesystem: file_info: the FileSystem capability is closed", err.Error())
}

// BenchmarkWatchOverhead measures a read_file and write_file round trip with
// the change tracking on and off.
func BenchmarkWatchOverhead(b *testing.B) {
	for _, watch := range []bool{true, false} {
		b.Run(fmt.Sprintf("watch_changes=%v", watch), func(b *testing.B) {
			root := b.TempDir()
			if err := os.WriteFile(filepath.Join(root, "f.txt"), []byte(strings.Repeat("a line of text\n", 200)), 0o644); err != nil {
				b.Fatal(err)
			}
			c, err := New(Options{WatchChanges: &watch, Tools: []string{ToolReadFile, ToolWriteFile}}, root)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { c.Close() })
			var read, wrote capabilities.Tool
			for _, tl := range c.tools {
				switch tl.Name() {
				case ToolReadFile:
					read = tl
				case ToolWriteFile:
					wrote = tl
				}
			}
			var rec recorder
			ctx := rec.ctx()
			readArgs := []byte(`{"path": "f.txt"}`)
			writeArgs := []byte(`{"path": "f.txt", "content": "` + strings.Repeat(`a line of text\n`, 200) + `"}`)
			for b.Loop() {
				rec.events = rec.events[:0]
				if _, err := read.Call(ctx, readArgs); err != nil {
					b.Fatal(err)
				}
				if _, err := wrote.Call(ctx, writeArgs); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestListedDirectoryIsWatched(t *testing.T) {
	t.Parallel()
	c, _ := newTestFS(t, Options{Tools: []string{ToolListDirectory}}, map[string]string{"sub/a.txt": "a\n", "other/b.txt": "b\n"})
	out, err := callTool(context.Background(), t, c, ToolListDirectory, map[string]any{"path": "sub"})
	require.NoError(t, err, out)
	assert.Equal(t, []string{"sub"}, watchedDirs(c))
	assert.Equal(t, 1, c.Watches())
}

// BenchmarkJobLifecycle is one workspace job's use of a FileSystem, as a
// batch makes it: New, read_file, write_file, read_file of what was written,
// Close. It is run one job at a time, so what Close waits for shows in
// ns/op.
func BenchmarkJobLifecycle(b *testing.B) {
	for _, watch := range []bool{true, false} {
		b.Run(fmt.Sprintf("watch_changes=%v", watch), func(b *testing.B) {
			root := b.TempDir()
			input := strings.Repeat("A line of the job's input.\n", 40)
			if err := os.WriteFile(filepath.Join(root, "input.txt"), []byte(input), 0o644); err != nil {
				b.Fatal(err)
			}
			calls := []struct{ tool, args string }{
				{ToolReadFile, `{"path": "input.txt"}`},
				{ToolWriteFile, `{"path": "output.txt", "content": "The input, summarised.\n"}`},
				{ToolReadFile, `{"path": "output.txt"}`},
			}
			var rec recorder
			ctx := rec.ctx()
			b.ReportAllocs()
			for b.Loop() {
				c, err := New(Options{WatchChanges: &watch}, root)
				if err != nil {
					b.Fatal(err)
				}
				for _, cl := range calls {
					rec.events = rec.events[:0]
					if _, err := benchTool(b, c, cl.tool)(ctx, json.RawMessage(cl.args)); err != nil {
						b.Fatal(err)
					}
				}
				if err := c.Close(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
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

// queued collects what q holds until cond does.
func queued(t *testing.T, q *eventQueue, cond func([]dirEvent) bool) []dirEvent {
	t.Helper()
	var all []dirEvent
	waitFor(t, "events", func() bool {
		evs, _ := q.take()
		all = append(all, evs...)
		return cond(all)
	})
	return all
}

func newQueue() *eventQueue { return &eventQueue{kick: make(chan struct{}, 1)} }

func TestHubRoute(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("w", "a")
	sub := filepath.Join(dir, "sub")
	tests := []struct {
		name    string
		event   fsnotify.Event
		wantA   []string // "watch name op" as a's subscriptions hear it
		wantB   []string
		dropped bool // the watch of sub leaves the tables
	}{
		{
			name:  "entry created, to every subscriber",
			event: fsnotify.Event{Name: filepath.Join(dir, "new"), Op: fsnotify.Create},
			wantA: []string{"dir new create"}, wantB: []string{"dir new create"},
		},
		{
			name:  "written",
			event: fsnotify.Event{Name: filepath.Join(sub, "f.txt"), Op: fsnotify.Write},
			wantA: []string{"sub f.txt write"},
		},
		{
			name:  "removed",
			event: fsnotify.Event{Name: filepath.Join(dir, "f.txt"), Op: fsnotify.Remove},
			wantA: []string{"dir f.txt gone"}, wantB: []string{"dir f.txt gone"},
		},
		{
			name:  "moved away",
			event: fsnotify.Event{Name: filepath.Join(dir, "f.txt"), Op: fsnotify.Rename},
			wantA: []string{"dir f.txt gone"}, wantB: []string{"dir f.txt gone"},
		},
		{
			name:  "metadata along with a creation",
			event: fsnotify.Event{Name: filepath.Join(dir, "g"), Op: fsnotify.Create | fsnotify.Chmod},
			wantA: []string{"dir g create"}, wantB: []string{"dir g create"},
		},
		{
			name:  "metadata alone is dropped",
			event: fsnotify.Event{Name: filepath.Join(dir, "f.txt"), Op: fsnotify.Chmod},
		},
		{
			name:  "an unknown watch is dropped",
			event: fsnotify.Event{Name: filepath.Join("w", "other", "f.txt"), Op: fsnotify.Write},
		},
		{
			name:    "a watched directory gone, as itself and as an entry",
			event:   fsnotify.Event{Name: sub, Op: fsnotify.Remove},
			wantA:   []string{"sub  gone", "dir sub gone"},
			wantB:   []string{"dir sub gone"},
			dropped: true,
		},
		{
			name:  "a watched directory created again, as an entry",
			event: fsnotify.Event{Name: sub, Op: fsnotify.Create},
			wantA: []string{"dir sub create"}, wantB: []string{"dir sub create"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHub(nil)
			a := &watcher{hub: h, q: newQueue(), subs: map[*dirWatch]struct{}{}}
			b := &watcher{hub: h, q: newQueue(), subs: map[*dirWatch]struct{}{}}
			names := map[*dirWatch]string{}
			watch := func(path, name string, ws ...*watcher) {
				s := &sharedWatch{path: path, id: dirID{path: path}}
				for _, w := range ws {
					d := &dirWatch{shared: s, w: w}
					s.subs = append(s.subs, d)
					w.subs[d] = struct{}{}
					names[d] = name
				}
				h.byID[s.id], h.byPath[path] = s, s
			}
			watch(dir, "dir", a, b)
			watch(sub, "sub", a)

			h.route(tt.event)
			heard := func(w *watcher) []string {
				evs, _ := w.q.take()
				var got []string
				for _, ev := range evs {
					op := map[dirOp]string{opCreate: "create", opGone: "gone", opWrite: "write"}[ev.op]
					got = append(got, names[ev.dir]+" "+ev.name+" "+op)
				}
				return got
			}
			assert.Equal(t, tt.wantA, heard(a))
			assert.Equal(t, tt.wantB, heard(b))
			_, watched := h.byPath[sub]
			assert.Equal(t, tt.dropped, !watched)
			assert.Len(t, h.byID, len(h.byPath))
		})
	}
}

func TestHubErrors(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		err  error
		lost bool
	}{
		{fsnotify.ErrEventOverflow, true},
		{fmt.Errorf("reading: %w", fsnotify.ErrEventOverflow), true},
		{errors.New("some other failure"), false},
	} {
		h := newHub(nil)
		w := &watcher{hub: h, q: newQueue(), subs: map[*dirWatch]struct{}{}}
		s := &sharedWatch{path: "w", id: dirID{path: "w"}}
		s.subs = []*dirWatch{{shared: s, w: w}}
		h.byID[s.id], h.byPath[s.path] = s, s
		h.failed(tt.err)
		_, lost := w.q.take()
		assert.Equal(t, tt.lost, lost, tt.err.Error())
	}
}

// privateHub is a hub of the test's own, with a watcher closed at the end.
func privateHub(t *testing.T) *watchHub {
	t.Helper()
	fsw, err := fsnotify.NewWatcher()
	require.NoError(t, err)
	h := newHub(fsw)
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.run()
	}()
	t.Cleanup(func() {
		fsw.Close()
		<-done
	})
	return h
}

// target watches path as the directory id, counting its releases.
func target(path string, released *atomic.Int32) watchTarget {
	return watchTarget{path: path, id: dirID{path: path}, release: func() { released.Add(1) }}
}

// Two subscribers of one directory share one watch of fsnotify's, which
// stays until the last lets go and is released once.
func TestHubSharesWatches(t *testing.T) {
	t.Parallel()
	h := privateHub(t)
	a := &watcher{hub: h, q: newQueue(), subs: map[*dirWatch]struct{}{}}
	b := &watcher{hub: h, q: newQueue(), subs: map[*dirWatch]struct{}{}}
	dir := t.TempDir()
	var releasedA, releasedB atomic.Int32
	subA, err := a.add(target(dir, &releasedA))
	require.NoError(t, err)
	subB, err := b.add(target(dir, &releasedB))
	require.NoError(t, err)
	assert.Same(t, subA.shared, subB.shared)
	assert.Equal(t, []string{dir}, h.fsw.WatchList())
	assert.Equal(t, int32(1), releasedB.Load(), "the second subscriber's target is not needed")

	heard := func(sub *dirWatch, name string) func([]dirEvent) bool {
		return func(evs []dirEvent) bool {
			return slices.Contains(evs, dirEvent{dir: sub, name: name, op: opCreate})
		}
	}
	mustWrite(t, dir, "one.txt", "1\n")
	queued(t, a.q, heard(subA, "one.txt"))
	queued(t, b.q, heard(subB, "one.txt"))

	a.remove(subA)
	assert.Empty(t, a.list())
	assert.Equal(t, []string{dir}, h.fsw.WatchList(), "still b's")
	assert.Zero(t, releasedA.Load())
	mustWrite(t, dir, "two.txt", "2\n")
	queued(t, b.q, heard(subB, "two.txt"))

	b.close()
	assert.Empty(t, h.fsw.WatchList())
	assert.Equal(t, int32(1), releasedA.Load(), "released with the watch")
	assert.Empty(t, h.byID)
	assert.Empty(t, h.byPath)
	b.remove(subB) // already gone: harmless
	assert.Equal(t, int32(1), releasedA.Load())
}

// A watch that cannot be set, or that is not on the directory once set, is
// not kept: the target is released and the tables are left as they were.
func TestHubAddFails(t *testing.T) {
	t.Parallel()
	h := privateHub(t)
	w := &watcher{hub: h, q: newQueue(), subs: map[*dirWatch]struct{}{}}
	dir := t.TempDir()
	tests := map[string]watchTarget{
		"missing": {path: filepath.Join(dir, "missing")},
		"moved":   {path: dir, verify: func() bool { return false }},
	}
	for name, tg := range tests {
		var released atomic.Int32
		tg.id = dirID{path: tg.path}
		tg.release = func() { released.Add(1) }
		sub, err := w.add(tg)
		assert.Error(t, err, name)
		assert.Nil(t, sub, name)
		assert.Equal(t, int32(1), released.Load(), name)
		assert.Empty(t, h.fsw.WatchList(), name)
		assert.Empty(t, h.byID, name)
		assert.Empty(t, h.byPath, name)
		assert.Empty(t, w.list(), name)
	}
}

// A watched directory that is removed leaves the tables at once, so that a
// directory made again under its name gets a watch of its own.
func TestHubDirectoryGone(t *testing.T) {
	t.Parallel()
	h := privateHub(t)
	w := &watcher{hub: h, q: newQueue(), subs: map[*dirWatch]struct{}{}}
	dir := filepath.Join(t.TempDir(), "d")
	require.NoError(t, os.Mkdir(dir, 0o755))
	var released atomic.Int32
	old, err := w.add(target(dir, &released))
	require.NoError(t, err)

	require.NoError(t, os.Remove(dir))
	queued(t, w.q, func(evs []dirEvent) bool {
		return slices.Contains(evs, dirEvent{dir: old, op: opGone})
	})
	h.mu.Lock()
	assert.Empty(t, h.byID)
	h.mu.Unlock()

	require.NoError(t, os.Mkdir(dir, 0o755))
	sub, err := w.add(target(dir, &released))
	require.NoError(t, err)
	assert.NotSame(t, old.shared, sub.shared)
	w.remove(old)
	assert.Equal(t, []string{dir}, h.fsw.WatchList(), "the old subscription does not remove the new watch")
	mustWrite(t, dir, "f.txt", "f\n")
	queued(t, w.q, func(evs []dirEvent) bool {
		return slices.Contains(evs, dirEvent{dir: sub, name: "f.txt", op: opCreate})
	})
	w.close()
	assert.Empty(t, h.fsw.WatchList())
	assert.Equal(t, int32(2), released.Load())
}
