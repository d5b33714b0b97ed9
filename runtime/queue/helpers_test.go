package queue

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/runtime"
	"github.com/agentspec/agentspec/spec"
)

// startServer starts a NATS server with JetStream in a temporary directory,
// on a loopback port of its own, for the test's lifetime.
func startServer(t *testing.T) string {
	t.Helper()
	return runServer(t, &server.Options{}).ClientURL()
}

// runServer starts a NATS server with opts, made to listen on a loopback
// port of its own with JetStream in a temporary directory, for the test's
// lifetime.
func runServer(t *testing.T, opts *server.Options) *server.Server {
	t.Helper()
	opts.Host, opts.Port, opts.JetStream, opts.StoreDir, opts.NoLog, opts.NoSigs = "127.0.0.1", -1, true, t.TempDir(), true, true
	ns, err := server.NewServer(opts)
	require.NoError(t, err)
	go ns.Start()
	require.True(t, ns.ReadyForConnections(10*time.Second), "the NATS server did not start")
	t.Cleanup(func() {
		ns.Shutdown()
		ns.WaitForShutdown()
	})
	return ns
}

// connect opens a queue over a connection of its own, closed at the end.
func connect(t *testing.T, url string, ackWait time.Duration) *Queue {
	t.Helper()
	nc, err := nats.Connect(url)
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	q, err := Open(ctx, nc, Options{AckWait: ackWait})
	require.NoError(t, err)
	return q
}

// runningWorker is a worker running in the background.
type runningWorker struct {
	*Worker
	cancel context.CancelFunc
	done   chan struct{}
}

// stop stops the worker as SIGTERM would, and waits for it.
func (w *runningWorker) stop() {
	w.cancel()
	<-w.done
}

// startWorker starts a worker over a connection of its own.
func startWorker(t *testing.T, url string, opts WorkerOptions) *runningWorker {
	t.Helper()
	return startWorkerOn(t, connect(t, url, 0), opts)
}

// startWorkerOn starts a worker of q.
func startWorkerOn(t *testing.T, q *Queue, opts WorkerOptions) *runningWorker {
	t.Helper()
	if opts.WorkspaceRoot == "" {
		opts.WorkspaceRoot = t.TempDir()
	}
	if opts.Backoff == nil {
		opts.Backoff = func(int) time.Duration { return 10 * time.Millisecond }
	}
	ctx, cancel := context.WithCancel(context.Background())
	w, err := NewWorker(ctx, q, opts)
	require.NoError(t, err)
	rw := &runningWorker{Worker: w, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(rw.done)
		if err := w.Run(ctx); err != nil {
			t.Errorf("worker %s: %v", w.Name(), err)
		}
	}()
	t.Cleanup(rw.stop)
	return rw
}

// newBatch starts a server and makes a batch of agentYAML scripted by turns
// over jobs job directories (see jobDirs) in a root of their own, on a
// queue whose consumer has the acknowledgement wait ackWait (0: the
// default). It returns the server's URL, the queue, the batch, not yet
// published, and the options it was made with.
func newBatch(t *testing.T, turns string, jobs int, ackWait time.Duration) (string, *Queue, *Batch, BatchOptions) {
	t.Helper()
	url := startServer(t)
	root := t.TempDir()
	specPath, s := writeSpec(t, t.TempDir(), agentYAML, turns)
	opts := BatchOptions{SpecPath: specPath, Spec: s, Workspaces: jobDirs(t, root, jobs), WorkspaceRoot: root}
	q := connect(t, url, ackWait)
	b, err := q.NewBatch(opts)
	require.NoError(t, err)
	return url, q, b, opts
}

// publishInterruptedAtAToolResult publishes b, made of opts, with its
// events watched, and starts a worker named w for it. It returns a context
// cancelled (Ctrl-C) as a run's first tool result shows, the run then
// waiting for its model, and a channel that gets the index of the first
// such run's job.
func publishInterruptedAtAToolResult(t *testing.T, url string, b *Batch, opts BatchOptions) (context.Context, <-chan int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	running := make(chan int, 1)
	require.NoError(t, b.Events(func(i int, ev []byte) {
		if strings.Contains(string(ev), `"kind":"`+runtime.KindToolResult+`"`) {
			select {
			case running <- i:
			default:
			}
			cancel()
		}
	}))
	require.NoError(t, b.Publish(context.Background()))
	startWorker(t, url, WorkerOptions{Name: "w", WorkspaceRoot: opts.WorkspaceRoot})
	return ctx, running
}

// writeSpec writes agent.yaml and its script into dir and loads it.
func writeSpec(t *testing.T, dir, agent, turns string) (string, *spec.Spec) {
	t.Helper()
	writeFiles(t, dir, map[string]string{"agent.yaml": agent, "turns.yaml": turns})
	path := filepath.Join(dir, "agent.yaml")
	s, err := spec.LoadFile(path)
	require.NoError(t, err)
	return path, s
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
}

// outcomes collects what Wait reports.
type outcomes struct {
	mu   sync.Mutex
	list []JobOutcome
}

func (o *outcomes) add(r JobOutcome) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.list = append(o.list, r)
}

// submit publishes a batch and waits for it, for at most a minute.
func submit(t *testing.T, q *Queue, opts BatchOptions) ([]JobOutcome, *Batch) {
	t.Helper()
	b, err := q.NewBatch(opts)
	require.NoError(t, err)
	got, _ := publishAndWait(t, b)
	return got, b
}

// submitWatched is submit with the batch's job starts watched (see
// watchStarts); the batch is closed once its results are in.
func submitWatched(t *testing.T, q *Queue, opts BatchOptions) ([]JobOutcome, func() []string) {
	t.Helper()
	b, err := q.NewBatch(opts)
	require.NoError(t, err)
	starts := watchStarts(t, b)
	got, _ := publishAndWait(t, b)
	b.Close()
	return got, starts
}

// publishWatched publishes a batch of opts with its job starts watched
// (see watchStarts), and returns it with a context that ends a minute on,
// for the test to wait on it.
func publishWatched(t *testing.T, q *Queue, opts BatchOptions) (*Batch, func() []string, context.Context) {
	t.Helper()
	b, err := q.NewBatch(opts)
	require.NoError(t, err)
	starts := watchStarts(t, b)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	require.NoError(t, b.Publish(ctx))
	return b, starts, ctx
}

// publishAndWait publishes b and waits for its results, for at most a
// minute.
func publishAndWait(t *testing.T, b *Batch) ([]JobOutcome, runtime.BatchSummary) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, b.Publish(ctx))
	var got outcomes
	sum, err := b.Wait(ctx, got.add)
	require.NoError(t, err)
	return got.list, sum
}

const agentYAML = `model: script:turns.yaml
instructions: Copy the input.
capabilities:
  - FileSystem: {root_dir: .}
workspace:
  input_globs: [input.txt]
  expected_output_files: [out.txt]
`

// copyTurns reads input.txt and writes out.txt.
const copyTurns = `turns:
  - tool_calls:
      - {name: read_file, arguments: {path: input.txt}}
  - expect: {tool_result_contains: "input of"}
    tool_calls:
      - {name: write_file, arguments: {path: out.txt, content: "copied\n"}}
  - text: done
`

// registryWith is a registry of the built-in capability types and extra.
func registryWith(t *testing.T, extra ...capabilities.Type) *capabilities.Registry {
	t.Helper()
	reg := capabilities.NewRegistry()
	for _, name := range capabilities.Default().Names() {
		typ, _ := capabilities.Default().Lookup(name)
		require.NoError(t, reg.Register(typ))
	}
	for _, typ := range extra {
		require.NoError(t, reg.Register(typ))
	}
	return reg
}

// packDir is the archive packTo writes, and its manifest.
func packDir(dir string, max int64, keep func(rel string) bool) ([]byte, manifest, error) {
	var buf bytes.Buffer
	m, err := packTo(&buf, dir, max, keep)
	if err != nil {
		return nil, nil, err
	}
	return buf.Bytes(), m, nil
}
