package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// syncBuffer is a bytes.Buffer a process writes while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// waitFor polls until cond holds, failing the test after a generous bound.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// exitCode runs cmd and returns its exit code.
func exitCode(t *testing.T, err error) int {
	t.Helper()
	if err == nil {
		return 0
	}
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	return exit.ExitCode()
}

// writeFiles writes name -> content under dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		path := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	}
}

// Ctrl-C while --approve waits for an answer stops the run at once, with
// 130, and the change does not land, though stdin stays open.
func TestCtrlCWhileApproveAsks(t *testing.T) {
	t.Parallel()
	bin := agentspecBinary(t)
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"script.yaml": "turns:\n  - tool_calls: [{name: write_file, arguments: {path: out.md, content: \"hi\\n\"}}]\n  - text: done\n",
		"agent.yaml":  "model: script:script.yaml\ninstructions: Write.\ncapabilities: [FileSystem]\n",
	})
	cmd := exec.Command(bin, "run", "--approve", "--workspace", dir, filepath.Join(dir, "agent.yaml"))
	stdin, err := cmd.StdinPipe() // held open: no answer ever comes
	require.NoError(t, err)
	defer stdin.Close()
	var stderr syncBuffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	waitFor(t, "the approval prompt", func() bool { return strings.Contains(stderr.String(), "Apply this change? [y/N] ") })
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("the run did not stop on Ctrl-C while asking; stderr: %s", stderr.String())
	}
	assert.Equal(t, 130, exitCode(t, err), stderr.String())
	_, statErr := os.Stat(filepath.Join(dir, "out.md"))
	assert.ErrorIs(t, statErr, os.ErrNotExist, "the change must not land")
}
