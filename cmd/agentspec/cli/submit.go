package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/agentspec/agentspec/internal/text"
	"github.com/agentspec/agentspec/runtime"
	"github.com/agentspec/agentspec/runtime/queue"
	"github.com/agentspec/agentspec/spec"
)

// queueBatchFlags are batch's and submit's flags for the queue.
type queueBatchFlags struct {
	runQueueFlags
	events string
}

func (f *queueBatchFlags) add(fl *pflag.FlagSet, envDefault bool) {
	f.natsFlags.add(fl, envDefault)
	fl.StringVar(&f.workspaceRoot, "workspace-root", ".", "with --nats: the directory the workspaces lie in on the storage the workers share; jobs name them relative to it")
	fl.BoolVar(&f.ship, "ship", false, "with --nats: send each workspace with its job and bring back the files its run changed")
	fl.Int64Var(&f.shipMaxMiB, "ship-max", queue.DefaultShipMax>>20, "with --ship: the cap, in MiB, on a workspace's archive and on the archive of its run's changes")
	fl.StringVar(&f.events, "events", "", "write each job's events to a file of its own in this directory, named after its workspace")
}

// check rejects flags that mean nothing together. A pipeline's -j is how
// many of its jobs the coordinator has on the queue at once, so it is
// allowed with --nats.
func (f *queueBatchFlags) check(cmd *cobra.Command, pipeline bool) error {
	if f.url == "" {
		for _, name := range runQueueNames {
			if name != "nats" && cmd.Flags().Changed(name) { // --nats "" runs here
				return exitWith(exitUsage, fmt.Errorf("--%s needs --nats", name))
			}
		}
		return nil
	}
	switch {
	case cmd.Flags().Changed("jobs") && !pipeline:
		return exitWith(exitUsage, errors.New("-j sets how many jobs run here; with --nats each worker sets its own (agentspec worker -j)"))
	case f.ship && cmd.Flags().Changed("workspace-root"):
		return exitWith(exitUsage, errors.New("--workspace-root names shared storage; --ship sends the workspaces instead: give one of them"))
	case !f.ship && cmd.Flags().Changed("ship-max"):
		return exitWith(exitUsage, errors.New("--ship-max caps what --ship sends; without --ship nothing is sent"))
	case checkShipMax(f.shipMaxMiB) != nil:
		return exitWith(exitUsage, checkShipMax(f.shipMaxMiB))
	}
	return nil
}

// queueRun is one batch for the queue.
type queueRun struct {
	specPath   string
	spec       *spec.Spec
	model      string // --model, which the workers apply too
	workspaces []string
	input      string
	vars       map[string]string
	noCache    bool
	quiet      bool
	wait       bool // false: publish and report the jobs (submit without --wait)
}

// runQueueBatch publishes one job per workspace and prints the results as
// local batch does.
func runQueueBatch(cmd *cobra.Command, f *queueBatchFlags, r queueRun) error {
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	if f.events != "" {
		if err := makeEventsDir(f.events); err != nil { // a usage error, before connecting
			return err
		}
	}
	q, err := f.open(cmd.Context(), "agentspec "+cmd.Name(), 0)
	if err != nil {
		return err
	}
	defer q.Conn().Close()
	bo := f.batchOptions(r.noCache, r.model)
	bo.SpecPath, bo.Spec, bo.Input, bo.Vars, bo.Workspaces = r.specPath, r.spec, r.input, r.vars, r.workspaces
	b, err := q.NewBatch(bo)
	if err != nil {
		return exitWith(exitUsage, err)
	}
	var progress *batchProgress
	if r.wait && !r.quiet {
		progress = newBatchProgress(stderr, len(b.Jobs))
		defer progress.stop()
	}
	var files *eventFiles
	if f.events != "" {
		files = newEventFiles(f.events, b)
		defer func() { _ = files.close() }() // reported below once the jobs are done
	}
	if files != nil || progress != nil {
		// One subscription: the events files take every event, the
		// progress counts the jobs the workers start (job.start) and hand
		// back to the queue (job.retry).
		err := b.Events(func(i int, ev []byte) {
			if files != nil {
				files.write(i, ev)
			}
			switch {
			case bytes.HasPrefix(ev, []byte(`{"kind":"job.start"`)):
				progress.started(runtime.Job{Index: i})
			case bytes.HasPrefix(ev, []byte(`{"kind":"job.retry"`)):
				progress.requeued(i)
			}
		})
		if err != nil {
			return exitWith(exitFailure, err)
		}
		defer b.Close()
	}
	ctx, cancel := context.WithCancelCause(cmd.Context())
	defer cancel(nil)
	if err := b.Publish(ctx); err != nil {
		return exitWith(exitFailure, err)
	}
	if !r.wait {
		for i, job := range b.Jobs {
			line, _ := json.Marshal(map[string]string{"job": job.ID, "workspace": r.workspaces[i]})
			if _, err := fmt.Fprintf(stdout, "%s\n", line); err != nil {
				return exitWith(exitFailure, err)
			}
		}
		return nil
	}

	var writeErr error
	sum, err := b.Wait(ctx, func(o queue.JobOutcome) {
		if writeErr == nil {
			if writeErr = writeQueueLine(stdout, o); writeErr != nil {
				cancel(writeErr)
			}
		}
		for _, w := range o.Warnings {
			progress.cacheWarning(o.Workspace, w)
		}
		res := runtime.JobResult{Job: runtime.Job{Index: o.Index, Workspace: o.Workspace}, Err: o.Err}
		if o.Err == nil {
			res.Result = &runtime.Result{Cached: o.Cached}
		}
		progress.record(res)
	})
	progress.finish(sum)
	var eventsErr error
	if files != nil {
		b.Close() // the events the server sent are written first
		eventsErr = files.close()
	}
	switch {
	case writeErr != nil:
		return exitWith(exitFailure, fmt.Errorf("writing the results: %w", writeErr))
	case errors.Is(err, runtime.ErrInterrupted):
		return exitWith(exitFailure, fmt.Errorf("interrupted: %d of %d jobs without a result (those not yet started were withdrawn from the queue, those running told to stop)", sum.NotRun, sum.Total))
	case err != nil:
		return exitWith(exitFailure, err)
	case eventsErr != nil:
		return exitWith(exitFailure, eventsErr)
	case sum.Failed > 0:
		return exitWith(exitFailure, fmt.Errorf("%d of %d jobs failed", sum.Failed, sum.Total))
	}
	return nil
}

// writeQueueLine writes a job's line, the same as local batch's.
func writeQueueLine(w io.Writer, o queue.JobOutcome) error {
	line := struct {
		Workspace string          `json:"workspace"`
		OK        bool            `json:"ok"`
		Cached    bool            `json:"cached"`
		Output    json.RawMessage `json:"output"`
		Error     *string         `json:"error"`
		Usage     json.RawMessage `json:"usage"`
	}{Workspace: o.Workspace, OK: o.Err == nil, Cached: o.Err == nil && o.Cached, Output: o.Output, Usage: o.Usage}
	if o.Err != nil {
		msg := oneLine(o.Error)
		if o.NotRun {
			msg = "not run: the batch was interrupted"
		}
		line.Error, line.Output = &msg, nil
	}
	if len(line.Output) == 0 {
		line.Output = json.RawMessage("null")
	}
	if len(line.Usage) == 0 {
		line.Usage = json.RawMessage("null")
	}
	b, err := json.Marshal(line)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// eventFiles writes each job's events to a file of its own. A file that
// cannot be written takes no more of its job's events; the others go on,
// and close reports it, as a local batch does.
type eventFiles struct {
	dir    string
	names  []string
	files  map[int]*os.File
	failed map[int]bool
	errs   []error
}

// newEventFiles names the files in dir, which makeEventsDir made.
func newEventFiles(dir string, b *queue.Batch) *eventFiles {
	labels := make([]string, len(b.Jobs))
	for i, job := range b.Jobs {
		labels[i] = job.Label
	}
	// Named as a local batch names them, so a script finds them the same way.
	return &eventFiles{dir: dir, files: map[int]*os.File{}, failed: map[int]bool{}, names: eventFileNames(labels)}
}

// write is called one event at a time.
func (e *eventFiles) write(i int, ev []byte) {
	if i < 0 || i >= len(e.names) || e.failed[i] {
		return
	}
	f, ok := e.files[i]
	if !ok {
		var err error
		if f, err = runtime.CreateEventsFile(filepath.Join(e.dir, e.names[i])); err != nil {
			e.fail(i, err)
			return
		}
		e.files[i] = f
	}
	if _, err := f.Write(append(ev, '\n')); err != nil {
		e.fail(i, err)
	}
}

func (e *eventFiles) fail(i int, err error) {
	e.failed[i] = true
	e.errs = append(e.errs, fmt.Errorf("--events: %w", err))
}

// close closes the files and returns what could not be written.
func (e *eventFiles) close() error {
	for i, f := range e.files {
		if err := f.Close(); err != nil {
			e.errs = append(e.errs, fmt.Errorf("--events: %w", err))
		}
		delete(e.files, i)
	}
	return errors.Join(e.errs...)
}

type submitFlags struct {
	queueBatchFlags
	noCache   bool
	vars      []string
	input     string
	inputFile string
	wait      bool
	quiet     bool
}

func newSubmitCmd() *cobra.Command {
	var (
		f     submitFlags
		model string
	)
	cmd := &cobra.Command{
		Use:         "submit SPEC DIR --nats URL [--wait]",
		Short:       "Publish one workspace job to a NATS JetStream work queue",
		Annotations: map[string]string{secondSignalLeaves: "the job, if no worker has taken it, is not withdrawn from the queue"},
		Long: `Submit publishes one job, SPEC over the workspace DIR, to the queue that "agentspec worker"
processes serve, and prints {"job": ID, "workspace": DIR}: the job runs whenever a worker takes
it, and its events are published on agentspec.events.<ID>. The spec travels with the job (its
bytes and its script file), so workers need none of this machine's disk.

DIR names a directory on storage the workers share, relative to --workspace-root; with --ship
the directory travels with the job instead (every regular file under it, hidden ones included,
but those the spec's secret patterns hide; symbolic links stay behind; up to --ship-max MiB), and
the files the run changed come back, none if any is one no run may change (under .git, secret or
protected by the spec, the spec itself, reached through a symbolic link).

--wait (implied by --ship and --events, whose file fills as the job runs) waits for the result
and prints the line "agentspec batch" prints for a job: {"workspace", "ok", "cached", "output",
"error", "usage"}; Ctrl-C then withdraws the job, or has its worker stop its run between tool
calls and waits up to 5 seconds for the result its worker stores. Exit status: 0 when the job
was published (or, waiting, succeeded), 1 when it failed or the server cannot be reached, 2 on
usage errors.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := specFromFile("submit", args[0]); err != nil {
				return err
			}
			if f.url == "" && os.Getenv(envNATS) != "" {
				f.url = os.Getenv(envNATS)
			}
			if f.url == "" {
				return exitWith(exitUsage, fmt.Errorf("no NATS server: give --nats URL or set %s", envNATS))
			}
			if err := f.check(cmd, false); err != nil {
				return err
			}
			vars, input, workspaces, err := runFlags{vars: f.vars, input: f.input, inputFile: f.inputFile}.jobsInput(cmd.InOrStdin(), args[1:])
			if err != nil {
				return err
			}
			if len(workspaces) != 1 {
				return exitWith(exitUsage, fmt.Errorf("submit takes one workspace; %q names %d (use agentspec batch --nats)", args[1], len(workspaces)))
			}
			s, err := loadSpecToRun(nil, args[0], runFlags{model: model, noCache: f.noCache}, vars, warningsTo(cmd.ErrOrStderr(), f.quiet))
			if err != nil {
				return err
			}
			return runQueueBatch(cmd, &f.queueBatchFlags, queueRun{
				specPath: args[0], spec: s, model: model, workspaces: workspaces, input: input, vars: vars,
				noCache: f.noCache, quiet: f.quiet, wait: f.wait || f.ship || f.events != "",
			})
		},
	}
	fl := cmd.Flags()
	f.queueBatchFlags.add(fl, true)
	// batch's wording speaks of many workspaces and of --nats as optional;
	// submit sends one, always to the queue.
	fl.Lookup("workspace-root").Usage = "the directory DIR lies in on the storage the workers share; the job names DIR relative to it"
	fl.Lookup("ship").Usage = "send DIR with the job and bring back the files its run changed (implies --wait)"
	fl.Lookup("ship-max").Usage = "with --ship: the cap, in MiB, on DIR's archive and on the archive of the run's changes"
	fl.Lookup("events").Usage = "write the job's events to a file in this directory, named after DIR, as the job runs (implies --wait)"
	fl.BoolVar(&f.wait, "wait", false, "wait for the job's result and print it")
	fl.BoolVar(&f.noCache, "no-cache", false, "neither use nor fill the shared result cache")
	fl.StringArrayVar(&f.vars, "var", nil, varUsage("set an instructions variable"))
	fl.StringVar(&f.input, "input", "", "the job's user message")
	fl.StringVar(&f.inputFile, "input-file", "", "read the user message from a file (- for stdin)")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "print no progress or warnings on stderr")
	fl.StringVar(&model, "model", "", modelFlagUsage)
	return cmd
}

// cacheWarning reports a cache warning a worker met, as listen does for a
// local batch.
func (p *batchProgress) cacheWarning(workspace, msg string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clear()
	fmt.Fprintf(p.w, "  cache (%s): %s\n", text.Visible(workspace), oneLine(msg))
}
