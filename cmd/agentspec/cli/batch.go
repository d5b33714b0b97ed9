package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/internal/text"
	"github.com/agentspec/agentspec/runtime"
	"github.com/agentspec/agentspec/spec"
)

type batchFlags struct {
	jobs      int
	noCache   bool
	vars      []string
	input     string
	inputFile string
	quiet     bool
	model     string
	queue     queueBatchFlags // --nats and its companions, and --events
}

func newBatchCmd() *cobra.Command {
	var f batchFlags
	cmd := &cobra.Command{
		Use:   "batch SPEC DIR... [--nats URL]",
		Short: "Run an agent spec once per workspace",
		Annotations: map[string]string{secondSignalLeaves: "the running jobs are not waited for and the jobs " +
			"not run get no line, jobs sent to the queue are not withdrawn, MCP servers the jobs started are " +
			"left to exit as their input closes, and Shell commands run with sandbox: off go on"},
		Long: `Batch loads SPEC once and runs it once per workspace DIR, -j at a time (default: the number
of CPUs). Each run is confined to its own workspace, as "agentspec run --workspace DIR" would
be: its capabilities are built with that directory, its checks and cache key cover that
directory's files. A DIR holding *, ? or [ is a pattern, expanded by agentspec itself (so it
works without a shell, and quoted): the directories it matches, files left out. The workspaces
are sorted and run once each, however many arguments name them; a workspace inside another is
refused (exit 2), since the outer job could change the inner one's files while it runs, and
so (exit 1, before any job starts) is a spec whose LocalWorkspace gives two jobs one directory,
as an absolute working_dir does.

Every run gets the same input (--input, --input-file) and variables (--var: one per {{name}}
placeholder of the instructions, no more, no fewer). The spec's cache
applies per workspace (--no-cache turns it off), so running a batch again replays the jobs
whose inputs did not change.

Stdout gets one JSON line per job as it finishes:
  {"workspace": DIR, "ok": true|false, "cached": true|false, "output": ..., "error": "..."|null,
   "usage": {...}|null}
output is the answer's JSON value when the spec has an output_schema, the answer's text
otherwise, and null for a failed job. A failing job does not stop the others.

--events DIR writes each job's events (as "agentspec run --events" writes a run's) to
DIR/NAME.events.jsonl, NAME being the workspace's base name, or its path with the separators
made underscores when two workspaces share a base name.

Stderr shows a progress line (jobs done of the total, jobs running, failures, cached results,
jobs per second), redrawn in place on a terminal; when stderr is not a terminal, or TERM is
"dumb", it is a plain line every few seconds, with no carriage return or escape code. One line per
failed job and per cache warning (an unreadable entry, a cached job whose expected output files
are gone), and a summary at the end. -q silences it all.

Ctrl-C stops the batch cleanly: running jobs stop between tool calls (a file being written is
written whole), no job starts any more, and each job that never started gets a line with
"ok": false and an "error" that starts with "not run". A second Ctrl-C during that stop ends the
batch at once (130): the running jobs and those not run then get no line.

With --nats URL the jobs go to a NATS JetStream work queue instead, for "agentspec worker"
processes on any number of machines to run (-j is then each worker's own): the same JSON lines
come back as the jobs end, with the same progress display across the fleet. The spec travels
with each job. The workspaces are on storage the workers share, named relative to
--workspace-root; or --ship sends each one with its job (every regular file under it, hidden
ones included, but those the spec's secret patterns hide; symbolic links stay behind; up to
--ship-max MiB) and applies the files its run changed here when it ends, none if any of them
changed here meanwhile (the changes are then saved beside the workspace) or if any is one no
run may change (under .git, secret or protected by the spec, the spec itself, reached through a
symbolic link). --events DIR writes each job's events to a file of its own.
Ctrl-C withdraws the jobs no worker has taken yet and has the workers stop the others between
tool calls, then waits up to 5 seconds for those jobs' results, each printed as its worker
stored it (a job still without one is "not run"); a second Ctrl-C ends it before it has.

A pipeline file (steps: at its top level) runs whole once per workspace, one workspace after
the other, each with -j jobs at a time; --var and --input fill its inputs as for run. Stdout
gets one JSON line per workspace: {"workspace", "ok", "outputs", "steps", "usage", "error"},
as "agentspec run PIPELINE -o json" prints its envelope, and stderr a line per job. With
--nats each pipeline's jobs run on the workers as "agentspec run PIPELINE --nats" runs them
(-j is then how many jobs this process has on the queue at once); --events DIR writes each
workspace's events, the pipeline's and its jobs', to a file named as for a spec.

Exit status: 0 when every job succeeded, 1 when any failed or did not run, 2 on usage errors
(--var included, and --no-cache for a spec without a cache, which it would not change), a
pattern that matches no directory, or a spec that cannot be loaded.`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error { return runBatch(cmd, f, args) },
	}
	fl := cmd.Flags()
	fl.IntVarP(&f.jobs, "jobs", "j", 0, "how many jobs run at a time (default: the number of CPUs)")
	fl.BoolVar(&f.noCache, "no-cache", false, "neither use nor fill the result cache the spec names")
	fl.StringArrayVar(&f.vars, "var", nil, varUsage("set an instructions variable for every job"))
	fl.StringVar(&f.input, "input", "", "the user message of every job")
	fl.StringVar(&f.inputFile, "input-file", "", "read the user message from a file (- for stdin)")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "print no progress or warnings on stderr")
	fl.StringVar(&f.model, "model", "", modelFlagUsage)
	f.queue.add(fl, false) // --events too, for both paths
	return cmd
}

func runBatch(cmd *cobra.Command, f batchFlags, args []string) error {
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	if err := specFromFile("batch", args[0]); err != nil {
		return err
	}
	if err := f.queue.check(cmd, isPipelineFile(args[0])); err != nil {
		return err
	}
	if f.jobs < 0 {
		return exitWith(exitUsage, fmt.Errorf("-j must be at least 1, not %d", f.jobs))
	}
	vars, input, workspaces, err := runFlags{vars: f.vars, input: f.input, inputFile: f.inputFile}.jobsInput(cmd.InOrStdin(), args[1:])
	if err != nil {
		return err
	}
	if isPipelineFile(args[0]) {
		return batchPipeline(cmd, f, args[0], workspaces, vars, input)
	}
	warn := warningsTo(stderr, f.quiet)
	s, err := loadSpecToRun(nil, args[0], runFlags{model: f.model, noCache: f.noCache}, vars, warn)
	if err != nil {
		return err
	}
	if f.queue.url != "" {
		return runQueueBatch(cmd, &f.queue, queueRun{
			specPath: args[0], spec: s, model: f.model, workspaces: workspaces, input: input, vars: vars,
			noCache: f.noCache, quiet: f.quiet, wait: true,
		})
	}

	opts := []runtime.Option{runtime.WithInput(input), runtime.WithVars(vars), runtime.WithListener(capabilityWarnings(warn))}
	if f.noCache {
		opts = append(opts, runtime.WithoutCache())
	}
	// A failed write to stdout stops the batch: its report would be lost.
	ctx, cancel := context.WithCancelCause(cmd.Context())
	defer cancel(nil)
	var progress *batchProgress
	if !f.quiet {
		progress = newBatchProgress(stderr, len(workspaces))
		defer progress.stop()
		opts = append(opts, runtime.WithListener(progress.listen))
	}
	var events *jobEvents
	if f.queue.events != "" {
		if events, err = newJobEvents(f.queue.events, workspaces); err != nil {
			return err
		}
		opts = append(opts, runtime.WithListener(events.listen), runtime.WithOwnFiles(f.queue.events))
	}
	var writeErr error
	onResult := func(r runtime.JobResult) {
		if events != nil {
			events.end(r.Job)
		}
		if writeErr == nil {
			if writeErr = writeJobLine(stdout, r); writeErr != nil {
				cancel(writeErr)
			}
		}
		progress.record(r)
	}
	onStart := func(job runtime.Job) {
		if events != nil {
			events.start(job)
		}
		progress.started(job)
	}

	sum, err := runtime.Batch(ctx, s, workspaces, runtime.BatchOptions{Concurrency: f.jobs, Options: opts, OnResult: onResult, OnStart: onStart})
	progress.finish(sum)
	if events != nil {
		if eerr := events.close(); eerr != nil && err == nil && writeErr == nil {
			return exitWith(exitFailure, eerr)
		}
	}
	var specErrs spec.Errors
	switch {
	case writeErr != nil:
		return exitWith(exitFailure, fmt.Errorf("writing the results: %w", writeErr))
	case errors.As(err, &specErrs):
		return specError(err)
	case errors.Is(err, runtime.ErrInterrupted):
		return exitWith(exitFailure, fmt.Errorf("interrupted: %d of %d jobs not run", sum.NotRun, sum.Total))
	case err != nil:
		// Nothing ran: the spec, the variables or the cache are wrong for every job.
		return exitWith(exitFailure, runError(err))
	case sum.Failed > 0:
		return exitWith(exitFailure, fmt.Errorf("%d of %d jobs failed", sum.Failed, sum.Total))
	}
	return nil
}

// jobLine is the JSON line a finished job gets on stdout.
type jobLine struct {
	Workspace string          `json:"workspace"`
	OK        bool            `json:"ok"`
	Cached    bool            `json:"cached"`
	Output    json.RawMessage `json:"output"`
	Error     *string         `json:"error"`
	Usage     *runtime.Usage  `json:"usage"`
}

func writeJobLine(w io.Writer, r runtime.JobResult) error {
	line := jobLine{Workspace: r.Workspace, Output: json.RawMessage("null")}
	if r.Result != nil {
		line.Usage = &r.Result.Usage
	}
	if r.Err != nil {
		msg := jobError(r.Err)
		line.Error = &msg
	} else {
		line.OK, line.Cached = true, r.Result.Cached
		line.Output = r.Result.JSON
		if line.Output == nil {
			text, err := json.Marshal(r.Result.Output)
			if err != nil {
				return err
			}
			line.Output = text
		}
	}
	b, err := json.Marshal(line)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// jobError is a failed job's error, on one line.
func jobError(err error) string {
	if errors.Is(err, runtime.ErrNotRun) {
		return "not run: the batch was interrupted"
	}
	return oneLine(runError(err).Error())
}

// expandWorkspaces turns the DIR arguments into the batch's workspaces. A
// pattern (an argument holding *, ? or [) is expanded with filepath.Glob and
// keeps the directories it matches; it must match at least one. A plain
// argument must be a directory. The result is sorted, and a directory named
// twice, however spelled (symlinks included), is run once: two jobs in one
// workspace would overwrite each other's files. For the same reason, one
// workspace inside another is refused (refuseNested).
func expandWorkspaces(args []string) ([]string, error) {
	var out []string
	seen := map[any]bool{}
	add := func(dir string, st os.FileInfo) {
		dir = filepath.Clean(dir)
		if id := dirIdentity(dir, st); !seen[id] {
			seen[id] = true
			out = append(out, dir)
		}
	}
	for _, arg := range args {
		if !strings.ContainsAny(arg, "*?[") {
			st, err := os.Stat(arg)
			switch {
			case errors.Is(err, fs.ErrNotExist):
				return nil, fmt.Errorf("workspace %s does not exist", arg)
			case err != nil:
				return nil, fmt.Errorf("workspace: %w", err)
			case !st.IsDir():
				return nil, fmt.Errorf("workspace %s is not a directory", arg)
			}
			add(arg, st)
			continue
		}
		matches, err := filepath.Glob(arg)
		if err != nil {
			return nil, fmt.Errorf("pattern %q: %w", arg, err)
		}
		found := false
		for _, m := range matches {
			if st, err := os.Stat(m); err == nil && st.IsDir() {
				add(m, st)
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("no directory matches %q", arg)
		}
	}
	slices.Sort(out)
	if err := refuseNested(out); err != nil {
		return nil, err
	}
	return out, nil
}

// refuseNested refuses workspaces one of which lies inside another (their
// real paths compared): the outer job's agent could read and change the
// inner job's files while that job works on them.
func refuseNested(dirs []string) error {
	reals := make([]string, len(dirs))
	byReal := make(map[string]string, len(dirs))
	for i, d := range dirs {
		reals[i] = realPath(d)
		byReal[reals[i]] = d
	}
	for i, d := range dirs {
		for p := reals[i]; p != filepath.Dir(p); {
			p = filepath.Dir(p)
			if outer, ok := byReal[p]; ok {
				return fmt.Errorf("workspace %s lies inside workspace %s: their jobs would work on the same files at once", d, outer)
			}
		}
	}
	return nil
}

// batchProgress reports a batch on stderr: a status line redrawn in place on
// a terminal, or printed every few seconds otherwise, and a line per failed
// job. Its methods do nothing on a nil *batchProgress (-q).
type batchProgress struct {
	mu    sync.Mutex
	w     io.Writer
	live  bool // w is a terminal
	start time.Time
	now   func() time.Time

	total, done, failed, cached int
	running                     map[int]bool // the jobs started and not finished, by index
	ended                       map[int]bool // the jobs finished, by index, when started may come late

	shown    bool      // the live line is on screen
	lastDraw time.Time // when the live line was last drawn

	quit chan struct{}
	wg   sync.WaitGroup
}

// How often the status is shown while no job finishes: the rate and the
// elapsed time move on all the same.
const (
	liveRefresh  = 500 * time.Millisecond
	plainRefresh = 5 * time.Second
	// liveThrottle bounds how often finishing jobs redraw the live line.
	liveThrottle = 100 * time.Millisecond
)

func newBatchProgress(w io.Writer, total int) *batchProgress {
	p := &batchProgress{w: w, live: isLive(w), total: total, now: time.Now, quit: make(chan struct{}), running: map[int]bool{}}
	p.start = p.now()
	every := plainRefresh
	if p.live {
		every = liveRefresh
	}
	p.wg.Go(func() {
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				p.tick()
			case <-p.quit:
				return
			}
		}
	})
	return p
}

func (p *batchProgress) tick() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.live {
		p.draw()
		return
	}
	fmt.Fprintln(p.w, p.status())
}

// started counts a job as running.
func (p *batchProgress) started(job runtime.Job) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.ended[job.Index] { // a queue job's start may come after its result
		p.running[job.Index] = true
	}
}

// requeued counts a job as no longer running: a queue worker handed it back
// for another attempt.
func (p *batchProgress) requeued(index int) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.running, index)
}

// record counts a finished job and reports it if it failed.
func (p *batchProgress) record(r runtime.JobResult) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.running, r.Index)
	if p.ended == nil {
		p.ended = map[int]bool{}
	}
	p.ended[r.Index] = true
	switch {
	case errors.Is(r.Err, runtime.ErrNotRun):
		return // counted in the final line; one line each would bury the rest
	case r.Err != nil:
		p.failed++
		p.clear()
		fmt.Fprintf(p.w, "  failed %s: %s\n", text.Visible(r.Workspace), jobError(r.Err))
	case r.Result.Cached:
		p.cached++
	}
	p.done++
	if p.live && (p.now().Sub(p.lastDraw) >= liveThrottle || p.done == p.total || !p.shown) {
		p.draw()
	}
}

// listen reports the cache's warnings, which concern one job each.
func (p *batchProgress) listen(ctx context.Context, ev capabilities.Event) error {
	w, ok := ev.(runtime.CacheWarning)
	if !ok {
		return nil
	}
	job, _ := runtime.JobFrom(ctx)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clear()
	fmt.Fprintf(p.w, "  cache (%s): %s\n", text.Visible(job.Workspace), oneLine(w.Message))
	return nil
}

// finish stops the refreshing and prints the summary.
func (p *batchProgress) finish(sum runtime.BatchSummary) {
	if p == nil {
		return
	}
	p.stop()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clear()
	fmt.Fprintf(p.w, "%s: %d ok (%d cached), %d failed, %d not run, %s, %s\n",
		plural(sum.Total, "job"), sum.OK, sum.Cached, sum.Failed, sum.NotRun,
		formatDuration(sum.Elapsed), formatRate(sum.OK+sum.Failed, sum.Elapsed))
}

func (p *batchProgress) stop() {
	if p == nil {
		return
	}
	select {
	case <-p.quit:
	default:
		close(p.quit)
	}
	p.wg.Wait()
}

// status is the progress in words, for a log.
func (p *batchProgress) status() string {
	return fmt.Sprintf("%d/%d jobs done, %d running, %d failed, %d cached, %s", p.done, p.total, len(p.running), p.failed, p.cached, p.rate())
}

// draw redraws the live line: a bar and the counts.
func (p *batchProgress) draw() {
	const width = 24
	filled := 0
	if p.total > 0 {
		filled = width * p.done / p.total
	}
	bar := strings.Repeat("#", filled) + strings.Repeat("-", width-filled)
	fmt.Fprintf(p.w, "\r\033[K[%s] %d/%d  %d running  %d failed  %d cached  %s", bar, p.done, p.total, len(p.running), p.failed, p.cached, p.rate())
	p.shown, p.lastDraw = true, p.now()
}

func (p *batchProgress) clear() {
	if p.shown {
		fmt.Fprint(p.w, "\r\033[K")
		p.shown = false
	}
}

func (p *batchProgress) rate() string { return formatRate(p.done, p.now().Sub(p.start)) }

func formatRate(jobs int, elapsed time.Duration) string {
	if elapsed <= 0 {
		return "0.0 jobs/s"
	}
	return fmt.Sprintf("%.1f jobs/s", float64(jobs)/elapsed.Seconds())
}

// realPath is dir with symlinks resolved, made absolute; as much of that as
// can be had when resolving fails.
func realPath(dir string) string {
	id, err := filepath.EvalSymlinks(dir)
	if err != nil {
		id = dir
	}
	if abs, err := filepath.Abs(id); err == nil {
		id = abs
	}
	return id
}
