package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/internal/glob"
	"github.com/agentspec/agentspec/runtime"
	"github.com/agentspec/agentspec/runtime/cache"
	"github.com/agentspec/agentspec/runtime/providers"
)

// RunOptions configure Run.
type RunOptions struct {
	// Workspace is the one directory every step's jobs run over; "" is the
	// process's working directory.
	Workspace string
	// Inputs are the pipeline's inputs, validated against the inputs schema
	// when the pipeline has one; {{inputs.NAME}} reads them.
	Inputs map[string]any
	// Concurrency is how many jobs run at once in all; 0 is the number of
	// CPUs.
	Concurrency int
	// Cache is the cache the pipeline's cache: setting turns on; nil opens
	// the directory the setting names (relative to the pipeline file), or
	// the default one.
	Cache *cache.Cache
	// Options are added to every job's runtime.Run, after the pipeline's
	// own (workspace, input, vars, the pipeline's cache, provider options
	// whose Credentials the jobs and CheckCredentials share: a
	// runtime.WithProviderOptions here replaces them). The pipeline's
	// cache is given with runtime.WithCache, which caches a run given
	// runtime.WithModel or runtime.WithCapabilities too: with either here,
	// add runtime.WithoutCache unless they answer alike from run to run.
	Options []runtime.Option
	// OwnFiles are files the caller writes for the run as it goes (its
	// events log), or directories of them: every job gets them as
	// runtime.WithOwnFiles, and a {glob: ...} fan-out has no item among
	// them, nor in the pipeline's cache directory.
	OwnFiles []string
	// Listeners get the pipeline's events (PipelineStart, StepStart,
	// StepEnd, PipelineEnd) and every job's events, wrapped in a JobEvent
	// that names the step and item. They are called from many goroutines.
	Listeners []capabilities.Listener
	// OnJobStart and OnJobEnd are called as each job starts and ends (item
	// is the fan-out item's index, -1 for a step that does not fan out), one
	// call at a time.
	OnJobStart func(step string, item int)
	OnJobEnd   func(JobEnd)
	// Exec, when set, runs each job in runtime.Run's place (on a work
	// queue's workers, say). Options are then Exec's business, and so is the
	// cache: the run opens none, and tells Exec in Job.Cache whether the
	// pipeline's applies. nil runs each job here with runtime.Run.
	Exec func(ctx context.Context, job Job) (*runtime.Result, error)
}

// Job is one job of a pipeline, as RunOptions.Exec gets it: the step's spec
// over the workspace with its input and vars filled.
type Job struct {
	Step      *Step
	Item      int // the fan-out item's index; -1 for a step that does not fan out
	Workspace string
	Input     string
	Vars      map[string]string
	// InputGlobs are patterns the job's cache key covers the files of,
	// besides its spec's input_globs: for a {glob: ...} fan-out, one that
	// matches the file its item names, and only it.
	InputGlobs []string
	// SpecData is the file the step's spec was loaded from, as it was read
	// then (the pipeline file for an inline spec, at Step.SpecPointer), and
	// Script its model's script as the run read it when it started (nil for
	// a model that is no script): a job runs them, not what the files hold
	// by the time it starts, so that an edit while the run goes on changes
	// none of its jobs. SpecData is nil for a step made in Go. ScriptErr is
	// why the script could not be read then (Script is nil): a job that
	// answers from the script fails with it, as its run would.
	SpecData  []byte
	Script    *runtime.Script
	ScriptErr error
	// Cache says that the pipeline's cache: is on and applies to this job,
	// whose spec says nothing of its own.
	Cache bool
	// Emit hands one of the job's own events to the pipeline's listeners,
	// tagged with its step and item; it does nothing when there are none.
	Emit capabilities.Listener
	// Claim takes the file at an absolute path for this job before Exec
	// changes it in the workspace, and says why not when another item of
	// the same fan-out step changed it first in this run: the change must
	// then be refused, as a local run refuses it. It takes anything for a
	// step that does not fan out.
	Claim func(file string) (refusal string)
}

// JobEnd is how one job ended, for RunOptions.OnJobEnd.
type JobEnd struct {
	Step     string
	Item     int             // -1 for a step that does not fan out
	Result   *runtime.Result // nil when the job failed before reaching the model
	Err      error
	Duration time.Duration
	Cached   bool
}

// Result is what a pipeline run gives. It marshals as the -o json envelope:
// {"outputs", "steps", "usage"}.
type Result struct {
	// Outputs is the outputs mapping evaluated over the steps' answers, a
	// JSON object in the order the file writes it; without outputs:, the
	// output of the last step in Order. null when the run failed.
	Outputs json.RawMessage `json:"outputs"`
	// Steps says how each step ended, by name.
	Steps map[string]*StepResult `json:"steps"`
	// Usage is the sum of every job's usage; Elapsed is the run's time.
	Usage runtime.Usage `json:"usage"`
}

// OK tells whether every step that ran succeeded.
func (r *Result) OK() bool {
	for _, s := range r.Steps {
		if !s.OK && !s.Skipped {
			return false
		}
	}
	return true
}

// StepResult is how one step ended: it ran (OK, or Error), was skipped by a
// when (its own or a dependency's), or did not run (a dependency failed, or
// the run was stopped).
type StepResult struct {
	OK      bool
	Cached  bool // every job of the step replayed from the cache
	Skipped bool
	NotRun  bool
	// Output is the answer of a step that does not fan out: the JSON value
	// of its output_schema, or its text.
	Output any
	// Outputs are a fan-out step's answers in item order, failed items
	// (on_item_error: skip) left out. When the step failed, they are the
	// answers of the items that finished, as when the run was stopped
	// between its items: the items in Failed and NotRunItems are left out.
	Outputs []any
	// Items is how many items a fan-out step had; Failed lists those that
	// failed.
	Items  int
	Failed []ItemError
	// NotRunItems lists, in order, the items of a fan-out step that never
	// started: after an item failed (on_item_error: fail), or once the run
	// was interrupted.
	NotRunItems []int
	Usage       runtime.Usage
	Error       string // why the step failed, or why it did not run; "" when OK

	fanOut bool
	listed bool // a fan-out step got as far as knowing its items
}

// ItemError is a fan-out item that failed.
type ItemError struct {
	Item  int    `json:"item"`
	Error string `json:"error"`
}

// MarshalJSON writes "output" for a step that runs once and "outputs" for a
// fan-out step, each only when the step ran: a fan-out step that failed
// before it knew its items has neither outputs nor items, while one stopped
// between its items (Ctrl-C) has the answers of those that finished.
func (s *StepResult) MarshalJSON() ([]byte, error) {
	m := struct {
		OK          bool          `json:"ok"`
		Cached      bool          `json:"cached"`
		Skipped     bool          `json:"skipped"`
		NotRun      bool          `json:"not_run,omitempty"`
		Output      *any          `json:"output,omitempty"`
		Outputs     *[]any        `json:"outputs,omitempty"`
		Items       *int          `json:"items,omitempty"`
		Failed      []ItemError   `json:"failed_items,omitempty"`
		NotRunItems []int         `json:"not_run_items,omitempty"`
		Usage       runtime.Usage `json:"usage"`
		Error       *string       `json:"error"`
	}{OK: s.OK, Cached: s.Cached, Skipped: s.Skipped, NotRun: s.NotRun, Failed: s.Failed, NotRunItems: s.NotRunItems, Usage: s.Usage}
	switch {
	case s.fanOut && s.listed:
		outs := s.Outputs
		if outs == nil {
			outs = []any{}
		}
		m.Outputs, m.Items = &outs, &s.Items
	case s.OK:
		m.Output = &s.Output
	}
	if s.Error != "" {
		m.Error = &s.Error
	}
	return marshal(m)
}

// ErrInputs is returned (wrapped) when the run's inputs do not match the
// pipeline's inputs schema.
var ErrInputs = errors.New("inputs")

// Run runs the pipeline: each step once its dependencies have succeeded,
// independent steps and fan-out items at once up to Concurrency (and a
// step's MaxParallel), every job exactly runtime.Run of the step's spec over
// the one workspace with its input and vars filled from the inputs and the
// answers before it. A step's when that is false skips it and the steps that
// depend on it; a step that fails stops the steps that depend on it, which
// are reported as not run, while the steps that do not go on.
//
// The error is for a run that could not start (inputs that do not match the
// schema, a cache that cannot be opened), that was interrupted (ctx
// ended: runtime.ErrInterrupted, with the Result saying what ran), or
// whose outputs could not be evaluated once every step succeeded (the
// Result's Outputs are then null); a step that failed is in the Result,
// which is then not OK.
func Run(ctx context.Context, p *Pipeline, o RunOptions) (*Result, error) {
	start := time.Now()
	ctx, _ = runtime.WithOuterRunID(ctx) // one run_id on every event of the run
	inputs, err := checkInputs(p, o.Inputs)
	if err != nil {
		return nil, err
	}
	r := &runner{p: p, o: o, inputs: inputs, done: map[string]chan struct{}{}, results: map[string]*StepResult{},
		pos: map[string]int{}, left: map[string]int{}, dependents: map[string][]*Step{}}
	if r.o.Concurrency <= 0 {
		r.o.Concurrency = goruntime.NumCPU()
	}
	if r.ws = o.Workspace; r.ws == "" {
		r.ws = "."
	}
	r.slots = newSlots(r.o.Concurrency, len(p.Steps))
	if p.Cache != nil && p.Cache.Enabled && o.Exec == nil {
		if r.cache = o.Cache; r.cache == nil {
			dir := p.Cache.Dir
			if dir != "" && !filepath.IsAbs(dir) {
				dir = filepath.Join(filepath.Dir(p.File), dir)
			}
			if r.cache, err = cache.New(dir); err != nil {
				return nil, fmt.Errorf("cache: %w", err)
			}
		}
	}
	r.protected = r.ownFiles()
	r.protectedReal = sync.OnceValue(func() []string {
		real := make([]string, len(r.protected))
		for i, p := range r.protected {
			real[i] = realPath(p)
		}
		return real
	})
	// The real paths too: a directory not made yet (a cache) has no real
	// path of its own for the FileSystem to compare with its root's, and
	// the links above it are resolved here. Made once, as every job's.
	r.protectOption = sync.OnceValue(func() runtime.Option {
		return runtime.WithProtectedFiles(slices.Concat(r.protected, r.protectedReal())...)
	})
	// Every job of a step runs its script as it was when the run started
	// (its spec was read as the pipeline was loaded): an edit while the
	// run goes on, by its user or by a job, changes none of its jobs.
	r.scripts = make(map[*Step]loadedScript, len(p.Steps))
	for _, s := range p.Steps {
		if s.Spec != nil {
			sc, err := runtime.LoadScript(s.Spec)
			r.scripts[s] = loadedScript{sc, err}
		}
	}
	for i, s := range p.Steps {
		r.done[s.Name] = make(chan struct{})
		r.results[s.Name] = &StepResult{fanOut: s.FanOut()}
		r.pos[s.Name], r.left[s.Name] = i, len(s.Deps)
		for _, d := range s.Deps {
			r.dependents[d] = append(r.dependents[d], s)
		}
		if len(s.Deps) == 0 {
			r.slots.hold() // let go once the step waits for its slot, or has ended
		}
	}
	if err := r.emit(ctx, PipelineStart{Name: p.Name, Steps: len(p.Steps)}); err != nil {
		return nil, err
	}
	var wg sync.WaitGroup
	for _, s := range p.Order {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(r.done[s.Name])
			r.step(ctx, s)
		}()
	}
	wg.Wait()

	res := &Result{Steps: r.results}
	for _, s := range p.Steps {
		addUsage(&res.Usage, r.results[s.Name].Usage)
	}
	res.Usage.Elapsed = time.Since(start)
	var outErr error
	if res.OK() && ctx.Err() == nil {
		if res.Outputs, outErr = r.outputs(); outErr != nil {
			res.Outputs = nil
		}
	}
	if res.Outputs == nil {
		res.Outputs = json.RawMessage("null")
	}
	// A run whose outputs failed ends as any other, its end not ok.
	endErr := r.emit(context.WithoutCancel(ctx), PipelineEnd{OK: res.OK() && ctx.Err() == nil && outErr == nil, Usage: res.Usage})
	switch {
	case ctx.Err() != nil:
		return res, runtime.ErrInterrupted
	case outErr != nil:
		return res, outErr
	}
	return res, endErr
}

// checkInputs validates the inputs against the schema, as JSON values.
func checkInputs(p *Pipeline, in map[string]any) (map[string]any, error) {
	if in == nil {
		in = map[string]any{}
	}
	b, err := json.Marshal(in)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInputs, err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var values map[string]any
	if err := dec.Decode(&values); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInputs, err)
	}
	if p.Inputs == nil {
		// Without a schema, every input a template names is needed.
		for _, name := range inputNames(p) {
			if _, ok := values[name]; !ok {
				return nil, fmt.Errorf("%w: %s is not given", ErrInputs, name)
			}
		}
	}
	if p.Inputs != nil {
		// An input not given takes its schema's default, as --var would
		// give it, and so does a member of one, at every depth.
		fillDefaults(values, p.Inputs.Type, 0)
	}
	if p.Inputs != nil && p.Inputs.Compiled != nil {
		if err := p.Inputs.Compiled.Validate(values); err != nil {
			return nil, fmt.Errorf("%w do not match the pipeline's inputs schema: %s", ErrInputs, schemaProblems(err))
		}
	}
	return values, nil
}

// fillDefaults gives v, a value of type t, the default of each property its
// schema lists and v does not have, and so on into its members and items,
// a default given included: an input's members take their defaults as the
// inputs themselves do.
func fillDefaults(v any, t Type, depth int) {
	if depth > maxDepth {
		return
	}
	switch v := v.(type) {
	case map[string]any:
		for _, name := range t.Properties() {
			prop, _, ok := t.Property(name)
			if !ok {
				continue
			}
			if _, given := v[name]; !given {
				d, ok := prop.Default()
				if !ok {
					continue
				}
				v[name] = copyValue(d) // the schema's own is shared
			}
			fillDefaults(v[name], prop, depth+1)
		}
	case []any:
		for i, e := range v {
			if item, _, ok := t.Item(i); ok {
				fillDefaults(e, item, depth+1)
			}
		}
	}
}

// copyValue is a copy of the JSON value v that shares no map or slice with it.
func copyValue(v any) any {
	switch v := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, e := range v {
			m[k] = copyValue(e)
		}
		return m
	case []any:
		l := make([]any, len(v))
		for i, e := range v {
			l[i] = copyValue(e)
		}
		return l
	}
	return v
}

// inputNames are the inputs p's templates name, in the order first named.
func inputNames(p *Pipeline) []string {
	var names []string
	add := func(t *Template) {
		if t == nil {
			return
		}
		for _, ref := range t.Refs() {
			if ref.Kind == RefInput && !slices.Contains(names, ref.Name) {
				names = append(names, ref.Name)
			}
		}
	}
	for _, s := range p.Steps {
		add(s.Input)
		for _, v := range s.Vars {
			add(v.Value)
		}
		if s.ForEach != nil {
			add(s.ForEach.Template)
		}
		add(s.When)
	}
	for _, o := range p.Outputs {
		add(o.Value)
	}
	return names
}

type runner struct {
	p      *Pipeline
	o      RunOptions
	ws     string
	inputs map[string]any
	cache  *cache.Cache
	slots  *slots

	pos        map[string]int           // each step's position in the file
	dependents map[string][]*Step       // the steps that depend on each
	done       map[string]chan struct{} // closed when the step has ended
	mu         sync.Mutex               // guards results' contents and left, and serializes the callbacks
	results    map[string]*StepResult
	left       map[string]int // how many of each step's dependencies have not ended

	claimMu sync.Mutex
	claims  map[*Step]map[string]int // per fan-out step, the item that changed each file first

	// protected are the files the pipeline is made of (see ownFiles),
	// which no job may change; protectedReal are their real paths.
	protected     []string
	protectedReal func() []string
	protectOption func() runtime.Option // both, for each job's run

	scripts map[*Step]loadedScript // read once, as the run starts
}

// loadedScript is a step's script as the run read it: nil for a model that
// is no script, or why it could not be read, which fails each of the
// step's jobs that answers from it, as their runs would fail (a job given
// its model with runtime.WithModel, or run by an Exec that needs no
// script, does not).
type loadedScript struct {
	script *runtime.Script
	err    error
}

// step runs s once its dependencies are done, and records how it ended.
// From then on, s holds the run's slots (see slots) until it waits for
// them or has ended.
func (r *runner) step(ctx context.Context, s *Step) {
	res := r.results[s.Name]
	for _, d := range s.Deps {
		<-r.done[d]
	}
	ended := func(set func()) {
		r.finish(ctx, s, res, set, 0)
		r.slots.unhold()
	}
	r.mu.Lock()
	var failed, skipped []string
	for _, d := range s.Deps {
		switch dr := r.results[d]; {
		case dr.Skipped:
			skipped = append(skipped, d)
		case !dr.OK:
			failed = append(failed, d)
		}
	}
	r.mu.Unlock()
	switch {
	case len(failed) > 0:
		ended(func() {
			res.NotRun, res.Error = true, "not run: "+strings.Join(failed, ", ")+" did not succeed"
		})
		return
	case len(skipped) > 0:
		ended(func() { res.Skipped = true })
		return
	case ctx.Err() != nil:
		ended(func() { res.NotRun, res.Error = true, "not run: interrupted" })
		return
	}
	if s.Condition != nil {
		values := make([]any, len(s.Condition.Refs()))
		for i, ref := range s.Condition.Refs() {
			v, err := r.value(ref, nil)
			if err != nil {
				v = err // the when fails with it only if it needs the value
			}
			values[i] = v
		}
		ok, err := s.Condition.Eval(values)
		if err != nil {
			ended(func() { res.Error = err.Error() })
			return
		}
		if !ok {
			ended(func() { res.Skipped = true })
			return
		}
	}
	start := time.Now()
	if !s.FanOut() {
		var (
			out    any
			usage  runtime.Usage
			cached bool
		)
		err := errNotStarted
		t := r.slots.request(r.pos[s.Name], 1, 0)[0]
		r.slots.unhold()
		granted := r.slots.wait(ctx, t)
		if granted {
			out, usage, cached, err = r.job(ctx, s, -1, nil)
		}
		// What the job's end makes ready waits for a slot before its slot
		// is given again.
		r.slots.hold()
		if granted {
			r.slots.release(t)
		}
		defer r.slots.unhold()
		r.finish(ctx, s, res, func() {
			res.Usage, res.Cached = usage, cached
			if err != nil {
				res.Error = err.Error()
				res.NotRun = errors.Is(err, errNotStarted)
				return
			}
			res.OK, res.Output = true, out
		}, time.Since(start))
		return
	}
	// A fan-out step starts before its items, as a step that runs one job
	// starts with it; a start a listener refuses fails the step.
	if err := r.emit(ctx, StepStart{Step: s.Name, Item: -1}); err != nil {
		r.finish(ctx, s, res, func() { res.Error = err.Error() }, time.Since(start))
		r.slots.unhold()
		return
	}
	r.fanOut(ctx, s, res, start)
}

// errNotStarted is a job the run stopped before it started.
var errNotStarted = errors.New("not run: interrupted")

// fanOut runs one job per item of s, and lets go of the slots s holds.
func (r *runner) fanOut(ctx context.Context, s *Step, res *StepResult, start time.Time) {
	items, err := r.items(s)
	if err != nil {
		r.finish(ctx, s, res, func() { res.Error = err.Error() }, time.Since(start))
		r.slots.unhold()
		return
	}
	outs := make([]outcome, len(items))
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		stopped bool
		left    = len(items)
	)
	// The items wait for their slots in item order, and look whether an
	// item failed (on_item_error: fail) once they hold one: the failed item
	// takes the others out of line before it gives its slot back, so no
	// item that was waiting for one starts after it. The item that ends
	// last ends the step, before its slot is given again. A step's slots
	// are given in item order, so its items wait here one after another,
	// and each has a goroutine of its own only once it holds a slot: a
	// list of many items costs what its running jobs do.
	pos := r.pos[s.Name]
	tickets := r.slots.request(pos, len(items), s.MaxParallel)
	ended := func(i int, granted bool) {
		r.slots.hold()
		defer r.slots.unhold()
		if granted {
			r.slots.release(tickets[i])
		}
		mu.Lock()
		if outs[i].err != nil && s.OnItemError != "skip" && !stopped {
			stopped = true
			r.slots.drop(pos)
		}
		left--
		last := left == 0
		mu.Unlock()
		if last {
			r.fanOutEnded(ctx, s, res, outs, start)
		}
	}
	if len(items) == 0 {
		r.fanOutEnded(ctx, s, res, outs, start)
	}
	r.slots.unhold()
	for i, item := range items {
		granted := r.slots.wait(ctx, tickets[i])
		mu.Lock()
		run := granted && !stopped
		mu.Unlock()
		if !run {
			ended(i, granted)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			o := &outs[i]
			o.out, o.usage, o.cached, o.err = r.job(ctx, s, i, item)
			o.ran = true
			o.interrupted = o.err != nil && ctx.Err() != nil
			ended(i, true)
		}()
	}
	wg.Wait()
}

// outcome is how one item of a fan-out step ended.
type outcome struct {
	out    any
	usage  runtime.Usage
	cached bool
	err    error
	ran    bool
	// interrupted is an item the run stopped (ctx ended) as it ran: it did
	// not fail on its own, so on_item_error: skip does not drop it.
	interrupted bool
}

// fanOutEnded records how the fan-out step s ended, from its items'
// outcomes.
func (r *runner) fanOutEnded(ctx context.Context, s *Step, res *StepResult, outs []outcome, start time.Time) {
	r.finish(ctx, s, res, func() {
		res.listed, res.Items, res.Cached, res.OK = true, len(outs), len(outs) > 0, true
		res.Outputs = []any{}
		var first error
		for i, o := range outs {
			addUsage(&res.Usage, o.usage)
			res.Cached = res.Cached && o.cached
			switch {
			case !o.ran:
				res.OK = false
				res.NotRunItems = append(res.NotRunItems, i)
				if first == nil {
					first = errNotStarted
				}
			case o.err != nil:
				res.Failed = append(res.Failed, ItemError{Item: i, Error: o.err.Error()})
				if s.OnItemError != "skip" || o.interrupted {
					res.OK = false
					if first == nil || errors.Is(first, errNotStarted) {
						first = fmt.Errorf("item %d: %w", i, o.err)
					}
				}
			default:
				res.Outputs = append(res.Outputs, o.out)
			}
		}
		if !res.OK {
			// The items that finished keep their answers, reported as
			// outputs: a sibling that failed does not make them wrong.
			res.Cached = false
			if first != nil {
				res.Error = first.Error()
			}
			res.NotRun = errors.Is(first, errNotStarted)
		}
	}, time.Since(start))
}

// items are the values s fans out over.
func (r *runner) items(s *Step) ([]any, error) {
	if s.ForEach.Glob != "" {
		own := slices.Clone(r.o.OwnFiles)
		if r.cache != nil && r.cache.Dir() != "" { // "" is a cache kept by a backend
			own = append(own, r.cache.Dir())
		}
		return globItems(r.ws, s.ForEach.Glob, own)
	}
	v, err := r.templateValue(s.ForEach.Template, nil)
	if err != nil {
		return nil, err
	}
	list, ok := v.([]any)
	if v == nil && nullable(s.ForEach.Template.Whole()) {
		return nil, nil // an array the answer left out, or null: no items
	}
	if !ok {
		return nil, fmt.Errorf("for_each: %s is %s, not an array", s.ForEach.Template.Text, valueWhat(v))
	}
	return list, nil
}

// globItems are the workspace's regular files pattern matches, as sorted
// slash paths relative to the workspace, but for the files own names and
// those below a directory it names (the run's own files, which the cache
// key leaves out of input_globs alike). Symbolic links are not followed.
func globItems(ws, pattern string, own []string) ([]any, error) {
	if real, err := filepath.EvalSymlinks(ws); err == nil {
		ws = real // the workspace may be reached through a link; nothing in it is followed
	}
	skip := map[string]bool{}
	for _, p := range own {
		abs, err := filepath.Abs(p)
		if p == "" || err != nil {
			continue // "" names no file, though Abs makes it the current directory
		}
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			abs = real
		}
		if rel, err := filepath.Rel(ws, abs); err == nil && rel != "." && filepath.IsLocal(rel) {
			skip[rel] = true
		}
	}
	base, _ := glob.SplitDoublestar(pattern)
	root := filepath.Join(ws, filepath.FromSlash(base))
	var found []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && path == root {
				return fs.SkipAll
			}
			return err
		}
		rel, err := filepath.Rel(ws, path)
		if err != nil {
			return err
		}
		if skip[rel] {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel = filepath.ToSlash(rel)
		if glob.MatchDoublestar(pattern, rel) {
			found = append(found, rel)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("for_each glob %s: %w", pattern, err)
	}
	sort.Strings(found)
	items := make([]any, len(found))
	for i, f := range found {
		items[i] = f
	}
	return items, nil
}

// job runs one job of s (item index i, or -1) in a slot the caller has
// acquired, and returns its answer.
func (r *runner) job(ctx context.Context, s *Step, i int, item any) (out any, usage runtime.Usage, cached bool, err error) {
	input, vars, err := r.fill(s, item)
	if err != nil {
		return nil, usage, false, err
	}
	opts := []runtime.Option{runtime.WithWorkspace(r.ws), runtime.WithInput(input), runtime.WithVars(vars), runtime.WithOwnFiles(r.o.OwnFiles...),
		r.protectOption()}
	script := r.scripts[s]
	if script.script != nil || script.err != nil {
		opts = append(opts, runtime.WithScript(script.script, script.err))
	}
	if r.p.credentials != nil {
		opts = append(opts, runtime.WithProviderOptions(providers.Options{Credentials: r.p.credentials}))
	}
	if r.cache != nil && !ownCache(s) {
		opts = append(opts, runtime.WithCache(r.cache))
	}
	if s.FanOut() {
		opts = append(opts, runtime.WithListener(r.claim(s, i)))
	}
	if len(r.o.Listeners) > 0 {
		opts = append(opts, runtime.WithListener(func(ctx context.Context, ev capabilities.Event) error {
			return r.emit(ctx, JobEvent{Step: s.Name, Item: i, Event: ev})
		}))
	}
	opts = append(opts, r.o.Options...)

	r.callback(func() {
		if r.o.OnJobStart != nil {
			r.o.OnJobStart(s.Name, i)
		}
	})
	// A start event a listener refuses fails the job, which ends as any
	// other, so that every start has its end.
	err = r.emit(ctx, StepStart{Step: s.Name, Item: i})
	start := time.Now()
	var res *runtime.Result
	switch {
	case err != nil:
	case r.o.Exec != nil:
		res, err = r.o.Exec(ctx, Job{
			Step: s, Item: i, Workspace: r.ws, Input: input, Vars: vars, InputGlobs: s.itemGlobs(item),
			SpecData: s.specData, Script: script.script, ScriptErr: script.err,
			Cache: r.p.Cache != nil && r.p.Cache.Enabled && !ownCache(s),
			Emit: func(ctx context.Context, ev capabilities.Event) error {
				if len(r.o.Listeners) == 0 {
					return nil
				}
				return r.emit(ctx, JobEvent{Step: s.Name, Item: i, Event: ev})
			},
			Claim: func(file string) string {
				if r.isProtected(file) {
					return "a file of the pipeline's, which no step may change"
				}
				return r.take(s, i, file)
			},
		})
	case s.FanOut() && s.ForEach.Glob != "":
		res, err = runtime.Run(ctx, s.itemSpec(item), opts...)
	default:
		res, err = runtime.Run(ctx, s.Spec, opts...)
	}
	if res != nil {
		usage, cached = res.Usage, res.Cached
	}
	if err == nil {
		out, err = answer(s, res)
	}
	d := time.Since(start)
	r.callback(func() {
		if r.o.OnJobEnd != nil {
			r.o.OnJobEnd(JobEnd{Step: s.Name, Item: i, Result: res, Err: err, Duration: d, Cached: cached})
		}
	})
	if s.FanOut() {
		ev := StepEnd{Step: s.Name, Item: i, OK: err == nil, Cached: cached, Duration: d}
		if err != nil {
			ev.Error = err.Error()
		}
		_ = r.emit(context.WithoutCancel(ctx), ev)
	}
	if err != nil {
		return nil, usage, cached, err
	}
	return out, usage, cached, nil
}

// ownFiles are the files the pipeline is made of, which no job may change,
// as no run may change its own spec: the pipeline file, every step's spec
// file and script, the pipeline's cache directory and those of its steps'
// specs. The runtime keeps a spec's own files from its own run only, so a
// step working in the directory that holds them could otherwise rewrite
// the instructions or the scripted answers of a step after it, or the
// answers the cache replays.
func (r *runner) ownFiles() []string {
	var files []string
	add := func(paths ...string) {
		for _, p := range paths {
			if abs, err := filepath.Abs(p); err == nil && p != "" && !slices.Contains(files, abs) {
				files = append(files, abs)
			}
		}
	}
	add(r.p.File)
	if r.cache != nil {
		add(r.cache.Dir()) // "" for a cache kept by a backend
	}
	for _, s := range r.p.Steps {
		if s.Spec == nil {
			continue
		}
		add(runtime.SpecFiles(s.Spec)...)
		if c := s.Spec.Cache; c != nil {
			dir := c.Dir
			switch {
			case dir == "":
				dir, _ = cache.DefaultDir()
			case !filepath.IsAbs(dir) && s.Spec.File != "":
				dir = filepath.Join(filepath.Dir(s.Spec.File), dir) // as the runtime finds it
			}
			add(dir)
		}
	}
	return files
}

// isProtected tells whether file, an absolute path a job of Exec is to
// change, is one of the pipeline's own files (ownFiles) or lies below one
// of its directories.
func (r *runner) isProtected(file string) bool {
	file = realPath(file)
	for _, p := range r.protectedReal() {
		if rel, err := filepath.Rel(p, file); err == nil && filepath.IsLocal(rel) { // "." is local too
			return true
		}
	}
	return false
}

// realPath is the absolute path p with the symbolic links of its longest
// part that exists resolved: a file a job adds, or a cache directory not
// made yet, is compared where it will be.
func realPath(p string) string {
	var rest []string
	for dir := p; ; dir = filepath.Dir(dir) {
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			slices.Reverse(rest)
			return filepath.Join(append([]string{real}, rest...)...)
		}
		if filepath.Dir(dir) == dir {
			return p
		}
		rest = append(rest, filepath.Base(dir))
	}
}

// claim keeps two items of the fan-out step s off one file: the first item
// to change a file claims it, and a change another item asks to make to it
// in this run is refused as a conflict, so neither answer is lost to the
// other. The file's path is what the capability resolved, so two names for
// one file (a/../b) are one claim.
func (r *runner) claim(s *Step, item int) capabilities.Listener {
	return func(_ context.Context, ev capabilities.Event) error {
		req, ok := ev.(capabilities.ChangeRequest)
		if !ok {
			return nil
		}
		if file := req.Describe().File; file != "" {
			if why := r.take(s, item, file); why != "" {
				req.Cancel(why)
			}
		}
		return nil
	}
}

// take claims file for item of s, or says why it cannot: another item of
// the fan-out step changed it first. A step that does not fan out takes
// anything. A claim is kept even when the change it was taken for was then
// not made: the step's other items keep off the file all the same.
func (r *runner) take(s *Step, item int, file string) string {
	if !s.FanOut() {
		return ""
	}
	r.claimMu.Lock()
	defer r.claimMu.Unlock()
	if r.claims == nil {
		r.claims = map[*Step]map[string]int{}
	}
	owners := r.claims[s]
	if owners == nil {
		owners = map[string]int{}
		r.claims[s] = owners
	}
	switch first, claimed := owners[file]; {
	case !claimed:
		owners[file] = item
	case first != item:
		return fmt.Sprintf("conflict: item %d of step %s changed this file in this run, and items must not change the same file", first, s.Name)
	}
	return ""
}

func (r *runner) callback(f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f()
}

// ownCache tells whether s's spec has a cache: key of its own, cache: false
// included: the pipeline's cache: is for the specs that say nothing.
func ownCache(s *Step) bool {
	if s.Spec.Document != nil {
		_, ok := s.Spec.Document["cache"]
		return ok
	}
	return s.Spec.Cache != nil
}

// answer is a job's answer as references see it: the JSON value of its
// output_schema, or its text.
func answer(s *Step, res *runtime.Result) (any, error) {
	if s.Spec.OutputSchema == nil {
		return res.Output, nil
	}
	return decodeJSON(res.JSON)
}

func decodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("the answer's JSON: %w", err)
	}
	return v, nil
}

// fill fills s's input and vars for one job.
func (r *runner) fill(s *Step, item any) (string, map[string]string, error) {
	input := ""
	if s.Input != nil {
		v, err := r.templateString(s.Input, item)
		if err != nil {
			return "", nil, fmt.Errorf("input: %w", err)
		}
		input = v
	}
	vars := make(map[string]string, len(s.Vars))
	for _, v := range s.Vars {
		text, err := r.templateString(v.Value, item)
		if err != nil {
			return "", nil, fmt.Errorf("vars.%s: %w", v.Name, err)
		}
		vars[v.Name] = text
	}
	return input, vars, nil
}

// templateValue fills t: a whole reference keeps its JSON type; anything
// else is a string.
func (r *runner) templateValue(t *Template, item any) (any, error) {
	if ref := t.Whole(); ref != nil {
		return r.value(ref, item)
	}
	return r.templateString(t, item)
}

// templateString fills t as text: strings inserted as they are, any other
// value as compact JSON (an absent one as null).
func (r *runner) templateString(t *Template, item any) (string, error) {
	var b strings.Builder
	for _, p := range t.Parts {
		if p.Ref == nil {
			b.WriteString(p.Literal)
			continue
		}
		v, err := r.value(p.Ref, item)
		if err != nil {
			return "", err
		}
		if s, ok := v.(string); ok {
			b.WriteString(s)
			continue
		}
		j, err := marshal(v)
		if err != nil {
			return "", fmt.Errorf("{{%s}}: %w", p.Ref.Text, err)
		}
		b.Write(j)
	}
	return b.String(), nil
}

// value is what ref names. A member an object does not have is null, as an
// optional property the answer left out.
func (r *runner) value(ref *Ref, item any) (any, error) {
	var v any
	switch ref.Kind {
	case RefInput:
		in, ok := r.inputs[ref.Name]
		if !ok && r.p.Inputs == nil {
			// Without a schema every input a template names is needed;
			// with one, the schema said which are required.
			return nil, fmt.Errorf("{{%s}}: input %s is not given", ref.Text, ref.Name)
		}
		v = in
	case RefOutput, RefOutputs:
		r.mu.Lock()
		sr := r.results[ref.Name]
		v = sr.Output
		if ref.Kind == RefOutputs {
			list := make([]any, len(sr.Outputs))
			copy(list, sr.Outputs)
			v = list
		}
		skipped := sr.Skipped
		r.mu.Unlock()
		if skipped {
			return nil, nil // a skipped step answered nothing
		}
	case RefItem:
		v = item
	default:
		return nil, fmt.Errorf("{{%s}}: unknown reference", ref.Text)
	}
	for k, e := range ref.Path {
		if v == nil {
			return nil, nil
		}
		m, isObject := v.(map[string]any)
		list, isArray := v.([]any)
		switch {
		case e.Key != "" && isObject:
			v = m[e.Key]
		case e.Key != "":
			return nil, fmt.Errorf("{{%s}}: %s is %s, which has no property '%s'", ref.Text, ref.prefix(k), valueWhat(v), e.Key)
		case !isArray:
			return nil, fmt.Errorf("{{%s}}: %s is %s, not an array", ref.Text, ref.prefix(k), valueWhat(v))
		case e.Index >= len(list):
			return nil, fmt.Errorf("{{%s}}: index %d is past the end of %s, %s", ref.Text, e.Index, ref.prefix(k), arrayOfLen(len(list)))
		default:
			v = list[e.Index]
		}
	}
	return v, nil
}

// arrayOfLen says what an array of n items is: "an empty array", "an array
// of 1 item", "an array of 3 items".
func arrayOfLen(n int) string {
	switch n {
	case 0:
		return "an empty array"
	case 1:
		return "an array of 1 item"
	}
	return fmt.Sprintf("an array of %d items", n)
}

// marshal is v as compact JSON with <, > and & as they are, not escaped
// for HTML: the text goes to a model, a script or a terminal, and a model
// reading "a \u003c b" is reading something the answer did not say.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// valueWhat names a JSON value's type, for messages.
func valueWhat(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number, float64, int, int64:
		return "a number"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	}
	return fmt.Sprintf("%T", v)
}

// outputs evaluates the outputs mapping, in the order written; without
// one, the last step's output.
func (r *runner) outputs() (json.RawMessage, error) {
	if len(r.p.Outputs) == 0 {
		if len(r.p.Order) == 0 {
			return nil, nil
		}
		last := r.results[r.p.Order[len(r.p.Order)-1].Name]
		switch {
		case last.Skipped:
			return json.RawMessage("null"), nil
		case last.fanOut:
			return marshal(last.Outputs)
		}
		return marshal(last.Output)
	}
	var b bytes.Buffer
	b.WriteByte('{')
	for i, o := range r.p.Outputs {
		v, err := r.templateValue(o.Value, nil)
		if err != nil {
			return nil, fmt.Errorf("outputs.%s: %w", o.Name, err)
		}
		k, _ := marshal(o.Name)
		val, err := marshal(v)
		if err != nil {
			return nil, fmt.Errorf("outputs.%s: %w", o.Name, err)
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(val)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// finish records how s ended and emits its end event. A step it leaves with
// no dependency left to end holds the slots from here (see slots).
func (r *runner) finish(ctx context.Context, s *Step, res *StepResult, set func(), d time.Duration) {
	r.mu.Lock()
	set()
	ev := StepEnd{Step: s.Name, Item: -1, OK: res.OK, Cached: res.Cached, Skipped: res.Skipped, NotRun: res.NotRun, Duration: d, Error: res.Error}
	for _, next := range r.dependents[s.Name] {
		if r.left[next.Name]--; r.left[next.Name] == 0 {
			r.slots.hold()
		}
	}
	r.mu.Unlock()
	_ = r.emit(context.WithoutCancel(ctx), ev)
}

// emit sends ev to the run's listeners.
func (r *runner) emit(ctx context.Context, ev capabilities.Event) error {
	var errs []error
	for _, l := range r.o.Listeners {
		if err := l(ctx, ev); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func addUsage(sum *runtime.Usage, u runtime.Usage) {
	sum.Requests += u.Requests
	sum.RequestsWithoutUsage += u.RequestsWithoutUsage
	sum.InputTokens += u.InputTokens
	sum.OutputTokens += u.OutputTokens
	sum.CacheWriteTokens += u.CacheWriteTokens
	sum.CacheReadTokens += u.CacheReadTokens
	sum.ReasoningTokens += u.ReasoningTokens
	sum.ToolCalls += u.ToolCalls
	sum.Elapsed += u.Elapsed
}

// schemaProblems is a validation error's problems on one line, without the
// schema's internal URL: "at ”: missing property 'issue'".
func schemaProblems(err error) string {
	lines := strings.Split(strings.TrimSpace(err.Error()), "\n")
	if len(lines) > 1 {
		lines = lines[1:]
	}
	for i, l := range lines {
		l = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "- "))
		lines[i] = strings.TrimPrefix(l, "at '': ")
	}
	return strings.Join(lines, "; ")
}
