package filesystem

// Tests of the write-time protection of watch.go, and the benchmarks of the
// change tracking; the watcher's own tests are in watch_dirs_test.go and
// watch_hub_test.go.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/internal/sandbox"
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

// A write refused as stale shows the agent nothing: the file is forgotten as
// if it had not been tried, the least recently seen first.
func TestRefusedWriteIsNotASighting(t *testing.T) {
	t.Parallel()
	files := map[string]string{}
	for i := range 5 {
		files[fmt.Sprintf("f%d.txt", i)] = "f\n"
	}
	c, _ := newTestFS(t, Options{}, files)
	c.fs.changes.seenLimit = 4
	for i := range 4 {
		_, err := callTool(context.Background(), t, c, ToolReadFile, map[string]any{"path": fmt.Sprintf("f%d.txt", i)})
		require.NoError(t, err)
	}
	_, err := c.fs.writeTracked("f0.txt", "f0.txt", []byte("x"), guard{hash: hashOf("other\n")}, false)
	var stale *staleError
	require.ErrorAs(t, err, &stale)
	_, err = callTool(context.Background(), t, c, ToolReadFile, map[string]any{"path": "f4.txt"})
	require.NoError(t, err)
	for i, kept := range []bool{false, false, true, true, true} {
		_, _, ok := c.fs.lastSeen(fmt.Sprintf("f%d.txt", i))
		assert.Equal(t, kept, ok, "f%d.txt", i)
	}
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

// BenchmarkNewClose is what a batch job pays for its FileSystem before and
// after the calls: New with the default options, the tool list a run asks
// for (names, descriptions, parameters), Close. The calls of
// BenchmarkJobLifecycle write and sync a file, whose cost on a busy disk
// hides this one.
func BenchmarkNewClose(b *testing.B) {
	root := b.TempDir()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		c, err := New(Options{}, root)
		if err != nil {
			b.Fatal(err)
		}
		tools, err := c.Tools(ctx)
		if err != nil {
			b.Fatal(err)
		}
		for _, t := range tools {
			_, _, _ = t.Name(), t.Description(), t.Parameters()
		}
		if err := c.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
