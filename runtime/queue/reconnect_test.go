package queue

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// proxy relays TCP connections to a server, and can cut them off: a
// network between a worker and the server that fails for a while.
type proxy struct {
	l      net.Listener
	to     string
	mu     sync.Mutex
	down   bool
	conns  []net.Conn
	closed bool
}

func startProxy(t *testing.T, to string) *proxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &proxy{l: l, to: to}
	go p.serve()
	t.Cleanup(func() { l.Close(); p.cut() })
	return p
}

func (p *proxy) url() string { return "nats://" + p.l.Addr().String() }

func (p *proxy) serve() {
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		down := p.down
		p.mu.Unlock()
		if down {
			c.Close()
			continue
		}
		s, err := net.Dial("tcp", p.to)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, s)
		p.mu.Unlock()
		go func() { _, _ = io.Copy(s, c); s.Close() }()
		go func() { _, _ = io.Copy(c, s); c.Close() }()
	}
}

// cut closes every relayed connection and refuses new ones until heal.
func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

func (p *proxy) heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = false
}

// A worker cut off from the server for longer than the acknowledgement
// wait stops its run, since the server hands the job to another worker:
// two runs of one job would work in one workspace at once, and the stale
// one's result could be the one kept. The job's result is the second
// delivery's.
func TestWorkerCutOffLongerThanTheAckWaitStopsItsRun(t *testing.T) {
	t.Parallel()
	url := startServer(t)
	net := startProxy(t, strings.TrimPrefix(url, "nats://"))
	root := t.TempDir()
	specPath, s := writeSpec(t, t.TempDir(), agentYAML, slowTurnsWithDelay("3s"))
	dirs := jobDirs(t, root, 1)
	q := connect(t, url, time.Second)
	_, err := q.consumer(context.Background())
	require.NoError(t, err)
	var mu sync.Mutex
	var logs []string
	nc, err := nats.Connect(net.url(), nats.ReconnectWait(100*time.Millisecond), nats.MaxReconnects(-1))
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	wq, err := Open(context.Background(), nc, Options{})
	require.NoError(t, err)
	startWorkerOn(t, wq, WorkerOptions{Name: "w", WorkspaceRoot: root, Logf: func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		logs = append(logs, fmt.Sprintf(format, args...))
	}})
	b, starts, ctx := publishWatched(t, q, BatchOptions{SpecPath: specPath, Spec: s, Workspaces: dirs, WorkspaceRoot: root})
	require.Eventually(t, func() bool { return len(starts()) == 1 }, 10*time.Second, 10*time.Millisecond)
	net.cut()
	startWorker(t, url, WorkerOptions{Name: "other", WorkspaceRoot: root})
	time.Sleep(2 * time.Second) // twice the acknowledgement wait
	net.heal()

	var got outcomes
	_, err = b.Wait(ctx, got.add)
	require.NoError(t, err)
	require.Len(t, got.list, 1)
	require.NoError(t, got.list[0].Err)
	assert.Equal(t, "other#2", fmt.Sprintf("%s#%d", got.list[0].Worker, got.list[0].Attempt), "the stale run's result is not the one kept")
	assert.Equal(t, []string{"w#1", "other#2"}, starts())
	mu.Lock()
	defer mu.Unlock()
	assert.Contains(t, logs, "job "+b.Jobs[0].ID+" dropped: cut off from the server for its acknowledgement wait (1s), so another worker has it")
}

// A worker whose progress reports stop reaching the server for the
// acknowledgement wait has lost its job, connected or not (the reports were
// lost as its connection failed and came back, or the worker stalled): the
// server hands the job to another worker. It stops its run, and releases
// nothing: a release of the delivery it no longer holds would hand the job
// to a third worker while the second runs it.
func TestWorkerWhoseReportsAreLostLetsTheJobGo(t *testing.T) {
	t.Parallel()
	url := startServer(t)
	root := t.TempDir()
	specPath, s := writeSpec(t, t.TempDir(), agentYAML, slowTurnsWithDelay("4s"))
	dirs := jobDirs(t, root, 1)
	q := connect(t, url, time.Second)
	_, err := q.consumer(context.Background())
	require.NoError(t, err)
	b, starts, ctx := publishWatched(t, q, BatchOptions{SpecPath: specPath, Spec: s, Workspaces: dirs, WorkspaceRoot: root})

	// The first worker's reports are lost; it is told to stop (SIGTERM)
	// 2 s on, after the server has handed the job to the second worker.
	lost := connect(t, url, 0)
	wctx, stop := context.WithCancel(context.Background())
	w, err := NewWorker(wctx, lost, WorkerOptions{Name: "lost", WorkspaceRoot: root})
	require.NoError(t, err)
	w.reportLost = func() bool { return true }
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(wctx) }()
	t.Cleanup(func() { stop(); <-done })
	require.Eventually(t, func() bool { return len(starts()) == 1 }, 10*time.Second, 10*time.Millisecond)
	startWorker(t, url, WorkerOptions{Name: "other", WorkspaceRoot: root, Concurrency: 2})
	time.AfterFunc(2*time.Second, stop)

	var got outcomes
	_, err = b.Wait(ctx, got.add)
	require.NoError(t, err)
	require.Len(t, got.list, 1)
	require.NoError(t, got.list[0].Err)
	<-done
	time.Sleep(time.Second) // room for a third run's start
	b.Close()
	assert.Equal(t, []string{"lost#1", "other#2"}, starts())
}

// A submitter whose connection is lost for longer than the results stream
// keeps results (a day, unless the stream was made with another max age)
// has its jobs' results expire before it reads them: once its connection
// is back it reports each such job failed, saying that its result is gone
// and why, instead of waiting for it for ever.
func TestSubmitterAwayLongerThanResultsAreKept(t *testing.T) {
	t.Parallel()
	// Results kept a second: a day, shortened.
	o, dir := awayWhileTheResultGoes(t, time.Second, func(results jetstream.Stream) {
		require.Eventually(t, func() bool {
			info, err := results.Info(context.Background())
			return err == nil && info.State.LastSeq == 1 && info.State.Msgs == 0
		}, 20*time.Second, 50*time.Millisecond, "the result is stored, then expires")
	})
	assert.False(t, o.OK)
	assert.False(t, o.NotRun)
	assert.Equal(t, "its result is gone: the job left the queue, but the stream AGENTSPEC_RESULTS, which keeps results for 1s, holds none for it, "+
		"as when this submitter's connection to the server was lost for longer than that; what the run did is not known here", o.Error)
	assert.EqualError(t, o.Err, o.Error)
	assert.Equal(t, dir, o.Workspace)
}

// A results stream made without a max age keeps results for ever: a
// result it no longer holds was removed otherwise (a limit of the stream's
// own, a purge), which the failure says, rather than that it expired.
func TestSubmitterBackToResultsRemovedFromAStreamWithoutMaxAge(t *testing.T) {
	t.Parallel()
	o, _ := awayWhileTheResultGoes(t, 0, func(results jetstream.Stream) {
		require.Eventually(t, func() bool {
			info, err := results.Info(context.Background())
			return err == nil && info.State.LastSeq == 1
		}, 20*time.Second, 50*time.Millisecond, "the result is stored")
		require.NoError(t, results.Purge(context.Background()))
	})
	assert.False(t, o.OK)
	assert.Equal(t, "its result is gone: the job left the queue, but the stream AGENTSPEC_RESULTS, which has no max age, holds none for it, "+
		"as when a limit of its own or a purge removed it; what the run did is not known here", o.Error)
}

// awayWhileTheResultGoes submits one job over a connection it then cuts,
// has a worker run the job while the submitter is away, lets lose take the
// result from a results stream made to keep results for maxAge (0: no max
// age), heals the connection and gives back what the submitter reports of
// the job, with the job's workspace.
func awayWhileTheResultGoes(t *testing.T, maxAge time.Duration, lose func(results jetstream.Stream)) (JobOutcome, string) {
	t.Helper()
	url := startServer(t)
	net := startProxy(t, strings.TrimPrefix(url, "nats://"))
	root := t.TempDir()
	specPath, s := writeSpec(t, t.TempDir(), agentYAML, copyTurns)
	dirs := jobDirs(t, root, 1)
	direct, err := nats.Connect(url)
	require.NoError(t, err)
	t.Cleanup(direct.Close)
	js, err := jetstream.New(direct)
	require.NoError(t, err)
	results, err := js.CreateStream(context.Background(), jetstream.StreamConfig{Name: DefaultStream + "_RESULTS",
		Subjects: []string{"agentspec.results." + DefaultStream + ".*.*.*"}, MaxAge: maxAge, Duplicates: time.Second})
	require.NoError(t, err)

	nc, err := nats.Connect(net.url(), nats.ReconnectWait(100*time.Millisecond), nats.MaxReconnects(-1))
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	q, err := Open(context.Background(), nc, Options{})
	require.NoError(t, err)
	b, err := q.NewBatch(BatchOptions{SpecPath: specPath, Spec: s, Workspaces: dirs, WorkspaceRoot: root})
	require.NoError(t, err)
	b.lostEvery = 100 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, b.Publish(ctx))
	var got outcomes
	waited := make(chan error, 1)
	go func() {
		_, err := b.Wait(ctx, got.add)
		waited <- err
	}()
	time.Sleep(200 * time.Millisecond) // Wait is reading the results
	net.cut()
	startWorker(t, url, WorkerOptions{WorkspaceRoot: root})
	lose(results)
	net.heal()

	require.NoError(t, <-waited)
	require.Len(t, got.list, 1)
	return got.list[0], dirs[0]
}
