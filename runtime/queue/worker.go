package queue

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/runtime"
	"github.com/agentspec/agentspec/runtime/cache"
	"github.com/agentspec/agentspec/runtime/providers"
	"github.com/agentspec/agentspec/runtime/script"
	"github.com/agentspec/agentspec/spec"
)

// DefaultMaxAttempts is how many times a job is delivered before a worker
// gives up on it.
const DefaultMaxAttempts = 3

// maxSpecs bounds the loaded specs a worker keeps, and so the directories
// of their files (see loadSpec).
const maxSpecs = 256

// WorkerOptions configure a Worker.
type WorkerOptions struct {
	// Name identifies the worker in results and events; the host name and
	// process id when empty.
	Name string
	// Concurrency is how many jobs run at a time (1 when zero or less).
	Concurrency int
	// WorkspaceRoot is the directory every job's workspace must lie in: a
	// job names its workspace relative to it, and one that reaches outside
	// it (by "..", an absolute path or a symbolic link) fails. Shipped
	// workspaces are unpacked below it. Required.
	WorkspaceRoot string
	// MaxAttempts bounds the attempts of a job (DefaultMaxAttempts when
	// zero): its deliveries, but those a worker handed back as it stopped.
	// A job that failed in a way that might pass is retried until then,
	// and one delivered more often (its workers died running it) is failed
	// without running.
	MaxAttempts int
	// Backoff is the delay before a failed attempt is retried; the default
	// doubles from one second, up to a minute.
	Backoff func(attempt int) time.Duration
	// CacheBucket is the shared cache's key-value bucket
	// (DefaultCacheBucket when empty); NoCache runs every job uncached.
	CacheBucket string
	NoCache     bool
	// ShipMax caps the archive of a shipped workspace this worker takes (a
	// job whose archive is bigger fails without running, whatever its
	// submitter allowed) and of the files its run changed, which it sends
	// back; DefaultShipMax when zero or less. The archive may unpack to 16
	// times as much.
	ShipMax int64
	// JobTimeout bounds one delivery of a job, its run included; a job past
	// it fails for good, since the heartbeat would otherwise keep it this
	// worker's for as long as it runs. Zero sets no bound.
	JobTimeout time.Duration
	// NoEvents publishes none of the runs' events, which saves their
	// encoding where nobody watches them. job.start and job.retry, one of
	// each per delivery at most, still go out: a submitter counts its
	// running jobs by them.
	NoEvents bool
	// Options are added to every run, after the worker's own: listeners
	// and validators, for instance. A runtime.WithProviderOptions here
	// replaces the worker's, and with them the providers.CredentialCache
	// its jobs share (what the AWS credential chain found, Vertex AI's
	// token), unless its Credentials names one: give every run the same
	// cache, or each of them asks the chain and fetches a token again.
	Options []runtime.Option
	// Allow is what a job's spec may reach beyond its workspace (nothing,
	// by default): see Allow.
	Allow Allow
	// Registry builds the capabilities of jobs' specs when the worker asks
	// what they reach; nil means capabilities.Default(). Give runs the same
	// one with runtime.WithRegistry in Options.
	Registry *capabilities.Registry
	// Logf, when set, is told what the worker does, one line at a time.
	Logf func(format string, args ...any)
}

// Worker pulls jobs from a queue and runs them.
type Worker struct {
	q     *Queue
	opts  WorkerOptions
	root  string // real path
	cache *cache.Cache
	// cacheKV and cacheBucket are the cache's bucket and its name, which
	// a shipped run's entry names (see heldEntry).
	cacheKV     jetstream.KeyValue
	cacheBucket string
	// handBacks counts the hand-backs of each job (see handBack).
	handBacks jetstream.KeyValue
	// stops are the batches whose submitters stopped them.
	stops stops
	// credentials are what the jobs' models found, shared for the worker's
	// life: the AWS SDK's cache and Google's token source renew them.
	credentials providers.CredentialCache

	mu    sync.Mutex
	specs map[string]*loaded // by bundle digest
	dir   string             // where bundles are written; removed by Run
	beat  time.Duration      // how often a running job is reported in progress; set by Run
	// ackWait is the consumer's acknowledgement wait; set by Run.
	ackWait time.Duration
	// maxDeliver is the consumer's max deliver, -1 when unbounded; set by
	// Run.
	maxDeliver int

	// beforeShipBack, when set (by tests), runs as a shipped job's changes
	// start back: what a large workspace's packing and upload would take.
	beforeShipBack func()
	// beforeRelease, when set (by tests), runs as a hand-back is recorded
	// and before the job is released; true leaves it unreleased, as a
	// worker dying there would.
	beforeRelease func() (die bool)
	// reportLost, when set (by tests), is asked before each progress
	// report: true loses it on its way, as a connection that fails just
	// after it was written and comes back at once does.
	reportLost func() bool
	// foldingOf, when set (by tests), stands for probeFolding.
	foldingOf func(dir string) (nameFolding, error)
}

// NewWorker returns a worker of q.
func NewWorker(ctx context.Context, q *Queue, opts WorkerOptions) (*Worker, error) {
	if opts.WorkspaceRoot == "" {
		return nil, errors.New("worker: no workspace root")
	}
	root, err := filepath.Abs(opts.WorkspaceRoot)
	if err == nil {
		root, err = filepath.EvalSymlinks(root)
	}
	if err != nil {
		return nil, fmt.Errorf("workspace root: %w", err)
	}
	if st, err := os.Stat(root); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("workspace root %s is not a directory", opts.WorkspaceRoot)
	}
	if opts.Name == "" {
		host, _ := os.Hostname()
		opts.Name = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	opts.Concurrency = max(opts.Concurrency, 1)
	if opts.ShipMax <= 0 {
		opts.ShipMax = DefaultShipMax
	}
	if opts.MaxAttempts <= 0 {
		opts.MaxAttempts = DefaultMaxAttempts
	}
	if opts.Backoff == nil {
		opts.Backoff = func(attempt int) time.Duration {
			return min(time.Second<<min(attempt-1, 6), time.Minute)
		}
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	w := &Worker{q: q, opts: opts, root: root, specs: map[string]*loaded{}}
	if w.handBacks, err = q.handBacks(ctx); err != nil {
		return nil, err
	}
	if !opts.NoCache {
		kv, err := q.CacheBucket(ctx, opts.CacheBucket)
		if err != nil {
			return nil, err
		}
		w.cache, w.cacheKV, w.cacheBucket = cache.NewKV(kv), kv, kv.Bucket()
	}
	return w, nil
}

// Name is the worker's name.
func (w *Worker) Name() string { return w.opts.Name }

// scratchPrefix names the scratch directories workers make in the
// temporary directory, for the jobs' specs and shipped workspaces.
const scratchPrefix = "agentspec-worker-"

// Run pulls and runs jobs until ctx ends. Then it stops pulling; the runs in
// progress stop between tool calls and their jobs are handed back to the
// queue at once, for another worker to run from the start, without using
// up one of their attempts (see handBack). Run returns once they are.
//
// Run fails at once, running nothing, when the server does not let the
// worker subscribe to the submitters' stops (agentspec.cancel.S.*), since
// it would never hear that a batch it runs was stopped; and with the same
// error, stopping as when ctx ends, when the server refuses the
// subscription later (its permissions reloaded, or changed as the
// connection came back).
func (w *Worker) Run(ctx context.Context) error {
	cons, err := w.q.consumer(ctx)
	if err != nil {
		return err
	}
	if err := w.checkConsumer(cons.CachedInfo()); err != nil {
		return err
	}
	w.beat = heartbeat(w.q.ackWait, cons.CachedInfo())
	w.ackWait, w.maxDeliver = w.q.ackWait, -1
	if info := cons.CachedInfo(); info != nil && info.Config.AckWait > 0 {
		w.ackWait = info.Config.AckWait
	}
	if info := cons.CachedInfo(); info != nil && info.Config.MaxDeliver > 0 {
		w.maxDeliver = info.Config.MaxDeliver
	}
	if w.dir, err = os.MkdirTemp("", scratchPrefix); err != nil {
		return err
	}
	defer os.RemoveAll(w.dir)
	release, err := holdScratch(w.dir)
	if err != nil {
		return fmt.Errorf("scratch directory: %w", err)
	}
	defer release()
	sweepScratch(w.dir)
	sweepCopies(filepath.Join(w.root, shipDir))
	// A submitter stopped stops its batch's runs: the worker hears it from
	// before it takes a job, so it misses none for a job it runs.
	stopsSubject := w.q.cancelSubject("*")
	// The server refuses the subscription in an asynchronous error, which
	// the connection hands its error handler, at any time: when it is made
	// (see refusedSubscription), and when the server takes it back or does
	// not take it again as the connection comes back.
	ctx, refuse := context.WithCancelCause(ctx)
	defer refuse(nil)
	handler := w.q.nc.ErrorHandler()
	w.q.nc.SetErrorHandler(func(nc *nats.Conn, sub *nats.Subscription, err error) {
		if handler != nil {
			handler(nc, sub, err)
		}
		if refusedSubscriptionError(err, stopsSubject) {
			refuse(stopsRefused{err})
		}
	})
	defer w.q.nc.SetErrorHandler(handler)
	sub, err := w.q.nc.Subscribe(stopsSubject, func(m *nats.Msg) {
		w.stops.stop(m.Subject[strings.LastIndexByte(m.Subject, '.')+1:])
	})
	if err == nil {
		err = w.q.nc.Flush()
	}
	if err == nil {
		err = refusedSubscription(w.q.nc, stopsSubject)
	}
	if err != nil {
		if sub != nil {
			_ = sub.Unsubscribe()
		}
		return fmt.Errorf("subscribing to the submitters' stops on %s: %w", stopsSubject, err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	var wg sync.WaitGroup
	for range w.opts.Concurrency {
		wg.Go(func() {
			for ctx.Err() == nil {
				msg, err := w.next(ctx, cons)
				if err != nil {
					continue
				}
				w.handle(ctx, msg)
			}
		})
	}
	wg.Wait()
	w.opts.Logf("stopped: no job is running")
	if refused := (stopsRefused{}); errors.As(context.Cause(ctx), &refused) {
		return fmt.Errorf("subscribing to the submitters' stops on %s: %w", stopsSubject, refused.error)
	}
	return nil
}

// refusedSubscription is the server's refusal of the subscription to
// subject that nc just made and flushed, or nil. The server refuses one the
// connection's user may not make with an error of its own, not an answer
// to the subscription: the client holds it as the connection's last error
// (until a reconnect clears it) once a flush that follows it returns, the
// error coming before the flush's answer.
func refusedSubscription(nc *nats.Conn, subject string) error {
	if err := nc.LastError(); refusedSubscriptionError(err, subject) {
		return err
	}
	return nil
}

// stopsRefused is the cause of a Run stopped because the server refused
// the worker's subscription to the submitters' stops.
type stopsRefused struct{ error }

// refusedSubscriptionError reports whether err is the server's refusal of
// a subscription to subject.
func refusedSubscriptionError(err error, subject string) bool {
	return errors.Is(err, nats.ErrPermissionViolation) && strings.Contains(err.Error(), `Subscription to "`+subject+`"`)
}

// checkConsumer refuses a workers' consumer made by someone else (for a
// cluster's replicas, or by hand) that would leave jobs without an end: one
// that stops delivering a job before the worker's last attempt, or its
// giving up after it, leaves the job in the queue and its submitter waiting
// for ever; one that filters the jobs never hands out the others.
func (w *Worker) checkConsumer(info *jetstream.ConsumerInfo) error {
	if info == nil {
		return nil
	}
	c := info.Config
	name := fmt.Sprintf("the consumer %s of stream %s", consumerName, w.q.stream)
	if c.MaxDeliver > 0 && c.MaxDeliver <= w.opts.MaxAttempts {
		return fmt.Errorf("%s delivers a job at most %d times, so a job it stops delivering would never end: "+
			"its max_deliver must be -1 (unbounded) or more than the workers' attempts (%d)", name, c.MaxDeliver, w.opts.MaxAttempts)
	}
	all := w.q.jobSubject("*", "*")
	for _, f := range append([]string{c.FilterSubject}, c.FilterSubjects...) {
		if f != "" && f != all && f != "agentspec.jobs."+w.q.stream+".>" && f != ">" {
			return fmt.Errorf("%s hands out only %s; the workers need every job of the stream", name, f)
		}
	}
	return nil
}

// pullWait is how long one pull waits for a job before it asks again. A
// pull that ends with none is the idle worker's normal state, not an error
// to log. While a pull is open its slot counts as idle in queue stats; the
// slot drops out of the count for the round trip between one pull's end and
// the next's start, so a long pull keeps the count steady. The server's
// heartbeats (every 5 s on a pull this long) tell a worker within 10 s that
// its connection is gone.
var pullWait = 30 * time.Second

// next waits for a job, up to pullWait.
func (w *Worker) next(ctx context.Context, cons jetstream.Consumer) (jetstream.Msg, error) {
	fctx, cancel := context.WithTimeout(ctx, pullWait)
	defer cancel()
	msg, err := cons.Next(jetstream.FetchContext(fctx))
	idle := errors.Is(err, context.DeadlineExceeded) || errors.Is(err, jetstream.ErrNoMessages) || errors.Is(err, nats.ErrTimeout)
	if err != nil && ctx.Err() == nil && !idle {
		w.opts.Logf("pulling a job: %v", err)
		select { // the server may be restarting: do not spin
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
	return msg, err
}

// heartbeat is how often a running job is reported in progress: five times
// in the consumer's acknowledgement wait. The consumer is shared and durable,
// so its wait is the one set by whoever created it, which need not be this
// queue's (a worker started with another --ack-wait): the server's word wins.
func heartbeat(ackWait time.Duration, info *jetstream.ConsumerInfo) time.Duration {
	if info != nil && info.Config.AckWait > 0 {
		ackWait = info.Config.AckWait
	}
	return max(ackWait/5, 100*time.Millisecond)
}

// handle runs one delivery of a job and settles it with the server.
func (w *Worker) handle(ctx context.Context, msg jetstream.Msg) {
	received := time.Now() // the delivery is a sign of life, from about then
	var job Job
	if err := json.Unmarshal(msg.Data(), &job); err != nil || job.ID == "" {
		w.opts.Logf("dropping a message that is not a job (%s)", msg.Subject())
		_ = msg.TermWithReason("not an agentspec job")
		return
	}
	// Its result goes out on subjects made of its batch and index: a job
	// whose ids could not make them would never settle, and come back for
	// ever. It is not run.
	err := job.checkIDs()
	if subject := w.q.jobSubject(job.Batch, strconv.Itoa(job.Index)); err == nil && msg.Subject() != subject {
		err = fmt.Errorf("job %s came on %s, not its own subject", job.ID, msg.Subject())
	}
	if err != nil {
		w.opts.Logf("refusing a job (%s): %v", msg.Subject(), err)
		_ = msg.TermWithReason("invalid job: " + err.Error())
		return
	}
	attempt, handedBack := w.attempt(ctx, msg, job)
	if w.stops.has(job.Batch) {
		// Its submitter stopped the batch before the worker took the job
		// (it was taken as the queue was purged, or the purge failed): the
		// job is not started, nor announced with a job.start, and ends as a
		// run stopped by its submitter does.
		w.opts.Logf("job %s not run: %v", job.ID, errSubmitterStopped)
		if w.settle(ctx, msg, &Result{Job: job.ID, Error: "interrupted: " + errSubmitterStopped.Error()}, job, attempt, true) {
			w.forgetHandBacks(job, handedBack)
		}
		return
	}
	if attempt > w.opts.MaxAttempts {
		n := fmt.Sprintf("%d attempts", attempt-1)
		if attempt == 2 {
			n = "1 attempt"
		}
		if w.settle(ctx, msg, &Result{Job: job.ID, Error: "gave up after " + n + ": no worker finished it"}, job, attempt, true) {
			w.forgetHandBacks(job, handedBack)
		}
		return
	}
	w.opts.Logf("job %s (%s), attempt %d", job.ID, printable(job.Label), attempt)
	// The delivery's events, job.start and job.retry included, carry the
	// id of its run.
	ctx = runtime.WithRunID(ctx, runtime.NewRunID())
	// Each event goes out as run --events writes it: its kind first, then
	// its fields, the time and the run's id.
	// The worker's paths in them are named as the submitter knows them,
	// once the job's workspace is known (see run).
	at := &eventPaths{at: paths{label: job.Label, root: w.root, scratch: w.dir}}
	events := runtime.JSONLines(eventWriter{w: w, subject: EventsSubject(job.ID), at: at})

	// Progress reports keep the job ours while it runs and until its
	// result is stored, sending back a shipped run's changes included
	// (packing and uploading up to --ship-max MiB can outlast the
	// acknowledgement wait), even when the worker is told to stop then:
	// the job is not handed back after its run.
	//
	// A worker whose reports have not reached the server for the
	// acknowledgement wait (cut off from it, its reports lost as the
	// connection failed and came back, the worker stalled) has lost the
	// job: the server hands it to another worker, whose run would work in
	// the same workspace as this one's, and this one's result, if it came
	// first, would be the one kept, its release handing the job to a third.
	// The run stops, and nothing of it is settled. A report counts once a
	// flush that follows it returns: the server has it then.
	held := &holding{since: received, within: max(w.ackWait-w.ackWait/5, 2*w.beat)}
	beat, stopBeat := context.WithCancel(context.WithoutCancel(ctx))
	defer stopBeat()
	jobCtx, drop := context.WithCancelCause(ctx)
	defer drop(nil)
	defer w.stops.watch(job.Batch, drop)()
	go func() {
		t := time.NewTicker(w.beat)
		defer t.Stop()
		for {
			select {
			case <-beat.Done():
				return
			case <-t.C:
			}
			sent := time.Now()
			if !held.still(sent) {
				drop(errCutOff)
				return
			}
			if !w.q.nc.IsConnected() || (w.reportLost != nil && w.reportLost()) {
				continue
			}
			if msg.InProgress() == nil && w.q.nc.FlushTimeout(w.beat) == nil {
				held.reported(sent, time.Now())
			}
		}
	}()
	ctx = jobCtx

	runCtx, endRun := ctx, context.CancelFunc(func() {})
	if w.opts.JobTimeout > 0 {
		runCtx, endRun = context.WithTimeoutCause(ctx, w.opts.JobTimeout, errJobTimeout)
	}
	res, ws, warnings, err := w.run(runCtx, job, attempt, events, at)
	if err != nil && ctx.Err() == nil && errors.Is(context.Cause(runCtx), errJobTimeout) {
		err = errPermanent{fmt.Errorf("the job ran past the worker's job timeout of %s", w.opts.JobTimeout)}
	}
	endRun()
	defer ws.cleanup()
	// What goes back names the submitter's files, not this machine's.
	named := paths{workspace: ws.dir, label: job.Label, root: w.root, scratch: w.dir}
	for i, warning := range warnings {
		warnings[i] = named.text(warning)
	}
	if errors.Is(context.Cause(ctx), errCutOff) {
		w.dropped(job)
		return
	}
	if err != nil && errors.Is(context.Cause(ctx), errSubmitterStopped) {
		// The job ends here, whatever stopped its run: it was withdrawn
		// from the queue, and nobody waits for its changes.
		r := &Result{Job: job.ID, Error: "interrupted: " + errSubmitterStopped.Error(), Warnings: warnings}
		if res != nil {
			r.Usage, _ = json.Marshal(res.Usage)
		}
		ws.cleanup()
		stopBeat()
		if !held.still(time.Now()) {
			w.dropped(job)
			return
		}
		w.opts.Logf("job %s interrupted: %v", job.ID, errSubmitterStopped)
		if w.settle(ctx, msg, r, job, attempt, true) {
			w.forgetHandBacks(job, handedBack)
		}
		return
	}
	if ctx.Err() != nil && err != nil {
		// Stopping: the job goes back, whole, to the next worker, whether
		// its run was interrupted or the stop cut short what comes before
		// it (checking the spec, fetching a shipped workspace), which
		// would otherwise fail the job as if it could never run.
		w.handBack(msg, job, handedBack, stopBeat, held)
		return
	}
	final := err == nil || permanent(err) || attempt >= w.opts.MaxAttempts
	if !final {
		stopBeat()
		if !held.still(time.Now()) {
			w.dropped(job)
			return
		}
		delay := w.opts.Backoff(attempt)
		w.opts.Logf("job %s failed, retrying in %s: %v", job.ID, delay, err)
		_ = events(ctx, JobRetry{Job: job.ID, Worker: w.opts.Name, Attempt: attempt,
			DelayMS: delay.Milliseconds(), Error: describe(err)}) // named as the submitter knows its paths, as every event
		_ = msg.NakWithDelay(delay)
		return
	}
	r := &Result{Job: job.ID, Warnings: warnings}
	if res != nil {
		r.Usage, _ = json.Marshal(res.Usage)
	}
	if err != nil {
		r.Error = named.refusal(err)
	} else {
		r.OK, r.Cached = true, res.Cached
		r.Output = res.JSON
		if r.Output == nil {
			r.Output, _ = json.Marshal(res.Output)
		}
	}
	if ws.shipped != nil {
		if w.beforeShipBack != nil {
			w.beforeShipBack()
		}
		ch, cerr := w.shipBack(ctx, job, ws)
		switch {
		case cerr != nil && r.OK:
			r.OK, r.Cached, r.Output = false, false, nil
			r.Error = "the run succeeded but its changes could not be sent back: " + named.text(cerr.Error())
		case cerr != nil:
			// A failed run's changes come back too: their loss is told.
			r.Error += "; its changes could not be sent back: " + named.text(cerr.Error())
		}
		r.Changes = ch
		if r.OK {
			r.Entry = ws.held.entry(w.cacheBucket)
		}
	}
	// A shipped copy has served its run: it goes before the result, so
	// that a submitter that has its result finds no copy of its workspace
	// left on the worker.
	ws.cleanup()
	// The result goes out now: no progress report may follow its
	// acknowledgement.
	stopBeat()
	if !held.still(time.Now()) {
		// The changes sent back are of no use: another delivery's result
		// will name its own.
		w.forgetChanges(r.Changes)
		w.dropped(job)
		return
	}
	if w.settle(ctx, msg, r, job, attempt, !r.OK) {
		w.forgetHandBacks(job, handedBack)
	}
}

// holding tells whether a worker still holds its delivery of a job: whether
// the server has had a sign of life of it (the delivery, then each progress
// report known to have reached it) within the acknowledgement wait, less a
// fifth for what the network takes (two beats at least, for a wait too
// short for the worker to keep up with). Once it has not, the server may
// have handed the job to another worker, and the delivery is lost for good.
type holding struct {
	mu     sync.Mutex
	since  time.Time // when the last sign of life known to have reached the server was sent
	within time.Duration
	lost   bool
}

// still reports whether the delivery is still held at now.
func (h *holding) still(now time.Time) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if now.Sub(h.since) >= h.within {
		h.lost = true
	}
	return !h.lost
}

// reported records a progress report sent at sent, which the server had by
// confirmed.
func (h *holding) reported(sent, confirmed time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if confirmed.Sub(h.since) >= h.within {
		h.lost = true // it may have come after the server gave up on the delivery
	}
	if !h.lost {
		h.since = sent
	}
}

// dropped says that the worker let a job go that it no longer held.
func (w *Worker) dropped(job Job) {
	w.opts.Logf("job %s dropped: cut off from the server for its acknowledgement wait (%s), so another worker has it", job.ID, w.ackWait)
}

// forgetChanges removes the changes a delivery that lost its job sent
// back; those it cannot remove expire with the store's max age.
func (w *Worker) forgetChanges(ch *Changes) {
	if ch == nil || ch.Object == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if obs, err := w.q.shipStore(ctx); err == nil {
		_ = obs.Delete(ctx, ch.Object)
	}
}

// attempt is the attempt a delivery of job makes: its deliveries so far,
// less the hand-backs recorded for it, which it returns too. A hand-back
// that cannot be read counts as an attempt.
func (w *Worker) attempt(ctx context.Context, msg jetstream.Msg, job Job) (attempt, handedBack int) {
	delivered := 1
	if meta, err := msg.Metadata(); err == nil {
		delivered = int(meta.NumDelivered)
	}
	if delivered <= 1 {
		return 1, 0 // handed back never
	}
	// Read though the worker is told to stop meanwhile: its hand-back of
	// this delivery is recorded on top of this count.
	gctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	e, err := w.handBacks.Get(gctx, job.ID)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		return delivered, 0
	case err == nil:
		handedBack, err = strconv.Atoi(string(e.Value()))
		if err == nil && handedBack < 0 {
			err = fmt.Errorf("%d hand-backs", handedBack)
		}
	}
	if err != nil {
		w.opts.Logf("job %s: reading its hand-backs: %v; every delivery counts", job.ID, err)
		return delivered, -1
	}
	return max(delivered-handedBack, 1), handedBack
}

// handBack returns the job, whose run this worker stopped as it was told to
// stop, to the queue at once, for another worker to run from the start,
// and records that it did (before: handedBack times), so that the delivery
// does not count as one of the job's attempts. A stop does not fail the
// job, however often workers are restarted while it runs.
//
// The job stays the one message, released with a Nak, so it is never lost
// nor held by two workers at once. The record comes first: a worker dying
// between the two leaves the job to come back after the acknowledgement
// wait, that delivery still not counted; a record that cannot be written
// leaves the delivery counted, as a worker's death is, and so does a
// hand-back past the max deliver - MaxAttempts - 1 a consumer made with a
// bounded max deliver leaves room for. Progress reports
// go on until the release (stopBeat ends them): a record slow to write
// would otherwise let the acknowledgement wait pass and the server hand
// the job to another worker, and the release that followed would hand it
// to a third, two runs of the job at once.
func (w *Worker) handBack(msg jetstream.Msg, job Job, handedBack int, stopBeat func(), held *holding) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	switch {
	case !held.still(time.Now()):
		// Lost, the job is another worker's delivery: neither recorded nor
		// released (see below).
		stopBeat()
		w.dropped(job)
		return
	case handedBack < 0:
	case w.maxDeliver > 0 && handedBack+1 > w.maxDeliver-w.opts.MaxAttempts-1:
		// The server stops delivering the job at max deliver: each
		// hand-back not counted takes one of the deliveries its attempts,
		// and the one that gives up on it, need, and past these the job
		// would wait in the queue for ever.
		w.opts.Logf("job %s: the delivery counts as an attempt, since the consumer delivers a job at most %d times", job.ID, w.maxDeliver)
	default:
		_, err := w.handBacks.Put(ctx, job.ID, []byte(strconv.Itoa(handedBack+1)))
		if err != nil {
			w.opts.Logf("job %s: recording its hand-back: %v; the delivery counts as an attempt", job.ID, err)
		}
	}
	if w.beforeRelease != nil && w.beforeRelease() {
		return
	}
	stopBeat()
	// A release of a delivery the worker no longer holds would hand the
	// job to yet another worker while the one that has it runs it: the
	// server takes it for the job's, whichever delivery it names.
	if !held.still(time.Now()) {
		w.dropped(job)
		return
	}
	_ = msg.Nak()
	w.opts.Logf("job %s handed back", job.ID)
}

// forgetHandBacks removes the record of a settled job's hand-backs; one
// left expires after a day.
func (w *Worker) forgetHandBacks(job Job, handedBack int) {
	if handedBack == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = w.handBacks.Purge(ctx, job.ID)
}

// settle publishes a job's final result, then acknowledges the job (or
// terminates it, when it failed): in that order, so that a worker dying in
// between leaves a job that runs again and a result the stream keeps once.
// It reports whether the result was stored.
func (w *Worker) settle(ctx context.Context, msg jetstream.Msg, r *Result, job Job, attempt int, failed bool) bool {
	r.Batch, r.Index, r.Label, r.Worker, r.Attempt = job.Batch, job.Index, job.Label, w.opts.Name, attempt
	if r.Output == nil {
		r.Output = json.RawMessage("null")
	}
	if r.Usage == nil {
		r.Usage = json.RawMessage("null")
	}
	data, err := json.Marshal(r)
	if err != nil {
		w.opts.Logf("job %s: %v", job.ID, err)
		return false
	}
	pctx := context.WithoutCancel(ctx)
	publish := func(failed bool, data []byte) error {
		outcome := "ok"
		if failed {
			outcome = "failed"
		}
		_, err := w.q.js.Publish(pctx, w.q.resultSubject(outcome, job.Batch, strconv.Itoa(job.Index)), data,
			jetstream.WithMsgID(job.ID))
		return err
	}
	err = publish(failed, data)
	if errors.Is(err, nats.ErrMaxPayload) && r.Entry != nil {
		// The cache entry goes first: the job is done without it.
		r.Entry = nil
		if data, err = json.Marshal(r); err == nil {
			err = publish(failed, data)
		}
	}
	if errors.Is(err, nats.ErrMaxPayload) {
		// Another delivery would make the same result: the job fails for
		// good, with a result that says why and fits.
		r = tooBig(r, len(data), w.q.nc.MaxPayload())
		failed = true
		if data, err = json.Marshal(r); err == nil {
			err = publish(failed, data)
		}
	}
	if err != nil {
		// Unsettled, the job comes back after the acknowledgement wait.
		w.opts.Logf("job %s: publishing its result: %v", job.ID, err)
		return false
	}
	outcome := "ok"
	if failed {
		outcome = "failed"
	}
	// The result is stored; a lost acknowledgement only means the job
	// runs again, and its second result is dropped.
	if failed {
		err = msg.TermWithReason(r.Error)
	} else {
		err = msg.Ack()
	}
	if err != nil {
		w.opts.Logf("job %s: settling: %v", job.ID, err)
	}
	w.opts.Logf("job %s %s", job.ID, outcome)
	return true
}

// tooBig is the failed result that stands for r, whose encoding of size
// bytes is more than the server takes in a message: its answer, warnings and
// changes left out, its usage kept.
func tooBig(r *Result, size int, maxPayload int64) *Result {
	msg := fmt.Sprintf("the job's result is %s, more than the NATS server takes in a message (max_payload %s)",
		sizeString(int64(size)), sizeString(maxPayload))
	if r.Changes != nil && (len(r.Changes.Files) > 0 || len(r.Changes.Deleted) > 0) {
		msg += "; the run's changes were not brought back"
	}
	if !r.OK && r.Error != "" {
		cause := r.Error
		if len(cause) > 1024 { // it may be what made the result too big
			cause = strings.ToValidUTF8(cause[:1024], "") + "..."
		}
		msg = cause + "; " + msg
	}
	return &Result{
		Job: r.Job, Batch: r.Batch, Index: r.Index, Label: r.Label, Worker: r.Worker, Attempt: r.Attempt,
		Error: msg, Output: json.RawMessage("null"), Usage: r.Usage,
	}
}

// workspace is where one delivery of a job runs.
type workspace struct {
	dir     string
	name    string      // for the cache key
	shipped manifest    // nil unless shipped
	folding nameFolding // how the disk of a shipped copy matches names
	release func()      // removes a shipped copy; nil otherwise
	// held is the cache entry a shipped run stored, which goes to the
	// submitter with its result; nil unless shipped and cached.
	held *heldEntry
}

// cleanup removes a shipped copy, once however often it is called.
func (ws *workspace) cleanup() {
	if ws != nil && ws.release != nil {
		ws.release()
		ws.release = nil
	}
}

// errPermanent marks an error that running again cannot cure.
// errJobTimeout is the cause of a run ended by WorkerOptions.JobTimeout.
var errJobTimeout = errors.New("job timeout")

// errCutOff is the cause of a run stopped because its worker was cut off
// from the server for the acknowledgement wait.
var errCutOff = errors.New("cut off from the server")

// errSubmitterStopped is the cause of a run stopped because its batch's
// submitter was (see stops).
var errSubmitterStopped = errors.New("its submitter stopped the batch")

// stopsKept is how long a worker remembers a batch its submitter stopped,
// for a job of it that it takes after hearing it (the queue's purge failed,
// say).
const stopsKept = time.Hour

// stops are the batches whose submitters stopped them, and the runs of
// batches' jobs, to stop when they are.
type stops struct {
	mu      sync.Mutex
	stopped map[string]time.Time // by batch id: when
	runs    map[string]map[*context.CancelCauseFunc]bool
}

// stop stops the batch's runs; those of its jobs the worker takes in the
// next stopsKept are not started (see has).
func (s *stops) stop(batch string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if s.stopped == nil {
		s.stopped = map[string]time.Time{}
	}
	for id, at := range s.stopped {
		if now.Sub(at) > stopsKept {
			delete(s.stopped, id)
		}
	}
	s.stopped[batch] = now
	for cancel := range s.runs[batch] {
		(*cancel)(errSubmitterStopped)
	}
}

// has reports whether the batch was stopped (in the last stopsKept).
func (s *stops) has(batch string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	at, ok := s.stopped[batch]
	return ok && time.Since(at) <= stopsKept
}

// watch has cancel called when the batch is stopped, at once if it was,
// until the function it returns is called.
func (s *stops) watch(batch string, cancel context.CancelCauseFunc) (unwatch func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.stopped[batch]; ok {
		cancel(errSubmitterStopped)
	}
	if s.runs == nil {
		s.runs = map[string]map[*context.CancelCauseFunc]bool{}
	}
	if s.runs[batch] == nil {
		s.runs[batch] = map[*context.CancelCauseFunc]bool{}
	}
	key := &cancel
	s.runs[batch][key] = true
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.runs[batch], key)
		if len(s.runs[batch]) == 0 {
			delete(s.runs, batch)
		}
	}
}

type errPermanent struct{ error }

func (e errPermanent) Unwrap() error { return e.error }

// run runs one delivery of the job.
//
// It returns the cache's warnings too (an unreadable entry, a hit whose
// expected files are gone), for the submitter to show as a local batch does.
//
// Once it has the job's workspace, it tells at, which names the worker's
// paths in the job's events.
func (w *Worker) run(ctx context.Context, job Job, attempt int, events capabilities.Listener, at *eventPaths) (*runtime.Result, *workspace, []string, error) {
	_ = events(ctx, JobStart{Job: job.ID, Worker: w.opts.Name, Attempt: attempt, Workspace: job.Label})
	if w.opts.NoEvents {
		events = nil
	}
	s, release, err := w.loadSpec(job.Spec)
	if err != nil {
		return nil, &workspace{}, nil, errPermanent{err}
	}
	defer release()
	ws, err := w.workspace(ctx, job)
	at.located(ws.dir)
	if err != nil {
		return nil, ws, nil, err
	}
	if len(job.InputGlobs) > 0 {
		// A copy: the loaded spec serves every job that brings it.
		c := *s
		c.Workspace.InputGlobs = slices.Concat(s.Workspace.InputGlobs, job.InputGlobs)
		s = &c
	}
	// What the capabilities reach is judged as they will be built: with the
	// job's vars in their options. The run fills them itself, from the spec
	// as written (its cache key).
	filled, err := s.WithCapabilityVars(job.Vars)
	if err == nil {
		err = w.confine(ctx, filled, ws.dir)
	}
	if err != nil {
		return nil, ws, nil, errPermanent{asSubmitted(err, s)}
	}
	var warnings []string
	var mu sync.Mutex
	opts := []runtime.Option{
		runtime.WithWorkspace(ws.dir),
		runtime.WithInput(job.Input),
		runtime.WithVars(job.Vars),
		runtime.WithListener(events),
		runtime.WithListener(func(_ context.Context, ev capabilities.Event) error {
			if cw, ok := ev.(runtime.CacheWarning); ok {
				mu.Lock()
				warnings = append(warnings, cw.Message)
				mu.Unlock()
			}
			return nil
		}),
		runtime.WithCacheWorkspaceName(ws.name),
		runtime.WithProviderOptions(providers.Options{Credentials: &w.credentials}),
		runtime.WithCapabilityCheck(func(_ context.Context, caps []capabilities.Capability) error {
			if err := w.confineCapabilities(filled, caps, ws.dir); err != nil {
				return errPermanent{err}
			}
			return nil
		}),
	}
	switch {
	case job.NoCache || w.cache == nil:
		opts = append(opts, runtime.WithoutCache())
	case s.Cache != nil || job.Cache:
		c := w.cache
		if ws.shipped != nil {
			// Stored now, the entry would be replayed whether or not the
			// submitter applies the run's changes: it goes with the result.
			ws.held = &heldEntry{Backend: cache.KVBackend(w.cacheKV)}
			c = c.With(cache.WithBackend(ws.held))
		}
		opts = append(opts, runtime.WithCache(c))
	}
	opts = append(opts, w.opts.Options...)
	res, err := runtime.Run(ctx, s, opts...)
	mu.Lock()
	defer mu.Unlock()
	return res, ws, warnings, asSubmitted(err, s)
}

// asSubmitted is err with the problems of s it lists, or the one it is,
// placed in the files of s as its submitter knows them, not in the
// worker's copy, as loadSpec places the problems of loading it.
func asSubmitted(err error, s *spec.Spec) error {
	switch e := err.(type) {
	case spec.Errors:
		return bundleErrors(e, filepath.Dir(s.File))
	case *spec.Error:
		// One problem alone (a LocalWorkspace whose directory is
		// missing) is a spec problem all the same.
		return bundleErrors(spec.Errors{e}, filepath.Dir(s.File))
	}
	return err
}

type eventWriter struct {
	w       *Worker
	subject string
	at      *eventPaths
}

// Write publishes one event, the worker's paths in it named as the
// submitter knows them; events are for watching, so a connection that
// cannot take one does not fail the run.
func (e eventWriter) Write(p []byte) (int, error) {
	_ = e.w.q.nc.Publish(e.subject, e.at.json(bytes.TrimSuffix(p, []byte("\n"))))
	return len(p), nil
}

// eventPaths are the paths of one delivery of a job, for its events, which
// a run may write from goroutines of its own: the job's workspace is set
// once known.
type eventPaths struct {
	mu sync.Mutex
	at paths
}

func (e *eventPaths) located(dir string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.at.workspace = dir
}

func (e *eventPaths) json(line []byte) []byte {
	e.mu.Lock()
	at := e.at
	e.mu.Unlock()
	return at.json(line)
}

// JobStart is published as a worker starts a delivery of a job, before the
// run's first event.
type JobStart struct {
	Job       string `json:"job"`
	Worker    string `json:"worker"`
	Attempt   int    `json:"attempt"`
	Workspace string `json:"workspace"` // the job's label: its workspace as the submitter named it
}

// JobRetry is published when a delivery failed in a way that may pass and
// the job goes back to the queue, to be delivered again after DelayMS.
type JobRetry struct {
	Job     string `json:"job"`
	Worker  string `json:"worker"`
	Attempt int    `json:"attempt"`
	DelayMS int64  `json:"delay_ms"`
	Error   string `json:"error"`
}

func (JobStart) Kind() string { return "job.start" }
func (JobRetry) Kind() string { return "job.retry" }

// permanent reports whether running the job again cannot help: the spec or
// the job is wrong, the model failed every attempt or its script ran out, or
// the provider refused the request itself.
func permanent(err error) bool {
	var pe errPermanent
	var se spec.Errors
	var prov *providers.Error
	switch {
	case errors.As(err, &pe), errors.As(err, &se),
		errors.Is(err, runtime.ErrInvalidAnswer), errors.Is(err, runtime.ErrToolsAfterLimit),
		errors.Is(err, script.ErrExhausted), errors.Is(err, script.ErrDiverged):
		return true
	case errors.As(err, &prov):
		s := prov.StatusCode
		return s >= 400 && s < 500 && !slices.Contains([]int{http.StatusRequestTimeout, http.StatusTooManyRequests}, s)
	}
	return false
}

// describe is a failed run's error on one line, as batch prints it.
func describe(err error) string {
	return strings.Join(strings.Fields(providers.Describe(err)), " ")
}
