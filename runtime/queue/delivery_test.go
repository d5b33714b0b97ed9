package queue

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A worker that lost a shipped job as its changes started back (its reports
// did not reach the server for the acknowledgement wait, and the job went
// to another worker) uploads them after the other delivery's result is
// stored: the submitter applies the changes of the delivery whose result it
// has, not the late one's, which go in an object of their own.
func TestLateDeliverysChangesAreNotApplied(t *testing.T) {
	t.Parallel()
	url := startServer(t)
	specPath, s := writeSpec(t, t.TempDir(), agentYAML, copyTurns)
	dirs := jobDirs(t, t.TempDir(), 1)
	q := connect(t, url, time.Second)
	_, err := q.consumer(context.Background())
	require.NoError(t, err)
	b, err := q.NewBatch(BatchOptions{SpecPath: specPath, Spec: s, Workspaces: dirs, Ship: true})
	require.NoError(t, err)
	results, err := q.nc.SubscribeSync(q.resultSubject("*", b.ID, "0"))
	require.NoError(t, err)
	require.NoError(t, q.nc.Flush())

	// The first worker's run ends; as its changes start back, its reports
	// stop reaching the server, and it waits for the other delivery's
	// result before it sends them, with a file of its own and out.txt
	// written otherwise.
	lateRoot := t.TempDir()
	lateCtx, stopLate := context.WithCancel(context.Background())
	late, err := NewWorker(lateCtx, connect(t, url, 0), WorkerOptions{Name: "late", WorkspaceRoot: lateRoot})
	require.NoError(t, err)
	var lost atomic.Bool
	late.reportLost = lost.Load
	dropped, shipping := make(chan struct{}), make(chan struct{})
	var once sync.Once
	late.opts.Logf = func(format string, args ...any) {
		if strings.Contains(format, "dropped") {
			once.Do(func() { close(dropped) })
		}
	}
	late.beforeShipBack = func() {
		lost.Store(true)
		close(shipping)
		_, err := results.NextMsg(30 * time.Second)
		assert.NoError(t, err, "the other delivery's result")
		assert.NoError(t, filepath.WalkDir(filepath.Join(lateRoot, shipDir), func(path string, d fs.DirEntry, err error) error {
			if err == nil && d.Name() == "out.txt" {
				writeFiles(t, filepath.Dir(path), map[string]string{"out.txt": "the late delivery's\n", "late.txt": "late\n"})
			}
			return err
		}))
	}
	lateDone := make(chan struct{})
	go func() { defer close(lateDone); _ = late.Run(lateCtx) }()
	t.Cleanup(func() { stopLate(); <-lateDone })

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, b.Publish(ctx))
	select {
	case <-shipping:
	case <-ctx.Done():
		t.Fatal("the late worker never sent its changes back")
	}
	startWorker(t, url, WorkerOptions{Name: "other", WorkspaceRoot: t.TempDir()})
	select {
	case <-dropped:
	case <-ctx.Done():
		t.Fatal("the late worker never let its delivery go")
	}

	var got outcomes
	_, err = b.Wait(ctx, got.add)
	require.NoError(t, err)
	require.Len(t, got.list, 1)
	require.NoError(t, got.list[0].Err)
	assert.Equal(t, "other", got.list[0].Worker)
	assert.Equal(t, map[string]string{"input.txt": "input of job 0\n", "out.txt": "copied\n"}, readTree(t, dirs[0]),
		"the changes of the delivery whose result counts")

	// Each delivery's changes went to an object of its own; the late one
	// removed its own, the submitter the other's.
	obs, err := q.shipStore(ctx)
	require.NoError(t, err)
	left, err := obs.List(ctx)
	if !errors.Is(err, jetstream.ErrNoObjectsFound) {
		require.NoError(t, err)
	}
	for _, o := range left {
		assert.False(t, strings.HasPrefix(o.Name, b.Jobs[0].Ship.Object), "%s is left", o.Name)
	}
}
