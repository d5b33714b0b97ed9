package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/runtime"
	"github.com/agentspec/agentspec/runtime/cache"
	"github.com/agentspec/agentspec/runtime/script"
)

// writeFiles writes files (slash paths relative to dir) and returns dir.
func writeFiles(t *testing.T, dir string, files map[string]string) string {
	t.Helper()
	for name, content := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	}
	return dir
}

// loadPipeline writes files into a fresh directory and loads its
// pipeline.yaml.
func loadPipeline(t *testing.T, files map[string]string) *Pipeline {
	t.Helper()
	dir := writeFiles(t, t.TempDir(), files)
	p, err := LoadFile(filepath.Join(dir, "pipeline.yaml"))
	require.NoError(t, err)
	return p
}

// envelope is a run's -o json envelope as a script decodes it.
type envelope struct {
	Outputs json.RawMessage           `json:"outputs"`
	Steps   map[string]map[string]any `json:"steps"`
	Usage   map[string]any            `json:"usage"`
}

// envelopeOf is res as -o json prints it, decoded.
func envelopeOf(t *testing.T, res *Result) envelope {
	t.Helper()
	env, err := json.Marshal(res)
	require.NoError(t, err)
	var decoded envelope
	require.NoError(t, json.Unmarshal(env, &decoded))
	return decoded
}

// jobLog records the jobs a run starts and ends, and how many ran at once.
type jobLog struct {
	mu      sync.Mutex
	started []string // "step" or "step[i]"
	ended   []JobEnd
	running int
	most    int
}

func jobName(step string, item int) string {
	if item < 0 {
		return step
	}
	return step + "[" + string(rune('0'+item)) + "]"
}

func (l *jobLog) options(o RunOptions) RunOptions {
	o.OnJobStart = func(step string, item int) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.started = append(l.started, jobName(step, item))
		l.running++
		l.most = max(l.most, l.running)
	}
	o.OnJobEnd = func(e JobEnd) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.ended = append(l.ended, e)
		l.running--
	}
	return o
}

func TestRunReviewFix(t *testing.T) {
	t.Parallel()
	p, err := LoadFile(filepath.Join("testdata", "review-fix", "pipeline.yaml"))
	require.NoError(t, err)
	c, err := cache.New(t.TempDir())
	require.NoError(t, err)
	var events bytes.Buffer
	var log jobLog
	res, err := Run(context.Background(), p, log.options(RunOptions{
		Workspace: t.TempDir(),
		Inputs:    map[string]any{"issue": "crash on empty input"},
		Cache:     c,
		Listeners: []capabilities.Listener{runtime.JSONLines(&events)},
	}))
	require.NoError(t, err)
	require.True(t, res.OK())

	// triage runs first, then one fix per file it named, then review.
	triage := res.Steps["triage"]
	require.True(t, triage.OK)
	files := triage.Output.(map[string]any)["files"].([]any)
	require.NotEmpty(t, files)
	fix := res.Steps["fix"]
	require.True(t, fix.OK)
	assert.Len(t, fix.Outputs, len(files))
	assert.Equal(t, len(files), fix.Items)
	assert.Equal(t, "triage", log.started[0])
	assert.Equal(t, "review", log.started[len(log.started)-1])
	assert.Len(t, log.started, 2+len(files))

	// The outputs are review's answer, in the order the file writes them.
	review := res.Steps["review"].Output.(map[string]any)
	want, err := json.Marshal(map[string]any{"approved": review["approved"], "notes": review["notes"]})
	require.NoError(t, err)
	assert.JSONEq(t, string(want), string(res.Outputs))
	assert.True(t, strings.HasPrefix(string(res.Outputs), `{"approved":`), "outputs keep the file's order: %s", res.Outputs)
	assert.Equal(t, 2+len(files), res.Usage.Requests/2, "the test model answers in two requests per job")

	// The envelope.
	decoded := envelopeOf(t, res)
	assert.Equal(t, true, decoded.Steps["triage"]["ok"])
	assert.Contains(t, decoded.Steps["triage"], "output")
	assert.Contains(t, decoded.Steps["fix"], "outputs")
	assert.NotContains(t, decoded.Steps["fix"], "output")
	assert.EqualValues(t, res.Usage.Requests, decoded.Usage["requests"])

	// Events: the pipeline's around every job's own, which name their step
	// and item.
	lines := strings.Split(strings.TrimSpace(events.String()), "\n")
	kinds := make([]string, len(lines))
	var fixEnd map[string]any
	runIDs, jobIDs := map[any]bool{}, map[any]bool{}
	for i, line := range lines {
		var ev map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &ev), line)
		kinds[i] = ev["kind"].(string)
		runIDs[ev["run_id"]] = true
		if _, ok := ev["step"].(string); ok && !strings.HasPrefix(kinds[i], "pipeline.") {
			require.NotNil(t, ev["job_id"], line)
			jobIDs[ev["job_id"]] = true
		}
		if ev["kind"] == runtime.KindRunEnd && ev["step"] == "fix" {
			fixEnd = ev
		}
		if ev["kind"] == runtime.KindRunEnd || ev["kind"] == runtime.KindModelRequest {
			assert.True(t, strings.HasPrefix(line, `{"kind":"`+kinds[i]+`","step":"`), line)
		}
	}
	assert.Len(t, runIDs, 1, "one run_id on every line")
	assert.NotContains(t, runIDs, nil)
	assert.Len(t, jobIDs, len(log.started), "each job's events carry its own id")
	assert.Equal(t, KindStart, kinds[0])
	assert.Equal(t, KindEnd, kinds[len(kinds)-1])
	assert.Contains(t, kinds, KindStepStart)
	assert.Contains(t, kinds, KindStepEnd)
	require.NotNil(t, fixEnd, "fix's run.end event, tagged")
	assert.EqualValues(t, 0, fixEnd["item"])
	assert.Equal(t, true, fixEnd["ok"])
}

// slowScript answers text after a delay.
func slowScript(text string, delay time.Duration) string {
	b, _ := json.Marshal(text)
	return "turns:\n  - text: " + string(b) + "\n    delay: " + delay.String() + "\n"
}

func TestRunFanOutBounds(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		maxParallel string
		concurrency int
		want        int
	}{
		{"max_parallel", "max_parallel: 2", 8, 2},
		{"concurrency", "", 3, 3},
		{"the smaller of both", "max_parallel: 4", 3, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := loadPipeline(t, map[string]string{
				"pipeline.yaml": `
inputs:
  type: object
  properties: {items: {type: array, items: {type: string}}}
steps:
  work:
    for_each: "{{inputs.items}}"
    input: "{{item}}"
    spec: {model: "script:work.yaml"}
    ` + tc.maxParallel + `
`,
				"work.yaml": slowScript("done", 250*time.Millisecond),
			})
			items := []any{"a", "b", "c", "d", "e", "f", "g"}
			var log jobLog
			res, err := Run(context.Background(), p, log.options(RunOptions{
				Workspace: t.TempDir(), Concurrency: tc.concurrency, Inputs: map[string]any{"items": items},
			}))
			require.NoError(t, err)
			require.True(t, res.OK())
			assert.Len(t, res.Steps["work"].Outputs, len(items))
			assert.Len(t, log.started, len(items))
			assert.Equal(t, tc.want, log.most, "jobs at once")
		})
	}
}

// answerSpec is an inline spec whose script answers JSON.
const conditionPipeline = `
steps:
  count:
    spec:
      model: "script:count.yaml"
      output_schema: {type: object, properties: {n: {type: integer}}, required: [n]}
  big:
    when: "{{steps.count.output.n}} > 5"
    spec: {model: "script:answer.yaml"}
  after-big:
    input: "{{steps.big.output}}"
    spec: {model: "script:answer.yaml"}
  other:
    needs: [count]
    spec: {model: "script:answer.yaml"}
`

func TestRunWhen(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		n   int
		ran []string
	}{
		{n: 3, ran: []string{"count", "other"}},
		{n: 9, ran: []string{"count", "big", "other", "after-big"}},
	} {
		p := loadPipeline(t, map[string]string{
			"pipeline.yaml": conditionPipeline,
			"count.yaml":    "turns:\n  - text: '{\"n\": " + string(rune('0'+tc.n)) + "}'\n",
			"answer.yaml":   "turns:\n  - text: fine\n",
		})
		var log jobLog
		res, err := Run(context.Background(), p, log.options(RunOptions{Workspace: t.TempDir(), Concurrency: 1}))
		require.NoError(t, err)
		assert.True(t, res.OK(), "a skipped step is not a failure")
		assert.ElementsMatch(t, tc.ran, log.started)
		skipped := tc.n <= 5
		for _, name := range []string{"big", "after-big"} {
			assert.Equal(t, skipped, res.Steps[name].Skipped, name)
			assert.Equal(t, !skipped, res.Steps[name].OK, name)
			assert.False(t, res.Steps[name].NotRun, name)
		}
		assert.True(t, res.Steps["other"].OK)
	}
}

func TestRunFailedStepStopsDependents(t *testing.T) {
	t.Parallel()
	p := loadPipeline(t, map[string]string{
		"pipeline.yaml": `
steps:
  first:
    spec: {model: "script:fail.yaml"}
  second:
    input: "{{steps.first.output}}"
    spec: {model: "script:answer.yaml"}
  third:
    needs: [second]
    spec: {model: "script:answer.yaml"}
  alone:
    spec: {model: "script:answer.yaml"}
`,
		"fail.yaml":   "turns:\n  - error: the provider is down\n",
		"answer.yaml": "turns:\n  - text: fine\n",
	})
	var log jobLog
	res, err := Run(context.Background(), p, log.options(RunOptions{Workspace: t.TempDir()}))
	require.NoError(t, err, "a failed step is in the result")
	assert.False(t, res.OK())
	assert.ElementsMatch(t, []string{"first", "alone"}, log.started)
	assert.False(t, res.Steps["first"].OK)
	assert.Contains(t, res.Steps["first"].Error, "the provider is down")
	for _, name := range []string{"second", "third"} {
		assert.True(t, res.Steps[name].NotRun, name)
		assert.False(t, res.Steps[name].Skipped, name)
	}
	assert.Contains(t, res.Steps["second"].Error, "first")
	assert.True(t, res.Steps["alone"].OK, "a step that does not depend on the failure runs")
	assert.JSONEq(t, "null", string(res.Outputs))

	decoded := envelopeOf(t, res)
	assert.Equal(t, true, decoded.Steps["third"]["not_run"])
	assert.Equal(t, false, decoded.Steps["first"]["ok"])
	assert.NotNil(t, decoded.Steps["first"]["error"])
}

func TestRunOnItemError(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"skip", "fail"} {
		p := loadPipeline(t, map[string]string{
			"pipeline.yaml": `
inputs:
  type: object
  properties: {items: {type: array, items: {type: string}}}
steps:
  each:
    for_each: "{{inputs.items}}"
    input: "{{item}}"
    on_item_error: ` + mode + `
    max_parallel: 1
    spec: {model: "script:good.yaml"}
  after:
    input: "{{steps.each.outputs}}"
    spec: {model: "script:answer.yaml"}
`,
			// A job whose input is not good diverges from the script: it fails.
			"good.yaml":   "turns:\n  - expect: {message_contains: good}\n    text: done\n",
			"answer.yaml": "turns:\n  - text: fine\n",
		})
		var log jobLog
		res, err := Run(context.Background(), p, log.options(RunOptions{
			Workspace: t.TempDir(), Inputs: map[string]any{"items": []any{"good 1", "bad", "good 2"}},
		}))
		require.NoError(t, err)
		each := res.Steps["each"]
		require.Len(t, each.Failed, 1, mode)
		assert.Equal(t, 1, each.Failed[0].Item)
		if mode == "skip" {
			assert.True(t, res.OK())
			assert.Equal(t, []any{"done", "done"}, each.Outputs, "the failed item is left out")
			assert.True(t, res.Steps["after"].OK)
			assert.Equal(t, []string{"each[0]", "each[1]", "each[2]", "after"}, log.started)
			continue
		}
		assert.False(t, res.OK())
		assert.False(t, each.OK)
		assert.Contains(t, each.Error, "item 1")
		assert.True(t, res.Steps["after"].NotRun)
		assert.Equal(t, []string{"each[0]", "each[1]"}, log.started, "no item starts after one failed")
	}
}

func TestRunResumeByCache(t *testing.T) {
	t.Parallel()
	p := loadPipeline(t, map[string]string{
		"pipeline.yaml": `
cache: {dir: cache}
steps:
  extract:
    for_each: {glob: "inbox/*.md"}
    as: doc
    input: "{{doc}}"
    spec: {model: "script:extract.yaml"}
  merge:
    input: "{{steps.extract.outputs}}"
    spec: {model: "script:merge.yaml"}
`,
		"extract.yaml": "turns:\n  - text: facts\n",
		"merge.yaml":   "turns:\n  - text: report\n",
	})
	ws := writeFiles(t, t.TempDir(), map[string]string{"inbox/a.md": "# A", "inbox/b.md": "# B", "inbox/notes.txt": "not matched"})

	// run returns the jobs that called a model and those replayed.
	run := func() (fresh, cached []string) {
		t.Helper()
		var mu sync.Mutex
		hits := map[string]bool{}
		var log jobLog
		res, err := Run(context.Background(), p, log.options(RunOptions{
			Workspace: ws,
			Listeners: []capabilities.Listener{func(_ context.Context, ev capabilities.Event) error {
				if je, ok := ev.(JobEvent); ok {
					if _, hit := je.Event.(runtime.CacheHit); hit {
						mu.Lock()
						hits[jobName(je.Step, je.Item)] = true
						mu.Unlock()
					}
				}
				return nil
			}},
		}))
		require.NoError(t, err)
		require.True(t, res.OK())
		for _, e := range log.ended {
			name := jobName(e.Step, e.Item)
			assert.Equal(t, hits[name], e.Cached, name)
			if e.Cached {
				cached = append(cached, name)
			} else {
				fresh = append(fresh, name)
			}
		}
		return fresh, cached
	}

	fresh, cached := run()
	assert.ElementsMatch(t, []string{"extract[0]", "extract[1]", "merge"}, fresh)
	assert.Empty(t, cached)

	fresh, cached = run()
	assert.Empty(t, fresh, "nothing changed: everything replays")
	assert.Len(t, cached, 3)

	writeFiles(t, ws, map[string]string{"inbox/c.md": "# C"})
	fresh, cached = run()
	assert.ElementsMatch(t, []string{"extract[2]", "merge"}, fresh, "the new document's job and its consumer")
	assert.ElementsMatch(t, []string{"extract[0]", "extract[1]"}, cached)

	// The document an item names is its job's input, though the spec's
	// input_globs do not list it: an edited one is extracted again, and
	// only it. Its consumer replays, since the answer is the same.
	writeFiles(t, ws, map[string]string{"inbox/b.md": "# B, edited"})
	fresh, cached = run()
	assert.ElementsMatch(t, []string{"extract[1]"}, fresh, "the edited document's job")
	assert.ElementsMatch(t, []string{"extract[0]", "extract[2]", "merge"}, cached)

	// A name that a pattern would read otherwise is its file's name.
	writeFiles(t, ws, map[string]string{"inbox/[a-z]*.md": "# D"})
	fresh, _ = run()
	assert.ElementsMatch(t, []string{"extract[0]", "merge"}, fresh)
	writeFiles(t, ws, map[string]string{"inbox/[a-z]*.md": "# D, edited"})
	fresh, cached = run()
	assert.ElementsMatch(t, []string{"extract[0]"}, fresh)
	assert.ElementsMatch(t, []string{"extract[1]", "extract[2]", "extract[3]", "merge"}, cached)
}

func TestRunInterrupted(t *testing.T) {
	t.Parallel()
	p := loadPipeline(t, map[string]string{
		"pipeline.yaml": `
steps:
  slow:
    spec: {model: "script:slow.yaml"}
  after:
    input: "{{steps.slow.output}}"
    spec: {model: "script:slow.yaml"}
`,
		"slow.yaml": slowScript("done", time.Minute),
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opts := RunOptions{Workspace: t.TempDir(), OnJobStart: func(string, int) { cancel() }}
	res, err := Run(ctx, p, opts)
	require.ErrorIs(t, err, runtime.ErrInterrupted)
	require.NotNil(t, res)
	assert.False(t, res.Steps["slow"].OK)
	assert.True(t, res.Steps["after"].NotRun)
}

func TestRunInputs(t *testing.T) {
	t.Parallel()
	p := loadPipeline(t, map[string]string{
		"pipeline.yaml": `
inputs:
  type: object
  properties: {n: {type: integer}}
  required: [n]
steps:
  one:
    input: "n is {{inputs.n}}"
    spec: {model: "script:answer.yaml"}
`,
		"answer.yaml": "turns:\n  - expect: {message_contains: n is 7}\n    text: fine\n",
	})
	_, err := Run(context.Background(), p, RunOptions{Workspace: t.TempDir(), Inputs: map[string]any{"n": "seven"}})
	require.ErrorIs(t, err, ErrInputs)
	_, err = Run(context.Background(), p, RunOptions{Workspace: t.TempDir()})
	require.ErrorIs(t, err, ErrInputs, "n is required")
	res, err := Run(context.Background(), p, RunOptions{Workspace: t.TempDir(), Inputs: map[string]any{"n": 7}})
	require.NoError(t, err)
	assert.True(t, res.OK(), "%+v", res.Steps["one"])
	assert.JSONEq(t, `"fine"`, string(res.Outputs), "without outputs:, the last step's answer")
}

// The pipeline's cache: is for the steps whose spec says nothing of
// caching: a spec's own cache: false keeps its step uncached.
func TestRunPipelineCacheLeavesOwnCacheKey(t *testing.T) {
	t.Parallel()
	p := loadPipeline(t, map[string]string{
		"pipeline.yaml": `
cache: true
steps:
  cached:
    spec: {model: "script:answer.yaml"}
  never:
    spec: {model: "script:answer.yaml", cache: false}
`,
		"answer.yaml": "turns:\n  - text: fine\n",
	})
	c, err := cache.New(t.TempDir())
	require.NoError(t, err)
	ws := t.TempDir()
	for run := range 2 {
		res, err := Run(context.Background(), p, RunOptions{Workspace: ws, Cache: c})
		require.NoError(t, err)
		assert.Equal(t, run == 1, res.Steps["cached"].Cached, "run %d", run)
		assert.False(t, res.Steps["never"].Cached, "run %d", run)
	}
}

// Without an inputs schema, every input a template names must be given,
// before any job starts.
func TestRunInputsWithoutSchema(t *testing.T) {
	t.Parallel()
	p := loadPipeline(t, map[string]string{
		"pipeline.yaml": `
steps:
  first:
    spec: {model: "script:answer.yaml"}
  second:
    needs: [first]
    input: "{{inputs.topic}}"
    spec: {model: "script:answer.yaml"}
`,
		"answer.yaml": "turns:\n  - text: fine\n",
	})
	var log jobLog
	_, err := Run(context.Background(), p, log.options(RunOptions{Workspace: t.TempDir()}))
	require.ErrorIs(t, err, ErrInputs)
	assert.ErrorContains(t, err, "topic is not given")
	assert.Empty(t, log.started)

	res, err := Run(context.Background(), p, RunOptions{Workspace: t.TempDir(), Inputs: map[string]any{"topic": "x"}})
	require.NoError(t, err)
	assert.True(t, res.OK())
}

// A fan-out over nothing succeeds with no outputs, and what needs it runs.
func TestRunFanOutOverNothing(t *testing.T) {
	t.Parallel()
	p := loadPipeline(t, map[string]string{
		"pipeline.yaml": `
steps:
  each:
    for_each: {glob: "inbox/**/*.md"}
    input: "{{item}}"
    spec: {model: "script:answer.yaml"}
  after:
    input: "{{steps.each.outputs}}"
    spec: {model: "script:after.yaml"}
`,
		"answer.yaml": "turns:\n  - text: fine\n",
		"after.yaml":  "turns:\n  - expect: {message_contains: '[]'}\n    text: none\n",
	})
	var log jobLog
	res, err := Run(context.Background(), p, log.options(RunOptions{Workspace: t.TempDir()}))
	require.NoError(t, err)
	require.True(t, res.OK(), "%+v", res.Steps["after"])
	assert.Equal(t, []any{}, res.Steps["each"].Outputs)
	assert.False(t, res.Steps["each"].Cached, "nothing replayed")
	assert.Equal(t, []string{"after"}, log.started)
	assert.JSONEq(t, `"none"`, string(res.Outputs))
}

func TestRunExec(t *testing.T) {
	t.Parallel()
	p := loadPipeline(t, map[string]string{
		"pipeline.yaml": `
cache: true
steps:
  first:
    input: start
    spec: {model: "script:never.yaml", output_schema: {type: object, properties: {n: {type: integer}}, required: [n]}}
  second:
    input: "n is {{steps.first.output.n}}"
    spec: {model: "script:never.yaml"}
  third:
    needs: [second]
    spec: {model: "script:never.yaml", cache: false}
`,
		// Jobs run by Exec never read the script: running one here would fail.
		"never.yaml": "turns:\n  - error: ran locally\n",
	})
	ws := t.TempDir()
	type call struct {
		workspace, input, pointer string
		item                      int
		cache                     bool
	}
	var (
		mu    sync.Mutex
		calls []call
	)
	exec := func(ctx context.Context, job Job) (*runtime.Result, error) {
		s, input := job.Step.Spec, job.Input
		mu.Lock()
		calls = append(calls, call{job.Workspace, input, job.Step.SpecPointer, job.Item, job.Cache})
		mu.Unlock()
		if err := job.Emit(ctx, runtime.CacheWarning{Message: "from " + job.Step.Name}); err != nil {
			return nil, err
		}
		switch {
		case s.OutputSchema != nil:
			return &runtime.Result{Output: `{"n": 7}`, JSON: json.RawMessage(`{"n":7}`), Usage: runtime.Usage{Requests: 1}}, nil
		case strings.HasPrefix(input, "n is"):
			return &runtime.Result{Output: "second saw " + input, Cached: true, Usage: runtime.Usage{Requests: 2}}, nil
		}
		return &runtime.Result{Usage: runtime.Usage{Requests: 4}}, errors.New("the worker gave up")
	}
	var events []string
	listen := func(ctx context.Context, ev capabilities.Event) error {
		if je, ok := ev.(JobEvent); ok {
			data, err := json.Marshal(je)
			require.NoError(t, err)
			events = append(events, string(data))
		}
		return nil
	}
	res, err := Run(context.Background(), p, RunOptions{Workspace: ws, Exec: exec, Concurrency: 1, Listeners: []capabilities.Listener{listen}})
	require.NoError(t, err)
	assert.Equal(t, []call{
		{ws, "start", "/steps/first/spec", -1, true},
		{ws, "n is 7", "/steps/second/spec", -1, true},
		{ws, "", "/steps/third/spec", -1, false},
	}, calls, "each job goes to Exec, its input filled from the answers before it, told whether the pipeline's cache applies")
	require.Len(t, events, 3, "the events Exec hands on reach the listeners")
	assert.JSONEq(t, `{"kind":"run.cache_warning","step":"second","message":"from second"}`, events[1], "tagged with their step")
	assert.Equal(t, map[string]any{"n": json.Number("7")}, res.Steps["first"].Output)
	assert.Equal(t, "second saw n is 7", res.Steps["second"].Output)
	assert.True(t, res.Steps["second"].Cached)
	assert.False(t, res.Steps["third"].OK)
	assert.Equal(t, "the worker gave up", res.Steps["third"].Error)
	assert.Equal(t, 7, res.Usage.Requests, "the usage Exec reports is counted, a failed job's too")
}

// Two items of a fan-out that write the same file: the second write is
// refused as a conflict and told to its model, and the first item's content
// stays; one at a time or at once, whichever comes first wins.
func TestRunFanOutItemsConflictOnOneFile(t *testing.T) {
	t.Parallel()
	for _, parallel := range []int{1, 2} {
		t.Run(fmt.Sprintf("max_parallel %d", parallel), func(t *testing.T) {
			t.Parallel()
			p := loadPipeline(t, map[string]string{
				"pipeline.yaml": fmt.Sprintf(`
steps:
  each:
    for_each: {glob: "inbox/*.md"}
    max_parallel: %d
    input: "{{item}}"
    spec: writer.yaml
  other:
    needs: [each]
    spec: writer.yaml
    input: three
`, parallel),
				"writer.yaml": "model: script:writer.script.yaml\ncapabilities: [FileSystem]\n",
				"writer.script.yaml": `
turns:
  - tool_calls:
      - name: write_file
        arguments: {path: shared.txt, content: "from the first to ask\n"}
  - text: done
`,
			})
			ws := writeFiles(t, t.TempDir(), map[string]string{"inbox/one.md": "1\n", "inbox/two.md": "2\n"})
			var mu sync.Mutex
			var results []string
			listen := func(_ context.Context, ev capabilities.Event) error {
				if je, ok := ev.(JobEvent); ok {
					if tr, ok := je.Event.(runtime.ToolResult); ok {
						mu.Lock()
						results = append(results, fmt.Sprintf("%s[%d] %s", je.Step, je.Item, tr.Text))
						mu.Unlock()
					}
				}
				return nil
			}
			res, err := Run(context.Background(), p, RunOptions{Workspace: ws, Listeners: []capabilities.Listener{listen}})
			require.NoError(t, err)
			require.True(t, res.OK(), "%+v", res.Steps)
			sort.Strings(results)
			require.Len(t, results, 3)
			wrote, refused := results[0], results[1]
			if strings.Contains(wrote, "was not written") {
				wrote, refused = refused, wrote
			}
			assert.Regexp(t, `^each\[[01]\] Wrote 22 chars`, wrote)
			first := wrote[len("each[")]
			assert.Regexp(t, `^each\[[01]\] \['shared.txt' was not written: conflict: item `+string(first)+` of step each changed this file in this run, and items must not change the same file\]$`, refused)
			assert.Regexp(t, `^other\[-1\] Wrote 22 chars`, results[2], "a later step may change what a fan-out wrote")
		})
	}
}

// Ctrl-C in the middle of a job's writes leaves every file of the workspace
// whole: written completely or not at all, and no temporary file behind.
func TestRunInterruptedLeavesNothingHalfWritten(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("0123456789abcdef", 1<<14) // 256 KiB a file
	var calls strings.Builder
	for _, name := range []string{"a.txt", "b.txt", "c.txt", "d.txt"} {
		fmt.Fprintf(&calls, "      - name: write_file\n        arguments: {path: %s, content: %q}\n", name, big)
	}
	p := loadPipeline(t, map[string]string{
		"pipeline.yaml":      "steps:\n  write:\n    spec: writer.yaml\n  after:\n    needs: [write]\n    spec: writer.yaml\n",
		"writer.yaml":        "model: script:writer.script.yaml\ncapabilities: [FileSystem]\n",
		"writer.script.yaml": "turns:\n  - tool_calls:\n" + calls.String() + "  - text: done\n",
	})
	ws := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var requests int
	var mu sync.Mutex
	listen := func(_ context.Context, ev capabilities.Event) error {
		if _, ok := ev.(JobEvent).Event.(capabilities.ChangeRequest); ok {
			mu.Lock()
			if requests++; requests == 2 {
				cancel() // as Ctrl-C does, while the job is between its writes
			}
			mu.Unlock()
		}
		return nil
	}
	res, err := Run(ctx, p, RunOptions{Workspace: ws, Listeners: []capabilities.Listener{func(ctx context.Context, ev capabilities.Event) error {
		if _, ok := ev.(JobEvent); ok {
			return listen(ctx, ev)
		}
		return nil
	}}})
	require.ErrorIs(t, err, runtime.ErrInterrupted)
	assert.True(t, res.Steps["after"].NotRun)
	entries, err := os.ReadDir(ws)
	require.NoError(t, err)
	require.Less(t, len(entries), 4, "the run stopped before its last write")
	for _, e := range entries {
		require.Contains(t, []string{"a.txt", "b.txt", "c.txt", "d.txt"}, e.Name(), "no temporary file is left")
		data, err := os.ReadFile(filepath.Join(ws, e.Name()))
		require.NoError(t, err)
		assert.True(t, string(data) == big, "%s is whole (%d of %d bytes)", e.Name(), len(data), len(big))
	}
}

// on_item_error: fail starts no item once one has failed, even when every
// item waits at once for the run's one job slot (no max_parallel): the
// items not started are reported as not run.
func TestRunFailStartsNoQueuedItem(t *testing.T) {
	t.Parallel()
	p := loadPipeline(t, map[string]string{
		"pipeline.yaml": `
inputs:
  type: object
  properties: {items: {type: array, items: {type: string}}}
  required: [items]
steps:
  each:
    for_each: "{{inputs.items}}"
    input: "{{item}}"
    spec: {model: "script:good.yaml"}
  after:
    input: "{{steps.each.outputs}}"
    spec: {model: "script:good.yaml"}
`,
		// A job whose input is not good diverges from the script: it fails.
		"good.yaml": "turns:\n  - expect: {message_contains: good}\n    text: done\n",
	})
	var log jobLog
	res, err := Run(context.Background(), p, log.options(RunOptions{
		Workspace: t.TempDir(), Concurrency: 1,
		Inputs: map[string]any{"items": []any{"bad", "good", "good", "good", "good", "good"}},
	}))
	require.NoError(t, err)
	assert.Equal(t, []string{"each[0]"}, log.started, "no item starts after one failed")
	each := res.Steps["each"]
	assert.False(t, each.OK)
	require.Len(t, each.Failed, 1)
	assert.Equal(t, 0, each.Failed[0].Item)
	assert.Contains(t, each.Error, "item 0")
	assert.Equal(t, []int{1, 2, 3, 4, 5}, each.NotRunItems)
	assert.True(t, res.Steps["after"].NotRun)

	decoded := envelopeOf(t, res)
	assert.Equal(t, []any{1.0, 2.0, 3.0, 4.0, 5.0}, decoded.Steps["each"]["not_run_items"])
}

// A fan-out item that fails does not throw away its siblings' answers: the
// items that finished are reported with their answers, in item order (the
// failed and the not-run items left out, as failed_items and not_run_items
// name them), and are in the cache, so a run again replays them.
func TestRunFailedItemKeepsFinishedAnswers(t *testing.T) {
	t.Parallel()
	p := loadPipeline(t, map[string]string{
		"pipeline.yaml": `
cache: {dir: cache}
inputs:
  type: object
  properties: {items: {type: array, items: {type: string}}}
  required: [items]
steps:
  each:
    for_each: "{{inputs.items}}"
    input: "{{item}}"
    spec: {model: "script:good.yaml"}
`,
		// A job whose input is not good diverges from the script: it fails.
		"good.yaml": "turns:\n  - expect: {message_contains: good}\n    text: done\n",
	})
	ws := t.TempDir()
	inputs := map[string]any{"items": []any{"good 1", "good 2", "bad", "good 3"}}
	var log jobLog
	res, err := Run(context.Background(), p, log.options(RunOptions{Workspace: ws, Concurrency: 1, Inputs: inputs}))
	require.NoError(t, err)
	each := res.Steps["each"]
	assert.False(t, each.OK)
	require.Len(t, each.Failed, 1)
	assert.Equal(t, 2, each.Failed[0].Item)
	assert.Equal(t, []int{3}, each.NotRunItems)
	assert.Equal(t, []any{"done", "done"}, each.Outputs, "items 0 and 1 finished: their answers stay")
	decoded := envelopeOf(t, res)
	assert.Equal(t, []any{"done", "done"}, decoded.Steps["each"]["outputs"], "the envelope reports them")

	var again jobLog
	_, err = Run(context.Background(), p, again.options(RunOptions{Workspace: ws, Concurrency: 1, Inputs: inputs}))
	require.NoError(t, err)
	require.Len(t, again.ended, 3)
	for i, e := range again.ended {
		assert.Equal(t, i, e.Item)
		assert.Equal(t, i < 2, e.Cached, "item %d: the finished items replay from the cache", i)
	}

	// Their answers in item order, each its own.
	exec := func(_ context.Context, job Job) (*runtime.Result, error) {
		if job.Input == "bad" {
			return nil, errors.New("no")
		}
		return &runtime.Result{Output: "answer to " + job.Input}, nil
	}
	res, err = Run(context.Background(), p, RunOptions{Workspace: ws, Concurrency: 1, Inputs: inputs, Exec: exec})
	require.NoError(t, err)
	assert.Equal(t, []any{"answer to good 1", "answer to good 2"}, res.Steps["each"].Outputs)
}

// Values other than strings go into templates, vars and outputs as compact
// JSON as the answer wrote them: <, > and & are not escaped for HTML.
func TestRunJSONIsNotEscapedForHTML(t *testing.T) {
	t.Parallel()
	const code = `{"code":"if a < b && c > d"}`
	p := loadPipeline(t, map[string]string{
		"pipeline.yaml": `
steps:
  a:
    spec:
      model: "script:a.yaml"
      output_schema: {type: object, properties: {code: {type: string}}, required: [code]}
  b:
    input: "Review: {{steps.a.output}}"
    vars: {code: "{{steps.a.output}}"}
    spec: {model: "script:b.yaml", instructions: "Code: {{code}}"}
outputs:
  code: "{{steps.a.output.code}}"
  all: "{{steps.a.output}}"
  text: "got {{steps.a.output}}"
`,
		"a.yaml": "turns:\n  - text: '{\"code\": \"if a < b && c > d\"}'\n",
		"b.yaml": "turns:\n  - expect: {message_contains: 'Review: " + code + "', system_contains: 'Code: " + code + "'}\n    text: ok\n",
	})
	res, err := Run(context.Background(), p, RunOptions{Workspace: t.TempDir()})
	require.NoError(t, err)
	require.True(t, res.OK(), "%+v", res.Steps["b"])
	want := `{"code":"if a < b && c > d","all":` + code + `,"text":"got {\"code\":\"if a < b && c > d\"}"}`
	assert.Equal(t, want, string(res.Outputs))
	step, err := res.Steps["a"].MarshalJSON()
	require.NoError(t, err)
	assert.Contains(t, string(step), `"output":`+code)

	// Without outputs:, the last step's answer.
	p = loadPipeline(t, map[string]string{
		"pipeline.yaml": "steps:\n  a:\n    spec:\n      model: \"script:a.yaml\"\n" +
			"      output_schema: {type: object, properties: {code: {type: string}}, required: [code]}\n",
		"a.yaml": "turns:\n  - text: '{\"code\": \"if a < b && c > d\"}'\n",
	})
	res, err = Run(context.Background(), p, RunOptions{Workspace: t.TempDir()})
	require.NoError(t, err)
	assert.Equal(t, code, string(res.Outputs))
}

// An input not given takes its schema's default; an optional value that is
// absent (an input without default, a property the answer left out) is
// written null in text, null as a whole output, and no items for a for_each.
func TestRunAbsentValues(t *testing.T) {
	t.Parallel()
	p := loadPipeline(t, map[string]string{
		"pipeline.yaml": `
inputs:
  type: object
  properties:
    style: {type: string, default: brief}
    note: {type: string}
steps:
  a:
    spec:
      model: "script:a.yaml"
      output_schema:
        type: object
        properties: {name: {type: string}, count: {type: integer}, files: {type: array, items: {type: string}}}
        required: [name]
  b:
    input: "[{{steps.a.output.count}}] [{{inputs.note}}]"
    vars: {style: "{{inputs.style}}"}
    spec: {model: "script:b.yaml", instructions: "Style: {{style}}."}
  each:
    for_each: "{{steps.a.output.files}}"
    input: "{{item}}"
    spec: {model: "script:b.yaml"}
  big:
    when: "{{steps.a.output.count}} != null && {{steps.a.output.count}} > 2"
    spec: {model: "script:b.yaml"}
outputs:
  count: "{{steps.a.output.count}}"
  files: "{{steps.each.outputs}}"
`,
		"a.yaml": "turns:\n  - text: '{\"name\": \"x\"}'\n",
		"b.yaml": "turns:\n  - expect: {message_contains: '[null] [null]', system_contains: 'Style: brief.'}\n    text: ok\n",
	})
	var log jobLog
	res, err := Run(context.Background(), p, log.options(RunOptions{Workspace: t.TempDir()}))
	require.NoError(t, err)
	require.True(t, res.OK(), "%+v %+v", res.Steps["b"], res.Steps["each"])
	assert.ElementsMatch(t, []string{"a", "b"}, log.started)
	assert.True(t, res.Steps["big"].Skipped, "count is absent: not > 2")
	assert.Equal(t, []any{}, res.Steps["each"].Outputs)
	assert.JSONEq(t, `{"count": null, "files": []}`, string(res.Outputs))

	// A default is only for an input not given.
	res, err = Run(context.Background(), p, RunOptions{Workspace: t.TempDir(), Inputs: map[string]any{"style": "long"}})
	require.NoError(t, err)
	assert.False(t, res.OK())
	assert.Contains(t, res.Steps["b"].Error, "Style: brief.")
}

// An input's default is its at every depth: a member of an object input
// (or of an object in an array input) not given takes its schema's
// default, as a top-level input does, the object's own default included,
// so a when may use it untested.
func TestRunNestedInputDefaults(t *testing.T) {
	t.Parallel()
	p := loadPipeline(t, map[string]string{
		"pipeline.yaml": `
inputs:
  type: object
  properties:
    opts:
      type: object
      properties:
        depth: {type: integer, default: 2}
        mode: {type: string, default: fast}
        deep: {type: object, properties: {on: {type: boolean, default: true}}, default: {}}
      default: {}
    files:
      type: array
      items: {type: object, properties: {path: {type: string}, mode: {type: string, default: edit}}, required: [path]}
  required: [files]
steps:
  a:
    when: "{{inputs.opts.depth}} > 1 && {{inputs.opts.deep.on}}"
    input: "{{inputs.opts}} {{inputs.files}}"
    spec: {model: "script:a.yaml"}
`,
	})
	var got string
	input := func(res *Result) string {
		t.Helper()
		require.True(t, res.OK(), "%+v", res.Steps["a"])
		return got
	}
	opts := RunOptions{Workspace: t.TempDir(), Exec: func(_ context.Context, job Job) (*runtime.Result, error) {
		got = job.Input
		return &runtime.Result{Output: "ok"}, nil
	}}

	opts.Inputs = map[string]any{"files": []any{map[string]any{"path": "a.go"}, map[string]any{"path": "b.go", "mode": "read"}}}
	res, err := Run(context.Background(), p, opts)
	require.NoError(t, err)
	assert.Equal(t, `{"deep":{"on":true},"depth":2,"mode":"fast"} [{"mode":"edit","path":"a.go"},{"mode":"read","path":"b.go"}]`, input(res))

	opts.Inputs = map[string]any{"opts": map[string]any{"mode": "slow", "deep": map[string]any{}}, "files": []any{}}
	res, err = Run(context.Background(), p, opts)
	require.NoError(t, err)
	assert.Equal(t, `{"deep":{"on":true},"depth":2,"mode":"slow"} []`, input(res))
}

// A default written beside a $ref is the input's, as draft 2020-12 reads
// it (an annotation beside the reference applies with its target's
// keywords): the input not given takes it, the checks count it as there,
// and so do the defaults of its members.
func TestRunInputDefaultsBesideRef(t *testing.T) {
	t.Parallel()
	p := loadPipeline(t, map[string]string{
		"pipeline.yaml": `
inputs:
  type: object
  $defs:
    opts: {type: object, properties: {depth: {type: integer, default: 2}}}
    count: {type: integer}
  properties:
    opts: {$ref: "#/$defs/opts", default: {}}
    n: {$ref: "#/$defs/count", default: 3}
steps:
  a:
    when: "{{inputs.opts.depth}} > 1 && {{inputs.n}} == 3"
    input: "{{inputs.opts}} {{inputs.n}}"
    spec: {model: "script:a.yaml"}
`,
	})
	var got string
	res, err := Run(context.Background(), p, RunOptions{Workspace: t.TempDir(), Exec: func(_ context.Context, job Job) (*runtime.Result, error) {
		got = job.Input
		return &runtime.Result{Output: "ok"}, nil
	}})
	require.NoError(t, err)
	require.True(t, res.OK(), "%+v", res.Steps["a"])
	assert.Equal(t, `{"depth":2} 3`, got)
}

// An index past the end of an array fails the step that reads it, naming
// the index and how many items the array it indexes has.
func TestRunIndexPastTheEnd(t *testing.T) {
	t.Parallel()
	p := loadPipeline(t, map[string]string{
		"pipeline.yaml": `
inputs:
  type: object
  properties: {items: {type: array, items: {type: string}}}
  required: [items]
steps:
  each:
    for_each: "{{inputs.items}}"
    input: "{{item}}"
    spec: {model: "script:answer.yaml"}
  second:
    input: "{{steps.each.outputs[1]}}"
    spec: {model: "script:answer.yaml"}
  far:
    input: "{{inputs.items[5]}}"
    spec: {model: "script:answer.yaml"}
`,
		"answer.yaml": "turns:\n  - text: fine\n",
	})
	for _, tc := range []struct {
		items       []any
		second, far string
	}{
		{[]any{"a"},
			"input: {{steps.each.outputs[1]}}: index 1 is past the end of steps.each.outputs, an array of 1 item",
			"input: {{inputs.items[5]}}: index 5 is past the end of inputs.items, an array of 1 item"},
		{[]any{},
			"input: {{steps.each.outputs[1]}}: index 1 is past the end of steps.each.outputs, an empty array",
			"input: {{inputs.items[5]}}: index 5 is past the end of inputs.items, an empty array"},
		{[]any{"a", "b", "c"},
			"",
			"input: {{inputs.items[5]}}: index 5 is past the end of inputs.items, an array of 3 items"},
	} {
		res, err := Run(context.Background(), p, RunOptions{Workspace: t.TempDir(), Inputs: map[string]any{"items": tc.items}})
		require.NoError(t, err)
		assert.Equal(t, tc.second, res.Steps["second"].Error, tc.items)
		assert.Equal(t, tc.second == "", res.Steps["second"].OK, tc.items)
		assert.Equal(t, tc.far, res.Steps["far"].Error, tc.items)
	}
}

// A value of a kind its schema left open fails the step whose reference
// indexes or names a member of it, naming the value and what it is.
func TestRunReferenceIntoTheWrongKind(t *testing.T) {
	t.Parallel()
	p := loadPipeline(t, map[string]string{
		"pipeline.yaml": `
inputs:
  type: object
  properties: {x: {}}
  required: [x]
steps:
  index:
    input: "{{inputs.x[3]}}"
    spec: {model: "script:answer.yaml"}
  member:
    input: "{{inputs.x.key}}"
    spec: {model: "script:answer.yaml"}
  deep:
    input: "{{inputs.x.a[0].b}}"
    spec: {model: "script:answer.yaml"}
`,
		"answer.yaml": "turns:\n  - text: fine\n",
	})
	for _, tc := range []struct {
		x                   any
		index, member, deep string
	}{
		{map[string]any{"a": []any{"s"}},
			"input: {{inputs.x[3]}}: inputs.x is an object, not an array",
			"",
			"input: {{inputs.x.a[0].b}}: inputs.x.a[0] is a string, which has no property 'b'"},
		{[]any{1, 2, 3, 4},
			"",
			"input: {{inputs.x.key}}: inputs.x is an array, which has no property 'key'",
			"input: {{inputs.x.a[0].b}}: inputs.x is an array, which has no property 'a'"},
		{7,
			"input: {{inputs.x[3]}}: inputs.x is a number, not an array",
			"input: {{inputs.x.key}}: inputs.x is a number, which has no property 'key'",
			"input: {{inputs.x.a[0].b}}: inputs.x is a number, which has no property 'a'"},
	} {
		res, err := Run(context.Background(), p, RunOptions{Workspace: t.TempDir(), Inputs: map[string]any{"x": tc.x}})
		require.NoError(t, err)
		assert.Equal(t, tc.index, res.Steps["index"].Error, tc.x)
		assert.Equal(t, tc.member, res.Steps["member"].Error, tc.x)
		assert.Equal(t, tc.deep, res.Steps["deep"].Error, tc.x)
	}
}

// A fan-out step that fails before it knows its items (its for_each names
// an index past the end, its when fails) reports no outputs and no item
// count: it did not run with none.
func TestRunFanOutFailingBeforeItsItems(t *testing.T) {
	t.Parallel()
	p := loadPipeline(t, map[string]string{
		"pipeline.yaml": `
inputs:
  type: object
  properties: {lists: {type: array, items: {type: array}}, n: {type: integer}}
  required: [lists]
steps:
  each:
    for_each: "{{inputs.lists[1]}}"
    input: "{{item}}"
    spec: {model: "script:answer.yaml"}
  guarded:
    for_each: {glob: "*.md"}
    when: "[{{inputs.n}}][0] > 1"
    input: "{{item}}"
    spec: {model: "script:answer.yaml"}
`,
		"answer.yaml": "turns:\n  - text: fine\n",
	})
	res, err := Run(context.Background(), p, RunOptions{Workspace: t.TempDir(), Inputs: map[string]any{"lists": []any{[]any{"a"}}}})
	require.NoError(t, err)
	for _, name := range []string{"each", "guarded"} {
		b, err := json.Marshal(res.Steps[name])
		require.NoError(t, err)
		var m map[string]any
		require.NoError(t, json.Unmarshal(b, &m))
		assert.Equal(t, false, m["ok"], name)
		assert.NotContains(t, m, "outputs", name)
		assert.NotContains(t, m, "items", name)
		assert.NotEmpty(t, m["error"], name)
	}
	assert.Equal(t, "{{inputs.lists[1]}}: index 1 is past the end of inputs.lists, an array of 1 item", res.Steps["each"].Error)
}

// What stderr shows (OnJobStart and OnJobEnd, one call at a time) reads in
// an order that matches what happened, however many jobs run at once: a
// job's start before its end, and a step's start after the end of every job
// of the steps it depends on. Jobs that start together are told in either
// order, as the events are.
func TestRunJobCallbacksInOrder(t *testing.T) {
	t.Parallel()
	p := loadPipeline(t, map[string]string{
		"pipeline.yaml": `
steps:
  a:
    spec: {model: "script:answer.yaml"}
  b:
    spec: {model: "script:answer.yaml"}
  each:
    for_each: {glob: "*.md"}
    input: "{{item}} {{steps.a.output}}"
    spec: {model: "script:answer.yaml"}
  last:
    input: "{{steps.each.outputs}} {{steps.b.output}}"
    spec: {model: "script:answer.yaml"}
`,
		"answer.yaml": "turns:\n  - text: fine\n",
	})
	ws := writeFiles(t, t.TempDir(), map[string]string{"1.md": "1", "2.md": "2", "3.md": "3", "4.md": "4"})
	var lines []string // called one at a time
	res, err := Run(context.Background(), p, RunOptions{Workspace: ws, Concurrency: 4,
		OnJobStart: func(step string, item int) { lines = append(lines, "start "+jobName(step, item)) },
		OnJobEnd:   func(e JobEnd) { lines = append(lines, "end "+jobName(e.Step, e.Item)) },
	})
	require.NoError(t, err)
	require.True(t, res.OK())
	at := map[string]int{}
	for i, l := range lines {
		at[l] = i
	}
	require.Len(t, at, 2*7, "%v", lines)
	for l, i := range at {
		if job, ok := strings.CutPrefix(l, "start "); ok {
			assert.Less(t, i, at["end "+job], "%s starts before it ends: %v", job, lines)
		}
	}
	for i := range 4 {
		item := jobName("each", i)
		assert.Less(t, at["end a"], at["start "+item], "%v", lines)
		assert.Less(t, at["end "+item], at["start last"], "%v", lines)
	}
	assert.Less(t, at["end b"], at["start last"], "%v", lines)
}

// A job whose start event a listener refuses ends all the same: every
// OnJobStart has its OnJobEnd, and every step.start its step.end, a fan-out
// step's own too, whose refusal fails the step before its items start.
func TestRunStartEventRefused(t *testing.T) {
	t.Parallel()
	p := loadPipeline(t, map[string]string{
		"pipeline.yaml": `
steps:
  one:
    spec: {model: "script:answer.yaml"}
  each:
    for_each: {glob: "*.md"}
    input: "{{item}}"
    spec: {model: "script:answer.yaml"}
`,
		"answer.yaml": "turns:\n  - text: fine\n",
	})
	ws := writeFiles(t, t.TempDir(), map[string]string{"a.md": "a", "b.md": "b"})
	// The jobs' starts are refused; the fan-out step's own is refused too,
	// or let through for its items' to be.
	for _, refuseFanOut := range []bool{false, true} {
		var (
			log          jobLog
			mu           sync.Mutex
			starts, ends []string
		)
		refuse := func(_ context.Context, ev capabilities.Event) error {
			mu.Lock()
			defer mu.Unlock()
			switch ev := ev.(type) {
			case StepStart:
				starts = append(starts, jobName(ev.Step, ev.Item))
				if ev.Step == "each" && ev.Item < 0 && !refuseFanOut {
					return nil
				}
				return errors.New("the events file is full")
			case StepEnd:
				ends = append(ends, jobName(ev.Step, ev.Item))
			}
			return nil
		}
		res, err := Run(context.Background(), p, log.options(RunOptions{Workspace: ws, Listeners: []capabilities.Listener{refuse}}))
		require.NoError(t, err)
		assert.False(t, res.OK())
		assert.Contains(t, res.Steps["one"].Error, "the events file is full")
		assert.Contains(t, res.Steps["each"].Error, "the events file is full")
		assert.Len(t, log.ended, len(log.started), "every job that started ended: %v", log.started)
		assert.Equal(t, 0, log.running)
		assert.ElementsMatch(t, starts, ends, "every start has its end, the fan-out step's own included")
		if refuseFanOut {
			assert.Equal(t, []string{"one"}, log.started, "a fan-out step whose start is refused starts no item")
		} else {
			assert.Contains(t, log.started, "one")
			assert.Greater(t, len(log.started), 1, "an item started: %v", log.started)
		}
	}
}

// A when that a load accepts with an absent value in it, because another
// value decides whether it is needed, says which value was absent when it
// was needed after all.
func TestRunWhenNeedsAnAbsentValue(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		properties, required, when, answer, err string
	}{{
		properties: "{go: {type: boolean}, count: {type: integer}, list: {type: array, items: {type: integer}}}",
		required:   "[go]",
		when:       "{{steps.a.output.go}} && [{{steps.a.output.count}}][0] > 2",
		answer:     `{"go": true}`,
		err:        "steps.b.when: {{steps.a.output.count}} is absent (a's output_schema does not require 'count'), and the expression needs its value",
	}, {
		// An error a null does not make is not blamed on the absent value.
		properties: "{count: {type: integer}, d: {type: integer}}",
		required:   "[d]",
		when:       "{{steps.a.output.count}} != null && {{steps.a.output.count}} > 0 || 10 / {{steps.a.output.d}} > 1",
		answer:     `{"d": 0}`,
		err:        "steps.b.when: division by zero",
	}} {
		p := loadPipeline(t, map[string]string{
			"pipeline.yaml": `
steps:
  a:
    spec:
      model: "script:a.yaml"
      output_schema:
        type: object
        properties: ` + tc.properties + `
        required: ` + tc.required + `
  b:
    when: "` + tc.when + `"
    spec: {model: test}
`,
			"a.yaml": "turns:\n  - text: '" + tc.answer + "'\n",
		})
		res, err := Run(context.Background(), p, RunOptions{Workspace: t.TempDir()})
		require.NoError(t, err)
		assert.False(t, res.OK())
		msg, placed := strings.CutPrefix(res.Steps["b"].Error, p.File+":11:")
		_, msg, _ = strings.Cut(msg, ": ") // the column
		assert.True(t, placed && strings.HasPrefix(msg, tc.err), "%s: %s", tc.when, res.Steps["b"].Error)
	}
}

// A reference a when cannot take (an index past the end of the list the
// answer gave) fails the when only where the expression needs its value:
// a size() test before it decides, as CEL's && and || decide.
func TestRunWhenGuardsAnIndex(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		answer string
		ran    bool
	}{{`[]`, false}, {`["x"]`, true}, {`["y"]`, false}} {
		p := loadPipeline(t, map[string]string{
			"pipeline.yaml": `
steps:
  a:
    spec:
      model: "script:a.yaml"
      output_schema:
        type: object
        properties: {files: {type: array, items: {type: string}}}
        required: [files]
  guarded:
    when: "size({{steps.a.output.files}}) > 0 && {{steps.a.output.files[0]}} == 'x'"
    spec: {model: test}
  either:
    when: "{{steps.a.output.files[0]}} == 'x' || size({{steps.a.output.files}}) == 0"
    spec: {model: test}
  bare:
    when: "{{steps.a.output.files[0]}} == 'x'"
    spec: {model: test}
`,
			"a.yaml": "turns:\n  - text: '{\"files\": " + tc.answer + "}'\n",
		})
		res, err := Run(context.Background(), p, RunOptions{Workspace: t.TempDir()})
		require.NoError(t, err)
		guarded := res.Steps["guarded"]
		assert.Empty(t, guarded.Error, tc.answer)
		assert.Equal(t, tc.ran, guarded.OK, tc.answer)
		assert.Equal(t, !tc.ran, guarded.Skipped, tc.answer)
		either := res.Steps["either"]
		assert.Empty(t, either.Error, tc.answer)
		assert.Equal(t, tc.answer != `["y"]`, either.OK, tc.answer)
		if tc.answer == `[]` {
			assert.False(t, res.Steps["bare"].OK)
			assert.Equal(t, p.File+":17:12: steps.bare.when: {{steps.a.output.files[0]}}: index 0 is past the end of steps.a.output.files, an empty array", res.Steps["bare"].Error)
		}
	}
}

// When more jobs are ready than there are slots, the earlier step in the
// file gets a slot first, and a step's items in item order: a job that ends
// makes its dependents and its step's next item ready before its slot is
// given again, so with -j 1 the order is the same on every run.
func TestRunSlotsGoInFileOrder(t *testing.T) {
	t.Parallel()
	p := loadPipeline(t, map[string]string{
		"pipeline.yaml": `
inputs:
  type: object
  properties: {items: {type: array, items: {type: string}}}
steps:
  a:
    spec: {model: test}
  b:
    needs: [a]
    spec: {model: test}
  c:
    spec: {model: test}
  d:
    spec: {model: test}
  each:
    for_each: '{{inputs.items}}'
    input: '{{item}}'
    max_parallel: 1
    spec: {model: test}
  e:
    spec: {model: test}
`,
	})
	for _, tc := range []struct {
		concurrency int
		first       []string // the jobs that start at once
		then        [][2]string
	}{{
		concurrency: 1,
		first:       []string{"a"},
		then:        [][2]string{{"a", "b"}, {"b", "c"}, {"c", "d"}, {"d", "each[0]"}, {"each[0]", "each[1]"}, {"each[1]", "e"}, {"e", ""}},
	}, {
		concurrency: 2,
		first:       []string{"a", "c"},
		then:        [][2]string{{"a", "b"}, {"c", "d"}, {"b", "each[0]"}, {"d", "e"}, {"each[0]", "each[1]"}, {"e", ""}, {"each[1]", ""}},
	}, {
		concurrency: 3,
		first:       []string{"a", "c", "d"},
		then:        [][2]string{{"d", "each[0]"}, {"a", "b"}, {"each[0]", "each[1]"}, {"c", "e"}, {"b", ""}, {"e", ""}, {"each[1]", ""}},
	}} {
		t.Run(fmt.Sprint("j", tc.concurrency), func(t *testing.T) {
			t.Parallel()
			var (
				mu      sync.Mutex
				release = map[string]chan struct{}{}
			)
			gate := func(name string) chan struct{} {
				mu.Lock()
				defer mu.Unlock()
				if release[name] == nil {
					release[name] = make(chan struct{})
				}
				return release[name]
			}
			started := make(chan string, 16)
			exec := func(ctx context.Context, job Job) (*runtime.Result, error) {
				name := jobName(job.Step.Name, job.Item)
				started <- name
				select {
				case <-gate(name):
				case <-ctx.Done():
					return nil, ctx.Err()
				}
				return &runtime.Result{Output: "done"}, nil
			}
			next := func() string {
				t.Helper()
				select {
				case name := <-started:
					return name
				case <-time.After(10 * time.Second):
					t.Fatal("no job started")
					return ""
				}
			}
			ctx, cancel := context.WithCancel(context.Background())
			type ended struct {
				res *Result
				err error
			}
			done := make(chan ended, 1)
			ws := t.TempDir()
			go func() {
				res, err := Run(ctx, p, RunOptions{
					Workspace: ws, Exec: exec, Concurrency: tc.concurrency,
					Inputs: map[string]any{"items": []any{"x", "y"}},
				})
				done <- ended{res, err}
			}()
			defer func() {
				cancel()
				<-done
			}()
			var first []string
			for range tc.first {
				first = append(first, next())
			}
			require.ElementsMatch(t, tc.first, first, "the first %d ready jobs in the file take the slots", tc.concurrency)
			for _, step := range tc.then {
				close(gate(step[0]))
				if step[1] != "" {
					require.Equal(t, step[1], next(), "the slot %s gave back", step[0])
				}
			}
			end := <-done
			done <- end
			require.NoError(t, end.err)
			assert.True(t, end.res.OK())
			assert.Empty(t, started, "no job started beyond those expected")
		})
	}
}

// Every step that starts says so with a pipeline.step.start without item,
// a fan-out step before its items' own, and ends with a pipeline.step.end
// without item after them; a step that never starts (skipped, not run)
// has only its end.
func TestRunStepEventsPair(t *testing.T) {
	t.Parallel()
	p := loadPipeline(t, map[string]string{
		"pipeline.yaml": `
steps:
  one:
    spec: {model: test}
  each:
    needs: [one]
    for_each: {glob: "*.md"}
    input: "{{item}}"
    spec: {model: test}
  none:
    for_each: {glob: "*.txt"}
    input: "{{item}}"
    spec: {model: test}
  never:
    when: "size({{steps.each.outputs}}) > 5"
    spec: {model: test}
`,
	})
	var events bytes.Buffer
	ws := writeFiles(t, t.TempDir(), map[string]string{"a.md": "a", "b.md": "b"})
	res, err := Run(context.Background(), p, RunOptions{Workspace: ws, Listeners: []capabilities.Listener{runtime.JSONLines(&events)}})
	require.NoError(t, err)
	require.True(t, res.OK())
	var seen []string // "start each", "end each[1]"...
	for line := range strings.SplitSeq(strings.TrimSpace(events.String()), "\n") {
		var ev struct {
			Kind string
			Step string
			Item *int
		}
		require.NoError(t, json.Unmarshal([]byte(line), &ev))
		name := ev.Step
		if ev.Item != nil {
			name = jobName(ev.Step, *ev.Item)
		}
		switch ev.Kind {
		case KindStepStart:
			seen = append(seen, "start "+name)
		case KindStepEnd:
			seen = append(seen, "end "+name)
		}
	}
	at := func(event string) int {
		i := slices.Index(seen, event)
		assert.GreaterOrEqual(t, i, 0, "%s in %v", event, seen)
		return i
	}
	for _, step := range []string{"one", "each", "none"} {
		assert.Less(t, at("start "+step), at("end "+step), step)
	}
	for _, item := range []string{"each[0]", "each[1]"} {
		assert.Less(t, at("start each"), at("start "+item), item)
		assert.Less(t, at("start "+item), at("end "+item), item)
		assert.Less(t, at("end "+item), at("end each"), item)
	}
	assert.NotContains(t, seen, "start never", "a skipped step did not start")
	at("end never")
	assert.Len(t, seen, 11, "%v", seen)
}

// A run stopped between a fan-out step's items (Ctrl-C) keeps the answers
// of the items that finished: the step did not run them all, and says
// which it did not, but the envelope reports the answers it has.
func TestRunInterruptedFanOutKeepsFinishedAnswers(t *testing.T) {
	t.Parallel()
	p := loadPipeline(t, map[string]string{
		"pipeline.yaml": `
inputs:
  type: object
  properties: {items: {type: array, items: {type: string}}}
  required: [items]
steps:
  each:
    for_each: "{{inputs.items}}"
    input: "{{item}}"
    spec: {model: test}
`,
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	exec := func(_ context.Context, job Job) (*runtime.Result, error) {
		return &runtime.Result{Output: "answer to " + job.Input}, nil
	}
	res, err := Run(ctx, p, RunOptions{
		Workspace: t.TempDir(), Concurrency: 1, Exec: exec, Inputs: map[string]any{"items": []any{"a", "b", "c"}},
		OnJobEnd: func(JobEnd) { cancel() }, // as Ctrl-C does, once the first item has answered
	})
	require.ErrorIs(t, err, runtime.ErrInterrupted)
	each := res.Steps["each"]
	assert.False(t, each.OK)
	assert.Equal(t, []int{1, 2}, each.NotRunItems)
	assert.Equal(t, []any{"answer to a"}, each.Outputs)

	decoded := envelopeOf(t, res)
	assert.Equal(t, []any{"answer to a"}, decoded.Steps["each"]["outputs"], "the envelope keeps the finished item's answer")
	assert.EqualValues(t, 3, decoded.Steps["each"]["items"])
	assert.Equal(t, []any{1.0, 2.0}, decoded.Steps["each"]["not_run_items"])
}

// An item a Ctrl-C stops did not fail on its own: on_item_error: skip does
// not drop it as it drops a failed item, and its step is not reported as
// having done its work.
func TestRunInterruptedItemIsNotSkipped(t *testing.T) {
	t.Parallel()
	p := loadPipeline(t, map[string]string{
		"pipeline.yaml": `
inputs:
  type: object
  properties: {items: {type: array, items: {type: string}}}
  required: [items]
steps:
  each:
    for_each: "{{inputs.items}}"
    input: "{{item}}"
    on_item_error: skip
    spec: {model: test}
`,
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	exec := func(ctx context.Context, job Job) (*runtime.Result, error) {
		if job.Input == "slow" {
			<-ctx.Done()
			return nil, runtime.ErrInterrupted
		}
		return &runtime.Result{Output: "answer to " + job.Input}, nil
	}
	res, err := Run(ctx, p, RunOptions{
		Workspace: t.TempDir(), Concurrency: 2, Exec: exec, Inputs: map[string]any{"items": []any{"slow", "fast"}},
		OnJobEnd: func(e JobEnd) {
			if e.Item == 1 {
				cancel() // as Ctrl-C does, while the slow item runs
			}
		},
	})
	require.ErrorIs(t, err, runtime.ErrInterrupted)
	each := res.Steps["each"]
	assert.False(t, each.OK, "an interrupted item is not skipped as a failed one")
	assert.NotEmpty(t, each.Error)
	assert.Equal(t, []any{"answer to fast"}, each.Outputs, "the finished item keeps its answer")
	assert.False(t, res.OK())
}

// A backslash escapes a reference, as in Handlebars: \{{steps.a.output}}
// is that text, neither checked nor filled, and makes no step depend on
// another; \\{{...}} is a backslash and the value. A step's spec escapes
// its own placeholders the same way, so vars need not fill them.
func TestRunEscapedReferences(t *testing.T) {
	t.Parallel()
	p := loadPipeline(t, map[string]string{
		"pipeline.yaml": `
inputs: {type: object, properties: {topic: {type: string}}, required: [topic]}
steps:
  a:
    input: 'Fill \{{inputs.topic}} with {{inputs.topic}}; \{{ not a reference }}, \{{steps.nope.output}}'
    vars: {who: '\{{steps.b.output}}'}
    spec:
      model: "script:a.yaml"
      instructions: 'For {{who}}: reply with \{{name}} replaced.'
  b:
    input: '\{{steps.a.output}}'
    spec: {model: "script:b.yaml"}
outputs:
  text: '\{{steps.a.output}} is \\{{steps.a.output}}'
  whole: '\{{steps.a.output}}'
`,
		"a.yaml": "turns:\n  - expect: {message_contains: 'Fill {{inputs.topic}} with cats; {{ not a reference }}, {{steps.nope.output}}', " +
			"system_contains: 'For {{steps.b.output}}: reply with {{name}} replaced.'}\n    text: fine\n",
		"b.yaml": "turns:\n  - expect: {message_contains: '{{steps.a.output}}'}\n    text: other\n",
	})
	assert.Empty(t, p.Steps[1].Deps, "an escaped reference is no dependency")
	assert.Empty(t, p.Steps[0].Deps)
	res, err := Run(context.Background(), p, RunOptions{Workspace: t.TempDir(), Inputs: map[string]any{"topic": "cats"}})
	require.NoError(t, err)
	assert.True(t, res.OK(), "%+v", res.Steps)
	assert.JSONEq(t, `{"text": "{{steps.a.output}} is \\fine", "whole": "{{steps.a.output}}"}`, string(res.Outputs))
}

// A for_each over an array its schema allows to be null (type: [array,
// 'null'], or an anyOf with null, as strict structured outputs write an
// optional list) loads, its items typed by the array's items, and a null
// answer has no items, as an array left out has none.
func TestRunForEachOverNullableArray(t *testing.T) {
	t.Parallel()
	p := loadPipeline(t, map[string]string{
		"pipeline.yaml": `
steps:
  a:
    spec:
      model: "script:a.yaml"
      output_schema:
        type: object
        properties:
          files: {type: [array, "null"], items: {type: object, properties: {path: {type: string}}, required: [path]}}
          more: {anyOf: [{type: array, items: {type: string}}, {type: "null"}]}
        required: [files, more]
  each:
    for_each: "{{steps.a.output.files}}"
    input: "{{item.path}}"
    spec: {model: "script:b.yaml"}
  other:
    for_each: "{{steps.a.output.more}}"
    input: "{{item}}"
    spec: {model: "script:b.yaml"}
outputs:
  files: "{{steps.each.outputs}}"
  more: "{{steps.other.outputs}}"
`,
		"a.yaml": "turns:\n  - text: '{\"files\": null, \"more\": null}'\n",
		"b.yaml": "turns:\n  - text: ok\n",
	})
	var log jobLog
	res, err := Run(context.Background(), p, log.options(RunOptions{Workspace: t.TempDir()}))
	require.NoError(t, err)
	require.True(t, res.OK(), "%+v %+v", res.Steps["each"], res.Steps["other"])
	assert.Equal(t, []string{"a"}, log.started)
	assert.JSONEq(t, `{"files": [], "more": []}`, string(res.Outputs))
}

// A {glob: ...} fan-out has no item among the run's own files: the
// pipeline's cache directory in the workspace, and the files the caller
// writes as the run goes (RunOptions.OwnFiles: its events log), which the
// cache key leaves out of input_globs too. Else a second run fans out over
// the entries the first one stored, and every run over its own log.
func TestRunGlobLeavesOutOwnFiles(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	writeFiles(t, ws, map[string]string{
		"docs/a.md": "a", "docs/b.md": "b", "logs/events.jsonl": "",
		"pipeline.yaml": `
cache: {dir: .cache}
steps:
  ex:
    for_each: {glob: "**/*"}
    input: "{{item}}"
    spec: {model: "script:b.yaml"}
`,
		"b.yaml": "turns:\n  - text: ok\n",
	})
	p, err := LoadFile(filepath.Join(ws, "pipeline.yaml"))
	require.NoError(t, err)
	own := []string{filepath.Join(ws, "logs", "events.jsonl")}
	for run := range 2 {
		res, err := Run(context.Background(), p, RunOptions{Workspace: ws, OwnFiles: own})
		require.NoError(t, err)
		require.True(t, res.OK())
		assert.Equal(t, 4, res.Steps["ex"].Items, "run %d: b.yaml, docs/a.md, docs/b.md, pipeline.yaml", run)
	}
	assert.DirExists(t, filepath.Join(ws, ".cache"), "the cache is in the workspace")
}

// A cache kept elsewhere than in a directory (a backend's, whose Dir is "")
// leaves no file out of a glob's items: "" named the current directory, so
// that a run from a directory of the workspace lost every item below it.
func TestRunGlobOfACacheKeptElsewhere(t *testing.T) {
	ws := t.TempDir()
	writeFiles(t, ws, map[string]string{
		"docs/a.md": "a", "docs/b.md": "b",
		"pipeline.yaml": `
cache: true
steps:
  ex:
    for_each: {glob: "docs/*.md"}
    input: "{{item}}"
    spec: {model: "script:b.yaml"}
`,
		"b.yaml": "turns:\n  - text: ok\n",
	})
	p, err := LoadFile(filepath.Join(ws, "pipeline.yaml"))
	require.NoError(t, err)
	c, err := cache.New(t.TempDir(), cache.WithBackend(memBackend{}))
	require.NoError(t, err)
	require.Empty(t, c.Dir())
	t.Chdir(filepath.Join(ws, "docs"))
	res, err := Run(context.Background(), p, RunOptions{Workspace: ws, Cache: c})
	require.NoError(t, err)
	require.True(t, res.OK())
	assert.Equal(t, 2, res.Steps["ex"].Items, "docs/a.md, docs/b.md")
}

// memBackend keeps nothing.
type memBackend struct{}

func (memBackend) Get(context.Context, string) ([]byte, error) { return nil, nil }
func (memBackend) Put(context.Context, string, []byte) error   { return nil }
func (memBackend) Delete(context.Context, string) error        { return nil }

// A job whose responses came with no usage counts them apart, in its step's
// usage and in the pipeline's, so that the sums of tokens are never read as
// whole when some of what they add up was never reported.
func TestRunSumsRequestsWithoutUsage(t *testing.T) {
	t.Parallel()
	p := loadPipeline(t, map[string]string{
		"pipeline.yaml": `
inputs:
  type: object
  properties: {items: {type: array, items: {type: string}}}
steps:
  work:
    for_each: "{{inputs.items}}"
    input: "{{item}}"
    spec: {model: "script:unreported.yaml"}
  after:
    needs: [work]
    spec: {model: "script:reported.yaml"}
`,
		"unreported.yaml": "turns:\n  - text: done\n",
		"reported.yaml":   "turns:\n  - text: done\n    usage: {input_tokens: 12, output_tokens: 3}\n",
	})
	res, err := Run(context.Background(), p, RunOptions{Workspace: t.TempDir(), Inputs: map[string]any{"items": []any{"a", "b"}}})
	require.NoError(t, err)
	require.True(t, res.OK())
	work := res.Steps["work"].Usage
	assert.Equal(t, 2, work.Requests)
	assert.Equal(t, 2, work.RequestsWithoutUsage, "the step sums its items'")
	assert.Equal(t, 0, res.Steps["after"].Usage.RequestsWithoutUsage)
	assert.Equal(t, 3, res.Usage.Requests)
	assert.Equal(t, 2, res.Usage.RequestsWithoutUsage, "the pipeline sums its steps'")
	assert.Equal(t, 12, res.Usage.InputTokens)
}

// A when that fails as it runs says where in the pipeline file, as the
// errors of a load do: at the operator or the reference that failed.
func TestRunWhenErrorIsPlaced(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		when, answer string
		at, err      string // at: the text of the when where the error is placed
	}{{
		when:   "{{steps.a.output.n}} > 0 || 10 / {{steps.a.output.d}} > 1",
		answer: `{"n": 0, "d": 0}`,
		at:     "/ {{",
		err:    "steps.b.when: division by zero",
	}, {
		when:   "'é ü' != '' && 10 / {{steps.a.output.d}} > 1",
		answer: `{"n": 0, "d": 0}`,
		at:     "/ {{",
		err:    "steps.b.when: division by zero",
	}, {
		when:   "[1, 2][{{steps.a.output.n}}] > 0",
		answer: `{"n": 7, "d": 1}`,
		at:     "[{{",
		err:    "steps.b.when: index out of bounds: 7",
	}, {
		when:   "{{steps.a.output.d}} > 0 && {{steps.a.output.l[3]}} == 'x'",
		answer: `{"n": 0, "d": 1, "l": []}`,
		at:     "{{steps.a.output.l",
		err:    "steps.b.when: {{steps.a.output.l[3]}}: index 3 is past the end of steps.a.output.l, an empty array",
	}, {
		when:   "{{steps.a.output.d}} > 0 && [{{steps.a.output.o}}][0] > 2",
		answer: `{"n": 0, "d": 1}`,
		at:     "{{steps.a.output.o",
		err:    "steps.b.when: {{steps.a.output.o}} is absent (a's output_schema does not require 'o'), and the expression needs its value",
	}} {
		dir := writeFiles(t, t.TempDir(), map[string]string{
			"pipeline.yaml": `
steps:
  a:
    spec:
      model: "script:a.yaml"
      output_schema:
        type: object
        properties: {n: {type: integer}, d: {type: integer}, o: {type: integer}, l: {type: array, items: {type: string}}}
        required: [n, d]
  b:
    when: "` + tc.when + `"
    spec: {model: test}
`,
			"a.yaml": "turns:\n  - text: '" + tc.answer + "'\n",
		})
		file := filepath.Join(dir, "pipeline.yaml")
		p, err := LoadFile(file)
		require.NoError(t, err, tc.when)
		res, err := Run(context.Background(), p, RunOptions{Workspace: t.TempDir()})
		require.NoError(t, err)
		assert.False(t, res.OK())
		col := len(`    when: "`) + 1 + utf8.RuneCountInString(tc.when[:strings.Index(tc.when, tc.at)])
		want := fmt.Sprintf("%s:11:%d: %s", file, col, tc.err)
		assert.True(t, strings.HasPrefix(res.Steps["b"].Error, want), "%s:\n got %s\nwant %s", tc.when, res.Steps["b"].Error, want)
	}
}

// A fan-out's items wait for their slots without a goroutine each: one
// starts as its item gets a slot, so a list of many items costs what its
// running jobs do, not a stack per item.
func TestRunFanOutItemsWaitWithoutAGoroutineEach(t *testing.T) { // not parallel: it counts the goroutines
	p := loadPipeline(t, map[string]string{
		"pipeline.yaml": `
inputs:
  type: object
  properties: {items: {type: array, items: {type: string}}}
  required: [items]
steps:
  each:
    for_each: "{{inputs.items}}"
    input: "{{item}}"
    spec: {model: test}
`,
	})
	items := make([]any, 2000)
	for i := range items {
		items[i] = strconv.Itoa(i)
	}
	before := goruntime.NumGoroutine()
	var most atomic.Int64
	exec := func(_ context.Context, job Job) (*runtime.Result, error) {
		if n := int64(goruntime.NumGoroutine()); n > most.Load() {
			most.Store(n)
		}
		return &runtime.Result{Output: job.Input}, nil
	}
	res, err := Run(context.Background(), p, RunOptions{Workspace: t.TempDir(), Concurrency: 2, Exec: exec, Inputs: map[string]any{"items": items}})
	require.NoError(t, err)
	require.True(t, res.OK())
	assert.Len(t, res.Steps["each"].Outputs, len(items))
	assert.Less(t, int(most.Load())-before, 100, "goroutines while %d items wait for 2 slots", len(items))
}

// A reference written more than once in a when is blamed, when its value
// fails the when as it runs, at the occurrence that needed it, not at the
// first, which the expression may not have needed.
func TestRunWhenErrorIsPlacedAtTheOccurrenceThatFailed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ when, err string }{{
		when: "{{steps.a.output.n}} > 5 && {{steps.a.output.l[3]}} == 'x' || {{steps.a.output.l[3]}} == 'y'",
		err:  "steps.b.when: {{steps.a.output.l[3]}}: index 3 is past the end of steps.a.output.l, an empty array",
	}, {
		when: "{{steps.a.output.n}} > 5 && [{{steps.a.output.o}}][0] > 2 || [{{steps.a.output.o}}][0] > 3",
		err:  "steps.b.when: {{steps.a.output.o}} is absent (a's output_schema does not require 'o'), and the expression needs its value",
	}} {
		dir := writeFiles(t, t.TempDir(), map[string]string{
			"pipeline.yaml": `
steps:
  a:
    spec:
      model: "script:a.yaml"
      output_schema:
        type: object
        properties: {n: {type: integer}, o: {type: integer}, l: {type: array, items: {type: string}}}
        required: [n, l]
  b:
    when: |
      ` + strings.Replace(tc.when, " || ", " ||\n      ", 1) + `
    spec: {model: test}
`,
			"a.yaml": "turns:\n  - text: '{\"n\": 0, \"l\": []}'\n",
		})
		file := filepath.Join(dir, "pipeline.yaml")
		p, err := LoadFile(file)
		require.NoError(t, err, tc.when)
		res, err := Run(context.Background(), p, RunOptions{Workspace: t.TempDir()})
		require.NoError(t, err)
		assert.False(t, res.OK())
		_, second, _ := strings.Cut(tc.when, " || ")
		col := len("      ") + 1 + strings.Index(second, "{{")
		want := fmt.Sprintf("%s:13:%d: %s", file, col, tc.err)
		assert.True(t, strings.HasPrefix(res.Steps["b"].Error, want), "%s:\n got %s\nwant %s", tc.when, res.Steps["b"].Error, want)
	}
}

// No job may change the files the pipeline is made of, which the runtime
// keeps from a spec's own run alone: the pipeline file, every step's spec
// file and script, and the caches of the pipeline and of its steps' specs.
// A step given the workspace that holds them could otherwise rewrite what a
// later step runs (its instructions, its scripted answers) or the answers
// the cache replays for it, and the pipeline file the user wrote.
func TestRunJobsCannotChangeThePipelinesFiles(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	writeFiles(t, ws, map[string]string{
		"pipeline.yaml": `
cache: {dir: .cache}
steps:
  first:
    spec: agents/writer.yaml
  inline:
    needs: [first]
    spec: {model: "script:agents/inline.script.yaml", cache: {dir: .own-cache}}
  later:
    needs: [inline]
    spec: agents/later.yaml
`,
		"agents/writer.yaml": "model: script:writer.script.yaml\ncapabilities: [FileSystem]\ncache: false\n",
		"agents/writer.script.yaml": `
turns:
  - tool_calls:
      - {name: write_file, arguments: {path: pipeline.yaml, content: "steps: {}\n"}}
      - {name: write_file, arguments: {path: agents/later.yaml, content: "model: test\n"}}
      - {name: write_file, arguments: {path: agents/later.script.yaml, content: "turns:\n  - text: rewritten\n"}}
      - {name: write_file, arguments: {path: agents/inline.script.yaml, content: "turns:\n  - text: rewritten\n"}}
      - {name: write_file, arguments: {path: .cache/forged.txt, content: "forged\n"}}
      - {name: write_file, arguments: {path: .own-cache/forged.txt, content: "forged\n"}}
      - {name: write_file, arguments: {path: notes.txt, content: "a file of the workspace\n"}}
  - text: done
`,
		"agents/later.yaml":         "model: script:later.script.yaml\n",
		"agents/later.script.yaml":  "turns:\n  - text: as written\n",
		"agents/inline.script.yaml": "turns:\n  - text: inline as written\n",
	})
	for _, dir := range []string{".cache", ".own-cache"} {
		require.NoError(t, os.MkdirAll(filepath.Join(ws, dir), 0o755))
	}
	before := map[string]string{}
	for _, name := range []string{"pipeline.yaml", "agents/later.yaml", "agents/later.script.yaml", "agents/inline.script.yaml"} {
		data, err := os.ReadFile(filepath.Join(ws, name))
		require.NoError(t, err)
		before[name] = string(data)
	}
	p, err := LoadFile(filepath.Join(ws, "pipeline.yaml"))
	require.NoError(t, err)
	var results []string // first's, one job's: in order
	listen := func(_ context.Context, ev capabilities.Event) error {
		if je, ok := ev.(JobEvent); ok {
			if tr, ok := je.Event.(runtime.ToolResult); ok {
				results = append(results, tr.Text)
			}
		}
		return nil
	}
	res, err := Run(context.Background(), p, RunOptions{Workspace: ws, Listeners: []capabilities.Listener{listen}})
	require.NoError(t, err)
	require.True(t, res.OK(), "%+v", res.Steps)
	require.Len(t, results, 7)
	for _, r := range results[:6] {
		assert.Regexp(t, `^Error: Path '[^']+' is protected`, r, "a file of the pipeline's is refused")
	}
	assert.Contains(t, results[6], "Wrote", "a file of the workspace is written")
	for name, content := range before {
		data, err := os.ReadFile(filepath.Join(ws, name))
		require.NoError(t, err)
		assert.Equal(t, content, string(data), "%s is as the user wrote it", name)
	}
	assert.Equal(t, "inline as written", res.Steps["inline"].Output)
	assert.Equal(t, "as written", res.Steps["later"].Output)
	for _, dir := range []string{".cache", ".own-cache"} {
		assert.NoFileExists(t, filepath.Join(ws, dir, "forged.txt"), "%s holds what the cache wrote alone", dir)
	}
	data, err := os.ReadFile(filepath.Join(ws, "notes.txt"))
	require.NoError(t, err)
	assert.Equal(t, "a file of the workspace\n", string(data), "the rest of the workspace is the step's to change")
}

// A job run elsewhere (Exec: a shipped job on the queue's workers) has the
// changes it brings back to the pipeline's files refused too, as Claim
// refuses them before they are applied.
func TestRunExecClaimRefusesThePipelinesFiles(t *testing.T) {
	t.Parallel()
	ws, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	writeFiles(t, ws, map[string]string{
		"pipeline.yaml":          "steps:\n  one:\n    spec: agents/one.yaml\n",
		"agents/one.yaml":        "model: script:one.script.yaml\ncache: {dir: ../.own-cache}\n",
		"agents/one.script.yaml": "turns:\n  - text: done\n",
	})
	// The pipeline is loaded through a link, and Claim is given real paths,
	// as the queue gives them: a cache directory not made yet is compared
	// where it will be.
	link := filepath.Join(t.TempDir(), "link")
	require.NoError(t, os.Symlink(ws, link))
	p, err := LoadFile(filepath.Join(link, "pipeline.yaml"))
	require.NoError(t, err)
	claims := map[string]string{}
	res, err := Run(context.Background(), p, RunOptions{Workspace: ws, Exec: func(_ context.Context, job Job) (*runtime.Result, error) {
		for _, name := range []string{"pipeline.yaml", "agents/one.yaml", "agents/one.script.yaml", "agents/new.txt", "src/main.go", ".own-cache/new/entry"} {
			claims[name] = job.Claim(filepath.Join(ws, filepath.FromSlash(name)))
		}
		return &runtime.Result{Output: "done"}, nil
	}})
	require.NoError(t, err)
	require.True(t, res.OK())
	for _, name := range []string{"pipeline.yaml", "agents/one.yaml", "agents/one.script.yaml", ".own-cache/new/entry"} {
		assert.Equal(t, "a file of the pipeline's, which no step may change", claims[name], name)
	}
	assert.Empty(t, claims["agents/new.txt"], "a file beside them is the step's to change")
	assert.Empty(t, claims["src/main.go"])
}

// Outputs that fail to evaluate (an index past the end of the list an
// answer gave) fail the run, which still ends with its pipeline.end, not
// ok, as every run's events do.
func TestRunOutputsThatFailStillEndTheRun(t *testing.T) {
	t.Parallel()
	p := loadPipeline(t, map[string]string{
		"pipeline.yaml": `
steps:
  a:
    spec:
      model: "script:a.yaml"
      output_schema: {type: object, properties: {l: {type: array, items: {type: string}}}, required: [l]}
outputs:
  x: "{{steps.a.output.l[3]}}"
`,
		"a.yaml": "turns:\n  - text: '{\"l\": [\"q\"]}'\n",
	})
	var mu sync.Mutex
	var kinds []string
	var end *PipelineEnd
	listen := func(_ context.Context, ev capabilities.Event) error {
		mu.Lock()
		defer mu.Unlock()
		kinds = append(kinds, ev.Kind())
		if e, ok := ev.(PipelineEnd); ok {
			end = &e
		}
		return nil
	}
	res, err := Run(context.Background(), p, RunOptions{Workspace: t.TempDir(), Listeners: []capabilities.Listener{listen}})
	require.EqualError(t, err, "outputs.x: {{steps.a.output.l[3]}}: index 3 is past the end of steps.a.output.l, an array of 1 item")
	require.NotNil(t, res)
	assert.True(t, res.Steps["a"].OK)
	assert.JSONEq(t, "null", string(res.Outputs))
	require.NotEmpty(t, kinds)
	assert.Equal(t, KindEnd, kinds[len(kinds)-1], "the run's last event is its end")
	require.NotNil(t, end)
	assert.False(t, end.OK, "a run whose outputs failed did not end well")
}

// A workspace reached through a symbolic link keeps the pipeline's cache
// directories from its jobs as well, one not made yet included: the
// FileSystem compares real paths, and a directory that does not exist yet
// has its link resolved in the part of its path that does.
func TestRunJobsCannotChangeThePipelinesFilesThroughALink(t *testing.T) {
	t.Parallel()
	ws, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	writeFiles(t, ws, map[string]string{
		"pipeline.yaml": `
steps:
  first:
    spec: agents/writer.yaml
  later:
    needs: [first]
    spec: agents/later.yaml
`,
		"agents/writer.yaml": "model: script:writer.script.yaml\ncapabilities: [FileSystem]\ncache: false\n",
		"agents/writer.script.yaml": `
turns:
  - tool_calls:
      - {name: create_directory, arguments: {path: .later-cache}}
      - {name: write_file, arguments: {path: .later-cache/forged.txt, content: "forged\n"}}
      - {name: write_file, arguments: {path: notes.txt, content: "a file of the workspace\n"}}
  - text: done
`,
		"agents/later.yaml":        "model: script:later.script.yaml\ncache: {dir: ../.later-cache}\n",
		"agents/later.script.yaml": "turns:\n  - text: as written\n",
	})
	link := filepath.Join(t.TempDir(), "link")
	require.NoError(t, os.Symlink(ws, link))
	p, err := LoadFile(filepath.Join(link, "pipeline.yaml"))
	require.NoError(t, err)
	var results []string
	listen := func(_ context.Context, ev capabilities.Event) error {
		if je, ok := ev.(JobEvent); ok && je.Step == "first" {
			if tr, ok := je.Event.(runtime.ToolResult); ok {
				results = append(results, tr.Text)
			}
		}
		return nil
	}
	res, err := Run(context.Background(), p, RunOptions{Workspace: link, Listeners: []capabilities.Listener{listen}})
	require.NoError(t, err)
	require.True(t, res.OK(), "%+v", res.Steps)
	require.Len(t, results, 3)
	for _, r := range results[:2] {
		assert.Regexp(t, `^Error: Path '[^']+' is protected`, r, "the later step's cache is refused")
	}
	assert.Contains(t, results[2], "Wrote")
	assert.NoFileExists(t, filepath.Join(ws, ".later-cache", "forged.txt"))
}

// A run executes a step's spec and script as they were when it started: a
// file edited while it runs (by the user, or a job working beside them)
// changes none of its later jobs, and the cache keys them on what they ran,
// so the second of two alike jobs replays the first's answer.
func TestRunReadsItsFilesOnce(t *testing.T) {
	t.Parallel()
	for _, cached := range []bool{false, true} {
		t.Run(fmt.Sprintf("cache %v", cached), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			writeFiles(t, dir, map[string]string{
				"pipeline.yaml": fmt.Sprintf(`
cache: %v
steps:
  first:
    spec: agents/a.yaml
  second:
    needs: [first]
    spec: agents/a.yaml
  fan:
    needs: [second]
    for_each: {glob: "docs/*.md"}
    max_parallel: 1
    spec: agents/a.yaml
    input: "{{item}}"
`, cached),
				"agents/a.yaml":        "model: script:a.script.yaml\n",
				"agents/a.script.yaml": "turns:\n  - text: as written\n",
			})
			ws := writeFiles(t, t.TempDir(), map[string]string{"docs/1.md": "one\n", "docs/2.md": "two\n"})
			p, err := LoadFile(filepath.Join(dir, "pipeline.yaml"))
			require.NoError(t, err)
			edit := func(JobEnd) {
				writeFiles(t, dir, map[string]string{
					"agents/a.yaml":            "model: script:other.script.yaml\n",
					"agents/a.script.yaml":     "turns:\n  - text: rewritten\n",
					"agents/other.script.yaml": "turns:\n  - text: rewritten\n",
				})
			}
			c, err := cache.New(t.TempDir())
			require.NoError(t, err)
			res, err := Run(context.Background(), p, RunOptions{Workspace: ws, Concurrency: 1, OnJobEnd: edit, Cache: c})
			require.NoError(t, err)
			require.True(t, res.OK(), "%+v", res.Steps)
			assert.Equal(t, "as written", res.Steps["first"].Output)
			assert.Equal(t, "as written", res.Steps["second"].Output, "the script as the run started")
			assert.Equal(t, []any{"as written", "as written"}, res.Steps["fan"].Outputs)
			assert.Equal(t, cached, res.Steps["second"].Cached, "keyed on the bytes it ran")
		})
	}
}

// A job given its model with runtime.WithModel never reads the script its
// spec names, as a run given one does not: the script the run reads when
// it starts is read only for the jobs that answer from it, so a pipeline
// whose script is missing still runs with a model given in Go.
func TestRunWithAGivenModelReadsNoScript(t *testing.T) {
	t.Parallel()
	dir := writeFiles(t, t.TempDir(), map[string]string{
		"pipeline.yaml": "steps:\n  only:\n    spec: a.yaml\n",
		"a.yaml":        "model: script:missing.script.yaml\n",
	})
	p, err := LoadFile(filepath.Join(dir, "pipeline.yaml"))
	require.NoError(t, err)
	m := script.New(script.Say("given"))
	res, err := Run(context.Background(), p, RunOptions{Workspace: t.TempDir(), Concurrency: 1,
		Options: []runtime.Option{runtime.WithModel(m, runtime.Dialect(m.Dialect())), runtime.WithoutCache()}})
	require.NoError(t, err)
	require.True(t, res.OK(), "%+v", res.Steps["only"])
	assert.Equal(t, "given", res.Steps["only"].Output)
}
