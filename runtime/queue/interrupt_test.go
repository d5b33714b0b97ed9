package queue

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/runtime"
)

// storedResults waits until the queue's results stream holds n results.
func storedResults(t *testing.T, q *Queue, n uint64) {
	t.Helper()
	require.Eventually(t, func() bool {
		st, err := q.Stats(context.Background(), "")
		return err == nil && st.Succeeded+st.Failed >= n
	}, 30*time.Second, 20*time.Millisecond, "the results were not stored")
}

// interruptedAtFirstResult publishes opts' batch, has a worker run every
// job and store its result, then stops the worker and waits for the
// results with a Wait interrupted (Ctrl-C) as the first one shows. It
// returns the batch and what Wait reported.
func interruptedAtFirstResult(t *testing.T, url string, q *Queue, opts BatchOptions) (*Batch, runtime.BatchSummary, []JobOutcome) {
	t.Helper()
	b, err := q.NewBatch(opts)
	require.NoError(t, err)
	require.NoError(t, b.Publish(context.Background()))
	w := startWorker(t, url, WorkerOptions{WorkspaceRoot: opts.WorkspaceRoot})
	storedResults(t, q, uint64(len(opts.Workspaces)))
	w.stop()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var got outcomes
	sum, err := b.Wait(ctx, func(o JobOutcome) {
		got.add(o)
		cancel() // Ctrl-C, as the first result shows
	})
	require.NoError(t, err, "every job had its result")
	return b, sum, got.list
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
	_, sum, got := interruptedAtFirstResult(t, url, connect(t, url, 0), BatchOptions{SpecPath: specPath, Spec: s, Workspaces: dirs, WorkspaceRoot: root})
	assert.Equal(t, 3, sum.OK)
	assert.Zero(t, sum.NotRun)
	require.Len(t, got, 3)
	for _, o := range got {
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
	_, sum, got := interruptedAtFirstResult(t, url, connect(t, url, 0), BatchOptions{SpecPath: specPath, Spec: s, Workspaces: dirs, Ship: true})
	assert.Equal(t, 2, sum.OK)
	require.Len(t, got, 2)
	for _, o := range got {
		assert.NoError(t, o.Err, "job %d", o.Index)
		assert.JSONEq(t, `"done"`, string(o.Output))
	}
}

// A submitter interrupted before a shipped job's changes are fetched
// reports the job with its changes not applied, and where they stay: in
// the object store, which keeps them a day.
func TestInterruptedBeforeTheChangesAreFetched(t *testing.T) {
	t.Parallel()
	url := startServer(t)
	specPath, s := writeSpec(t, t.TempDir(), agentYAML, copyTurns)
	dirs := jobDirs(t, t.TempDir(), 2)
	q := connect(t, url, 0)
	// Ctrl-C comes before the second job's changes are fetched.
	b, sum, got := interruptedAtFirstResult(t, url, q, BatchOptions{SpecPath: specPath, Spec: s, Workspaces: dirs, Ship: true})
	assert.Equal(t, 1, sum.OK)
	assert.Equal(t, 1, sum.Failed)
	require.Len(t, got, 2)
	late := got[1]
	require.NotNil(t, late.Changes)
	object := late.Changes.Object // the delivery's own
	assert.True(t, isChangesObject(object, b.Jobs[late.Index].Ship.Object), object)
	assert.False(t, late.OK)
	assert.EqualError(t, late.Err, "bringing back the run's changes: interrupted (context canceled) before they were fetched; "+
		"none was applied, and they stay in the object store AGENTSPEC_SHIP as "+object+" for a day")
	_, err := os.Stat(filepath.Join(dirs[late.Index], "out.txt"))
	require.ErrorIs(t, err, os.ErrNotExist, "not applied")
	obs, err := q.shipStore(context.Background())
	require.NoError(t, err)
	archive, err := obs.GetBytes(context.Background(), object)
	require.NoError(t, err, "the changes are where the error says")
	m, err := unpackInto(t.TempDir(), bytes.NewReader(archive), DefaultShipMax)
	require.NoError(t, err)
	assert.Contains(t, m, "out.txt")
}

// Changes fetched before the submitter is interrupted are applied: they
// are here, and nothing more waits on the network. Applied, they are of no
// more use, nor is the shipped copy: both leave the object store, as they
// do when nothing interrupts.
func TestInterruptedOnceTheChangesAreFetched(t *testing.T) {
	t.Parallel()
	url := startServer(t)
	specPath, s := writeSpec(t, t.TempDir(), agentYAML, copyTurns)
	dirs := jobDirs(t, t.TempDir(), 1)
	q := connect(t, url, 0)
	b, err := q.NewBatch(BatchOptions{SpecPath: specPath, Spec: s, Workspaces: dirs, Ship: true})
	require.NoError(t, err)
	require.NoError(t, b.Publish(context.Background()))
	startWorker(t, url, WorkerOptions{})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.fetched = cancel // Ctrl-C, as the fetch of the changes ends
	var got outcomes
	_, err = b.Wait(ctx, got.add)
	require.NoError(t, err)
	require.Len(t, got.list, 1)
	require.NoError(t, got.list[0].Err)
	out, err := os.ReadFile(filepath.Join(dirs[0], "out.txt"))
	require.NoError(t, err, "the run's file came back")
	assert.Equal(t, "copied\n", string(out))
	obs, err := q.shipStore(context.Background())
	require.NoError(t, err)
	require.NotNil(t, got.list[0].Changes)
	for _, name := range []string{b.Jobs[0].Ship.Object, got.list[0].Changes.Object} {
		_, err := obs.GetInfo(context.Background(), name)
		assert.ErrorIs(t, err, jetstream.ErrObjectNotFound, "%s is deleted", name)
	}
}

// A submitter interrupted between Publish and Wait (Ctrl-C as the jobs go
// out) reports what an interruption during Wait reports: the jobs no worker
// took are withdrawn and reported not run.
func TestInterruptedBeforeWait(t *testing.T) {
	t.Parallel()
	_, q, b, _ := newBatch(t, copyTurns, 3, 0)
	require.NoError(t, b.Publish(context.Background()))

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var got outcomes
	sum, err := b.Wait(ctx, got.add)
	require.ErrorIs(t, err, runtime.ErrInterrupted)
	assert.Equal(t, 3, sum.NotRun)
	require.Len(t, got.list, 3)
	for _, r := range got.list {
		assert.True(t, r.NotRun)
		assert.ErrorIs(t, r.Err, runtime.ErrNotRun)
	}
	st, err := q.Stats(context.Background(), "")
	require.NoError(t, err)
	assert.Equal(t, uint64(0), st.Pending, "the jobs are withdrawn")
}

// A submitter whose connection closes as it waits says so: the results
// stopped coming, nothing interrupted it, and the jobs, still in the queue,
// are not reported not run.
func TestConnectionClosedWhileWaiting(t *testing.T) {
	t.Parallel()
	url := startServer(t)
	root := t.TempDir()
	specPath, s := writeSpec(t, t.TempDir(), agentYAML, copyTurns)
	dirs := jobDirs(t, root, 2)
	nc, err := nats.Connect(url)
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	q, err := Open(context.Background(), nc, Options{})
	require.NoError(t, err)
	b, err := q.NewBatch(BatchOptions{SpecPath: specPath, Spec: s, Workspaces: dirs, WorkspaceRoot: root})
	require.NoError(t, err)
	require.NoError(t, b.Publish(context.Background()))

	time.AfterFunc(200*time.Millisecond, nc.Close)
	var got outcomes
	_, err = b.Wait(context.Background(), got.add)
	require.Error(t, err)
	assert.NotErrorIs(t, err, runtime.ErrInterrupted)
	assert.NotContains(t, err.Error(), "%!")
	assert.Empty(t, got.list, "the jobs are still in the queue")
}

// A submitter interrupted (Ctrl-C) while a worker runs one of its jobs
// stops that run, as a local batch stops its own: the worker reports the job
// interrupted by its submitter, rather than running on, at the model's
// expense, for nobody. The job is reported here with that result, and is
// not run again.
func TestInterruptedSubmitterStopsItsRunningJobs(t *testing.T) {
	t.Parallel()
	url, q, b, opts := newBatch(t, slowTurnsWithDelay("20s"), 1, 0)
	ctx, _ := publishInterruptedAtAToolResult(t, url, b, opts)

	var got outcomes
	sum, err := b.Wait(ctx, got.add)
	require.ErrorIs(t, err, runtime.ErrInterrupted)
	assert.Equal(t, 1, sum.Failed)
	assert.Zero(t, sum.NotRun)
	require.Len(t, got.list, 1)
	assert.EqualError(t, got.list[0].Err, "interrupted: its submitter stopped the batch")
	b.Close()

	storedResults(t, q, 1)
	stored, _ := b.stored(context.Background(), make([]bool, 1))
	require.Len(t, stored, 1)
	r := stored[0]
	assert.False(t, r.OK)
	assert.Equal(t, "interrupted: its submitter stopped the batch", r.Error)
	assert.Equal(t, "w#1", fmt.Sprintf("%s#%d", r.Worker, r.Attempt))
	var u runtime.Usage
	require.NoError(t, json.Unmarshal(r.Usage, &u), "the usage of the run so far")
	assert.Equal(t, 1, u.ToolCalls)
	st, err := q.Stats(context.Background(), "")
	require.NoError(t, err)
	assert.Zero(t, st.Pending, "not to run again")
}

// A submitter interrupted (Ctrl-C) while a worker runs one of its jobs
// waits a few seconds for the workers it told to stop, and reports what
// happened: the running job with the result its worker stored, interrupted
// by its submitter, and only the job no worker had taken as not run.
func TestInterruptedSubmitterReportsItsStoppedJobs(t *testing.T) {
	t.Parallel()
	url, _, b, opts := newBatch(t, slowTurnsWithDelay("20s"), 2, 0)
	ctx, running := publishInterruptedAtAToolResult(t, url, b, opts)

	var got outcomes
	sum, err := b.Wait(ctx, got.add)
	require.ErrorIs(t, err, runtime.ErrInterrupted)
	b.Close()
	assert.Equal(t, 1, sum.Failed)
	assert.Equal(t, 1, sum.NotRun)
	require.Len(t, got.list, 2)
	ran := <-running
	stopped, other := got.list[0], got.list[1]
	require.Equal(t, ran, stopped.Index, "the stopped job is reported first")
	assert.False(t, stopped.NotRun, "job %d ran", ran)
	assert.EqualError(t, stopped.Err, "interrupted: its submitter stopped the batch")
	assert.Equal(t, "w#1", fmt.Sprintf("%s#%d", stopped.Worker, stopped.Attempt))
	assert.Equal(t, 1-ran, other.Index)
	assert.True(t, other.NotRun, "job %d was withdrawn", other.Index)
	assert.ErrorIs(t, other.Err, runtime.ErrNotRun)
}

// A job a worker takes after the interrupted submitter asked which of its
// jobs the workers hold, and before it withdraws the rest, runs until the
// worker hears the stop, and its worker stores its result all the same: the
// submitter waits for that result as for the others, and reports the job
// with it, not as not run.
func TestInterruptedSubmitterWaitsForAJobTakenAsItWithdraws(t *testing.T) {
	t.Parallel()
	url, q, b, opts := newBatch(t, slowTurnsWithDelay("20s"), 1, 0)
	require.NoError(t, b.Publish(context.Background()))
	b.beforeWithdraw = func() {
		// No worker held the job when the submitter asked: one takes it now.
		startWorker(t, url, WorkerOptions{Name: "w", WorkspaceRoot: opts.WorkspaceRoot})
		cons, err := q.consumer(context.Background())
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			info, err := cons.Info(context.Background())
			return err == nil && info.NumAckPending == 1
		}, 10*time.Second, 10*time.Millisecond, "the worker did not take the job")
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel() // Ctrl-C
	var got outcomes
	sum, err := b.Wait(ctx, got.add)
	require.ErrorIs(t, err, runtime.ErrInterrupted)
	b.Close()
	assert.Zero(t, sum.NotRun)
	assert.Equal(t, 1, sum.Failed)
	require.Len(t, got.list, 1)
	assert.False(t, got.list[0].NotRun, "the job ran")
	assert.EqualError(t, got.list[0].Err, "interrupted: its submitter stopped the batch")
	assert.Equal(t, "w#1", fmt.Sprintf("%s#%d", got.list[0].Worker, got.list[0].Attempt))
}

// An interrupted submitter waits for the workers it told to stop a few
// seconds at most: a job whose worker does not answer (it hangs, or is gone
// and the server has not yet given up on it) is reported not run once they
// have passed.
func TestInterruptedSubmitterDoesNotWaitForSilentWorkers(t *testing.T) {
	t.Parallel()
	url, q, b, _ := newBatch(t, copyTurns, 2, 0)
	require.NoError(t, b.Publish(context.Background()))
	// A worker that takes the first job and says nothing more.
	cons, err := connect(t, url, 0).consumer(context.Background())
	require.NoError(t, err)
	msg, err := cons.Next(jetstream.FetchMaxWait(10 * time.Second))
	require.NoError(t, err)
	require.Equal(t, q.jobSubject(b.ID, "0"), msg.Subject())
	running, _ := b.running(context.Background(), make([]bool, 2))
	assert.Equal(t, []int{0}, running, "the job taken runs; the other waits")

	ctx, cancel := context.WithCancel(context.Background())
	cancel() // Ctrl-C
	var got outcomes
	sum, err := b.Wait(ctx, got.add)
	require.ErrorIs(t, err, runtime.ErrInterrupted)
	assert.Equal(t, 2, sum.NotRun)
	require.Len(t, got.list, 2)
	for _, o := range got.list {
		assert.True(t, o.NotRun, "job %d", o.Index)
	}
}

// A worker stops a run of a batch whose submitter stopped it, whether it
// heard so before it took the job (the purge failed, say) or while the job
// ran, and no run of another batch, nor one that ended before.
func TestStopsStopTheirBatchesRuns(t *testing.T) {
	t.Parallel()
	var s stops
	watched := func(batch string) (context.Context, func()) {
		ctx, cancel := context.WithCancelCause(context.Background())
		return ctx, s.watch(batch, cancel)
	}
	running, _ := watched("a")
	other, _ := watched("b")
	ended, unwatch := watched("a")
	unwatch()
	s.stop("a")
	assert.ErrorIs(t, context.Cause(running), errSubmitterStopped)
	assert.NoError(t, other.Err())
	assert.NoError(t, ended.Err())
	late, _ := watched("a")
	assert.ErrorIs(t, context.Cause(late), errSubmitterStopped, "taken after the stop")
}

// A worker that heard a batch stopped before it takes one of its jobs (taken
// as the queue was purged, or the purge failed) does not start the job: no
// job.start goes out for a run that would stop at once, nothing runs in the
// workspace, and the job ends interrupted by its submitter.
func TestWorkerDoesNotStartAJobOfAStoppedBatch(t *testing.T) {
	t.Parallel()
	url, q, b, opts := newBatch(t, copyTurns, 1, 0)
	starts := watchStarts(t, b)
	w := startWorker(t, url, WorkerOptions{Name: "w", WorkspaceRoot: opts.WorkspaceRoot})
	require.Eventually(t, func() bool {
		_ = q.nc.Publish(q.cancelSubject(b.ID), nil)
		_ = q.nc.Flush()
		return w.stops.has(b.ID)
	}, 10*time.Second, 20*time.Millisecond, "the worker heard the stop")

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, b.Publish(ctx))
	var got outcomes
	sum, err := b.Wait(ctx, got.add)
	require.NoError(t, err)
	assert.Equal(t, 1, sum.Failed)
	require.Len(t, got.list, 1)
	assert.EqualError(t, got.list[0].Err, "interrupted: its submitter stopped the batch")
	time.Sleep(200 * time.Millisecond) // room for a start sent before the result
	b.Close()
	assert.Empty(t, starts(), "no job.start")
	_, err = os.Stat(filepath.Join(opts.Workspaces[0], "out.txt"))
	assert.ErrorIs(t, err, os.ErrNotExist, "nothing ran")
}

// A worker the server does not let subscribe to the submitters' stops
// (agentspec.cancel.S.*) says so and does not start, as it does when the
// subscription fails at once: the server refuses it only in an
// asynchronous error, and a worker that ran on would never hear a stopped
// submitter, its batch's running jobs running on at the model's expense.
func TestWorkerRefusedTheStopsDoesNotStart(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, _, w := workerAs(t, ctx, stopsDenied)

	err := w.Run(ctx)
	require.Error(t, err, "the worker ran")
	assert.ErrorIs(t, err, nats.ErrPermissionViolation)
	assert.Contains(t, err.Error(), `subscribing to the submitters' stops on agentspec.cancel.AGENTSPEC.*: `)
	assert.NoError(t, ctx.Err(), "refused at once")
}

// A worker that loses the subscription to the submitters' stops while it
// runs (the server's permissions reloaded, or changed as it reconnected)
// stops taking jobs and ends with the error it would have started with:
// the server refuses the subscription only in an asynchronous error, and a
// worker that ran on would never hear a stopped submitter again.
func TestWorkerRefusedTheStopsLaterStops(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ns, opts, w := workerAs(t, ctx, nil)
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	require.Eventually(t, func() bool {
		subs, err := ns.Subsz(&server.SubszOptions{Subscriptions: true, Test: "agentspec.cancel.AGENTSPEC.x"})
		return err == nil && subs.Total > 0
	}, 10*time.Second, 10*time.Millisecond, "the worker did not subscribe to the stops")
	select {
	case err := <-done:
		require.FailNow(t, "the worker ended before its permissions changed", "%v", err)
	default:
	}

	reloaded := opts.Clone()
	reloaded.Port = ns.Addr().(*net.TCPAddr).Port
	reloaded.Users = []*server.User{{Username: "worker", Password: "secret", Permissions: stopsDenied}}
	require.NoError(t, ns.ReloadOptions(reloaded))

	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		require.FailNow(t, "the worker ran on")
	}
	require.Error(t, err, "the worker ran on")
	assert.ErrorIs(t, err, nats.ErrPermissionViolation)
	assert.Contains(t, err.Error(), `subscribing to the submitters' stops on agentspec.cancel.AGENTSPEC.*: `)
	assert.NoError(t, ctx.Err(), "refused at once")
}

// stopsDenied are the permissions of a user the server does not let
// subscribe to the submitters' stops.
var stopsDenied = &server.Permissions{Subscribe: &server.SubjectPermission{Deny: []string{"agentspec.cancel.>"}}}

// workerAs starts a NATS server whose one user, "worker", has perms (nil:
// all), and returns it, its options and a worker connected as that user.
func workerAs(t *testing.T, ctx context.Context, perms *server.Permissions) (*server.Server, *server.Options, *Worker) {
	t.Helper()
	opts := &server.Options{Users: []*server.User{{Username: "worker", Password: "secret", Permissions: perms}}}
	ns := runServer(t, opts)
	nc, err := nats.Connect(ns.ClientURL(), nats.UserInfo("worker", "secret"))
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	q, err := Open(ctx, nc, Options{})
	require.NoError(t, err)
	w, err := NewWorker(ctx, q, WorkerOptions{WorkspaceRoot: t.TempDir()})
	require.NoError(t, err)
	return ns, opts, w
}
