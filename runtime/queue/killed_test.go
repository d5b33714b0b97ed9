//go:build unix

package queue

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/runtime"
)

// A worker killed (SIGKILL) while it runs a shipped job leaves the copy of
// the submitter's workspace it unpacked below its root; the next worker to
// start there removes it, as it removes a killed worker's scratch
// directory, and leaves a live worker's copy alone. The job runs again,
// once, on the other worker.
func TestKilledWorkersShippedCopyIsRemoved(t *testing.T) {
	t.Parallel()
	url := startServer(t)
	root := t.TempDir()
	specPath, s := writeSpec(t, t.TempDir(), agentYAML, slowTurnsWithDelay("3s"))
	dirs := jobDirs(t, t.TempDir(), 1)
	q := connect(t, url, time.Second)
	_, err := q.consumer(context.Background()) // with the short wait, before the child makes it
	require.NoError(t, err)
	b, err := q.NewBatch(BatchOptions{SpecPath: specPath, Spec: s, Workspaces: dirs, Ship: true})
	require.NoError(t, err)
	started := make(chan struct{}, 4)
	require.NoError(t, b.Events(func(_ int, ev []byte) {
		if strings.Contains(string(ev), `"kind":"`+runtime.KindToolResult+`"`) {
			started <- struct{}{}
		}
	}))

	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), envChildWorker+"="+url, envChildRoot+"="+root, "TMPDIR="+t.TempDir())
	child.Stderr = os.Stderr
	require.NoError(t, child.Start())
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, b.Publish(ctx))
	select {
	case <-started:
	case <-time.After(20 * time.Second):
		t.Fatal("the job never started")
	}
	require.NoError(t, child.Process.Kill())
	_ = child.Wait()
	ships := filepath.Join(root, shipDir)
	left, err := os.ReadDir(ships)
	require.NoError(t, err)
	require.NotEmpty(t, left, "the killed worker's copy is there")

	startWorker(t, url, WorkerOptions{Name: "next", WorkspaceRoot: root})
	var got outcomes
	_, err = b.Wait(ctx, got.add)
	require.NoError(t, err)
	require.Len(t, got.list, 1)
	assert.Equal(t, 2, got.list[0].Attempt)
	assert.Eventually(t, func() bool {
		left, err = os.ReadDir(ships)
		return err == nil && len(left) == 0
	}, 5*time.Second, 10*time.Millisecond, "the killed worker's copy stays: %v", left)
}
