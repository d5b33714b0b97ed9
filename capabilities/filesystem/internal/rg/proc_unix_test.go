//go:build unix

package rg

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

// fakeRG puts an rg on PATH that starts a sleeping child of its own,
// writes the child's pid to the file it returns, prints out and waits for
// the child. Not for parallel tests: it sets PATH.
func fakeRG(t *testing.T, out string) (pidFile string) {
	t.Helper()
	bin, work := t.TempDir(), t.TempDir()
	pidFile = filepath.Join(work, "child.pid")
	outFile := filepath.Join(work, "out")
	require.NoError(t, os.WriteFile(outFile, []byte(out), 0o644))
	script := "#!/bin/sh\n" +
		"sleep 30 &\n" +
		"echo $! > '" + pidFile + "'\n" +
		"cat '" + outFile + "'\n" +
		"wait\n"
	require.NoError(t, os.WriteFile(filepath.Join(bin, "rg"), []byte(script), 0o755))
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	return pidFile
}

// childPID waits for the fake rg to write its child's pid.
func childPID(t *testing.T, pidFile string) int {
	t.Helper()
	var pid int
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(pidFile)
		if err != nil || !bytes.HasSuffix(b, []byte("\n")) {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil
	}, 10*time.Second, 10*time.Millisecond)
	return pid
}

// processGone reports whether pid has exited: it no longer exists, or is a
// zombie nobody has reaped yet (a container's init may not).
func processGone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return errors.Is(err, os.ErrNotExist)
	}
	// pid (comm) state ...: comm may hold spaces, so the state follows
	// the last ')'.
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z'
}

// Not parallel: fakeRG sets PATH.
func TestDeadlineKillsProcessGroup(t *testing.T) {
	pidFile := fakeRG(t, "./a.txt\x001:hello\n")
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	p, err := Start(ctx, t.TempDir(), SplitMatches, "--regexp", "hello")
	require.NoError(t, err)
	child := childPID(t, pidFile)
	// Everything rg printed before the deadline is read; then the output
	// ends at the deadline instead of when the child would have exited.
	assert.Equal(t, []string{"./a.txt\x001:hello"}, records(t, p))
	assert.ErrorIs(t, p.Wait(), context.DeadlineExceeded)
	assert.Eventually(t, func() bool { return processGone(child) }, 10*time.Second, 10*time.Millisecond,
		"rg's child %d outlived the deadline", child)
}

// Not parallel: fakeRG sets PATH.
func TestStopKillsProcessGroup(t *testing.T) {
	pidFile := fakeRG(t, "a.txt\x00b.txt\x00")
	p, err := Start(context.Background(), t.TempDir(), SplitPaths, "--files")
	require.NoError(t, err)
	child := childPID(t, pidFile)
	rec, ok := p.Next()
	require.True(t, ok)
	assert.Equal(t, "a.txt", string(rec))
	p.Stop()
	assert.NoError(t, p.Wait())
	assert.Eventually(t, func() bool { return processGone(child) }, 10*time.Second, 10*time.Millisecond,
		"rg's child %d outlived Stop", child)
}

// rg runs with PATH alone of agentspec's environment: the provider keys
// in it never reach the child. Not parallel: it sets PATH and a key.
func TestRGGetsNoProviderKeys(t *testing.T) {
	bin, work := t.TempDir(), t.TempDir()
	envFile := filepath.Join(work, "env")
	script := "#!/bin/sh\nenv > '" + envFile + "'\n"
	require.NoError(t, os.WriteFile(filepath.Join(bin, "rg"), []byte(script), 0o755))
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("OPENAI_API_KEY", "sk-agentspec-test-secret")
	p, err := Start(context.Background(), work, SplitPaths, "--files")
	require.NoError(t, err)
	for _, ok := p.Next(); ok; _, ok = p.Next() {
	}
	require.NoError(t, p.Wait())
	env, err := os.ReadFile(envFile)
	require.NoError(t, err)
	assert.NotContains(t, string(env), "sk-agentspec-test-secret")
	assert.Contains(t, string(env), "PATH="+bin)
}
