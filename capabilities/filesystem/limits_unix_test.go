//go:build unix

package filesystem

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// slowRG puts an rg on PATH that starts a sleeping child, writes the
// child's pid to the file it returns, prints out and waits for the child:
// an rg that hangs, as a real one can on a huge tree or a stuck mount.
// Not for parallel tests: it sets PATH.
func slowRG(t *testing.T, out string) (pidFile string) {
	t.Helper()
	bin, work := t.TempDir(), t.TempDir()
	pidFile = filepath.Join(work, "child.pid")
	outFile := filepath.Join(work, "out")
	require.NoError(t, os.WriteFile(outFile, []byte(out), 0o644))
	script := "#!/bin/sh\nsleep 30 &\necho $! > '" + pidFile + "'\ncat '" + outFile + "'\nwait\n"
	require.NoError(t, os.WriteFile(filepath.Join(bin, "rg"), []byte(script), 0o755))
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	return pidFile
}

// readPID reads the pid slowRG's child wrote.
func readPID(t *testing.T, pidFile string) int {
	t.Helper()
	b, err := os.ReadFile(pidFile)
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	return pid
}

// exited reports whether pid no longer runs: it is gone, or a zombie that
// nobody has reaped yet (a container's init may not).
func exited(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return errors.Is(err, os.ErrNotExist)
	}
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z'
}

// An rg still running at the deadline is killed with everything it
// started, and what it printed until then is the result, with a note. Not
// parallel: slowRG sets PATH, and the default deadline is shortened.
func TestRipgrepKilledAtDeadline(t *testing.T) {
	c, _ := newTestFS(t, Options{Tools: RipgrepToolNames}, map[string]string{"a.txt": "hello\n", "b.txt": "hello\n"})
	const note = "[... stopped at the time limit; the result is incomplete: narrow the path or pattern]"
	for _, tc := range []struct {
		name, tool, out, want string
		args                  map[string]any
		callerDeadline        bool
	}{
		{"grep, default deadline", ToolGrep, "./a.txt\x001:hello\n", "a.txt:1:hello\n" + note,
			map[string]any{"pattern": "hello"}, false},
		{"list_files, caller's deadline", ToolListFiles, "a.txt\x00", "a.txt\n" + note, map[string]any{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pidFile := slowRG(t, tc.out)
			ctx := context.Background()
			if tc.callerDeadline {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, 500*time.Millisecond)
				defer cancel()
			} else {
				toolTimeoutOverride.Store(int64(500 * time.Millisecond))
				t.Cleanup(func() { toolTimeoutOverride.Store(0) })
			}
			assert.Equal(t, tc.want, result(callTool(ctx, t, c, tc.tool, tc.args)))
			child := readPID(t, pidFile)
			assert.Eventually(t, func() bool { return exited(child) }, 10*time.Second, 10*time.Millisecond,
				"rg's child %d outlived the call", child)
		})
	}
}
