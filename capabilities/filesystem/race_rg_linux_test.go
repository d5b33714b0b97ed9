package filesystem

import (
	"context"
	"fmt"
	"os/exec"
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

// TestWalkerSwapRace attacks the walking tools as TestSymlinkSwapRace does
// the direct ones: goroutines exchange directories between a real in-root
// directory and a symlink to an outside one, and a file between an in-root
// file and a symlink to an outside file, while grep, list_files,
// search_files, find_files and list_directory walk them. rg walks by path,
// so it does follow the swaps; nothing it found outside may be shown, by
// content or by name. It runs with openat2, with the component-by-component
// walk, and with rg started by path, as it is where no descriptor can name
// its directory: then only the checks of what it prints stand.
func TestWalkerSwapRace(t *testing.T) {
	// Not parallel: the runs switch features off for the process.
	t.Run("openat2", walkerSwapRace)
	rgByPath.Store(true)
	t.Run("rg by path", walkerSwapRace)
	rgByPath.Store(false)
	sandboxtest.SetOpenat2Missing(true)
	defer sandboxtest.SetOpenat2Missing(false)
	t.Run("walk", walkerSwapRace)
}

func walkerSwapRace(t *testing.T) {
	parent := t.TempDir()
	root := filepath.Join(parent, "root")
	outside := filepath.Join(parent, "outside")
	// Outside, every name says OUTSIDE and every line SECRETMARK; inside,
	// neither appears. Enough files that rg spends a while in each directory.
	for i := range 20 {
		mustWrite(t, outside, fmt.Sprintf("leak-OUTSIDE-%02d.txt", i), "SECRETMARK in outside\n")
		mustWrite(t, root, fmt.Sprintf("sub/inside-%02d.txt", i), "inside\n")
		mustWrite(t, root, fmt.Sprintf("deep/sub/inside-%02d.txt", i), "inside\n")
	}
	mustWrite(t, root, "t.txt", "inside\n")

	// Each entry is exchanged with name+".alt", a symlink out of the root.
	swaps := []struct{ name, outTarget string }{
		{"sub", outside},      // the directory a tool is pointed at
		{"deep/sub", outside}, // a directory below it
		{"t.txt", filepath.Join(outside, "leak-OUTSIDE-00.txt")}, // a file
	}
	for _, s := range swaps {
		mustSymlink(t, s.outTarget, filepath.Join(root, s.name+".alt"))
	}

	tools := []string{ToolGrep, ToolListFiles, ToolSearchFiles, ToolFindFiles, ToolListDirectory}
	if _, err := exec.LookPath("rg"); err != nil {
		t.Log("rg is not installed: grep and list_files are left out")
		tools = tools[2:]
	}
	c, err := New(Options{Tools: tools}, root)
	require.NoError(t, err)
	defer c.Close()

	// One goroutine swaps, round robin, so that the tools keep a core of the
	// two a test may have.
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; !stop.Load(); i++ {
			s := swaps[i%len(swaps)]
			a, b := filepath.Join(root, s.name), filepath.Join(root, s.name+".alt")
			if err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE); err != nil {
				t.Errorf("exchange %s: %v", s.name, err)
				return
			}
			// A pause lets the tools' lookups in the swapped directories
			// through: without one, they mostly queue behind the renames.
			time.Sleep(10 * time.Microsecond)
		}
	})
	halt := func() { stop.Store(true); wg.Wait() }
	t.Cleanup(halt) // before the temporary directories go, even when a check fails

	const pattern = "SECRETMARK|inside"
	argsFor := func(tool, path string) map[string]any {
		switch tool {
		case ToolGrep, ToolSearchFiles:
			return map[string]any{"pattern": pattern, "path": path}
		case ToolFindFiles:
			return map[string]any{"pattern": "**/*", "path": path}
		}
		return map[string]any{"path": path}
	}
	paths := []string{"sub", "deep", ".", "t.txt"}

	ctx := context.Background()
	shown := map[string]int{}
	refused := 0
	// 800 ms of calls, or more on a loaded machine, until every tool has
	// shown something and some call met a swap, which the checks below ask.
	enough := func() bool {
		for _, tool := range tools {
			if shown[tool] == 0 {
				return false
			}
		}
		return refused > 0
	}
	start := time.Now()
	for i := 0; i < 3000 && (time.Since(start) < 800*time.Millisecond || !enough() && time.Since(start) < 30*time.Second); i++ {
		tool, path := tools[i%len(tools)], paths[(i/len(tools))%len(paths)]
		out, err := callTool(ctx, t, c, tool, argsFor(tool, path))
		if err != nil {
			msg, ok := capabilities.AsRetry(err)
			require.True(t, ok, "%s %s: fatal error: %v", tool, path, err)
			require.NotContains(t, msg, parent, "a message leaked a host path")
			refused++
			continue
		}
		require.NotContains(t, out, "SECRETMARK", "%s %s showed outside content", tool, path)
		require.NotContains(t, out, "OUTSIDE", "%s %s showed an outside name", tool, path)
		require.NotContains(t, out, parent, "%s %s showed a host path", tool, path)
		if out != "No matches found." && out != "No files found." && out != "(empty directory)" {
			shown[tool]++
		}
	}
	halt()

	t.Logf("calls that showed something: %v; refused: %d", shown, refused)
	for _, tool := range tools {
		assert.Positive(t, shown[tool], "%s showed something in-root", tool)
	}
	assert.Positive(t, refused, "some calls met the swap")
}
