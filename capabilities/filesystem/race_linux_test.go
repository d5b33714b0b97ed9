package filesystem

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/internal/sandbox/sandboxtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestSymlinkSwapRace attacks the window between the checks and the I/O: a
// goroutine atomically exchanges each target between an inside and an
// outside state (RENAME_EXCHANGE) while read_file, write_file and edit_file
// run on it. Not one read may return the outside content and not one write
// may reach the outside files. It runs once with openat2 and once with the
// component-by-component walk.
func TestSymlinkSwapRace(t *testing.T) {
	// Not parallel: the second run switches openat2 off for the process.
	t.Run("openat2", symlinkSwapRace)
	sandboxtest.SetOpenat2Missing(true)
	defer sandboxtest.SetOpenat2Missing(false)
	t.Run("walk", symlinkSwapRace)
}

func symlinkSwapRace(t *testing.T) {
	parent := t.TempDir()
	root := filepath.Join(parent, "root")
	outside := filepath.Join(parent, "outside")
	const in, out = "inside\n", "OUTSIDE\n"
	mustWrite(t, outside, "secret.txt", out)
	mustWrite(t, outside, "f.txt", out)
	mustWrite(t, root, "inside.txt", in)
	mustWrite(t, root, "sub/f.txt", in)
	mustWrite(t, root, "p/f.txt", in)
	mustWrite(t, root, "t.txt", in)

	// Each target path and the entry it is exchanged with.
	swaps := []struct{ path, name, inTarget, outTarget string }{
		{"link", "link", "inside.txt", filepath.Join(outside, "secret.txt")}, // final symlink retargeted
		{"d/f.txt", "d", "sub", outside},                                     // parent symlink retargeted
		{"p/f.txt", "p", "", outside},                                        // real directory <-> symlink
		{"t.txt", "t.txt", "", filepath.Join(outside, "secret.txt")},         // regular file <-> symlink
	}
	for _, s := range swaps {
		if s.inTarget != "" {
			mustSymlink(t, s.inTarget, filepath.Join(root, s.name))
		}
		mustSymlink(t, s.outTarget, filepath.Join(root, s.name+".alt"))
	}

	c, err := New(Options{Tools: []string{ToolReadFile, ToolWriteFile, ToolEditFile}}, root)
	require.NoError(t, err)
	defer c.Close()

	var stop atomic.Bool
	var wg sync.WaitGroup
	for _, s := range swaps {
		wg.Go(func() {
			a, b := filepath.Join(root, s.name), filepath.Join(root, s.name+".alt")
			for !stop.Load() {
				if err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE); err != nil {
					t.Errorf("exchange %s: %v", s.name, err)
					return
				}
			}
		})
	}

	halt := func() { stop.Store(true); wg.Wait() }
	t.Cleanup(halt) // before the temporary directories go, even when a check fails

	ctx := context.Background()
	var reads, writes, edits, refused int
	// A second of calls, and on a loaded machine more, until each kind of
	// outcome has been seen (at most 20 s).
	deadline, limit := time.Now().Add(time.Second), time.Now().Add(20*time.Second)
	seenAll := func() bool { return reads > 0 && writes+edits > 0 && refused > 0 }
	for i := 0; i < 6000 && time.Now().Before(limit) && (time.Now().Before(deadline) || !seenAll()); i++ {
		path := swaps[i%len(swaps)].path
		var outText string
		var err error
		switch (i / len(swaps)) % 3 {
		case 0:
			outText, err = callTool(ctx, t, c, ToolReadFile, map[string]any{"path": path})
			if err == nil {
				reads++
				require.NotContains(t, outText, "OUTSIDE", "read %s returned the outside file", path)
			}
		case 1:
			outText, err = callTool(ctx, t, c, ToolWriteFile, map[string]any{"path": path, "content": in})
			if err == nil {
				writes++
				require.Equal(t, fmt.Sprintf("Wrote %d chars (1 lines) to %s. [hash:%s]", len(in), path, contentHash([]byte(in))), outText)
			}
		case 2:
			outText, err = callTool(ctx, t, c, ToolEditFile, map[string]any{"path": path, "old_text": "inside", "new_text": "inside"})
			if err == nil {
				edits++
				// The edited file holds the inside text, so it was no
				// outside file.
				require.Equal(t, "Edited "+path+". [hash:"+contentHash([]byte(in))+"]", outText)
			}
		}
		if err != nil {
			msg, ok := capabilities.AsRetry(err)
			require.True(t, ok, "fatal error on %s: %v", path, err)
			require.NotContains(t, msg, parent, "a message leaked a host path")
			refused++
		}
	}
	halt()

	// The reads watched their directories as the swaps went on: every watch
	// the kernel holds is inside the root.
	realRoot, err := filepath.EvalSymlinks(root)
	require.NoError(t, err)
	require.NotNil(t, c.fs.changes.w)
	for _, key := range c.fs.changes.w.list() {
		dir, err := os.Readlink(key)
		if errors.Is(err, fs.ErrNotExist) {
			continue // the watch was dropped as its directory went: nothing is watched
		}
		require.NoError(t, err)
		assert.True(t, within(dir, realRoot), "%s watches %s, outside the root", key, dir)
	}

	assert.Equal(t, out, readBack(t, outside, "secret.txt"))
	assert.Equal(t, out, readBack(t, outside, "f.txt"))
	entries, err := os.ReadDir(outside)
	require.NoError(t, err)
	assert.Len(t, entries, 2, "nothing created outside")
	t.Logf("reads %d, writes %d, edits %d, refused %d", reads, writes, edits, refused)
	assert.Positive(t, reads, "some reads got through")
	assert.Positive(t, writes+edits, "some changes got through")
	assert.Positive(t, refused, "some calls met the swap")
}
