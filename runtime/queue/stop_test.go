package queue

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/runtime"
	"github.com/agentspec/agentspec/spec"
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

// stopper is a capability that says it reaches nothing.
type stopper struct{}

func (stopper) Tools(context.Context) ([]capabilities.Tool, error) { return nil, nil }
func (stopper) Reach() capabilities.Reach                          { return capabilities.Reach{} }

// A worker told to stop before its job's run starts (while it checks the
// spec, or fetches a shipped workspace) hands the job back, as it does a
// run it stops: the job has not failed, and another worker runs it.
func TestWorkerStoppedBeforeTheRunHandsTheJobBack(t *testing.T) {
	t.Parallel()
	url := startServer(t)
	root := t.TempDir()
	dirs := jobDirs(t, root, 1)

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var once sync.Once
	reg := registryWith(t, capabilities.Type{Name: "Stopper",
		New: func(ctx context.Context, args capabilities.Args) (capabilities.Capability, error) {
			stopped := false
			once.Do(func() { stop(); stopped = true }) // SIGTERM, while the first worker checks the spec
			if stopped {
				return nil, ctx.Err()
			}
			return stopper{}, nil
		}})
	specDir := t.TempDir()
	writeFiles(t, specDir, map[string]string{"agent.yaml": strings.Replace(agentYAML, "  - FileSystem: {root_dir: .}\n", "  - FileSystem: {root_dir: .}\n  - Stopper\n", 1), "turns.yaml": copyTurns})
	specPath := filepath.Join(specDir, "agent.yaml")
	data, err := os.ReadFile(specPath)
	require.NoError(t, err)
	s, err := (&spec.Loader{Registry: reg}).Load(specPath, data)
	require.NoError(t, err)

	q := connect(t, url, 10*time.Minute)
	opts := WorkerOptions{Name: "leaving", WorkspaceRoot: root, Registry: reg, Options: []runtime.Option{runtime.WithRegistry(reg)}}
	w, err := NewWorker(ctx, q, opts)
	require.NoError(t, err)
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(ctx) }()

	b, err := q.NewBatch(BatchOptions{SpecPath: specPath, Spec: s, Workspaces: dirs, WorkspaceRoot: root})
	require.NoError(t, err)
	wctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, b.Publish(wctx))
	<-done

	opts.Name = "staying"
	startWorkerOn(t, q, opts)
	var got outcomes
	_, err = b.Wait(wctx, got.add)
	require.NoError(t, err)
	require.Len(t, got.list, 1)
	require.NoError(t, got.list[0].Err)
	assert.Equal(t, "staying", got.list[0].Worker)
	assert.Equal(t, 1, got.list[0].Attempt, "a hand-back is no attempt")
}

// A shipped job whose changes take longer to send back than the
// acknowledgement wait stays its worker's: the progress reports go on until
// its result is stored, so the server does not hand it to another worker,
// whose run would start again and overwrite the changes being stored.
func TestSlowShipBackKeepsTheJob(t *testing.T) {
	t.Parallel()
	url := startServer(t)
	q := connect(t, url, 2*time.Second)
	specPath, s := writeSpec(t, t.TempDir(), agentYAML, copyTurns)
	dirs := jobDirs(t, t.TempDir(), 1)

	// Two workers, so that a job whose reports lapse goes to the other;
	// each takes 3 s, past the 2 s wait, to start sending changes back.
	for _, name := range []string{"a", "b"} {
		ctx, stop := context.WithCancel(context.Background())
		w, err := NewWorker(ctx, q, WorkerOptions{Name: name, WorkspaceRoot: t.TempDir(),
			Backoff: func(int) time.Duration { return 10 * time.Millisecond }})
		require.NoError(t, err)
		w.beforeShipBack = func() { time.Sleep(3 * time.Second) }
		done := make(chan struct{})
		go func() { defer close(done); _ = w.Run(ctx) }()
		t.Cleanup(func() { stop(); <-done })
	}

	list, starts := submitWatched(t, q, BatchOptions{SpecPath: specPath, Spec: s, Workspaces: dirs, Ship: true})
	require.Len(t, list, 1)
	require.NoError(t, list[0].Err)
	assert.Equal(t, 1, list[0].Attempt)
	out, err := os.ReadFile(filepath.Join(dirs[0], "out.txt"))
	require.NoError(t, err, "the run's file came back")
	assert.Equal(t, "copied\n", string(out))
	// A second delivery, had there been one, starts while the first sends
	// its changes back; give its job.start time to arrive.
	time.Sleep(500 * time.Millisecond)
	assert.Len(t, starts(), 1, "run once, by one worker: %v", starts())
}

// leaveAt runs a worker of q that is told to stop (SIGTERM, a rolling
// restart) as its run sends the event kind, or after 20 s, and waits for it
// to stop; setup, when given, is called with the worker before it runs.
func leaveAt(t *testing.T, q *Queue, opts WorkerOptions, kind string, setup ...func(*Worker)) {
	t.Helper()
	ctx, stop := context.WithTimeout(context.Background(), 20*time.Second)
	defer stop()
	opts.Options = append(opts.Options, runtime.WithListener(func(_ context.Context, ev capabilities.Event) error {
		if ev.Kind() == kind {
			stop()
		}
		return nil
	}))
	w, err := NewWorker(ctx, q, opts)
	require.NoError(t, err)
	for _, f := range setup {
		f(w)
	}
	require.NoError(t, w.Run(ctx))
}

// A job handed back by a worker told to stop has not used up an attempt:
// with one attempt allowed, it is handed back twice and still runs, as its
// first attempt, on the next worker, since nothing it did failed.
func TestHandBackUsesNoAttempt(t *testing.T) {
	t.Parallel()
	url := startServer(t)
	root := t.TempDir()
	specPath, s := writeSpec(t, t.TempDir(), agentYAML, copyTurns)
	dirs := jobDirs(t, root, 1)
	q := connect(t, url, 0)
	b, starts, ctx := publishWatched(t, q, BatchOptions{SpecPath: specPath, Spec: s, Workspaces: dirs, WorkspaceRoot: root})

	for _, name := range []string{"leaving-1", "leaving-2"} {
		leaveAt(t, q, WorkerOptions{Name: name, WorkspaceRoot: root, MaxAttempts: 1}, runtime.KindToolCall)
	}
	startWorkerOn(t, q, WorkerOptions{Name: "staying", WorkspaceRoot: root, MaxAttempts: 1})
	var got outcomes
	_, err := b.Wait(ctx, got.add)
	require.NoError(t, err)
	require.Len(t, got.list, 1)
	require.NoError(t, got.list[0].Err)
	assert.Equal(t, "staying", got.list[0].Worker)
	assert.Equal(t, 1, got.list[0].Attempt)
	b.Close()
	assert.Equal(t, []string{"leaving-1#1", "leaving-2#1", "staying#1"}, starts())
}

// A worker that dies as it hands a job back, its hand-back recorded and the
// job not yet released, leaves the job to come back after the
// acknowledgement wait: not lost, run once more, and that delivery still
// counts no attempt.
func TestHandBackCutShort(t *testing.T) {
	t.Parallel()
	url := startServer(t)
	root := t.TempDir()
	specPath, s := writeSpec(t, t.TempDir(), agentYAML, copyTurns)
	dirs := jobDirs(t, root, 1)
	q := connect(t, url, time.Second)
	b, starts, ctx := publishWatched(t, q, BatchOptions{SpecPath: specPath, Spec: s, Workspaces: dirs, WorkspaceRoot: root})

	leaveAt(t, q, WorkerOptions{Name: "dying", WorkspaceRoot: root, MaxAttempts: 1}, runtime.KindToolCall,
		func(w *Worker) { w.beforeRelease = func() bool { return true } })
	startWorkerOn(t, q, WorkerOptions{Name: "staying", WorkspaceRoot: root, MaxAttempts: 1})
	var got outcomes
	_, err := b.Wait(ctx, got.add)
	require.NoError(t, err)
	require.Len(t, got.list, 1)
	require.NoError(t, got.list[0].Err)
	assert.Equal(t, "staying#1", fmt.Sprintf("%s#%d", got.list[0].Worker, got.list[0].Attempt))
	b.Close()
	assert.Equal(t, []string{"dying#1", "staying#1"}, starts())
	// Its result is out; its acknowledgement follows.
	assert.Eventually(t, func() bool {
		st, err := q.Stats(ctx, "")
		return err == nil && st.Pending == 0 && st.Running == 0
	}, 10*time.Second, 20*time.Millisecond, "the job is settled")
}

// A worker whose hand-back is slow to record (a server under load) keeps
// reporting the job in progress until it releases it: the job does not go
// to another worker meanwhile, whose run the release would then hand to a
// third, two runs of one job at once in its workspace.
func TestSlowHandBackKeepsTheJob(t *testing.T) {
	t.Parallel()
	url := startServer(t)
	root := t.TempDir()
	specPath, s := writeSpec(t, t.TempDir(), agentYAML, slowTurnsWithDelay("4s"))
	dirs := jobDirs(t, root, 1)
	q := connect(t, url, time.Second)
	b, starts, ctx := publishWatched(t, q, BatchOptions{SpecPath: specPath, Spec: s, Workspaces: dirs, WorkspaceRoot: root})

	leaveAt(t, q, WorkerOptions{Name: "leaving", WorkspaceRoot: root}, runtime.KindToolCall,
		func(w *Worker) {
			w.beforeRelease = func() bool {
				startWorkerOn(t, q, WorkerOptions{Name: "staying", WorkspaceRoot: root, Concurrency: 2})
				time.Sleep(2 * time.Second) // twice the acknowledgement wait
				return false
			}
		})
	var got outcomes
	_, err := b.Wait(ctx, got.add)
	require.NoError(t, err)
	require.Len(t, got.list, 1)
	require.NoError(t, got.list[0].Err)
	time.Sleep(time.Second) // room for a second run's start
	b.Close()
	assert.Equal(t, []string{"leaving#1", "staying#1"}, starts())
}

// On a consumer made with a bounded max deliver, which the server stops
// delivering a job at, a job's hand-backs count no attempt only while the
// deliveries left still cover its attempts and the one that gives up on
// it: a job handed back at every delivery still ends, where it waited in
// the queue for ever, and its submitter with it.
func TestHandBacksLeaveABoundedConsumerDeliveriesToEnd(t *testing.T) {
	t.Parallel()
	url := startServer(t)
	root := t.TempDir()
	specPath, s := writeSpec(t, t.TempDir(), agentYAML, copyTurns)
	dirs := jobDirs(t, root, 1)
	q := connect(t, url, 0)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := q.jobs.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: consumerName, AckPolicy: jetstream.AckExplicitPolicy, MaxDeliver: 3})
	require.NoError(t, err)
	b, err := q.NewBatch(BatchOptions{SpecPath: specPath, Spec: s, Workspaces: dirs, WorkspaceRoot: root})
	require.NoError(t, err)
	require.NoError(t, b.Publish(ctx))

	for _, name := range []string{"leaving-1", "leaving-2"} {
		leaveAt(t, q, WorkerOptions{Name: name, WorkspaceRoot: root, MaxAttempts: 1}, runtime.KindToolCall)
	}
	// The third stops as the others did, at its run's first tool call, if
	// it runs the job.
	wctx, stop := context.WithCancel(ctx)
	w, err := NewWorker(wctx, q, WorkerOptions{Name: "leaving-3", WorkspaceRoot: root, MaxAttempts: 1,
		Options: []runtime.Option{runtime.WithListener(func(_ context.Context, ev capabilities.Event) error {
			if ev.Kind() == runtime.KindToolCall {
				stop()
			}
			return nil
		})}})
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	t.Cleanup(func() { stop(); <-done })

	waitCtx, waited := context.WithTimeout(ctx, 15*time.Second)
	defer waited()
	var got outcomes
	_, err = b.Wait(waitCtx, got.add)
	require.NoError(t, err, "the job ended")
	require.Len(t, got.list, 1)
	require.Error(t, got.list[0].Err)
	assert.Contains(t, got.list[0].Err.Error(), "gave up after 1 attempt")
}
