package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/internal/text"
	"github.com/agentspec/agentspec/runtime"
	"github.com/agentspec/agentspec/runtime/providers"
	"github.com/agentspec/agentspec/spec"
)

type runFlags struct {
	input     string
	inputFile string
	vars      []string
	workspace string
	output    string
	events    string
	record    string
	replay    string
	approve   bool
	noCache   bool
	quiet     bool
	jobs      int
	model     string
	queue     runQueueFlags // a pipeline's jobs on the queue
}

func newRunCmd() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run SPEC|- [-]",
		Short: "Run an agent spec",
		Annotations: map[string]string{secondSignalLeaves: "the tool calls under way are not waited for, " +
			"no result is printed, the --events and --record files may lack their end, jobs sent to the " +
			"queue are not withdrawn, MCP servers the run started are left to exit as their input closes, and " +
			"Shell commands run with sandbox: off go on"},
		Long: `Run loads SPEC, builds its capabilities and runs the agent until the model gives its final
answer, which is printed on stdout. SPEC - reads the spec from stdin (its relative paths then
resolve from the current directory). The input (the user message) comes from --input, from
--input-file, or from stdin when a second argument - follows SPEC; without one, the run's user
message is "Begin." and the instructions drive it. --var fills the instructions' {{name}}
placeholders: each placeholder needs a value, and each --var a placeholder; a name given again
takes its last value, so that flags added after a script's own override them.

--workspace is the job's directory (default: the current directory): a relative FileSystem
root_dir resolves against it, and the spec's workspace settings apply to it. After the final
answer, every workspace.expected_output_files entry must exist and every workspace.checks entry
must hold (min_chars, max_chars, contains, matches, json_schema); a failure is sent back to the
model, which has 3 answers in all, and the run fails naming the check when none passes.

With "cache: true" or "cache: {dir: PATH}" in the spec, a run over the same spec, input,
variables, workspace and workspace.input_globs files is answered from the result cache without
calling the model, as long as its expected output files are still there. Only successful runs
are stored. --no-cache runs the model anyway and stores nothing; "agentspec cache" inspects and
clears the cache.

Progress goes to stderr as the run goes: one line per tool call with its duration (a file
change that did not land says "cancelled: REASON", "conflict: ..." or "protected: ..."), a line
per provider retry, then a usage summary ("cached" for a cached result; cache and reasoning
tokens where the provider reports them). On a terminal whose TERM is not "dumb" the model's
responses stream, and a status line, redrawn in place, shows each one arrive (the result is
the same); elsewhere progress is plain lines. -q silences it.

Stdout gets the answer alone: its text, or with an output_schema its JSON value, so that
"agentspec run spec.yaml | jq .title" works. --output json (-o json) prints the envelope
{"output": ..., "usage": ..., "cached": ...} instead, the output being the answer's JSON value
when the spec has a schema and its text otherwise.

--approve asks on the terminal before each file change, showing its diff; answering no cancels
the change and tells the model so, and Ctrl-C while it asks stops the run at once without the
change. --events writes every event as a JSON line as it happens, each with "kind", "time"
(RFC 3339, nanoseconds) and "run_id"; tool results carry their text, cut at 4096 characters
("text_truncated": true), provider retries are "model.retry" events, and the log ends with a
run.end event: {"ok", "error", "usage", "cached"}. --record and --replay save a provider
conversation to a file and play it back offline; the recording keeps the provider's endpoint
(never its key), so a replay needs neither the API key nor the base URL; a run with either of
them neither uses nor fills the result cache.

To run one spec over many workspaces, see "agentspec batch".

A pipeline file (steps: at its top level) runs as a graph of specs over one workspace:
each step once its dependencies succeeded, independent steps and for_each items at once, up
to -j jobs (default: the number of CPUs). --var k=v fills the pipeline's inputs (an integer,
number, boolean, array or object input of the inputs schema takes its value parsed), --input
fills inputs.input; an input the inputs schema does not list and no {{inputs.NAME}}
references is a usage error. Stdout gets the outputs mapping as one JSON object (without
outputs:, the last step's output); -o json the envelope {"outputs", "steps", "usage"},
printed on failure too. Stderr gets a line per job start and end and a summary. A step whose
when is false is skipped with the steps that need it; a step that fails stops the steps that
need it, which are reported as not run, and the exit status is 1. --record, --replay and
--approve are not for pipelines.

With --nats URL a pipeline's jobs run on the NATS JetStream work queue that "agentspec
worker" processes serve: this process walks the graph and submits each job (its spec, from its
file or written inline in the pipeline, input and vars) once the jobs before it are done, -j at
a time. The workspace (--workspace) lies on storage the workers share, named relative to
--workspace-root, as for "batch --nats"; or --ship sends it with each job and applies the files
the job changed here before the steps after it start (none of them if any changed here
meanwhile, or if another item of the same for_each step changed one of them first). The
pipeline's cache: applies on the workers, in their shared cache, and --events gets the jobs'
own events from the workers, tagged with their step and item, beside the pipeline's.

A flag the spec would ignore is a usage error saying why: --replay or --record with a script
or test model, --no-cache without a cache, --approve without capabilities.

Ctrl-C stops the run cleanly, between tool calls, with exit status 130 (143 after SIGTERM); a
second one during that stop ends it at once, not waiting for the tool call under way or for the
programs the run started to stop, and says so.

Exit status: 0 on success (changes that were cancelled or refused do not fail a run the model
finished), 1 when the run fails, 2 on usage errors (a --var without a placeholder, a
placeholder without a --var) or a spec that cannot run: one that does not
load, has no model, names a script model's file that is missing or invalid, or has two
capabilities offering tools of the same name ("agentspec validate" finds all of these).
Keys the spec gives that have no effect (instrument, end_strategy, defer_loading, an MCP
entry's native) are reported on stderr as warnings.

"model: test" runs the spec offline: the test model calls every tool once with arguments
generated from its schema, then answers (see docs/specs.md, "The test model").`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error { return runSpec(cmd, f, args) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.input, "input", "", "the user message")
	fl.StringVar(&f.inputFile, "input-file", "", "read the user message from a file (- for stdin)")
	fl.StringArrayVar(&f.vars, "var", nil, varUsage("set an instructions variable"))
	fl.StringVar(&f.workspace, "workspace", "", "directory relative capability paths resolve against (default: current directory)")
	addOutputFlag(fl, &f.output, "", "text: the answer alone (its JSON value with an output_schema); json: {\"output\", \"usage\", \"cached\"}")
	fl.StringVar(&f.events, "events", "", "write every event to this file as JSON lines")
	fl.StringVar(&f.record, "record", "", "record the provider's HTTP exchanges to this file")
	fl.StringVar(&f.replay, "replay", "", "answer the model's requests from a recording instead of the network")
	fl.BoolVar(&f.approve, "approve", false, "ask before each file change, showing its diff")
	fl.BoolVar(&f.noCache, "no-cache", false, "neither use nor fill the result cache the spec names")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "print no progress, usage or warnings on stderr")
	fl.IntVarP(&f.jobs, "jobs", "j", 0, "for a pipeline: jobs at a time (default: the number of CPUs)")
	fl.StringVar(&f.model, "model", "", modelFlagUsage)
	f.queue.add(fl)
	return cmd
}

func runSpec(cmd *cobra.Command, f runFlags, args []string) error {
	stdin, stdout, stderr := cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr()
	ctx := cmd.Context()

	if isPipelineFile(args[0]) {
		return runPipeline(cmd, f, args)
	}
	if name := f.queue.changed(cmd); name != "" {
		return exitWith(exitUsage, fmt.Errorf("--%s is for pipelines; to run one spec on the queue, use agentspec submit SPEC DIR --nats URL --wait", name))
	}
	if err := f.check(args); err != nil {
		return exitWith(exitUsage, err)
	}
	if cmd.Flags().Changed("jobs") {
		return exitWith(exitUsage, errors.New("-j is for pipelines: a spec runs one job"))
	}
	vars, input, err := f.varsAndInput(stdin, args)
	if err != nil {
		return err
	}
	warn := warningsTo(stderr, f.quiet)
	s, err := loadSpecToRun(stdin, args[0], f, vars, warn)
	if err != nil {
		return err
	}
	dir, err := workspaceDir(f.workspace)
	if err != nil {
		return exitWith(exitUsage, err)
	}

	// The event log and the recording are agentspec's, not the run's: the
	// run may not rewrite them, nor are they its inputs.
	opts := []runtime.Option{runtime.WithInput(input), runtime.WithVars(vars), runtime.WithWorkspace(dir),
		runtime.WithListener(capabilityWarnings(warn)), runtime.WithOwnFiles(f.events, f.record)}
	if f.noCache || f.record != "" || f.replay != "" {
		// A recording is of the provider's conversation: a cached result
		// would leave it empty, or answer a replay without checking the
		// requests against it.
		opts = append(opts, runtime.WithoutCache())
	}
	var progress *progress
	if !f.quiet {
		progress = newProgress(stderr)
		opts = append(opts, runtime.WithListener(progress.listen))
		if progress.live {
			// On a terminal the answer's progress shows as it streams; the
			// result is the same as without streaming.
			opts = append(opts, runtime.WithStreaming(progress.stream))
		}
	}
	if f.approve {
		a := &approver{in: stdin, out: stderr, progress: progress, echo: !isTerminal(stdin)}
		a.start()
		opts = append(opts, runtime.WithListener(a.listen))
	}
	events, finishEvents, err := openEvents(f.events)
	if err != nil {
		return exitWith(exitUsage, err)
	}
	if events != nil {
		opts = append(opts, runtime.WithListener(events))
	}
	transport, closeTransport, err := f.transport()
	if err != nil {
		_ = finishEvents()
		return exitWith(exitUsage, err)
	}
	opts = append(opts, runtime.WithProviderOptions(providers.Options{Transport: transport}),
		runtime.WithHTTPTransport(capabilityTransport(ctx)))

	res, err := runtime.Run(ctx, s, opts...)
	// The recording and the event log are kept whatever the outcome: they
	// are what explains a failed run.
	if ferr := errors.Join(closeTransport(), finishEvents()); ferr != nil && err == nil {
		err = ferr
	}
	if progress != nil {
		progress.summary(res)
	}
	var specErrs spec.Errors
	switch {
	case errors.As(err, &specErrs):
		// A capability could not be built from its options: a spec problem,
		// reported as FILE:LINE:COL lines like the loader's.
		return specError(err)
	case err != nil:
		return exitWith(exitFailure, runError(err))
	}
	return printResult(stdout, f.output, res)
}

// check rejects contradictory flags before anything is read.
func (f runFlags) check(args []string) error {
	stdinInput := f.inputFile == "-"
	if args[0] == stdinArg {
		switch {
		case len(args) == 2 || stdinInput:
			return errors.New("the spec comes from stdin (SPEC is -), so the input cannot come from stdin too; give it with --input or --input-file FILE")
		case f.approve:
			return errors.New("--approve reads the answers from stdin, so the spec cannot come from stdin too")
		}
	}
	if len(args) == 2 {
		if args[1] != "-" {
			return fmt.Errorf("unexpected argument %q: the only argument after SPEC is - (read the input from stdin)", args[1])
		}
		stdinInput = true
	}
	sources := 0
	for _, set := range []bool{f.input != "", f.inputFile != "", len(args) == 2} {
		if set {
			sources++
		}
	}
	switch {
	case sources > 1:
		return errors.New("give the input one way: --input, --input-file or - (stdin)")
	case checkOutput(f.output) != nil:
		return checkOutput(f.output)
	case f.record != "" && f.replay != "":
		return errors.New("--record and --replay cannot be used together")
	case f.approve && stdinInput:
		return errors.New("--approve reads the answers from stdin, so the input cannot come from stdin too")
	}
	return nil
}

// unused rejects the flags this spec would ignore: a flag that silently
// does nothing is a mistake the user should hear about.
func (f runFlags) unused(s *spec.Spec) error {
	model := strings.TrimSpace(s.Model)
	offline := ""
	switch {
	case strings.HasPrefix(model, "script:"):
		offline = "the spec's model is a script (" + model + ")"
	case model == "test":
		offline = "the spec's model is the offline test model"
	}
	switch {
	case offline != "" && f.replay != "":
		return fmt.Errorf("--replay plays back a provider's HTTP exchanges, but %s, which makes none", offline)
	case offline != "" && f.record != "":
		return fmt.Errorf("--record saves a provider's HTTP exchanges, but %s, which makes none", offline)
	case f.noCache && s.Cache == nil:
		return errors.New("--no-cache turns off the spec's result cache, but the spec has none (no cache key)")
	case f.approve && len(s.Capabilities) == 0:
		return errors.New("--approve asks before each file change, but the spec has no capabilities, so nothing can change a file")
	}
	return nil
}

// jobsInput is what batch and submit read before they start jobs: the --var
// flags, the input and the workspaces their arguments name
// (expandWorkspaces), each wrong one a usage error.
func (f runFlags) jobsInput(stdin io.Reader, dirs []string) (map[string]string, string, []string, error) {
	vars, input, err := f.varsAndInput(stdin, nil)
	if err != nil {
		return nil, "", nil, err
	}
	workspaces, err := expandWorkspaces(dirs)
	if err != nil {
		return nil, "", nil, exitWith(exitUsage, err)
	}
	return vars, input, workspaces, nil
}

// varsAndInput parses the --var flags and reads the input (readInput), what
// is wrong with either a usage error: what every command that starts jobs
// does first.
func (f runFlags) varsAndInput(stdin io.Reader, args []string) (map[string]string, string, error) {
	if f.input != "" && f.inputFile != "" { // run says so before, naming stdin too
		return nil, "", exitWith(exitUsage, errors.New("give the input one way: --input or --input-file"))
	}
	vars, err := parseVars(f.vars)
	if err != nil {
		return nil, "", exitWith(exitUsage, err)
	}
	input, err := f.readInput(stdin, args)
	if err != nil {
		return nil, "", exitWith(exitUsage, err)
	}
	return vars, input, nil
}

func (f runFlags) readInput(stdin io.Reader, args []string) (string, error) {
	switch {
	case f.input != "":
		return f.input, nil
	case f.inputFile == "-" || len(args) == 2:
		b, err := io.ReadAll(stdin)
		if err != nil {
			return "", fmt.Errorf("reading the input from stdin: %w", err)
		}
		return string(b), nil
	case f.inputFile != "":
		b, err := os.ReadFile(f.inputFile)
		if err != nil {
			return "", fmt.Errorf("--input-file: %w", err)
		}
		return string(b), nil
	}
	return "", nil
}

// openEvents opens the --events file. The listener is nil when there is no
// file; finish closes it. The file is not buffered: each event is written
// whole as it happens, so "tail -f" follows the run and a run that is killed
// keeps every event up to its end.
func openEvents(path string) (listener capabilities.Listener, finish func() error, err error) {
	if path == "" {
		return nil, func() error { return nil }, nil
	}
	file, err := runtime.CreateEventsFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("--events: %w", err)
	}
	finish = func() error {
		if err := file.Close(); err != nil {
			return fmt.Errorf("--events: %w", err)
		}
		return nil
	}
	return runtime.JSONLines(file), finish, nil
}

// transport returns the HTTP transport for --record or --replay (nil for the
// default) and the function that finishes it: a recording is written when
// the run ends.
func (f runFlags) transport() (http.RoundTripper, func() error, error) {
	none := func() error { return nil }
	switch {
	case f.record != "":
		rec, err := providers.NewRecorder(f.record, nil)
		if err != nil {
			return nil, nil, fmt.Errorf("--record: %w", err)
		}
		return rec, func() error {
			if err := rec.Close(); err != nil {
				return fmt.Errorf("--record: %w", err)
			}
			return nil
		}, nil
	case f.replay != "":
		rep, err := providers.NewReplayer(f.replay)
		if err != nil {
			return nil, nil, fmt.Errorf("--replay: %w", err)
		}
		return rep, none, nil
	}
	return nil, none, nil
}

// varUsage is the usage of a command's --var flag, what it does said
// first.
func varUsage(what string) string {
	return what + ": --var name=value (repeatable; a name given again takes its last value)"
}

// parseVars reads --var name=value flags. A name given again takes its
// last value, as terraform's -var and helm's --set do: a wrapper script's
// defaults, written first, give way to the flags its caller adds after
// them. Every --var sets the one value of a name, the spec's or the
// pipeline's (a pipeline step's vars are its file's), so there is no name
// that two values could both be meant for.
func parseVars(flags []string) (map[string]string, error) {
	vars := make(map[string]string, len(flags))
	for _, kv := range flags {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(name) == "" {
			return nil, fmt.Errorf("--var %q: want name=value", kv)
		}
		vars[strings.TrimSpace(name)] = value
	}
	return vars, nil
}

// checkVars matches the --var flags with the instructions' placeholders
// (runtime.CheckVars), in the flags' words.
func checkVars(s *spec.Spec, vars map[string]string) error {
	err := runtime.CheckVars(s, vars)
	var (
		unknown *runtime.UnknownVarError
		missing *runtime.MissingVarError
	)
	switch {
	case errors.As(err, &unknown):
		return fmt.Errorf("--var %s: %s", strings.Join(unknown.Names, ", "), unknown.Detail())
	case errors.As(err, &missing) && len(missing.Problems) > 0:
		return withVarFlags(missing.Problems) // each at its place
	case errors.As(err, &missing):
		if len(missing.Names) == 1 {
			return fmt.Errorf("%w (set it with --var %s=VALUE)", err, missing.Names[0])
		}
		flags := make([]string, len(missing.Names))
		for i, name := range missing.Names {
			flags[i] = "--var " + name + "=VALUE"
		}
		return fmt.Errorf("%w (set them with %s)", err, strings.Join(flags, " "))
	}
	return withVarFlags(err)
}

// withVarFlags adds to each problem of err that is a placeholder without a
// value (spec.Error.Var) the --var flag that gives it one.
func withVarFlags(err error) error {
	var list spec.Errors
	if errors.As(err, &list) {
		for _, e := range list {
			if e.Var != "" {
				e.Msg += fmt.Sprintf(" (set it with --var %s=VALUE)", e.Var)
			}
		}
	}
	return err
}

// runError makes a failed run's error one line.
func runError(err error) error {
	if errors.Is(err, runtime.ErrInterrupted) {
		return runtime.ErrInterrupted
	}
	var one *spec.Error
	if errors.As(err, &one) && one.Error() == err.Error() {
		return one // printed at its position, as a spec problem is
	}
	var retried *runtime.RetriedError
	if errors.As(err, &retried) {
		return errors.New(retried.Error())
	}
	return errors.New(providers.Describe(err))
}

// printResult writes the answer: by default the text alone, or the answer's
// JSON value when the spec has an output_schema (so it pipes into jq); with
// --output json the envelope {"output", "usage", "cached"}. The text is the
// model's: on a terminal, whatever in it the terminal would act on is shown
// escaped; anywhere else (a pipe, a file) it is written as it is, since it
// is data.
func printResult(w io.Writer, format string, res *runtime.Result) error {
	hasSchema := res.JSON != nil
	if format != formatJSON {
		out := res.Output
		if hasSchema {
			out = string(res.JSON)
		}
		if isTerminal(w) {
			out = text.VisibleLines(out)
		}
		if !strings.HasSuffix(out, "\n") {
			out += "\n"
		}
		_, err := io.WriteString(w, out)
		return err
	}
	output, err := json.Marshal(res.Output)
	if err != nil {
		return exitWith(exitFailure, err)
	}
	if hasSchema {
		output = res.JSON
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		Output json.RawMessage `json:"output"`
		Usage  runtime.Usage   `json:"usage"`
		Cached bool            `json:"cached"`
	}{output, res.Usage, res.Cached})
}
