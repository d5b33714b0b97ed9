package runtime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/runtime/providers"
	"github.com/agentspec/agentspec/spec"
)

// ErrNotRun is the error of a batch job that never started: the batch was
// interrupted before the job was handed out, or before its first model
// request, so nothing was done in its workspace.
var ErrNotRun = errors.New("not run")

// Job is one run of a batch: the workspace it works in.
type Job struct {
	Index     int    // in the batch's list of workspaces
	Workspace string // as given to Batch
}

type jobKey struct{}

// JobFrom returns the batch job a context belongs to. A batch runs each job
// with such a context, so that a listener shared by every job (the events
// are delivered with it) can tell them apart.
func JobFrom(ctx context.Context) (Job, bool) {
	j, ok := ctx.Value(jobKey{}).(Job)
	return j, ok
}

// JobResult is how one job of a batch ended.
type JobResult struct {
	Job
	// Result is the run's result; nil when the job did not run, or failed
	// before the model was reached.
	Result *Result
	// Err is the run's error; it wraps ErrNotRun when the job never started.
	Err error
}

// BatchOptions configure Batch.
type BatchOptions struct {
	// Concurrency is how many jobs run at a time; zero or less means the
	// number of CPUs.
	Concurrency int
	// Options apply to every run; a WithWorkspace among them is overridden by
	// each job's workspace. What they hold is shared by the jobs running at
	// the same time: listeners and validators are called from several jobs
	// at once (JobFrom tells them apart), capabilities given with
	// WithCapabilities serve every job, and a model given with WithModel must
	// be safe for concurrent use and hold no conversation state (a
	// script.Model does not qualify: name it in the spec instead, as `model:
	// script:FILE`, and each job loads its own).
	Options []Option
	// OnResult is called as each job ends, in the order they end, one call at
	// a time. Jobs that never started are reported last, in order.
	OnResult func(JobResult)
	// OnStart, when set, is called as each job starts, before its run's
	// first event, from the goroutine that runs it: calls for jobs running
	// at the same time are concurrent.
	OnStart func(Job)
}

// BatchSummary counts what a batch did.
type BatchSummary struct {
	Total   int // jobs given
	OK      int // runs that succeeded, cached ones included
	Failed  int // runs that failed (interrupted ones included)
	Cached  int // successful runs replayed from the cache
	NotRun  int // jobs that never started
	Elapsed time.Duration
}

// Batch runs the spec once per workspace, opts.Concurrency at a time, each
// run confined to its own workspace: the spec's capabilities are built per
// job with that job's directory, and the model named by the spec is built
// per job too, though what the AWS credential chain finds, and Google's
// Application Default Credentials with their token, are looked up once and
// shared by the jobs (a providers.CredentialCache, unless the
// providers.Options given with WithProviderOptions name one of their own).
// What does not depend on the workspace (the instructions and
// their variables, the schemas and checks, the model's script file or
// settings, the cache's configuration) is checked once, before any job
// starts; a problem there is returned without running anything.
//
// A failing job does not stop the others. When ctx ends, the runs in
// progress stop between tool calls (as Run does), no job starts any more, and
// those left, with those stopped before their first model request, are
// reported with ErrNotRun; Batch then returns an error
// wrapping ErrInterrupted. Otherwise it returns nil, however many jobs
// failed: the summary and OnResult tell.
func Batch(ctx context.Context, s *spec.Spec, workspaces []string, opts BatchOptions) (BatchSummary, error) {
	start := time.Now()
	sum := BatchSummary{Total: len(workspaces)}
	cfg := newConfig(opts.Options)
	if cfg.providers.Credentials == nil {
		// The jobs build their models alike: the credentials one finds
		// serve them all, looked up once.
		cfg.providers.Credentials = providers.NewCredentialCache()
	}
	p, err := prepare(s, cfg)
	if err != nil {
		return sum, err
	}
	workers := opts.Concurrency
	if workers <= 0 {
		workers = goruntime.NumCPU()
	}
	workers = min(workers, len(workspaces))

	var mu sync.Mutex
	report := func(r JobResult) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case errors.Is(r.Err, ErrNotRun):
			sum.NotRun++
		case r.Err != nil:
			sum.Failed++
		default:
			sum.OK++
			if r.Result != nil && r.Result.Cached {
				sum.Cached++
			}
		}
		if opts.OnResult != nil {
			opts.OnResult(r)
		}
	}

	// Jobs are handed out in order; a worker that finds the batch
	// interrupted stops taking them, and the rest are reported below.
	var next atomic.Int64
	take := func() (Job, bool) {
		if ctx.Err() != nil {
			return Job{}, false
		}
		i := int(next.Add(1) - 1)
		if i >= len(workspaces) {
			return Job{}, false
		}
		return Job{Index: i, Workspace: workspaces[i]}, true
	}
	// taken are the jobs handed out as the batch was interrupted, which
	// stopped before their first model request: nothing was done in their
	// workspaces, so they did not run.
	var taken []Job
	// The working directory is looked up once for the batch, not once per
	// job (filepath.Abs stats "." and $PWD each time); a job's workspace is
	// still reported as given.
	cwd, cwdErr := os.Getwd()
	absolute := func(ws string) string {
		if cwdErr != nil || filepath.IsAbs(ws) {
			return ws
		}
		return filepath.Join(cwd, ws)
	}
	if err := p.refuseSharedWorkspaces(ctx, workspaces, absolute); err != nil {
		return sum, err
	}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for job, ok := take(); ok; job, ok = take() {
				if opts.OnStart != nil {
					opts.OnStart(job)
				}
				res, err := p.run(context.WithValue(ctx, jobKey{}, job), absolute(job.Workspace))
				if ctx.Err() != nil && errors.Is(err, ErrInterrupted) && (res == nil || res.Usage.Requests == 0) {
					mu.Lock()
					taken = append(taken, job)
					mu.Unlock()
					continue
				}
				report(JobResult{Job: job, Result: res, Err: err})
			}
		})
	}
	wg.Wait()

	if ctx.Err() == nil || sum.OK == sum.Total {
		sum.Elapsed = time.Since(start)
		return sum, nil
	}
	cause := interrupted(ctx)
	notRun := taken
	for i := int(min(next.Load(), int64(len(workspaces)))); i < len(workspaces); i++ {
		notRun = append(notRun, Job{Index: i, Workspace: workspaces[i]})
	}
	slices.SortFunc(notRun, func(a, b Job) int { return a.Index - b.Index })
	for _, job := range notRun {
		report(JobResult{Job: job, Err: fmt.Errorf("%w: %w", ErrNotRun, cause)})
	}
	sum.Elapsed = time.Since(start)
	return sum, cause
}

// refuseSharedWorkspaces refuses a batch in which a spec entry that sets the
// run's workspace (LocalWorkspace) gives two jobs one directory, as an
// absolute working_dir gives every job: the jobs would work on the same
// files at once. A job whose workspace cannot be resolved is left to fail on
// its own.
func (p *plan) refuseSharedWorkspaces(ctx context.Context, workspaces []string, absolute func(string) string) error {
	if len(workspaces) < 2 || !p.setsWorkspace() {
		return nil
	}
	seen := make(map[string]string, len(workspaces))
	for _, given := range workspaces {
		ws, err := spec.RunWorkspace(ctx, p.spec, p.cfg.registry, p.setup(absolute(given)))
		if err != nil {
			continue
		}
		dir := filepath.Clean(ws.Dir)
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			dir = real
		}
		if first, ok := seen[dir]; ok && first != given {
			return fmt.Errorf("the spec's workspace entry gives the jobs of %s and %s the same directory, %s: they would work on the same files at once", first, given, ws.Dir)
		}
		seen[dir] = given
	}
	return nil
}

// setsWorkspace reports whether an entry of the spec sets the run's
// workspace.
func (p *plan) setsWorkspace() bool {
	reg := p.cfg.registry
	if reg == nil {
		reg = capabilities.Default()
	}
	for _, c := range p.spec.Capabilities {
		if t, ok := reg.Lookup(c.Name); ok && t.SetsWorkspace {
			return true
		}
	}
	return false
}
