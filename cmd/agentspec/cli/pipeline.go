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
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/internal/text"
	"github.com/agentspec/agentspec/pipeline"
	"github.com/agentspec/agentspec/runtime"
	"github.com/agentspec/agentspec/runtime/queue"
	"github.com/agentspec/agentspec/spec"
)

// isPipelineFile tells whether path names a pipeline file (steps: at its
// top level). A file that cannot be read is not one: loading it as a spec
// reports why. Only a regular file is looked into: a FIFO or a process
// substitution (<(...)) can be read once, and that read is the loader's.
func isPipelineFile(path string) bool {
	if path == stdinArg {
		return false
	}
	if st, err := os.Stat(path); err != nil || !st.Mode().IsRegular() || st.Size() > spec.MaxFileSize {
		return false // the loader says why it reads no such file
	}
	data, err := os.ReadFile(path)
	return err == nil && pipeline.IsPipeline(data)
}

// runPipeline is `agentspec run PIPELINE.yaml`.
func runPipeline(cmd *cobra.Command, f runFlags, args []string) error {
	stdin, stdout, stderr := cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr()
	ctx := cmd.Context()
	if err := f.checkPipeline(args); err != nil {
		return exitWith(exitUsage, err)
	}
	vars, input, err := f.varsAndInput(stdin, args)
	if err != nil {
		return err
	}
	if err := f.queue.check(cmd); err != nil {
		return exitWith(exitUsage, err)
	}
	p, err := loadPipeline(args[0], f.model)
	if err != nil {
		return specError(err)
	}
	if err := pipelineFlagsUnused(p, f.noCache); err != nil {
		return exitWith(exitUsage, err)
	}
	printStepWarnings(warningsTo(stderr, f.quiet), p)
	inputs, err := pipelineInputs(p, vars, input, f.input != "" || f.inputFile != "" || len(args) == 2)
	if err != nil {
		return exitWith(exitUsage, err)
	}
	dir, err := workspaceDir(f.workspace)
	if err != nil {
		return exitWith(exitUsage, err)
	}

	if f.queue.url == "" {
		// What run refuses of a spec before its first request, it refuses
		// of every step before the first step's: not halfway through. So
		// with a provider's missing key: the workers of --nats have their
		// own environment.
		if code := refuseBeforeTheFirstStep(stderr, checkSteps(ctx, p, dir, nil), p); code != 0 {
			return exitWith(code, nil)
		}
	}
	opts := pipelineOptions(ctx, warningsTo(stderr, f.quiet), inputs, f.jobs, f.noCache)
	opts.Workspace = dir
	if !f.quiet {
		pp := &pipelineProgress{w: stderr}
		opts.OnJobStart, opts.OnJobEnd = pp.start, pp.end
	}
	events, finishEvents, err := openEvents(f.events)
	if err != nil {
		return exitWith(exitUsage, err)
	}
	if events != nil {
		opts.Listeners = append(opts.Listeners, events)
		opts.OwnFiles = append(opts.OwnFiles, f.events)
	}
	if f.queue.url != "" {
		if err := f.queue.checkWorkspaces(dir); err != nil {
			_ = finishEvents()
			return err
		}
		q, err := f.queue.open(ctx, "agentspec run", 0)
		if err != nil {
			_ = finishEvents()
			return err
		}
		defer q.Conn().Close()
		opts.Exec = q.Executor(f.queue.batchOptions(f.noCache, f.model))
	}

	res, err := pipeline.Run(ctx, p, opts)
	if ferr := finishEvents(); ferr != nil && err == nil {
		err = ferr
	}
	if errors.Is(err, pipeline.ErrInputs) {
		return exitWith(exitUsage, fmt.Errorf("%w (give an input with --var NAME=VALUE)", err))
	}
	if res != nil && !f.quiet {
		pipelineSummary(stderr, p, res)
	}
	if res != nil && (f.output == formatJSON || err == nil && res.OK()) {
		if perr := printPipelineResult(stdout, f.output, p, res); perr != nil {
			return exitWith(exitFailure, perr)
		}
	}
	switch {
	case err != nil:
		return exitWith(exitFailure, runError(err))
	case !res.OK():
		return exitWith(exitFailure, errors.New(failedSteps(p, res)))
	}
	return nil
}

// runQueueFlags are run's flags for running a pipeline's jobs on the queue.
type runQueueFlags struct {
	natsFlags
	workspaceRoot string
	ship          bool
	shipMaxMiB    int64
}

func (f *runQueueFlags) add(fl *pflag.FlagSet) {
	f.natsFlags.add(fl, false)
	fl.StringVar(&f.workspaceRoot, "workspace-root", ".", "with --nats: the directory the workspace lies in on the storage the workers share; jobs name it relative to it")
	fl.BoolVar(&f.ship, "ship", false, "with --nats: send the workspace with each job and apply the files its run changed before the steps after it start")
	fl.Int64Var(&f.shipMaxMiB, "ship-max", queue.DefaultShipMax>>20, "with --ship: the cap, in MiB, on the workspace's archive and on the archive of a job's changes")
}

// runQueueNames are the flags of runQueueFlags.
var runQueueNames = []string{"nats", "stream", "creds", "nkey", "tls-cert", "tls-key", "tls-ca", "workspace-root", "ship", "ship-max"}

// changed is the first of the queue's flags given, "" when none is.
func (f *runQueueFlags) changed(cmd *cobra.Command) string {
	for _, name := range runQueueNames {
		if cmd.Flags().Changed(name) {
			return name
		}
	}
	return ""
}

// check rejects the queue's flags without --nats, and flags that mean
// nothing together.
func (f *runQueueFlags) check(cmd *cobra.Command) error {
	switch name := f.changed(cmd); {
	case f.url == "" && name != "":
		return fmt.Errorf("--%s needs --nats", name)
	case f.ship && cmd.Flags().Changed("workspace-root"):
		return errors.New("--workspace-root names shared storage; --ship sends the workspace instead: give one of them")
	case !f.ship && cmd.Flags().Changed("ship-max"):
		return errors.New("--ship-max caps what --ship sends; without --ship nothing is sent")
	}
	return checkShipMax(f.shipMaxMiB)
}

// maxShipMiB bounds --ship-max, in MiB: 1 TiB, which a worker's cap does not
// pass either. Made bytes, and 16 times that for what an archive may
// unpack to, a larger one would overflow and stand for another.
const maxShipMiB = 1 << 20

// checkShipMax refuses a --ship-max out of 1 to maxShipMiB.
func checkShipMax(mib int64) error {
	if mib < 1 || mib > maxShipMiB {
		return fmt.Errorf("--ship-max must be from 1 to %d (MiB), not %d", maxShipMiB, mib)
	}
	return nil
}

// checkWorkspaces fails, before any job is published, when the workers
// could not find one of the workspaces under the workspace root they share
// (with --ship they are sent instead, so there is nothing to check).
func (f *runQueueFlags) checkWorkspaces(dirs ...string) error {
	if f.ship {
		return nil
	}
	for _, dir := range dirs {
		if _, err := queue.WorkspaceName(f.workspaceRoot, dir); err != nil {
			return exitWith(exitUsage, err)
		}
	}
	return nil
}

// batchOptions are what every job is published with: where its workspace
// lies or whether it travels, --no-cache and --model.
func (f *runQueueFlags) batchOptions(noCache bool, model string) queue.BatchOptions {
	return queue.BatchOptions{WorkspaceRoot: f.workspaceRoot, Ship: f.ship, ShipMax: f.shipMaxMiB << 20, NoCache: noCache, Model: model}
}

// pipelineOptions are what run and batch give every pipeline run: its
// inputs and -j, the capabilities' warnings to warn, their transport,
// and --no-cache.
func pipelineOptions(ctx context.Context, warn io.Writer, inputs map[string]any, jobs int, noCache bool) pipeline.RunOptions {
	opts := pipeline.RunOptions{
		Inputs:      inputs,
		Concurrency: jobs,
		Options: []runtime.Option{
			runtime.WithListener(capabilityWarnings(warn)),
			runtime.WithHTTPTransport(capabilityTransport(ctx)),
		},
	}
	if noCache {
		opts.Options = append(opts.Options, runtime.WithoutCache())
	}
	return opts
}

func (f runFlags) checkPipeline(args []string) error {
	if err := f.check(args); err != nil {
		return err
	}
	switch {
	case f.record != "" || f.replay != "":
		return errors.New("--record and --replay take one spec's provider exchanges; a pipeline runs many specs, so they are not for pipelines")
	case f.approve:
		return errors.New("--approve is not for pipelines: their jobs run at once, and a question on the terminal would not say whose change it is")
	case f.jobs < 0:
		return errors.New("-j wants a number of jobs, 1 or more")
	}
	return nil
}

// pipelineFlagsUnused refuses --no-cache for a pipeline that caches no job,
// as runFlags.unused refuses it for a spec without a cache: neither the
// pipeline's cache: nor any step's spec turns a cache on, so the flag would
// change nothing.
func pipelineFlagsUnused(p *pipeline.Pipeline, noCache bool) error {
	if !noCache || p.Cache != nil && p.Cache.Enabled {
		return nil
	}
	for _, s := range p.Steps {
		if s.Spec != nil && s.Spec.Cache != nil {
			return nil
		}
	}
	return errors.New("--no-cache turns off the result cache, but neither the pipeline nor the spec of any of its steps has one")
}

// pipelineInputs makes the run's inputs from --var and --input, each typed
// as the pipeline's checks type {{inputs.NAME}} (pipeline.InputValue): the
// text given where the input may be a string, else the JSON value it spells.
//
// An input the pipeline neither lists in its inputs schema (nor requires)
// nor references is refused, as a --var without a placeholder is refused of
// a spec: it would change nothing, and a misspelt optional input would run
// with its default unnoticed.
func pipelineInputs(p *pipeline.Pipeline, vars map[string]string, input string, hasInput bool) (map[string]any, error) {
	out := make(map[string]any, len(vars)+1)
	known := p.InputNames()
	if p.Inputs != nil {
		required, _ := p.Inputs.Schema["required"].([]any)
		for _, r := range required {
			if name, ok := r.(string); ok && !slices.Contains(known, name) {
				known = append(known, name)
			}
		}
		slices.Sort(known)
	}
	set := func(name, value, flag string) error {
		if !slices.Contains(known, name) {
			has := "it has none"
			if len(known) > 0 {
				has = "its inputs: " + strings.Join(known, ", ")
			}
			if flag == "--input" {
				return fmt.Errorf("--input fills inputs.input, which the pipeline's inputs schema does not list and no step uses (%s)", has)
			}
			return fmt.Errorf("%s: the pipeline's inputs schema does not list %s and no step uses inputs.%s (%s)", flag, name, name, has)
		}
		v, err := p.InputValue(name, value)
		if err != nil {
			return fmt.Errorf("%s: %w", flag, err)
		}
		out[name] = v
		return nil
	}
	names := make([]string, 0, len(vars))
	for name := range vars {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if err := set(name, vars[name], "--var "+name); err != nil {
			return nil, err
		}
	}
	if hasInput {
		if _, dup := vars["input"]; dup {
			return nil, errors.New("give the input one way: --input or --var input=...")
		}
		if err := set("input", input, "--input"); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// printStepWarnings prints the warnings of the steps' specs, each spec file
// once.
func printStepWarnings(w io.Writer, p *pipeline.Pipeline) {
	seen := map[string]bool{}
	for _, s := range p.Steps {
		for _, warn := range s.Spec.Warnings {
			line := warn.Error()
			if !seen[line] {
				seen[line] = true
				fmt.Fprintln(w, text.VisibleLines(line))
			}
		}
	}
}

// pipelineProgress writes a line per job start and end on stderr.
type pipelineProgress struct {
	mu sync.Mutex
	w  io.Writer
}

func jobLabel(step string, item int) string {
	label := text.Visible(step)
	if item >= 0 {
		label += "[" + strconv.Itoa(item) + "]"
	}
	return label
}

func (pp *pipelineProgress) start(step string, item int) {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	fmt.Fprintf(pp.w, "%s started\n", jobLabel(step, item))
}

func (pp *pipelineProgress) end(e pipeline.JobEnd) {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	switch {
	case e.Err != nil:
		fmt.Fprintf(pp.w, "%s failed after %s: %s\n", jobLabel(e.Step, e.Item), formatDuration(e.Duration), text.VisibleLines(runError(e.Err).Error()))
	case e.Cached:
		fmt.Fprintf(pp.w, "%s done in %s, cached\n", jobLabel(e.Step, e.Item), formatDuration(e.Duration))
	default:
		fmt.Fprintf(pp.w, "%s done in %s\n", jobLabel(e.Step, e.Item), formatDuration(e.Duration))
	}
}

// pipelineSummary ends the progress: the steps that were skipped or did not
// run, then the counts and the usage.
func pipelineSummary(w io.Writer, p *pipeline.Pipeline, res *pipeline.Result) {
	var ok, failed, skipped, notRun int
	for _, s := range p.Order {
		r := res.Steps[s.Name]
		switch {
		case r.Skipped:
			skipped++
			fmt.Fprintf(w, "%s skipped\n", text.Visible(s.Name))
		case r.NotRun:
			notRun++
			fmt.Fprintf(w, "%s not run\n", text.Visible(s.Name))
		case r.OK:
			ok++
		default:
			failed++
		}
	}
	u := res.Usage
	fmt.Fprintf(w, "%s: %d ok, %d failed, %d skipped, %d not run; %s, %s, %s, %s\n",
		plural(len(p.Steps), "step"), ok, failed, skipped, notRun, plural(u.Requests, "request"), tokenCounts(u, nil),
		plural(u.ToolCalls, "tool call"), formatDuration(u.Elapsed))
}

// failedSteps says which steps failed, for the exit message.
func failedSteps(p *pipeline.Pipeline, res *pipeline.Result) string {
	var lines []string
	for _, s := range p.Order {
		if r := res.Steps[s.Name]; !r.OK && !r.Skipped && !r.NotRun {
			lines = append(lines, fmt.Sprintf("step %s failed: %s", s.Name, r.Error))
		}
	}
	if len(lines) == 0 {
		return "the pipeline did not finish"
	}
	return strings.Join(lines, "\n")
}

// printPipelineResult writes the outputs as one JSON value, or with -o json
// the envelope {"outputs", "steps", "usage"}. Without outputs:, the last
// step's answer is printed as run prints it: the text of a step without
// output_schema as it is, not as a JSON string. As for run, what a terminal
// would act on is shown escaped there; a pipe or a file gets it as it is.
func printPipelineResult(w io.Writer, format string, p *pipeline.Pipeline, res *pipeline.Result) error {
	var s string
	switch {
	case format == formatJSON:
		// As the answers went to the next steps: <, > and & as they are.
		var b strings.Builder
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return err
		}
		s = strings.TrimSuffix(b.String(), "\n")
	case lastAnswersText(p) && bytes.HasPrefix(res.Outputs, []byte(`"`)) && json.Unmarshal(res.Outputs, &s) == nil:
		s = strings.TrimSuffix(s, "\n")
	default:
		s = string(res.Outputs)
	}
	if isTerminal(w) {
		s = text.VisibleLines(s)
	}
	_, err := io.WriteString(w, s+"\n")
	return err
}

// lastAnswersText tells whether a pipeline prints its last step's answer
// (it has no outputs:) and that answer is text: one job of a spec without
// output_schema.
func lastAnswersText(p *pipeline.Pipeline) bool {
	if len(p.Outputs) > 0 || len(p.Order) == 0 {
		return false
	}
	last := p.Order[len(p.Order)-1]
	return !last.FanOut() && last.Spec.OutputSchema == nil
}

// validatePipeline loads a pipeline file and reports its problems as a
// spec's are reported: FILE:LINE:COL, those in the pipeline file first, then
// those of each step's spec file; then checks each step's spec as validate
// checks a spec (runtime.Check: its model, its script file, its
// capabilities built in the workspace), and reports the specs' warnings.
// Vars are not checked here: the pipeline loader has matched each step's
// vars with its spec's placeholders.
func validatePipeline(ctx context.Context, file, workspace, model string) fileResult {
	r := fileResult{File: file, Valid: true, Problems: []problem{}, Warnings: []problem{}}
	p, err := loadPipeline(file, model)
	if err != nil {
		r.Valid = false
		r.Problems = append(r.Problems, problemsOf(file, err)...)
		return r
	}
	seen := map[string]bool{}
	warn := func(w problem) {
		key := fmt.Sprint(w)
		if !seen[key] {
			seen[key] = true
			r.Warnings = append(r.Warnings, w)
		}
	}
	for _, s := range p.Steps {
		for _, w := range s.Spec.Warnings {
			warn(problemOf(w))
		}
	}
	r.Problems = append(r.Problems, checkSteps(ctx, p, workspace, warn)...)
	r.Valid = len(r.Problems) == 0
	return r
}

// checkSteps checks each step's spec as validate checks a spec
// (runtime.Check: its model, its script file, its capabilities built in the
// workspace, tool names) and returns the problems, at their positions or
// the step's. With warn (validate), a step without a model is noted there
// and checked offline; without it (run), it is a problem, as running it
// would be.
func checkSteps(ctx context.Context, p *pipeline.Pipeline, workspace string, warn func(problem)) []problem {
	var problems []problem
	checked := map[*spec.Spec]bool{}
	for _, s := range p.Steps {
		if checked[s.Spec] {
			continue
		}
		checked[s.Spec] = true
		sp := s.Spec
		opts := []runtime.Option{runtime.WithWorkspace(workspace)}
		if warn != nil {
			if strings.TrimSpace(sp.Model) == "" {
				warn(problem{File: s.Pos.File, Line: s.Pos.Line, Column: s.Pos.Col, Message: "step " + s.Name + ": " + noModelNote})
				offline := *sp
				offline.Model = "test"
				sp = &offline
			}
			opts = append(opts, runtime.WithListener(func(_ context.Context, ev capabilities.Event) error {
				if w, ok := ev.(runtime.CapabilityWarning); ok {
					warn(problem{File: w.File, Line: w.Line, Column: w.Column, Message: w.Message})
				}
				return nil
			}))
		}
		for _, pr := range problemsOf(s.Spec.File, runtime.Check(ctx, sp, opts...)) {
			if pr.Line == 0 {
				pr.File, pr.Line, pr.Column = s.Pos.File, s.Pos.Line, s.Pos.Col
				pr.Message = "step " + s.Name + ": " + pr.Message
			}
			if !slices.Contains(problems, pr) { // two steps running one spec file find its problems alike
				problems = append(problems, pr)
			}
		}
	}
	return problems
}

// checkBatchSteps checks p's steps in each of the workspaces (checkSteps)
// and returns the problems, each once: one found in some of the workspaces
// only names them.
func checkBatchSteps(ctx context.Context, p *pipeline.Pipeline, workspaces []string) []problem {
	var (
		order []problem
		where = map[problem][]string{}
	)
	for _, ws := range workspaces {
		for _, pr := range checkSteps(ctx, p, ws, nil) {
			if _, seen := where[pr]; !seen {
				order = append(order, pr)
			}
			if list := where[pr]; len(list) == 0 || list[len(list)-1] != ws {
				where[pr] = append(list, ws)
			}
		}
	}
	for i, pr := range order {
		if in := where[pr]; len(in) < len(workspaces) {
			noun := "workspace"
			if len(in) > 1 {
				noun = "workspaces"
			}
			order[i].Message = fmt.Sprintf("%s %s: %s", noun, strings.Join(in, ", "), pr.Message)
		}
	}
	return order
}

// problemsOf is err as problems: one per spec.Error, or one for file; none
// for nil.
func problemsOf(file string, err error) []problem {
	if err == nil {
		return nil
	}
	var list spec.Errors
	if errors.As(err, &list) {
		out := make([]problem, len(list))
		for i, e := range list {
			out[i] = problemOf(e)
		}
		return out
	}
	return []problem{{File: file, Message: strings.TrimPrefix(err.Error(), file+": ")}}
}

// pipelineLine is the JSON line a workspace gets from a batch over a
// pipeline: the run's envelope, with its workspace and how it ended.
type pipelineLine struct {
	Workspace string                          `json:"workspace"`
	OK        bool                            `json:"ok"`
	Outputs   json.RawMessage                 `json:"outputs"`
	Steps     map[string]*pipeline.StepResult `json:"steps"`
	Usage     *runtime.Usage                  `json:"usage"`
	Error     *string                         `json:"error"`
}

// batchPipeline is `agentspec batch PIPELINE DIR...`: the whole pipeline
// once per workspace, in turn, each run -j jobs at a time, here or on the
// queue; --events writes each workspace's events to a file of its own.
func batchPipeline(cmd *cobra.Command, f batchFlags, file string, workspaces []string, vars map[string]string, input string) error {
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	p, err := loadPipeline(file, f.model)
	if err != nil {
		return specError(err)
	}
	if err := pipelineFlagsUnused(p, f.noCache); err != nil {
		return exitWith(exitUsage, err)
	}
	printStepWarnings(warningsTo(stderr, f.quiet), p)
	inputs, err := pipelineInputs(p, vars, input, f.input != "" || f.inputFile != "")
	if err != nil {
		return exitWith(exitUsage, err)
	}
	ctx := cmd.Context()
	if f.queue.url == "" {
		// What run refuses of a pipeline before its first step, batch
		// refuses in every workspace before any step runs in any; a missing
		// key is missing in all of them, and told once.
		if code := refuseBeforeTheFirstStep(stderr, checkBatchSteps(ctx, p, workspaces), p); code != 0 {
			return exitWith(code, nil)
		}
	}
	opts := pipelineOptions(ctx, warningsTo(stderr, f.quiet), inputs, f.jobs, f.noCache)
	if !f.quiet {
		pp := &pipelineProgress{w: stderr}
		opts.OnJobStart, opts.OnJobEnd = pp.start, pp.end
	}
	var eventFiles []string
	if f.queue.events != "" {
		if err := makeEventsDir(f.queue.events); err != nil {
			return err
		}
		eventFiles = eventFileNames(workspaces)
		opts.OwnFiles = append(opts.OwnFiles, f.queue.events)
	}
	if f.queue.url != "" {
		if err := f.queue.checkWorkspaces(workspaces...); err != nil {
			return err
		}
		q, err := f.queue.open(ctx, "agentspec batch", 0)
		if err != nil {
			return err
		}
		defer q.Conn().Close()
		opts.Exec = q.Executor(f.queue.batchOptions(f.noCache, f.model))
	}
	run := func(i int, ws string) (*pipeline.Result, error) {
		o := opts
		o.Workspace = ws
		if eventFiles == nil {
			return pipeline.Run(ctx, p, o)
		}
		events, finish, err := openEvents(filepath.Join(f.queue.events, eventFiles[i]))
		if err != nil {
			return nil, err
		}
		o.Listeners = append(slices.Clip(o.Listeners), events)
		res, err := pipeline.Run(ctx, p, o)
		if ferr := finish(); ferr != nil && err == nil {
			err = ferr
		}
		return res, err
	}
	failed := 0
	for i, ws := range workspaces {
		line := pipelineLine{Workspace: ws, Outputs: json.RawMessage("null")}
		var res *pipeline.Result
		if ctx.Err() == nil {
			res, err = run(i, ws)
		} else {
			err = runtime.ErrNotRun
		}
		if res != nil {
			line.Outputs, line.Steps, line.Usage = res.Outputs, res.Steps, &res.Usage
		}
		switch {
		case errors.Is(err, pipeline.ErrInputs):
			return exitWith(exitUsage, fmt.Errorf("%w (give an input with --var NAME=VALUE)", err))
		case err != nil:
			msg := jobError(err)
			line.Error = &msg
		case !res.OK():
			msg := oneLine(failedSteps(p, res))
			line.Error = &msg
		default:
			line.OK = true
		}
		if !line.OK {
			failed++
			if !f.quiet {
				fmt.Fprintf(stderr, "%s: %s\n", text.Visible(ws), text.VisibleLines(*line.Error))
			}
		}
		b, err := json.Marshal(line)
		if err != nil {
			return exitWith(exitFailure, err)
		}
		if _, err := stdout.Write(append(b, '\n')); err != nil {
			return exitWith(exitFailure, fmt.Errorf("writing the results: %w", err))
		}
	}
	if failed > 0 {
		return exitWith(exitFailure, fmt.Errorf("%d of %d workspaces failed", failed, len(workspaces)))
	}
	return nil
}

// refuseBeforeTheFirstStep prints what the steps' checks found and the
// steps whose providers lack a key or credentials, and returns the exit
// status: as for run, exitUsage for a step that cannot run as written,
// exitFailure when only the environment lacks something; 0 when nothing
// is refused.
func refuseBeforeTheFirstStep(stderr io.Writer, problems []problem, p *pipeline.Pipeline) int {
	code := exitUsage
	if len(problems) == 0 {
		code = exitFailure
	}
	problems = append(problems, problemsOf(p.File, p.CheckCredentials())...)
	if len(problems) == 0 {
		return 0
	}
	printProblems(stderr, []fileResult{{Problems: problems}})
	return code
}
