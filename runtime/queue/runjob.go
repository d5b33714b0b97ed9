package queue

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentspec/agentspec/pipeline"
	"github.com/agentspec/agentspec/runtime"
	"github.com/agentspec/agentspec/spec"
)

// Executor runs a pipeline's jobs on the queue (it is a
// pipeline.RunOptions.Exec): each job is Run with the options of base
// (WorkspaceRoot, Ship, ShipMax, NoCache) and its own spec, which travels
// as the pipeline read it (or, written inline, with the pipeline file and
// where it lies there) with its script as the run read it when it started,
// its input, vars and workspace. The worker's events of the
// job are handed to the pipeline's listeners as Events.
func (q *Queue) Executor(base BatchOptions) func(ctx context.Context, job pipeline.Job) (*runtime.Result, error) {
	return func(ctx context.Context, job pipeline.Job) (*runtime.Result, error) {
		if job.ScriptErr != nil {
			return nil, job.ScriptErr // the script travels with the job, and could not be read
		}
		opts := base
		s := job.Step.Spec
		opts.SpecPath, opts.SpecPointer, opts.Spec = s.File, job.Step.SpecPointer, s
		opts.SpecData, opts.Script = job.SpecData, job.Script // as the run read them when it started
		opts.Input, opts.Vars, opts.Workspaces = job.Input, job.Vars, []string{job.Workspace}
		opts.Cache, opts.Claim, opts.InputGlobs = job.Cache, job.Claim, job.InputGlobs
		return q.run(ctx, opts, func(id string, event []byte) {
			if ev, ok := eventOf(event, id); ok {
				_ = job.Emit(context.WithoutCancel(ctx), ev)
			}
		})
	}
}

// Run runs one job on the queue, as a batch of one over opts' one workspace,
// and waits for its result: a *runtime.Result holding the answer (Output its
// text, and JSON its value when the spec has an output_schema), Cached and
// Usage; or an error with the job's own error text. A shipped job's changes
// are applied to the workspace before Run returns. When ctx ends first, the
// job is withdrawn if no worker has taken it, its worker told to stop it if
// one has, and the error wraps runtime.ErrInterrupted. A coordinator walking a graph of jobs (a pipeline)
// calls it once per job, from as many goroutines as it runs jobs at once.
func (q *Queue) Run(ctx context.Context, opts BatchOptions) (*runtime.Result, error) {
	return q.run(ctx, opts, nil)
}

// run is Run, handing each of the job's events, with the job's id, to
// events when it is not nil.
func (q *Queue) run(ctx context.Context, opts BatchOptions, events func(job string, event []byte)) (*runtime.Result, error) {
	if len(opts.Workspaces) != 1 {
		return nil, fmt.Errorf("a job runs over one workspace, not %d", len(opts.Workspaces))
	}
	b, err := q.NewBatch(opts)
	if err != nil {
		return nil, err
	}
	if events != nil {
		if err := b.Events(func(i int, ev []byte) { events(b.Jobs[i].ID, ev) }); err != nil {
			return nil, err
		}
		defer b.Close()
	}
	if err := b.Publish(ctx); err != nil {
		return nil, err
	}
	var out JobOutcome
	if _, err := b.Wait(ctx, func(o JobOutcome) { out = o }); err != nil {
		return nil, err
	}
	return resultOf(opts.Spec, out)
}

// Event is one of a job's events as a worker sent it: its JSON, with its
// kind first.
type Event struct {
	kind string
	data json.RawMessage
}

// Kind is the event's kind, "run.tool_call" say.
func (e Event) Kind() string { return e.kind }

// MarshalJSON writes the event as the worker sent it.
func (e Event) MarshalJSON() ([]byte, error) { return e.data, nil }

// eventOf reads an event a worker sent for the job with the given id; false
// when it is not a JSON object with a kind. The job's id becomes its
// "job_id", and a time or run_id it carries is left out, so that the
// coordinator's events file stamps it as it stamps a local job's event,
// with its own time and the pipeline's run_id, and no member twice.
func eventOf(data []byte, job string) (Event, bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return Event{}, false
	}
	var kind string
	var out bytes.Buffer
	out.WriteByte('{')
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return Event{}, false
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return Event{}, false
		}
		switch key {
		case "time", "job_id", "run_id":
			continue
		case "kind":
			if json.Unmarshal(v, &kind) != nil {
				return Event{}, false
			}
		}
		if out.Len() > 1 {
			out.WriteByte(',')
		}
		k, _ := json.Marshal(key)
		out.Write(k)
		out.WriteByte(':')
		out.Write(v)
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') || kind == "" {
		return Event{}, false
	}
	id, _ := json.Marshal(job)
	out.WriteString(`,"job_id":`)
	out.Write(id)
	out.WriteByte('}')
	return Event{kind: kind, data: out.Bytes()}, true
}

// resultOf is a job's outcome as a run's result, its answer checked as a
// fresh one's is.
func resultOf(s *spec.Spec, out JobOutcome) (*runtime.Result, error) {
	res := &runtime.Result{Cached: out.Err == nil && out.Cached, Usage: usageOf(out.Usage)}
	if out.Err != nil {
		return res, out.Err
	}
	if s.OutputSchema != nil {
		// A result is trusted no further than a fresh answer: it must
		// pass the spec's output_schema before any step reads it.
		answer, err := runtime.CheckAnswer(s, out.Output)
		if err != nil {
			return res, fmt.Errorf("job %s: its output does not pass the output_schema: %w", out.Job, err)
		}
		res.JSON, res.Output = answer, string(answer)
		return res, nil
	}
	if err := json.Unmarshal(out.Output, &res.Output); err != nil {
		return res, fmt.Errorf("job %s: its output is not text: %w", out.Job, err)
	}
	return res, nil
}

// usageOf reads a result's usage, as runtime.Usage writes it; what does not
// read as one counts nothing.
func usageOf(data json.RawMessage) runtime.Usage {
	var u struct {
		runtime.Usage
		ElapsedMS float64 `json:"elapsed_ms"`
	}
	if json.Unmarshal(data, &u) != nil {
		return runtime.Usage{}
	}
	u.Usage.Elapsed = time.Duration(u.ElapsedMS * float64(time.Millisecond))
	return u.Usage
}
