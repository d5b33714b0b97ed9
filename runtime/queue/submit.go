package queue

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/agentspec/agentspec/runtime"
	"github.com/agentspec/agentspec/spec"
)

// BatchOptions describe a batch to submit.
type BatchOptions struct {
	// SpecPath is the spec's file; Spec is it loaded (and checked) by the
	// caller. SpecPointer, for a spec written inline in that file (a
	// pipeline's step), is where it lies there, as a JSON pointer.
	SpecPath    string
	SpecPointer string
	Spec        *spec.Spec
	// SpecData, when set, is SpecPath's content as the caller read it,
	// and Script, when set, the script Spec's model names: the jobs run
	// them, not what the files hold when the batch is made (a pipeline
	// reads its files once, so that an edit while it runs changes none of
	// its jobs).
	SpecData []byte
	Script   *runtime.Script
	// Model, when set, replaces the spec's model on the workers, as
	// --model replaces it here; Spec was loaded with it.
	Model string
	// Input, Vars and NoCache apply to every job. Cache asks workers to
	// use their cache though the spec has no cache: of its own (a
	// pipeline's cache: applies to it).
	Input   string
	Vars    map[string]string
	NoCache bool
	Cache   bool
	// InputGlobs are added to the spec's input_globs on the workers, for
	// every job: patterns whose files its cache key covers too (a pipeline's
	// glob fan-out item's file).
	InputGlobs []string
	// Workspaces are the job directories, one job each, as the submitter
	// names them.
	Workspaces []string
	// WorkspaceRoot is where the workspaces lie on the storage the workers
	// share: each job names its workspace relative to it, and a worker finds
	// it under its own --workspace-root. Unused with Ship.
	WorkspaceRoot string
	// Ship sends each workspace with its job instead, and brings back what
	// the run changed; ShipMax caps each archive (DefaultShipMax when zero).
	Ship    bool
	ShipMax int64
	// Claim, when set, is asked for each file a shipped job's changes
	// touch, by its absolute path here, before any is applied: a reason
	// refuses them all, as a protected path would. A pipeline's fan-out
	// uses it to keep two items off one file.
	Claim func(file string) (refusal string)
}

// Batch is a submitted batch.
type Batch struct {
	q         *Queue
	ID        string
	Jobs      []Job
	dirs      []string   // the submitter's directory of each job
	real      []string   // and its real path
	manifest  []manifest // what was shipped, per job
	shipMax   int64
	shipTTL   time.Duration     // how long the object store keeps what is shipped (0: for ever), as it said when the batch shipped
	spec      *spec.Spec        // asked what ships and what comes back (pathGuards)
	specFiles []string          // the spec's own files, real paths
	own       []map[string]bool // the spec's own files in each job's directory
	subs      []*nats.Subscription
	claim     func(file string) string // BatchOptions.Claim
	seqs      []uint64                 // each job's sequence in the jobs stream, once published

	// fetched, when set (by tests), runs as a shipped job's changes have
	// been fetched.
	fetched func()
	// beforeWithdraw, when set (by tests), runs as an interrupted Wait has
	// asked which jobs the workers hold and before it withdraws the rest.
	beforeWithdraw func()
	// lostEvery, when set (by tests), replaces lostCheck.
	lostEvery time.Duration
}

// JobOutcome is a job's result as the submitter sees it.
type JobOutcome struct {
	Result
	// Workspace is the submitter's directory of the job.
	Workspace string
	// Err is why the job failed (its result's error, or the failure to
	// apply a shipped job's changes); nil when it succeeded.
	Err error
	// NotRun: the batch was interrupted before the job ended.
	NotRun bool
}

// NewBatch prepares the jobs of a batch; nothing is sent yet.
func (q *Queue) NewBatch(opts BatchOptions) (*Batch, error) {
	bundle, err := bundleOf(opts)
	if err != nil {
		return nil, err
	}
	bundle.Pointer, bundle.Model = opts.SpecPointer, opts.Model
	if len(opts.Workspaces) > MaxBatchJobs {
		return nil, fmt.Errorf("%d workspaces: a batch holds at most %d jobs", len(opts.Workspaces), MaxBatchJobs)
	}
	// What ships and what comes back is asked of the capabilities as the
	// jobs will build them: with the vars in their options.
	guarded, err := opts.Spec.WithCapabilityVars(opts.Vars)
	if err != nil {
		return nil, err
	}
	b := &Batch{q: q, ID: nuid.Next(), shipMax: opts.ShipMax, shipTTL: resultsAge, spec: guarded, claim: opts.Claim}
	// The spec and its script are never changed by a run, wherever they lie.
	var specFiles []string
	for _, f := range append([]string{opts.SpecPath}, bundledPaths(opts.SpecPath, bundle)...) {
		if real, err := filepath.EvalSymlinks(f); err == nil {
			if real, err = filepath.Abs(real); err == nil {
				specFiles = append(specFiles, real)
			}
		}
	}
	b.specFiles = specFiles
	if b.shipMax <= 0 {
		b.shipMax = DefaultShipMax
	}
	var root string
	if !opts.Ship {
		if root, err = realDir(opts.WorkspaceRoot); err != nil {
			return nil, fmt.Errorf("workspace root: %w", err)
		}
	}
	host, _ := os.Hostname()
	for i, dir := range opts.Workspaces {
		real, err := realDir(dir)
		if err != nil {
			return nil, fmt.Errorf("workspace %s: %w", dir, err)
		}
		job := Job{
			ID: jobID(b.ID, i), Batch: b.ID, Index: i, Label: dir,
			Spec: bundle, Input: opts.Input, Vars: opts.Vars, NoCache: opts.NoCache, Cache: opts.Cache,
			InputGlobs: opts.InputGlobs,
		}
		if opts.Ship {
			job.Ship = &Shipped{Object: job.ID, Origin: host + ":" + filepath.ToSlash(real)}
			own := map[string]bool{}
			for _, f := range specFiles {
				if rel, err := filepath.Rel(real, f); err == nil && within(real, f) {
					own[filepath.ToSlash(rel)] = true
				}
			}
			b.own = append(b.own, own)
		} else if job.Workspace, err = nameUnder(root, opts.WorkspaceRoot, dir, real); err != nil {
			return nil, err
		}
		b.Jobs = append(b.Jobs, job)
		b.dirs = append(b.dirs, dir)
		b.real = append(b.real, real)
	}
	b.manifest = make([]manifest, len(b.Jobs))
	return b, nil
}

// WorkspaceName is how a job names its workspace dir to the workers: its
// path relative to root, the workspace root on the storage they share. It
// fails, before anything is published, where a worker would refuse the job:
// dir is not a directory below root (root itself included), or lies in the
// workers' own directory of shipped workspaces. Whether it holds the
// temporary directory, or is a worker's scratch directory there, is left
// to the workers, whose temporary directory it is.
func WorkspaceName(root, dir string) (string, error) {
	realRoot, err := realDir(root)
	if err != nil {
		return "", fmt.Errorf("workspace root: %w", err)
	}
	real, err := realDir(dir)
	if err != nil {
		return "", fmt.Errorf("workspace %s: %w", dir, err)
	}
	return nameUnder(realRoot, root, dir, real)
}

// nameUnder is WorkspaceName of the real paths realRoot and real, which the
// caller named root and dir.
func nameUnder(realRoot, root, dir, real string) (string, error) {
	rel, err := filepath.Rel(realRoot, real)
	switch {
	case err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)):
		return "", fmt.Errorf("workspace %s is not under the workspace root %s (--workspace-root names the directory the workers share)", dir, root)
	case rel == ".":
		return "", fmt.Errorf("workspace %s is the workspace root %s itself; a job's workspace must be a directory below it", dir, root)
	}
	// The worker's own check, on the same tree; but for the temporary
	// directory, which is the worker's, not this one's.
	if _, err := resolveUnder(realRoot, filepath.ToSlash(rel)); err != nil {
		return "", err
	}
	return filepath.ToSlash(rel), nil
}

func realDir(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return "", errors.New("no such directory")
	}
	if err != nil {
		return "", err
	}
	if st, err := os.Stat(abs); err != nil || !st.IsDir() {
		return "", errors.New("not a directory")
	}
	return abs, nil
}

// Events calls fn with each event of the batch's jobs, from now on, until
// Close: the job's index and the event's JSON. Call it before Publish to
// miss none. fn is called from one goroutine at a time.
func (b *Batch) Events(fn func(index int, event []byte)) error {
	if err := checkBatchID(b.ID); err != nil {
		return err
	}
	var mu sync.Mutex
	sub, err := b.q.nc.Subscribe(EventsPrefix+b.ID+".*", func(m *nats.Msg) {
		i, err := strconv.Atoi(m.Subject[strings.LastIndexByte(m.Subject, '.')+1:])
		if err != nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		fn(i, m.Data)
	})
	if err != nil {
		return err
	}
	_ = sub.SetPendingLimits(-1, -1) // a burst of events must not be dropped
	b.subs = append(b.subs, sub)
	return nil
}

// Close ends the event subscription once the events the server had sent
// are handled (waiting a few seconds at most).
func (b *Batch) Close() {
	_ = b.q.nc.Flush()
	for _, s := range b.subs {
		closed := s.StatusChanged(nats.SubscriptionClosed)
		if s.Drain() != nil {
			continue
		}
		select {
		case <-closed:
		case <-time.After(5 * time.Second):
		}
	}
	b.subs = nil
}

// Publish ships the workspaces, when the batch ships them, and publishes
// every job. When it fails part way, it withdraws what it had published.
func (b *Batch) Publish(ctx context.Context) error {
	err := b.publish(ctx)
	if err != nil {
		b.withdraw(ctx)
	}
	return err
}

// withdraw removes the batch's jobs from the queue and tells the workers
// running some of them to stop those runs, trying for a few seconds. Their
// shipped workspaces expire from the object store with its one-day TTL.
func (b *Batch) withdraw(ctx context.Context) {
	if checkBatchID(b.ID) != nil {
		return // "*" would withdraw every batch's jobs
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = b.q.jobs.Purge(wctx, jetstream.WithPurgeSubject(b.q.jobSubject(b.ID, "*")))
	// After the purge no worker takes a job of the batch: those running
	// were taken before, by workers that hear this (see Worker.Run).
	if b.q.nc.Publish(b.q.cancelSubject(b.ID), nil) == nil {
		_ = b.q.nc.FlushWithContext(wctx)
	}
}

func (b *Batch) publish(ctx context.Context) error {
	// The ids make the subjects: a job the workers would refuse is not sent.
	if err := checkBatchID(b.ID); err != nil {
		return err
	}
	for i := range b.Jobs {
		if err := b.Jobs[i].checkIDs(); err != nil {
			return err
		}
		if b.Jobs[i].Batch != b.ID || b.Jobs[i].Index != i {
			return fmt.Errorf("job %s is not job %d of batch %s", b.Jobs[i].ID, i, b.ID)
		}
	}
	var obs jetstream.ObjectStore
	var acks []jetstream.PubAckFuture
	for i, job := range b.Jobs {
		if job.Ship != nil {
			if obs == nil {
				var err error
				if obs, err = b.q.shipStore(ctx); err != nil {
					return err
				}
				// Known now, for an error that must do without the
				// server (see fetchChanges).
				if st, err := obs.Status(ctx); err == nil {
					b.shipTTL = st.TTL()
				}
			}
			// What the model could never read stays here.
			guards, err := newPathGuards(ctx, b.spec, b.dirs[i], b.specFiles)
			if err != nil {
				return fmt.Errorf("shipping %s: %w", b.dirs[i], err)
			}
			m, err := shipTo(ctx, obs, job.Ship.Object, b.dirs[i], "", b.shipMax, func(rel string) bool { return !guards.secret(rel) })
			guards.Close()
			if err != nil {
				return fmt.Errorf("shipping %s: %w", b.dirs[i], err)
			}
			b.manifest[i] = m
		}
		data, err := json.Marshal(job)
		if err != nil {
			return err
		}
		// Published without waiting for each acknowledgement: the workers
		// start on the first jobs while the rest go out.
		f, err := b.q.js.PublishAsync(b.q.jobSubject(b.ID, strconv.Itoa(i)), data, jetstream.WithMsgID(job.ID))
		if err != nil {
			return fmt.Errorf("publishing job %s: %w", job.ID, err)
		}
		acks = append(acks, f)
	}
	b.seqs = make([]uint64, len(b.Jobs))
	for i, f := range acks {
		select {
		case ack := <-f.Ok():
			b.seqs[i] = ack.Sequence
		case err := <-f.Err():
			return fmt.Errorf("publishing job %s: %w", b.Jobs[i].ID, err)
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	return nil
}

// Wait collects the results as they come, calling fn with each (one at a
// time, each job once), until every job has one; a shipped job's changes
// are applied to its directory first. When ctx ends first, the results
// stored by then are reported all the same (those jobs ran), the jobs not
// yet handed to a worker are withdrawn from the queue, the workers running
// the others are told to stop them (each reports its job interrupted by
// its submitter), and their results, those of the jobs taken as the rest
// were withdrawn included, are waited for, five seconds at most,
// and reported as the others; every job still without a result is reported
// NotRun, and Wait returns an error wrapping runtime.ErrInterrupted. When
// the results stop coming (the connection closed), Wait returns an error
// saying so, and the jobs without a result, which may yet run, are not
// reported. When the connection comes back after it was lost for longer
// than the results stream keeps results, the jobs whose results expired
// meanwhile are reported failed, saying so (see lost).
func (b *Batch) Wait(ctx context.Context, fn func(JobOutcome)) (runtime.BatchSummary, error) {
	start := time.Now()
	sum := runtime.BatchSummary{Total: len(b.Jobs)}
	if err := checkBatchID(b.ID); err != nil {
		return sum, err
	}
	seen := make([]bool, len(b.Jobs))
	done := 0
	report := func(r Result) {
		if seen[r.Index] {
			return // a job that ran twice: its first result stands
		}
		seen[r.Index] = true
		done++
		out := b.outcome(ctx, r)
		switch {
		case out.Err != nil:
			sum.Failed++
		default:
			sum.OK++
			if out.Cached {
				sum.Cached++
			}
		}
		fn(out)
	}
	// ctx may have ended before Wait began (Ctrl-C as the jobs went out):
	// that is an interruption as any other.
	if err := b.receive(ctx, 0, func() bool { return done == len(b.Jobs) }, report, true); err != nil && ctx.Err() == nil {
		sum.Elapsed = time.Since(start)
		return sum, err
	}
	sum.Elapsed = time.Since(start)
	if sum.OK+sum.Failed == sum.Total {
		return sum, nil
	}
	// Interrupted: the results stored by then, which the iterator had not
	// handed out, are the jobs' that ran.
	stored, last := b.stored(ctx, seen)
	for _, r := range stored {
		report(r)
	}
	if sum.OK+sum.Failed == sum.Total {
		sum.Elapsed = time.Since(start)
		return sum, nil
	}
	cause := context.Cause(ctx)
	running, delivered := b.running(ctx, seen)
	if b.beforeWithdraw != nil {
		b.beforeWithdraw()
	}
	b.withdraw(ctx)
	// A job handed out after that question and before the purge runs
	// until its worker hears the stop, and has its result stored too.
	running = append(running, b.handedOutSince(ctx, seen, delivered)...)
	if len(running) > 0 {
		// The workers told to stop store a result for each of these: what
		// is reported is what happened to them, not that they did not run.
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopWait)
		_ = b.receive(wctx, last+1, func() bool {
			return !slices.ContainsFunc(running, func(i int) bool { return !seen[i] })
		}, report, false)
		cancel()
	}
	for i, ok := range seen {
		if !ok {
			sum.NotRun++
			fn(JobOutcome{Result: Result{Job: b.Jobs[i].ID, Batch: b.ID, Index: i, Label: b.Jobs[i].Label},
				Workspace: b.dirs[i], NotRun: true, Err: fmt.Errorf("%w: %w", runtime.ErrNotRun, cause)})
		}
	}
	sum.Elapsed = time.Since(start)
	return sum, fmt.Errorf("%w: %w", runtime.ErrInterrupted, cause)
}

// receive hands report each result of the batch's jobs as it comes, those
// stored from the results stream's sequence from on (all of them when from
// is 0), until all says every job has one, ctx ends or the results stop
// coming. With watchLost, once the connection has come back after it was
// lost, the results that expired meanwhile are reported as failures that
// say so (see lost): their jobs would otherwise be waited for in vain.
func (b *Batch) receive(ctx context.Context, from uint64, all func() bool, report func(Result), watchLost bool) error {
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: []string{b.q.resultSubject("*", b.ID, "*")}}
	if from > 0 {
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, from
	}
	cons, err := b.q.js.OrderedConsumer(ctx, b.q.results.CachedInfo().Config.Name, cfg)
	if err != nil {
		return err
	}
	it, err := cons.Messages()
	if err != nil {
		return err
	}
	defer it.Stop()
	stopped := make(chan struct{})
	defer close(stopped)
	go func() {
		select {
		case <-ctx.Done():
			it.Stop()
		case <-stopped:
		}
	}()
	every := lostCheck
	if b.lostEvery > 0 {
		every = b.lostEvery
	}
	checked := b.q.nc.Stats().Reconnects
	for !all() {
		msg, err := it.Next(jetstream.NextMaxWait(every))
		if err != nil && ctx.Err() != nil {
			break
		}
		if errors.Is(err, jetstream.ErrMsgIteratorClosed) {
			// The connection closed: the jobs without a result may yet run.
			return fmt.Errorf("the results stopped coming: %w", err)
		}
		if errors.Is(err, nats.ErrTimeout) && watchLost {
			// Results stored while the connection was gone are still to
			// come, unless they expired meanwhile.
			if n := b.q.nc.Stats().Reconnects; n != checked {
				if lost, ok := b.lost(ctx); ok {
					checked = n
					for _, r := range lost {
						report(r)
					}
				}
			}
			continue
		}
		if err != nil {
			continue // a reconnect, say: the ordered consumer resumes where it was
		}
		// A result that came is reported, though ctx ended meanwhile.
		if r, ok := b.result(msg.Data()); ok {
			report(r)
		}
	}
	return nil
}

// lostCheck is how long a Wait whose connection came back waits for a
// result before it asks which results expired meanwhile.
const lostCheck = 10 * time.Second

// lost are failed results standing for the batch's jobs whose results the
// results stream no longer holds though their workers stored them: those
// no longer in the queue (a worker settles a job once its result is
// stored) with no result in the stream. The stream keeps results for its
// max age (a day, unless it was made with another): a submitter away from
// the server longer than that, its connection lost, never gets them. ok is
// false when the server did not answer.
func (b *Batch) lost(ctx context.Context) (_ []Result, ok bool) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	// The queue first: a job settled after this has its result stored
	// before the stream is asked.
	queued, err := b.q.jobs.Info(ctx, jetstream.WithSubjectFilter(b.q.jobSubject(b.ID, "*")))
	if err != nil {
		return nil, false
	}
	stored, err := b.q.results.Info(ctx, jetstream.WithSubjectFilter(b.q.resultSubject("*", b.ID, "*")))
	if err != nil {
		return nil, false
	}
	has := make([]bool, len(b.Jobs))
	for _, subjects := range []map[string]uint64{queued.State.Subjects, stored.State.Subjects} {
		for subject := range subjects {
			if i, err := strconv.Atoi(subject[strings.LastIndexByte(subject, '.')+1:]); err == nil && i >= 0 && i < len(has) {
				has[i] = true
			}
		}
	}
	// Without a max age, results do not expire: one the stream lacks was
	// removed otherwise.
	kept, why := "has no max age", "as when a limit of its own or a purge removed it"
	if age := stored.Config.MaxAge; age > 0 {
		kept = "keeps results for " + durationString(age)
		why = "as when this submitter's connection to the server was lost for longer than that"
	}
	msg := fmt.Sprintf("its result is gone: the job left the queue, but the stream %s, which %s, holds none for it, "+
		"%s; what the run did is not known here", stored.Config.Name, kept, why)
	var out []Result
	for i, job := range b.Jobs {
		if !has[i] {
			out = append(out, Result{Job: job.ID, Batch: b.ID, Index: i, Label: job.Label, Error: msg,
				Output: json.RawMessage("null"), Usage: json.RawMessage("null")})
		}
	}
	return out, true
}

// durationString writes d without the zero units Duration.String ends
// with: 24h, not 24h0m0s.
func durationString(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// result reads a message of the results stream as a result of one of the
// batch's jobs; false when it is not one.
func (b *Batch) result(data []byte) (Result, bool) {
	var r Result
	if err := json.Unmarshal(data, &r); err != nil || r.Batch != b.ID || r.Index < 0 || r.Index >= len(b.Jobs) {
		return Result{}, false
	}
	return r, true
}

// stored are the results the stream holds for the jobs of the batch not in
// seen, each job's first, in the jobs' order, and the stream's last
// sequence as it told them (0 when it did not): a result stored later comes
// after it. It asks for a few seconds at most, whether ctx has ended or not.
func (b *Batch) stored(ctx context.Context, seen []bool) (_ []Result, last uint64) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	info, err := b.q.results.Info(ctx, jetstream.WithSubjectFilter(b.q.resultSubject("*", b.ID, "*")))
	if err != nil {
		return nil, 0
	}
	var indexes []int
	for subject := range info.State.Subjects {
		i, err := strconv.Atoi(subject[strings.LastIndexByte(subject, '.')+1:])
		if err == nil && i >= 0 && i < len(seen) && !seen[i] {
			indexes = append(indexes, i)
		}
	}
	slices.Sort(indexes)
	var out []Result
	for _, i := range slices.Compact(indexes) { // a job may have an ok and a failed result
		m, err := b.q.results.GetMsg(ctx, 1, jetstream.WithGetMsgSubject(b.q.resultSubject("*", b.ID, strconv.Itoa(i))))
		if err != nil {
			continue
		}
		if r, ok := b.result(m.Data); ok && r.Index == i {
			out = append(out, r)
		}
	}
	return out, info.State.LastSeq
}

// stopWait bounds how long an interrupted Wait waits for the results of
// the jobs whose workers it told to stop: a run stops between tool calls,
// and its model request or tool call under way is cancelled.
const stopWait = 5 * time.Second

// running are the jobs of the batch not in seen that the workers' consumer
// has handed out and that are still in the queue: those a worker runs, or
// held for a retry, or lost with a worker the server has not given up on.
// It asks for a few seconds at most, whether ctx has ended or not; none
// when the server does not answer.
// It returns too how far the consumer had handed jobs out then (nil when
// the server did not answer), for handedOutSince.
func (b *Batch) running(ctx context.Context, seen []bool) ([]int, *jetstream.SequenceInfo) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	info, err := b.consumerInfo(ctx)
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		return nil, &jetstream.SequenceInfo{} // no worker has started yet
	}
	if err != nil {
		return nil, nil
	}
	// The consumer hands jobs out in the stream's order: those up to its
	// last delivered sequence were handed out, and those up to its
	// acknowledgement floor are settled and gone.
	var out []int
	for seq := info.AckFloor.Stream + 1; seq <= info.Delivered.Stream; seq++ {
		m, err := b.q.jobs.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(b.q.jobSubject(b.ID, "*")))
		if err != nil || m.Sequence > info.Delivered.Stream {
			break
		}
		seq = m.Sequence
		i, err := strconv.Atoi(m.Subject[strings.LastIndexByte(m.Subject, '.')+1:])
		if err == nil && i >= 0 && i < len(seen) && !seen[i] {
			out = append(out, i)
		}
	}
	return out, &info.Delivered
}

// consumerInfo asks the server for the workers' consumer's state.
func (b *Batch) consumerInfo(ctx context.Context) (*jetstream.ConsumerInfo, error) {
	cons, err := b.q.jobs.Consumer(ctx, consumerName)
	if err != nil {
		return nil, err
	}
	return cons.Info(ctx)
}

// handedOutSince are the jobs of the batch not in seen that the workers'
// consumer may have handed out since it had handed out up to before (see
// running), asked once the batch's jobs are purged, when no more of them
// can be. The purge makes the consumer forget the deliveries of the jobs
// it removes, so which jobs were handed out is inferred: the consumer hands
// jobs out in the stream's order, so the jobs handed out since are among
// the batch's first not yet handed out then, no more of them than the
// deliveries it made since. It may name a job the deliveries went to
// another batch's, or a retry of: its result is waited for in vain, the
// few seconds of stopWait. None when the server does not answer, or the
// jobs' sequences are not known (Publish did not return).
func (b *Batch) handedOutSince(ctx context.Context, seen []bool, before *jetstream.SequenceInfo) []int {
	if before == nil || len(b.seqs) != len(b.Jobs) {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	info, err := b.consumerInfo(ctx)
	if err != nil || info.Delivered.Consumer <= before.Consumer {
		return nil
	}
	var next []int
	for i, seq := range b.seqs {
		if seq > before.Stream && !seen[i] {
			next = append(next, i)
		}
	}
	slices.SortFunc(next, func(i, j int) int { return cmp.Compare(b.seqs[i], b.seqs[j]) })
	return next[:min(uint64(len(next)), info.Delivered.Consumer-before.Consumer)]
}

// outcome turns a result into what the submitter reports, applying a
// shipped job's changes.
func (b *Batch) outcome(ctx context.Context, r Result) JobOutcome {
	// Whoever published it, a result's words reach a terminal: no control
	// sequence of theirs does.
	r.Error, r.Worker, r.Label = printable(r.Error), printable(r.Worker), b.Jobs[r.Index].Label
	for i, w := range r.Warnings {
		r.Warnings[i] = printable(w)
	}
	// The cache entry is the submitter's to store (below), not a part of
	// what it reports.
	entry := r.Entry
	r.Entry = nil
	out := JobOutcome{Result: r, Workspace: b.dirs[r.Index]}
	if !r.OK {
		out.Err = errors.New(r.Error)
	}
	job := b.Jobs[r.Index]
	if job.Ship == nil {
		return out
	}
	// The result says what changed and where the files are: it is checked
	// as what anyone could have published.
	// Each delivery's changes are an object of their own: those of the
	// delivery whose result this is are the ones applied, whatever another
	// delivery, which lost the job, sent after them.
	var changes string
	var err error
	if r.Changes != nil && (len(r.Changes.Files) > 0 || len(r.Changes.Deleted) > 0) {
		var archive []byte
		switch {
		case len(r.Changes.Files) > 0 && !isChangesObject(r.Changes.Object, job.Ship.Object):
			err = fmt.Errorf("the changes of job %s are not in %s but in %.80q", job.ID, changesObject(job.Ship.Object, "*"), r.Changes.Object)
		case len(r.Changes.Files) > 0:
			changes = r.Changes.Object
			archive, err = b.fetchChanges(ctx, changes)
		}
		// Once the changes are here they are applied, though ctx ended
		// meanwhile: nothing below waits on the network.
		var guards *pathGuards
		if err == nil {
			guards, err = newPathGuards(context.WithoutCancel(ctx), b.spec, b.dirs[r.Index], b.specFiles)
		}
		if err == nil {
			own := b.own[r.Index]
			err = applyChanges(b.dirs[r.Index], b.manifest[r.Index], r.Changes, archive, b.shipMax*unpackFactor,
				func(rel string) string {
					if own[rel] {
						return rel + ": the spec's own file"
					}
					if why := guards.refusal(rel); why != "" || b.claim == nil {
						return why
					}
					if why := b.claim(filepath.Join(b.real[r.Index], filepath.FromSlash(rel))); why != "" {
						return rel + ": " + why
					}
					return ""
				})
			guards.Close()
		}
	}
	if err != nil {
		out.OK, out.Cached = false, false
		out.Output = json.RawMessage("null")
		msg := "bringing back the run's changes: " + err.Error()
		if r.Error != "" {
			msg = r.Error + "; " + msg
		}
		out.Error, out.Err = msg, errors.New(msg)
		return out
	}
	// The shipped copy, and the changes once applied, are of no more use,
	// though ctx ended meanwhile; whatever stays, the store expires after a
	// day.
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if obs, err := b.q.shipStore(dctx); err == nil {
		_ = obs.Delete(dctx, job.Ship.Object)
		if changes != "" {
			_ = obs.Delete(dctx, changes)
		}
	}
	// Its changes applied, the run's answer may be replayed.
	if r.OK && entry != nil {
		if err := b.storeEntry(ctx, entry); err != nil {
			out.Warnings = append(out.Warnings, printable(err.Error()))
		}
	}
	return out
}

// fetchChanges gets a shipped job's changes, the object named changes in
// the ship store. Its error says where they are: none was applied.
func (b *Batch) fetchChanges(ctx context.Context, changes string) ([]byte, error) {
	var archive []byte
	var obs jetstream.ObjectStore
	err := context.Cause(ctx)
	if err == nil {
		if obs, err = b.q.shipStore(ctx); err == nil {
			archive, err = obs.GetBytes(ctx, changes)
		}
	}
	kept := "for a day"
	switch {
	case b.shipTTL <= 0:
		kept = "until removed (the store has no max age)"
	case b.shipTTL != 24*time.Hour:
		kept = "for " + durationString(b.shipTTL)
	}
	stay := fmt.Sprintf("none was applied, and they stay in the object store %s as %s %s", b.q.shipBucket(), changes, kept)
	switch {
	case errors.Is(err, jetstream.ErrObjectNotFound):
		return nil, b.q.goneFromShip(ctx, obs, changes, "this submitter's connection to the server was lost")
	case err != nil && ctx.Err() != nil:
		return nil, fmt.Errorf("interrupted (%w) before they were fetched; %s", context.Cause(ctx), stay)
	case err != nil:
		return nil, fmt.Errorf("%w; %s", err, stay)
	}
	if b.fetched != nil {
		b.fetched()
	}
	return archive, nil
}

// printable is s with its control characters (but tabs)
// made U+FFFD.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) && r != '\t' {
			return unicode.ReplacementChar
		}
		return r
	}, s)
}
