//go:build unix

package cli

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fillPipe writes to f, a FIFO opened here, until the pipe holds not one
// byte more: whoever writes to it next waits until it is read.
func fillPipe(t *testing.T, f *os.File) {
	t.Helper()
	rc, err := f.SyscallConn()
	require.NoError(t, err)
	var werr error
	require.NoError(t, rc.Write(func(fd uintptr) bool {
		chunk := make([]byte, 4096)
		for len(chunk) > 0 {
			_, err := syscall.Write(int(fd), chunk)
			switch {
			case errors.Is(err, syscall.EAGAIN):
				chunk = chunk[:len(chunk)/2] // full for this much: try less
			case err != nil:
				werr = err
				return true
			}
		}
		return true
	}))
	require.NoError(t, werr)
}

// A second Ctrl-C while the first one's clean stop goes on (here, a run
// whose --events pipe nobody reads, so its run.end cannot be written)
// ends the process at once, with 130 as the first would, saying what was
// left undone.
func TestSecondCtrlCStopsAtOnce(t *testing.T) {
	t.Parallel()
	bin := agentspecBinary(t)
	m := newSilentModel(t)
	dir := t.TempDir()
	events := filepath.Join(dir, "events")
	require.NoError(t, syscall.Mkfifo(events, 0o600))
	// Read and write: the run's open does not wait for a reader, and the
	// pipe can be filled from here.
	pipe, err := os.OpenFile(events, os.O_RDWR, 0)
	require.NoError(t, err)
	defer pipe.Close()

	cmd := exec.Command(bin, "run", "-q", "--events", events, m.spec)
	cmd.Env = m.env
	var stderr syncBuffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	wait := func(ch <-chan struct{}, what string) {
		t.Helper()
		select {
		case <-ch:
		case err := <-done:
			t.Fatalf("the run ended (%v) before %s; stderr: %s", err, what, stderr.String())
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			t.Fatalf("timed out waiting for %s; stderr: %s", what, stderr.String())
		}
	}
	wait(m.requested, "the model request")
	fillPipe(t, pipe) // the events written from now on wait for a reader
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	wait(m.gone, "the first Ctrl-C to cancel the request")
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("a second Ctrl-C did not end the run; stderr: %s", stderr.String())
	}
	assert.Equal(t, 130, exitCode(t, err), stderr.String())
	assert.Regexp(t, `^agentspec: interrupted again: stopped at once, without the clean stop; `+
		`the tool calls under way are not waited for, .*\n$`, stderr.String())
}
