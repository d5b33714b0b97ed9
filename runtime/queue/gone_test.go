package queue

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A shipped job's changes that the object store no longer holds when the
// submitter reads its result (they expired while it was away, or the
// results stream keeps results longer than the store keeps objects) are
// reported gone, saying how long the store keeps them and how to keep them
// longer; a store that keeps them for ever lost them otherwise, which the
// error says instead, as the results' does.
func TestShippedChangesGoneSayHowLongTheyAreKept(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		ttl  time.Duration
		kept string
	}{
		{time.Hour, "which keeps objects for 1h, as when this submitter's connection to the server was lost for longer than that; " +
			"to keep them longer, raise the max age of its stream OBJ_AGENTSPEC_SHIP"},
		{0, "which has no max age, as when a deletion or a limit of its own removed it"},
	} {
		t.Run(c.ttl.String(), func(t *testing.T) {
			t.Parallel()
			q := queueWithShipStore(t, c.ttl)
			specPath, s := writeSpec(t, t.TempDir(), agentYAML, copyTurns)
			dirs := jobDirs(t, t.TempDir(), 1)
			b, err := q.NewBatch(BatchOptions{SpecPath: specPath, Spec: s, Workspaces: dirs, Ship: true})
			require.NoError(t, err)
			changes := changesObject(b.Jobs[0].Ship.Object, "1")
			// The result a worker stored with the changes, read once they
			// are gone.
			o := b.outcome(context.Background(), Result{Job: b.Jobs[0].ID, Batch: b.ID, OK: true,
				Changes: &Changes{Object: changes, Files: []string{"out.txt"}}})
			assert.False(t, o.OK)
			assert.EqualError(t, o.Err, "bringing back the run's changes: "+changes+" is gone from the object store AGENTSPEC_SHIP, "+c.kept)
			assert.NoFileExists(t, filepath.Join(dirs[0], "out.txt"))
		})
	}
}

// A shipped job that waited in the queue for longer than the object store
// keeps its workspace fails saying so, and how to keep them longer.
func TestShippedWorkspaceGoneSaysHowLongItIsKept(t *testing.T) {
	t.Parallel()
	url := startServer(t)
	q := connectWithShipStore(t, url, time.Hour)
	specPath, s := writeSpec(t, t.TempDir(), agentYAML, copyTurns)
	dirs := jobDirs(t, t.TempDir(), 1)
	b, err := q.NewBatch(BatchOptions{SpecPath: specPath, Spec: s, Workspaces: dirs, Ship: true})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, b.Publish(ctx))
	obs, err := q.shipStore(ctx)
	require.NoError(t, err)
	require.NoError(t, obs.Delete(ctx, b.Jobs[0].Ship.Object), "it expired")
	startWorker(t, url, WorkerOptions{})
	var got outcomes
	_, err = b.Wait(ctx, got.add)
	require.NoError(t, err)
	require.Len(t, got.list, 1)
	assert.Equal(t, "the shipped workspace "+b.Jobs[0].Ship.Object+" is gone from the object store AGENTSPEC_SHIP, which keeps objects for 1h, "+
		"as when the job waited in the queue for longer than that; to keep them longer, raise the max age of its stream OBJ_AGENTSPEC_SHIP",
		got.list[0].Error)
	assert.Equal(t, 1, got.list[0].Attempt, "not retried")
}

// queueWithShipStore is a queue, on a server of its own, whose object
// store of shipped workspaces keeps objects for ttl (0: for ever).
func queueWithShipStore(t *testing.T, ttl time.Duration) *Queue {
	t.Helper()
	return connectWithShipStore(t, startServer(t), ttl)
}

// connectWithShipStore makes the object store of shipped workspaces with
// the TTL ttl, before the queue is opened, and opens it.
func connectWithShipStore(t *testing.T, url string, ttl time.Duration) *Queue {
	t.Helper()
	nc, err := nats.Connect(url)
	require.NoError(t, err)
	defer nc.Close()
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	_, err = js.CreateObjectStore(context.Background(), jetstream.ObjectStoreConfig{Bucket: DefaultStream + "_SHIP", TTL: ttl})
	require.NoError(t, err)
	return connect(t, url, 0)
}

// A submitter interrupted before a shipped job's changes are fetched says
// where they stay for as long as the object store keeps them, not a day
// whatever it was made with.
func TestInterruptedBeforeTheChangesAreFetchedSaysHowLongTheyStay(t *testing.T) {
	t.Parallel()
	for ttl, stay := range map[time.Duration]string{72 * time.Hour: " for 72h", 0: " until removed (the store has no max age)"} {
		t.Run(ttl.String(), func(t *testing.T) {
			t.Parallel()
			url := startServer(t)
			q := connectWithShipStore(t, url, ttl)
			specPath, s := writeSpec(t, t.TempDir(), agentYAML, copyTurns)
			dirs := jobDirs(t, t.TempDir(), 2)
			b, _, got := interruptedAtFirstResult(t, url, q, BatchOptions{SpecPath: specPath, Spec: s, Workspaces: dirs, Ship: true})
			require.Len(t, got, 2)
			late := got[1]
			require.NotNil(t, late.Changes)
			require.True(t, isChangesObject(late.Changes.Object, b.Jobs[late.Index].Ship.Object), late.Changes.Object)
			assert.EqualError(t, late.Err, "bringing back the run's changes: interrupted (context canceled) before they were fetched; "+
				"none was applied, and they stay in the object store AGENTSPEC_SHIP as "+late.Changes.Object+stay)
		})
	}
}
