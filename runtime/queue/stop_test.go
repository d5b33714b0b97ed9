package queue

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/runtime"
)

// A worker told to stop just as a shipped job's run succeeds still sends the
// run's changes back and reports the job done: the run is over, and failing
// it for good would lose its work.
func TestStoppedWorkerSendsBackAFinishedRun(t *testing.T) {
	t.Parallel()
	url := startServer(t)
	specPath, s := writeSpec(t, t.TempDir(), agentYAML, copyTurns)
	dirs := jobDirs(t, t.TempDir(), 1)
	q := connect(t, url, 0)

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	w, err := NewWorker(ctx, q, WorkerOptions{WorkspaceRoot: t.TempDir(), Options: []runtime.Option{
		runtime.WithListener(func(_ context.Context, ev capabilities.Event) error {
			if ev.Kind() == runtime.KindRunEnd {
				stop() // SIGTERM, as the run ends
			}
			return nil
		}),
	}})
	require.NoError(t, err)
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(ctx) }()
	t.Cleanup(func() { stop(); <-done })

	b, err := q.NewBatch(BatchOptions{SpecPath: specPath, Spec: s, Workspaces: dirs, Ship: true})
	require.NoError(t, err)
	wctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, b.Publish(wctx))
	var got outcomes
	_, err = b.Wait(wctx, got.add)
	require.NoError(t, err)
	require.Len(t, got.list, 1)
	require.NoError(t, got.list[0].Err)
	out, err := os.ReadFile(filepath.Join(dirs[0], "out.txt"))
	require.NoError(t, err, "the run's file came back")
	assert.Equal(t, "copied\n", string(out))
}
