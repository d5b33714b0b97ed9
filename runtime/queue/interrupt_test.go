package queue

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// storedResults waits until the queue's results stream holds n results.
func storedResults(t *testing.T, q *Queue, n uint64) {
	t.Helper()
	require.Eventually(t, func() bool {
		st, err := q.Stats(context.Background(), "")
		return err == nil && st.Succeeded+st.Failed >= n
	}, 30*time.Second, 20*time.Millisecond, "the results were not stored")
}

// A submitter interrupted (Ctrl-C) as the results arrive still reports
// every job whose result had arrived: those jobs ran, and reporting one not
// run would have it run again for nothing.
func TestInterruptedSubmitterReportsArrivedResults(t *testing.T) {
	t.Parallel()
	url := startServer(t)
	root := t.TempDir()
	specPath, s := writeSpec(t, t.TempDir(), agentYAML, copyTurns)
	dirs := jobDirs(t, root, 3)
	q := connect(t, url, 0)
	b, err := q.NewBatch(BatchOptions{SpecPath: specPath, Spec: s, Workspaces: dirs, WorkspaceRoot: root})
	require.NoError(t, err)
	require.NoError(t, b.Publish(context.Background()))
	w := startWorker(t, url, WorkerOptions{WorkspaceRoot: root})
	storedResults(t, q, 3)
	w.stop()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var got outcomes
	sum, err := b.Wait(ctx, func(o JobOutcome) {
		got.add(o)
		cancel() // Ctrl-C, as the first result shows
	})
	require.NoError(t, err, "every job had its result")
	assert.Equal(t, 3, sum.OK)
	assert.Zero(t, sum.NotRun)
	require.Len(t, got.list, 3)
	for _, o := range got.list {
		assert.False(t, o.NotRun, "job %d ran", o.Index)
		assert.NoError(t, o.Err, "job %d", o.Index)
	}
}

// A shipped job whose run changed nothing needs nothing of the object store:
// when the store cannot be opened (here, the submitter was interrupted as
// the results came), the job is reported as it ended, not failed.
func TestShippedJobWithoutChangesNeedsNoStore(t *testing.T) {
	t.Parallel()
	url := startServer(t)
	specPath, s := writeSpec(t, t.TempDir(), "model: script:turns.yaml\ninstructions: Say done.\ncapabilities:\n  - FileSystem: {root_dir: .}\n",
		"turns:\n  - text: done\n")
	dirs := jobDirs(t, t.TempDir(), 2)
	q := connect(t, url, 0)
	b, err := q.NewBatch(BatchOptions{SpecPath: specPath, Spec: s, Workspaces: dirs, Ship: true})
	require.NoError(t, err)
	require.NoError(t, b.Publish(context.Background()))
	w := startWorker(t, url, WorkerOptions{})
	storedResults(t, q, 2)
	w.stop()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var got outcomes
	sum, err := b.Wait(ctx, func(o JobOutcome) {
		got.add(o)
		cancel()
	})
	require.NoError(t, err)
	assert.Equal(t, 2, sum.OK)
	require.Len(t, got.list, 2)
	for _, o := range got.list {
		assert.NoError(t, o.Err, "job %d", o.Index)
		assert.JSONEq(t, `"done"`, string(o.Output))
	}
}
