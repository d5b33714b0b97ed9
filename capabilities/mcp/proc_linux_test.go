package mcp

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A server's group is signalled only while the server is not reaped: its
// pid, the group's id, is then no other process's. Once it is reaped, the
// id is free, and a process started since may have it for its own group,
// which a signal to the server's would kill. A server that exits of its
// own accord has what it left in its group killed at once, while its id
// is still its own, not when the run ends.
func TestGroupIsSignalledOnlyWhileItsIDIsTheServers(t *testing.T) {
	t.Parallel()
	pidFile := t.TempDir() + "/child"
	cmd := exec.Command("sh", "-c", `sleep 60 & echo $! > "$1"; exit 0`, "sh", pidFile)
	setGroup(cmd)
	p := newProcess(cmd)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	p.stdin = &pipeWriter{w: stdin}
	var (
		mu       sync.Mutex
		unreaped []bool // for each signal, whether the server was not reaped yet
	)
	p.kill = func(kill bool) {
		_, err := os.Stat("/proc/" + strconv.Itoa(cmd.Process.Pid))
		mu.Lock()
		unreaped = append(unreaped, err == nil)
		mu.Unlock()
		signalGroup(cmd, kill)
	}
	require.NoError(t, cmd.Start())
	go p.wait()
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		t.Fatal("the server did not exit")
	}
	b, err := os.ReadFile(pidFile)
	require.NoError(t, err)
	child, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	assert.Eventually(t, func() bool { return !alive(child) }, 5*time.Second, 10*time.Millisecond,
		"what the server left in its group is killed when it exits")
	require.NoError(t, p.stopWithin(0))
	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, unreaped, "the group was signalled")
	for i, ok := range unreaped {
		assert.True(t, ok, "signal %d was sent once the server was reaped", i+1)
	}
}
