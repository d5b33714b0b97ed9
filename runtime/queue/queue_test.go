package queue

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/runtime"
)

// jobDirs makes n workspaces under root, each with its own input.txt.
func jobDirs(t *testing.T, root string, n int) []string {
	t.Helper()
	dirs := make([]string, n)
	for i := range dirs {
		dirs[i] = filepath.Join(root, fmt.Sprintf("job-%03d", i))
		writeFiles(t, dirs[i], map[string]string{"input.txt": fmt.Sprintf("input of job %d\n", i)})
	}
	return dirs
}

// A batch of 200 jobs over three workers: every job ends once, in its own
// workspace, and its events reach the submitter.
func TestBatchOverThreeWorkers(t *testing.T) {
	t.Parallel()
	url := startServer(t)
	root := t.TempDir()
	specPath, s := writeSpec(t, t.TempDir(), agentYAML, copyTurns)
	dirs := jobDirs(t, root, 200)

	names := map[string]bool{}
	for i := range 3 {
		w := startWorker(t, url, WorkerOptions{Name: fmt.Sprintf("w%d", i), Concurrency: 2, WorkspaceRoot: root})
		names[w.Name()] = true
	}

	q := connect(t, url, 0)
	b, err := q.NewBatch(BatchOptions{SpecPath: specPath, Spec: s, Workspaces: dirs, WorkspaceRoot: root})
	require.NoError(t, err)
	var mu sync.Mutex
	runEnds := map[int]int{}
	require.NoError(t, b.Events(func(i int, ev []byte) {
		var e struct{ Kind string }
		require.NoError(t, json.Unmarshal(ev, &e))
		if e.Kind == "run.end" {
			mu.Lock()
			runEnds[i]++
			mu.Unlock()
		}
	}))
	list, sum := publishAndWait(t, b)
	b.Close()

	assert.Equal(t, 200, sum.Total)
	assert.Equal(t, 200, sum.OK)
	seen := map[int]bool{}
	byWorker := map[string]int{}
	for _, r := range list {
		require.NoError(t, r.Err, "job %d", r.Index)
		assert.False(t, seen[r.Index], "job %d reported twice", r.Index)
		seen[r.Index] = true
		assert.Equal(t, dirs[r.Index], r.Workspace)
		assert.JSONEq(t, `"done"`, string(r.Output))
		assert.True(t, names[r.Worker], "an unknown worker %q", r.Worker)
		byWorker[r.Worker]++
	}
	assert.Len(t, seen, 200)
	assert.Len(t, byWorker, 3, "every worker took jobs: %v", byWorker)
	for i, dir := range dirs {
		out, err := os.ReadFile(filepath.Join(dir, "out.txt"))
		require.NoError(t, err, "job %d", i)
		assert.Equal(t, "copied\n", string(out))
	}
	mu.Lock()
	defer mu.Unlock()
	assert.Len(t, runEnds, 200, "each job's run.end event reached the submitter")

	settled(t, q, Stats{Stream: DefaultStream, Succeeded: 200, CacheEntries: 0})
}

// slowTurns writes out.txt, then takes its time over the answer.
const slowTurns = `turns:
  - tool_calls:
      - {name: write_file, arguments: {path: out.txt, content: "whole file\n"}}
  - delay: 1500ms
    text: done
`

// slowTurnsWithDelay is slowTurns taking delay (a YAML duration) over the
// answer.
func slowTurnsWithDelay(delay string) string {
	return strings.Replace(slowTurns, "delay: 1500ms", "delay: "+delay, 1)
}

// A worker that dies mid-job (its connection gone, nothing settled) loses
// the job to another worker once the acknowledgement wait runs out; the job
// completes once and its file is whole.
func TestWorkerKilledMidJob(t *testing.T) {
	t.Parallel()
	url := startServer(t)
	root := t.TempDir()
	specPath, s := writeSpec(t, t.TempDir(), agentYAML, slowTurns)
	dirs := jobDirs(t, root, 1)

	// The consumer is created with a short acknowledgement wait.
	q := connect(t, url, time.Second)
	b, err := q.NewBatch(BatchOptions{SpecPath: specPath, Spec: s, Workspaces: dirs, WorkspaceRoot: root})
	require.NoError(t, err)
	started := make(chan struct{}, 4)
	require.NoError(t, b.Events(func(_ int, ev []byte) {
		if strings.Contains(string(ev), `"kind":"`+runtime.KindToolResult+`"`) {
			started <- struct{}{}
		}
	}))
	first := connect(t, url, time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	wctx, kill := context.WithCancel(ctx)
	victim, err := NewWorker(wctx, first, WorkerOptions{Name: "victim", WorkspaceRoot: root})
	require.NoError(t, err)
	victimDone := make(chan struct{})
	go func() { defer close(victimDone); _ = victim.Run(wctx) }()
	require.NoError(t, b.Publish(ctx))

	select {
	case <-started: // the file is written; the model is thinking
	case <-time.After(15 * time.Second):
		t.Fatal("the job never started")
	}
	first.Conn().Close() // dead: no acknowledgement, no progress, no result
	kill()
	<-victimDone

	startWorker(t, url, WorkerOptions{Name: "survivor", WorkspaceRoot: root})
	var got outcomes
	_, err = b.Wait(ctx, got.add)
	require.NoError(t, err)
	require.Len(t, got.list, 1)
	r := got.list[0]
	require.NoError(t, r.Err)
	assert.Equal(t, "survivor", r.Worker)
	assert.Equal(t, 2, r.Attempt, "the job was delivered a second time")
	out, err := os.ReadFile(filepath.Join(dirs[0], "out.txt"))
	require.NoError(t, err)
	assert.Equal(t, "whole file\n", string(out))

	info, err := q.results.Info(ctx, jetstream.WithSubjectFilter(q.resultSubject("*", b.ID, "*")))
	require.NoError(t, err)
	assert.Equal(t, uint64(1), info.State.Msgs, "one result for the job")
}

// A job that keeps failing in a way that might pass is retried, then
// terminated with its last error after MaxAttempts; one whose checks fail
// is failed at once.
func TestPoisonJob(t *testing.T) {
	t.Parallel()
	url := startServer(t)
	root := t.TempDir()
	outage, s1 := writeSpec(t, t.TempDir(), agentYAML, "turns:\n  - error: the provider is down\n  - error: the provider is down\n  - error: the provider is down\n  - error: the provider is down\n")
	unchecked, s2 := writeSpec(t, t.TempDir(), agentYAML, "turns:\n  - text: done\n  - text: done\n  - text: done\n")
	dirs := jobDirs(t, root, 2)
	startWorker(t, url, WorkerOptions{WorkspaceRoot: root, MaxAttempts: 3})
	q := connect(t, url, 0)

	b, err := q.NewBatch(BatchOptions{SpecPath: outage, Spec: s1, Workspaces: dirs[:1], WorkspaceRoot: root})
	require.NoError(t, err)
	var mu sync.Mutex
	var retries []string
	ids := map[string][]string{} // the kinds under each run_id
	require.NoError(t, b.Events(func(_ int, ev []byte) {
		var e struct {
			Kind    string
			Attempt int
			Error   string
			Time    string
			RunID   string `json:"run_id"`
		}
		require.NoError(t, json.Unmarshal(ev, &e))
		// The worker's own events are stamped as the run's are.
		_, terr := time.Parse(time.RFC3339Nano, e.Time)
		assert.NoError(t, terr, "%s", ev)
		assert.NotEmpty(t, e.RunID, "%s", ev)
		mu.Lock()
		defer mu.Unlock()
		ids[e.RunID] = append(ids[e.RunID], e.Kind)
		if e.Kind == "job.retry" {
			retries = append(retries, fmt.Sprintf("%d: %s", e.Attempt, e.Error))
		}
	}))
	got, _ := publishAndWait(t, b)
	b.Close()
	require.Len(t, got, 1)
	assert.False(t, got[0].OK)
	assert.Equal(t, 3, got[0].Attempt, "tried MaxAttempts times")
	assert.Contains(t, got[0].Error, "the provider is down")
	mu.Lock()
	assert.Len(t, retries, 2, "a job.retry event for each retry: %v", retries)
	// Each attempt is a run of its own: its job.start, its run's events and
	// its job.retry share one run_id.
	assert.Len(t, ids, 3, "%v", ids)
	retried := 0
	for id, kinds := range ids {
		assert.Equal(t, "job.start", kinds[0], "%s: %v", id, kinds)
		if kinds[len(kinds)-1] == "job.retry" {
			retried++
			assert.Contains(t, kinds, "run.end", "%s: %v", id, kinds)
		}
	}
	assert.Equal(t, 2, retried, "%v", ids)
	mu.Unlock()

	got, _ = submit(t, q, BatchOptions{SpecPath: unchecked, Spec: s2, Workspaces: dirs[1:], WorkspaceRoot: root})
	require.Len(t, got, 1)
	assert.False(t, got[0].OK)
	assert.Equal(t, 1, got[0].Attempt, "failed checks are not retried")
	assert.Contains(t, got[0].Error, "out.txt")

	// A worker publishes the result before it terminates the job.
	settled(t, q, Stats{Stream: DefaultStream, Failed: 2, CacheEntries: 0})
}

// settled waits, a few seconds at most, for the queue to hold no job and
// the counts given.
func settled(t *testing.T, q *Queue, want Stats) {
	t.Helper()
	var st Stats
	assert.Eventually(t, func() bool {
		var err error
		st, err = q.Stats(context.Background(), "")
		require.NoError(t, err)
		st.Waiting = 0 // idle workers come and go
		return st == want
	}, 5*time.Second, 20*time.Millisecond, "terminated and acknowledged jobs leave the queue")
	assert.Equal(t, want, st)
}

// A result stored by one worker answers the same job on another, through
// the shared cache, without calling the model.
func TestCacheHitFromAnotherWorker(t *testing.T) {
	t.Parallel()
	url := startServer(t)
	root := t.TempDir()
	// The script has one conversation: a second run that reached the model
	// would fail with the script exhausted.
	specPath, s := writeSpec(t, t.TempDir(), agentYAML+"cache: true\n", copyTurns)
	dirs := jobDirs(t, root, 1)
	q := connect(t, url, 0)
	opts := BatchOptions{SpecPath: specPath, Spec: s, Workspaces: dirs, WorkspaceRoot: root}

	first := startWorker(t, url, WorkerOptions{Name: "first", WorkspaceRoot: root})
	got, _ := submit(t, q, opts)
	require.Len(t, got, 1)
	require.NoError(t, got[0].Err)
	assert.False(t, got[0].Cached)
	first.stop()

	startWorker(t, url, WorkerOptions{Name: "second", WorkspaceRoot: root})
	got, _ = submit(t, q, opts)
	require.Len(t, got, 1)
	require.NoError(t, got[0].Err)
	assert.Equal(t, "second", got[0].Worker)
	assert.True(t, got[0].Cached, "answered from the cache the first worker filled")
	assert.JSONEq(t, `"done"`, string(got[0].Output))

	// Changing an input file changes the key: the model is asked again.
	writeFiles(t, dirs[0], map[string]string{"input.txt": "input of a new kind\n"})
	got, _ = submit(t, q, opts)
	require.Len(t, got, 1)
	assert.False(t, got[0].Cached)
	require.NoError(t, got[0].Err)
}

// --ship: a workspace that only the submitter has travels to a worker, and
// the files its run wrote come back into it.
func TestShipRoundTrip(t *testing.T) {
	t.Parallel()
	url := startServer(t)
	workerRoot := t.TempDir()
	specPath, s := writeSpec(t, t.TempDir(), agentYAML+"cache: true\n", copyTurns)
	dirs := jobDirs(t, t.TempDir(), 2)
	writeFiles(t, dirs[0], map[string]string{"sub/keep.txt": "kept\n", ".hidden": "hidden\n"})
	startWorker(t, url, WorkerOptions{WorkspaceRoot: workerRoot, Concurrency: 2})
	q := connect(t, url, 0)

	got, b := submit(t, q, BatchOptions{SpecPath: specPath, Spec: s, Workspaces: dirs, Ship: true})
	require.Len(t, got, 2)
	for _, r := range got {
		require.NoError(t, r.Err)
		assert.Equal(t, []string{"out.txt"}, r.Changes.Files)
		assert.Empty(t, r.Changes.Deleted)
		out, err := os.ReadFile(filepath.Join(dirs[r.Index], "out.txt"))
		require.NoError(t, err)
		assert.Equal(t, "copied\n", string(out))
	}
	keep, err := os.ReadFile(filepath.Join(dirs[0], "sub", "keep.txt"))
	require.NoError(t, err)
	assert.Equal(t, "kept\n", string(keep))
	entries, err := os.ReadDir(filepath.Join(workerRoot, ".agentspec-ship"))
	require.NoError(t, err)
	assert.Empty(t, entries, "the worker removes its copies")
	entries, err = os.ReadDir(dirs[0])
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	assert.ElementsMatch(t, []string{".hidden", "input.txt", "out.txt", "sub"}, names, "nothing else is left behind")

	ctx := context.Background()
	obs, err := q.shipStore(ctx)
	require.NoError(t, err)
	_, err = obs.GetInfo(ctx, b.Jobs[0].Ship.Object)
	assert.ErrorIs(t, err, jetstream.ErrObjectNotFound, "the shipped copy is deleted once its changes are back")

	// Shipped again, unchanged, the job is answered from the cache: the key
	// names the submitter's directory, not the worker's copy.
	got, _ = submit(t, q, BatchOptions{SpecPath: specPath, Spec: s, Workspaces: dirs[:1], Ship: true})
	require.Len(t, got, 1)
	require.NoError(t, got[0].Err)
	assert.True(t, got[0].Cached)
	assert.Empty(t, got[0].Changes.Files)
}

// A job that names a path outside the worker's workspace root fails without
// running, whatever the submitter claimed.
func TestJobOutsideTheWorkspaceRoot(t *testing.T) {
	t.Parallel()
	url := startServer(t)
	root := t.TempDir()
	outside := t.TempDir()
	require.NoError(t, os.Symlink(outside, filepath.Join(root, "link")))
	specPath, s := writeSpec(t, t.TempDir(), agentYAML, copyTurns)
	dirs := jobDirs(t, root, 1)
	startWorker(t, url, WorkerOptions{WorkspaceRoot: root})
	q := connect(t, url, 0)
	b, err := q.NewBatch(BatchOptions{SpecPath: specPath, Spec: s, Workspaces: dirs, WorkspaceRoot: root})
	require.NoError(t, err)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i, bad := range []string{"../" + filepath.Base(outside), outside, "link", ".", "./", ""} {
		b.ID = fmt.Sprintf("b%d", i)
		b.Jobs[0].ID, b.Jobs[0].Batch, b.Jobs[0].Workspace = b.ID+".0", b.ID, bad
		require.NoError(t, b.Publish(ctx))
		var got outcomes
		_, err := b.Wait(ctx, got.add)
		require.NoError(t, err)
		require.Len(t, got.list, 1)
		assert.False(t, got.list[0].OK, bad)
		assert.Equal(t, 1, got.list[0].Attempt, "not retried: %s", bad)
		assert.NotContains(t, got.list[0].Error, root, "the error does not show the worker's root")
	}

	// The submitter refuses, before anything is sent, what the workers would.
	ship := filepath.Join(root, shipDir, "job")
	require.NoError(t, os.MkdirAll(ship, 0o755))
	for dir, want := range map[string]string{
		root:                        "workspace " + root + " is the workspace root " + root + " itself; a job's workspace must be a directory below it",
		outside:                     "workspace " + outside + " is not under the workspace root " + root + " (--workspace-root names the directory the workers share)",
		filepath.Join(root, "link"): "workspace " + filepath.Join(root, "link") + " is not under the workspace root " + root + " (--workspace-root names the directory the workers share)",
		ship:                        `workspace "` + shipDir + `/job": the worker's own directory of shipped workspaces`,
		filepath.Join(root, "none"): "workspace " + filepath.Join(root, "none") + ": no such directory",
	} {
		_, err = q.NewBatch(BatchOptions{SpecPath: specPath, Spec: s, Workspaces: []string{dirs[0], dir}, WorkspaceRoot: root})
		assert.EqualError(t, err, want)
		_, err = WorkspaceName(root, dir)
		assert.EqualError(t, err, want)
	}
	name, err := WorkspaceName(root, dirs[0])
	require.NoError(t, err)
	assert.Equal(t, filepath.Base(dirs[0]), name)

	// A spec whose FileSystem root lies outside is refused the same way.
	escaping, s2 := writeSpec(t, t.TempDir(), strings.Replace(agentYAML, "{root_dir: .}", "{root_dir: "+outside+"}", 1), copyTurns)
	got, _ := submit(t, q, BatchOptions{SpecPath: escaping, Spec: s2, Workspaces: dirs, WorkspaceRoot: root})
	require.Len(t, got, 1)
	assert.False(t, got[0].OK)
	assert.Equal(t, 1, got[0].Attempt)
	assert.Contains(t, got[0].Error, "FileSystem reaches "+outside+", outside the job's workspace")

	entries, err := os.ReadDir(outside)
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing was written outside the root")
}

// A worker told to stop (SIGTERM, Ctrl-C) hands its running job back at
// once: another worker runs it from the start without waiting out the
// acknowledgement wait, and the job ends once.
func TestStoppedWorkerHandsItsJobBack(t *testing.T) {
	t.Parallel()
	url := startServer(t)
	root := t.TempDir()
	specPath, s := writeSpec(t, t.TempDir(), agentYAML, slowTurns)
	dirs := jobDirs(t, root, 1)
	// The consumer gets an acknowledgement wait far longer than the test:
	// only a hand-back can bring the job to the second worker in time.
	q := connect(t, url, 10*time.Minute)
	b, err := q.NewBatch(BatchOptions{SpecPath: specPath, Spec: s, Workspaces: dirs, WorkspaceRoot: root})
	require.NoError(t, err)
	started := make(chan struct{}, 4)
	require.NoError(t, b.Events(func(_ int, ev []byte) {
		if strings.Contains(string(ev), `"kind":"`+runtime.KindToolResult+`"`) {
			started <- struct{}{}
		}
	}))
	first := startWorkerOn(t, q, WorkerOptions{Name: "leaving", WorkspaceRoot: root})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, b.Publish(ctx))
	select {
	case <-started:
	case <-time.After(15 * time.Second):
		t.Fatal("the job never started")
	}
	first.stop()
	c, err := q.consumer(ctx)
	require.NoError(t, err)
	assert.Equal(t, 10*time.Minute, c.CachedInfo().Config.AckWait)

	startWorker(t, url, WorkerOptions{Name: "staying", WorkspaceRoot: root})
	var got outcomes
	_, err = b.Wait(ctx, got.add)
	require.NoError(t, err)
	require.Len(t, got.list, 1)
	require.NoError(t, got.list[0].Err)
	assert.Equal(t, "staying", got.list[0].Worker)
	assert.Equal(t, 1, got.list[0].Attempt, "a hand-back is no attempt")
}

// A job delivered more often than MaxAttempts (its workers died running it)
// fails without running again.
func TestJobWhoseWorkersDie(t *testing.T) {
	t.Parallel()
	url, _, b, opts := newBatch(t, slowTurns, 1, time.Second)
	started := make(chan struct{}, 4)
	require.NoError(t, b.Events(func(_ int, ev []byte) {
		if strings.Contains(string(ev), `"kind":"job.start"`) {
			started <- struct{}{}
		}
	}))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, b.Publish(ctx))

	dying := connect(t, url, time.Second)
	wctx, kill := context.WithCancel(ctx)
	w, err := NewWorker(wctx, dying, WorkerOptions{WorkspaceRoot: opts.WorkspaceRoot, MaxAttempts: 1})
	require.NoError(t, err)
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(wctx) }()
	select {
	case <-started:
	case <-time.After(15 * time.Second):
		t.Fatal("the job never started")
	}
	dying.Conn().Close()
	kill()
	<-done

	startWorker(t, url, WorkerOptions{Name: "last", WorkspaceRoot: opts.WorkspaceRoot, MaxAttempts: 1})
	var got outcomes
	_, err = b.Wait(ctx, got.add)
	require.NoError(t, err)
	require.Len(t, got.list, 1)
	assert.False(t, got.list[0].OK)
	assert.Equal(t, "gave up after 1 attempt: no worker finished it", got.list[0].Error)
	assert.Equal(t, 2, got.list[0].Attempt)
	select {
	case <-started:
		t.Error("the last worker ran the job again")
	default:
	}
}

// A submitter interrupted before the jobs ran withdraws them from the queue
// and reports them not run.
func TestInterruptedSubmitterWithdrawsItsJobs(t *testing.T) {
	t.Parallel()
	_, q, b, _ := newBatch(t, copyTurns, 3, 0)
	require.NoError(t, b.Publish(context.Background()))
	st, err := q.Stats(context.Background(), "")
	require.NoError(t, err)
	assert.Equal(t, uint64(3), st.Pending, "no worker yet")

	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	var got outcomes
	sum, err := b.Wait(ctx, got.add)
	require.ErrorIs(t, err, runtime.ErrInterrupted)
	assert.Equal(t, 3, sum.NotRun)
	require.Len(t, got.list, 3)
	for _, r := range got.list {
		assert.True(t, r.NotRun)
		assert.ErrorIs(t, r.Err, runtime.ErrNotRun)
	}
	st, err = q.Stats(context.Background(), "")
	require.NoError(t, err)
	assert.Equal(t, uint64(0), st.Pending, "the jobs are withdrawn")
}

// A job that runs longer than the acknowledgement wait stays with its
// worker: the progress reports keep the server from handing it to another.
func TestLongJobKeptAlive(t *testing.T) {
	t.Parallel()
	url := startServer(t)
	root := t.TempDir()
	q := connect(t, url, 2*time.Second)
	startWorkerOn(t, q, WorkerOptions{Name: "a", WorkspaceRoot: root})
	startWorker(t, url, WorkerOptions{Name: "b", WorkspaceRoot: root})
	assertRunOnce(t, q, root)
}

// The workers' consumer is shared and keeps the acknowledgement wait it was
// created with: workers whose own queues say 30 s still report a long job in
// progress often enough for the consumer's 2 s, so the job is not handed to
// the other worker while it runs.
func TestLongJobKeptAliveAtTheConsumersAckWait(t *testing.T) {
	t.Parallel()
	url := startServer(t)
	root := t.TempDir()
	q := connect(t, url, 2*time.Second)
	cons, err := q.consumer(context.Background()) // created with the 2 s wait
	require.NoError(t, err)
	require.Equal(t, 2*time.Second, cons.CachedInfo().Config.AckWait)
	// Two workers, so that a job their heartbeats let lapse would go to the
	// idle one; each one's queue says DefaultAckWait.
	startWorker(t, url, WorkerOptions{Name: "a", WorkspaceRoot: root})
	startWorker(t, url, WorkerOptions{Name: "b", WorkspaceRoot: root})
	assertRunOnce(t, q, root)
}

// assertRunOnce submits a job that runs 3 s, longer than q's 2 s
// acknowledgement wait, and checks that it ran once, by one worker.
func assertRunOnce(t *testing.T, q *Queue, root string) {
	t.Helper()
	long := slowTurnsWithDelay("3s")
	specPath, s := writeSpec(t, t.TempDir(), agentYAML, long)
	dirs := jobDirs(t, root, 1)
	list, starts := submitWatched(t, q, BatchOptions{SpecPath: specPath, Spec: s, Workspaces: dirs, WorkspaceRoot: root})
	require.Len(t, list, 1)
	require.NoError(t, list[0].Err)
	assert.Equal(t, 1, list[0].Attempt)
	assert.Len(t, starts(), 1, "run once, by one worker: %v", starts())
}

// watchStarts follows b's events and returns what gives the job.start
// events seen so far, each as worker#attempt.
func watchStarts(t *testing.T, b *Batch) func() []string {
	t.Helper()
	var mu sync.Mutex
	var starts []string
	require.NoError(t, b.Events(func(_ int, ev []byte) {
		var e struct {
			Kind, Worker string
			Attempt      int
		}
		require.NoError(t, json.Unmarshal(ev, &e))
		if e.Kind == "job.start" {
			mu.Lock()
			starts = append(starts, fmt.Sprintf("%s#%d", e.Worker, e.Attempt))
			mu.Unlock()
		}
	}))
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(starts)
	}
}

// runEditedSpec runs one job whose spec is agentYAML with its instructions
// replaced by instructions, after the submitter loaded the unedited one, on
// a worker with allow, and returns its one result.
func runEditedSpec(t *testing.T, allow Allow, instructions string) JobOutcome {
	t.Helper()
	url := startServer(t)
	root := t.TempDir()
	specPath, s := writeSpec(t, t.TempDir(), agentYAML, copyTurns)
	dirs := jobDirs(t, root, 1)
	startWorker(t, url, WorkerOptions{WorkspaceRoot: root, Allow: allow})
	q := connect(t, url, 0)
	b, err := q.NewBatch(BatchOptions{SpecPath: specPath, Spec: s, Workspaces: dirs, WorkspaceRoot: root})
	require.NoError(t, err)
	b.Jobs[0].Spec.Data = []byte(strings.Replace(agentYAML, "Copy the input.", instructions, 1))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, b.Publish(ctx))
	var got outcomes
	_, err = b.Wait(ctx, got.add)
	require.NoError(t, err)
	require.Len(t, got.list, 1)
	return got.list[0]
}

// A spec that does not load on the worker (here: a variable its environment
// lacks) fails the job at once, with the problem where the submitter's file
// has it.
func TestSpecThatDoesNotLoadOnTheWorker(t *testing.T) {
	t.Parallel()
	got := runEditedSpec(t, Allow{Env: true}, "${AGENTSPEC_TEST_UNSET_VARIABLE}")
	assert.Equal(t, 1, got.Attempt)
	assert.Regexp(t, `^agent\.yaml:2:15: .*AGENTSPEC_TEST_UNSET_VARIABLE`, got.Error)
}

// A job's spec may not read the worker's environment (its provider keys,
// for one) through ${VAR} unless the worker allows it: the job fails at
// once, at the reference, and no value of the worker's is used.
func TestJobReadingTheWorkersEnvironment(t *testing.T) {
	t.Parallel()
	got := runEditedSpec(t, Allow{}, "Say ${PATH:-nothing}.")
	assert.Equal(t, 1, got.Attempt, "not retried")
	assert.Equal(t, "agent.yaml:2:19: ${PATH} reads the worker's environment; this worker was not started with --allow-env", got.Error)
}

// An entry rewritten in the shared bucket is not replayed: its answer fails
// the spec's output_schema, so the job runs, and says why.
func TestRewrittenCacheEntryIsNotReplayed(t *testing.T) {
	t.Parallel()
	url := startServer(t)
	root := t.TempDir()
	const verdict = `{"verdict": "pass"}`
	agent := agentYAML + "cache: true\noutput_schema: {type: object, required: [verdict], properties: {verdict: {enum: [pass, fail]}}}\n"
	turns := strings.Replace(copyTurns, "text: done", "text: '"+verdict+"'", 1)
	turns += strings.TrimPrefix(turns, "turns:\n") // a second conversation
	specPath, s := writeSpec(t, t.TempDir(), agent, turns)
	dirs := jobDirs(t, root, 1)
	q := connect(t, url, 0)
	opts := BatchOptions{SpecPath: specPath, Spec: s, Workspaces: dirs, WorkspaceRoot: root}
	startWorker(t, url, WorkerOptions{WorkspaceRoot: root})
	got, _ := submit(t, q, opts)
	require.Len(t, got, 1)
	require.NoError(t, got[0].Err)
	require.False(t, got[0].Cached)

	ctx := context.Background()
	kv, err := q.CacheBucket(ctx, "")
	require.NoError(t, err)
	keys, err := kv.Keys(ctx)
	require.NoError(t, err)
	require.Len(t, keys, 1)
	e, err := kv.Get(ctx, keys[0])
	require.NoError(t, err)
	var entry map[string]any
	require.NoError(t, json.Unmarshal(e.Value(), &entry))
	entry["output"], entry["json"] = `{"verdict": "owned"}`, map[string]any{"verdict": "owned"}
	forged, err := json.Marshal(entry)
	require.NoError(t, err)
	_, err = kv.Put(ctx, keys[0], forged)
	require.NoError(t, err)

	got, _ = submit(t, q, opts)
	require.Len(t, got, 1)
	require.NoError(t, got[0].Err)
	assert.False(t, got[0].Cached, "the forged entry is not replayed")
	assert.JSONEq(t, verdict, string(got[0].Output))
	require.Len(t, got[0].Warnings, 1)
	assert.Regexp(t, `^cache entry [0-9a-f]{12}: refused, its answer does not pass the output_schema: the response does not match the schema: .*; running again$`,
		got[0].Warnings[0])
}

// A job that runs past the worker's JobTimeout fails for good, at its first
// attempt, rather than hold the worker for as long as its heartbeat lasts.
func TestJobTimeout(t *testing.T) {
	t.Parallel()
	url := startServer(t)
	root := t.TempDir()
	long := slowTurnsWithDelay("1h")
	specPath, s := writeSpec(t, t.TempDir(), agentYAML, long)
	dirs := jobDirs(t, root, 1)
	q := connect(t, url, 0)
	startWorker(t, url, WorkerOptions{Name: "w", WorkspaceRoot: root, JobTimeout: 300 * time.Millisecond})
	got, b := submit(t, q, BatchOptions{SpecPath: specPath, Spec: s, Workspaces: dirs, WorkspaceRoot: root})
	b.Close()
	require.Len(t, got, 1)
	require.Error(t, got[0].Err)
	assert.Contains(t, got[0].Err.Error(), "the job ran past the worker's job timeout of 300ms")
	assert.Equal(t, 1, got[0].Attempt, "not retried")
}
