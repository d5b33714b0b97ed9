package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/runtime"
)

// batchFixture is a spec directory whose script copies input.txt to
// output.txt and answers with JSON, and job directories under jobs/.
type batchFixture struct {
	dir  string
	spec string
}

const copyScript = `
turns:
  - tool_calls: [{name: read_file, arguments: {path: input.txt}}]
    usage: {input_tokens: 10, output_tokens: 2}
  - expect: {tool_result_contains: "input of"}
    tool_calls: [{name: write_file, arguments: {path: output.txt, content: "copied\n"}}]
  - text: '{"copied": true}'
`

func newBatchFixture(t *testing.T, jobs int, specExtra string) batchFixture {
	t.Helper()
	f := batchFixture{dir: t.TempDir()}
	writeFile(t, filepath.Join(f.dir, "turns.yaml"), copyScript)
	f.spec = writeFile(t, filepath.Join(f.dir, "agent.yaml"), "version: 1\nmodel: script:turns.yaml\n"+
		"instructions: Copy input.txt to output.txt.\ncapabilities: [FileSystem]\n"+
		"output_schema: {type: object}\nworkspace:\n  input_globs: [input.txt]\n  expected_output_files: [output.txt]\n"+specExtra)
	for i := range jobs {
		writeFile(t, f.job(i, "input.txt"), fmt.Sprintf("input of job %d\n", i))
	}
	return f
}

func (f batchFixture) job(i int, name ...string) string {
	return filepath.Join(append([]string{f.dir, "jobs", fmt.Sprintf("job-%d", i)}, name...)...)
}

func invokeBatch(t *testing.T, ctx context.Context, args ...string) runOutcome {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := Main(ctx, append([]string{"batch"}, args...), strings.NewReader(""), &stdout, &stderr)
	return runOutcome{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// jobLines parses batch's stdout, by workspace.
func jobLines(t *testing.T, stdout string) map[string]jobLine {
	t.Helper()
	out := map[string]jobLine{}
	sc := bufio.NewScanner(strings.NewReader(stdout))
	for sc.Scan() {
		var fields map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(sc.Bytes(), &fields), sc.Text())
		keys := slices.Sorted(maps.Keys(fields))
		assert.Equal(t, []string{"cached", "error", "ok", "output", "usage", "workspace"}, keys, "every line has every field")
		var l jobLine
		require.NoError(t, json.Unmarshal(sc.Bytes(), &l))
		_, dup := out[l.Workspace]
		require.False(t, dup, "one line per job: %s", l.Workspace)
		out[l.Workspace] = l
	}
	return out
}

func TestBatchRunsEveryWorkspace(t *testing.T) {
	t.Parallel()
	f := newBatchFixture(t, 4, "cache: {dir: .cache}\n")
	pattern := filepath.Join(f.dir, "jobs", "job-*")

	out := invokeBatch(t, context.Background(), f.spec, pattern, "-j", "2", "-q")
	require.Equal(t, 0, out.code, out.stderr)
	assert.Empty(t, out.stderr, "-q prints nothing on stderr")
	lines := jobLines(t, out.stdout)
	require.Len(t, lines, 4)
	for i := range 4 {
		l, ok := lines[f.job(i)]
		require.True(t, ok, "a line for job %d: %s", i, out.stdout)
		assert.True(t, l.OK)
		assert.False(t, l.Cached)
		assert.JSONEq(t, `{"copied": true}`, string(l.Output), "the answer's JSON value")
		assert.Nil(t, l.Error)
		require.NotNil(t, l.Usage)
		assert.Equal(t, 3, l.Usage.Requests)
		assert.FileExists(t, f.job(i, "output.txt"))
	}

	// Again: every job is answered from the cache.
	out = invokeBatch(t, context.Background(), f.spec, pattern, "-q")
	require.Equal(t, 0, out.code, out.stderr)
	for ws, l := range jobLines(t, out.stdout) {
		assert.True(t, l.OK && l.Cached, ws)
		assert.Zero(t, l.Usage.Requests, ws)
	}

	// A cached job whose output is gone runs again, with a warning.
	require.NoError(t, os.Remove(f.job(0, "output.txt")))
	out = invokeBatch(t, context.Background(), f.spec, pattern)
	require.Equal(t, 0, out.code, out.stderr)
	lines = jobLines(t, out.stdout)
	assert.False(t, lines[f.job(0)].Cached)
	assert.True(t, lines[f.job(1)].Cached)
	assert.Regexp(t, `(?m)^  cache \(`+regexp.QuoteMeta(f.job(0))+`\): cache entry [0-9a-f]{12}: expected output files are missing: output.txt$`, out.stderr)
	assert.Regexp(t, `(?m)^4 jobs: 4 ok \(3 cached\), 0 failed, 0 not run, `, out.stderr)
	assert.FileExists(t, f.job(0, "output.txt"))

	// --no-cache runs them all.
	out = invokeBatch(t, context.Background(), f.spec, pattern, "-q", "--no-cache")
	require.Equal(t, 0, out.code, out.stderr)
	for ws, l := range jobLines(t, out.stdout) {
		assert.True(t, l.OK, ws)
		assert.False(t, l.Cached, ws)
	}
}

func TestBatchTextOutputAndInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "turns.yaml"), "turns:\n  - expect: {message_contains: \"the input\"}\n    text: Hello, {{x}}.\n")
	specPath := writeFile(t, filepath.Join(dir, "agent.yaml"), "version: 1\nmodel: script:turns.yaml\ninstructions: Greet {{who}}.\n")
	ws := filepath.Join(dir, "ws")
	require.NoError(t, os.Mkdir(ws, 0o755))

	out := invokeBatch(t, context.Background(), specPath, ws, "--input", "the input", "--var", "who=you", "-q")
	require.Equal(t, 0, out.code, out.stderr)
	l := jobLines(t, out.stdout)[ws]
	assert.JSONEq(t, `"Hello, {{x}}."`, string(l.Output), "without an output_schema the output is the text")

	out = invokeBatch(t, context.Background(), specPath, ws, "-q")
	assert.Equal(t, exitUsage, out.code)
	assert.Empty(t, out.stdout, "nothing runs")
	assert.Equal(t, specPath+":3:21: instructions use variable \"who\", but no value was given (set it with --var who=VALUE)\n", out.stderr)

	out = invokeBatch(t, context.Background(), specPath, ws, "--var", "who=you", "--var", "whom=me", "-q")
	assert.Equal(t, exitUsage, out.code)
	assert.Empty(t, out.stdout, "nothing runs")
	assert.Equal(t, "agentspec: --var whom: the spec has no {{whom}} placeholder; it has {{who}}\n", out.stderr)
}

func TestBatchFailingJob(t *testing.T) {
	t.Parallel()
	f := newBatchFixture(t, 4, "")
	require.NoError(t, os.Remove(f.job(1, "input.txt")))

	out := invokeBatch(t, context.Background(), f.spec, filepath.Join(f.dir, "jobs", "*"), "-j", "2")
	assert.Equal(t, exitFailure, out.code)
	lines := jobLines(t, out.stdout)
	require.Len(t, lines, 4)
	for i := range 4 {
		l := lines[f.job(i)]
		if i != 1 {
			assert.True(t, l.OK, "job %d", i)
			continue
		}
		assert.False(t, l.OK)
		assert.JSONEq(t, "null", string(l.Output))
		require.NotNil(t, l.Error)
		assert.Contains(t, *l.Error, "the conversation diverged from the script")
		assert.NotNil(t, l.Usage, "the failed run's usage is reported")
	}
	assert.Contains(t, out.stderr, "  failed "+f.job(1)+": model request 2: ")
	assert.Regexp(t, `(?m)^4 jobs: 3 ok \(0 cached\), 1 failed, 0 not run, \d+\.\dm?s, \d+\.\d jobs/s$`, out.stderr)
	assert.True(t, strings.HasSuffix(out.stderr, "agentspec: 1 of 4 jobs failed\n"), out.stderr)
}

// cancelByID holds the cancel functions TestCancel capabilities call, by
// the id in their options, so that parallel tests do not share one.
var cancelByID sync.Map

func init() {
	capabilities.MustRegister(capabilities.Type{
		Name:   "TestCancel",
		Schema: json.RawMessage(`{"type": "object", "properties": {"id": {"type": "string"}}, "additionalProperties": false}`),
		New: func(_ context.Context, args capabilities.Args) (capabilities.Capability, error) {
			var opts struct{ ID string }
			if err := args.Decode(&opts); err != nil {
				return nil, err
			}
			return cancelCapability(opts.ID), nil
		},
	})
}

// cancelCapability's one tool, press_ctrl_c, cancels the batch as Ctrl-C
// would.
type cancelCapability string

func (c cancelCapability) Tools(context.Context) ([]capabilities.Tool, error) {
	return []capabilities.Tool{c}, nil
}
func (cancelCapability) Name() string               { return "press_ctrl_c" }
func (cancelCapability) Description() string        { return "Interrupts the batch." }
func (cancelCapability) Parameters() map[string]any { return nil }
func (c cancelCapability) Call(context.Context, json.RawMessage) (string, error) {
	if cancel, ok := cancelByID.Load(string(c)); ok {
		cancel.(context.CancelFunc)()
	}
	return "interrupting", nil
}

func TestBatchInterrupted(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "turns.yaml"), `
turns:
  - tool_calls:
      - {name: write_file, arguments: {path: a.txt, content: "whole\n"}}
      - {name: press_ctrl_c}
      - {name: write_file, arguments: {path: b.txt, content: "never\n"}}
  - text: never
`)
	specPath := writeFile(t, filepath.Join(dir, "agent.yaml"), "version: 1\nmodel: script:turns.yaml\n"+
		"capabilities:\n  - FileSystem\n  - TestCancel: {id: "+t.Name()+"}\n")
	var workspaces []string
	for i := range 4 {
		ws := filepath.Join(dir, fmt.Sprintf("job-%d", i))
		require.NoError(t, os.Mkdir(ws, 0o755))
		workspaces = append(workspaces, ws)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cancelByID.Store(t.Name(), cancel)
	defer cancelByID.Delete(t.Name())

	out := invokeBatch(t, ctx, append([]string{specPath, "-j", "1"}, workspaces...)...)
	assert.Equal(t, exitFailure, out.code)
	lines := jobLines(t, out.stdout)
	require.Len(t, lines, 4, "every job is reported")
	first := lines[workspaces[0]]
	require.NotNil(t, first.Error)
	assert.Equal(t, "interrupted", *first.Error)
	content, err := os.ReadFile(filepath.Join(workspaces[0], "a.txt"))
	require.NoError(t, err)
	assert.Equal(t, "whole\n", string(content), "the call under way finished")
	for _, ws := range workspaces {
		assert.NoFileExists(t, filepath.Join(ws, "b.txt"), "no call starts after Ctrl-C")
	}
	for _, ws := range workspaces[1:] {
		l := lines[ws]
		assert.False(t, l.OK)
		require.NotNil(t, l.Error)
		assert.Equal(t, "not run: the batch was interrupted", *l.Error)
		assert.Nil(t, l.Usage)
		assert.NoFileExists(t, filepath.Join(ws, "a.txt"))
	}
	assert.True(t, strings.HasSuffix(out.stderr, "agentspec: interrupted: 3 of 4 jobs not run\n"), out.stderr)
	assert.Contains(t, out.stderr, "4 jobs: 0 ok (0 cached), 1 failed, 3 not run, ")
}

func TestBatchUsageErrors(t *testing.T) {
	t.Parallel()
	f := newBatchFixture(t, 1, "")
	writeFile(t, filepath.Join(f.dir, "jobs", "notes.txt"), "a file, not a workspace")
	cases := []struct {
		name string
		args []string
		want string
	}{
		{name: "no workspace", args: []string{f.spec}, want: "agentspec: requires at least 2 arg(s), only received 1"},
		{name: "pattern matching nothing", args: []string{f.spec, filepath.Join(f.dir, "nope-*")},
			want: fmt.Sprintf("agentspec: no directory matches %q", filepath.Join(f.dir, "nope-*"))},
		{name: "pattern matching only files", args: []string{f.spec, filepath.Join(f.dir, "jobs", "*.txt")},
			want: fmt.Sprintf("agentspec: no directory matches %q", filepath.Join(f.dir, "jobs", "*.txt"))},
		{name: "bad pattern", args: []string{f.spec, "[x"}, want: `agentspec: pattern "[x": syntax error in pattern`},
		{name: "missing directory", args: []string{f.spec, filepath.Join(f.dir, "gone")},
			want: "agentspec: workspace " + filepath.Join(f.dir, "gone") + " does not exist"},
		{name: "a file", args: []string{f.spec, filepath.Join(f.dir, "jobs", "notes.txt")}, want: "is not a directory"},
		{name: "bad -j", args: []string{f.spec, f.job(0), "-j", "-2"}, want: "agentspec: -j must be at least 1, not -2"},
		{name: "two inputs", args: []string{f.spec, f.job(0), "--input", "a", "--input-file", "b"},
			want: "agentspec: give the input one way: --input or --input-file"},
		{name: "missing spec", args: []string{filepath.Join(f.dir, "nope.yaml"), f.job(0)}, want: "nope.yaml"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out := invokeBatch(t, context.Background(), tc.args...)
			assert.Equal(t, exitUsage, out.code, out.stderr)
			assert.Empty(t, out.stdout)
			assert.Contains(t, out.stderr, tc.want)
		})
	}
}

// Every job of a batch gets an events file of its own, even when one
// workspace's base name is another's path made a name.
func TestEventFileNamesAreDistinct(t *testing.T) {
	t.Parallel()
	assert.Equal(t, []string{"alpha.events.jsonl", "jobs_beta.events.jsonl", "more_beta.events.jsonl"},
		eventFileNames([]string{"jobs/alpha", "jobs/beta", "more/beta"}))
	for _, workspaces := range [][]string{
		{"a/b", "x/a_b", "y/b"},
		{"a/b_c", "a_b/c", "a_b_c-1", "x/b_c", "y/c"},
	} {
		names := eventFileNames(workspaces)
		assert.Len(t, names, len(workspaces))
		assert.Len(t, slices.Compact(slices.Sorted(slices.Values(names))), len(workspaces), "%v: %v", workspaces, names)
	}
}

func TestExpandWorkspaces(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, d := range []string{"b-2", "a-1", "a-2", "c"} {
		require.NoError(t, os.Mkdir(filepath.Join(dir, d), 0o755))
	}
	writeFile(t, filepath.Join(dir, "a-3"), "a file")
	require.NoError(t, os.Symlink(filepath.Join(dir, "c"), filepath.Join(dir, "link-to-c")))
	p := func(name string) string { return filepath.Join(dir, name) }

	cases := []struct {
		name string
		args []string
		want []string
	}{
		{name: "a pattern keeps directories, sorted", args: []string{p("a-*")}, want: []string{p("a-1"), p("a-2")}},
		{name: "plain and patterns are merged and sorted", args: []string{p("b-2"), p("a-?")}, want: []string{p("a-1"), p("a-2"), p("b-2")}},
		{name: "duplicates run once", args: []string{p("a-1"), p("a-*"), p("./a-1"), p("a-1") + "/"}, want: []string{p("a-1"), p("a-2")}},
		{name: "a symlink is the directory it names", args: []string{p("c"), p("link-to-c")}, want: []string{p("c")}},
		{name: "character classes", args: []string{p("[ab]-[2]")}, want: []string{p("a-2"), p("b-2")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := expandWorkspaces(tc.args)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestExpandWorkspacesRefusesNested(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "nest", "a", "sub"), 0o755))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "nest", "a-b"), 0o755))
	require.NoError(t, os.Symlink(filepath.Join(dir, "nest", "a", "sub"), filepath.Join(dir, "elsewhere")))
	p := func(name string) string { return filepath.Join(dir, name) }

	_, err := expandWorkspaces([]string{p("nest/a"), p("nest/a/sub")})
	require.Error(t, err)
	assert.Equal(t, "workspace "+p("nest/a/sub")+" lies inside workspace "+p("nest/a")+
		": their jobs would work on the same files at once", err.Error())

	_, err = expandWorkspaces([]string{p("elsewhere"), p("nest/*")})
	require.ErrorContains(t, err, "workspace "+p("elsewhere")+" lies inside workspace "+p("nest/a"), "a link is where it leads")

	got, err := expandWorkspaces([]string{p("nest/a-b"), p("nest/a/sub")})
	require.NoError(t, err, "siblings whose names share a beginning do not nest")
	assert.Equal(t, []string{p("nest/a-b"), p("nest/a/sub")}, got)
}

func TestBatchProgress(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ok := runtime.JobResult{Job: runtime.Job{Index: 0, Workspace: "jobs/a"}, Result: &runtime.Result{}}
	cached := runtime.JobResult{Job: runtime.Job{Index: 1, Workspace: "jobs/b"}, Result: &runtime.Result{Cached: true}}
	failed := runtime.JobResult{Job: runtime.Job{Index: 2, Workspace: "jobs/c"}, Err: fmt.Errorf("model request 1: %w", os.ErrDeadlineExceeded)}
	notRun := runtime.JobResult{Job: runtime.Job{Index: 3, Workspace: "jobs/d"}, Err: fmt.Errorf("%w: %w", runtime.ErrNotRun, runtime.ErrInterrupted)}
	sum := runtime.BatchSummary{Total: 4, OK: 2, Cached: 1, Failed: 1, NotRun: 1, Elapsed: 2 * time.Second}

	t.Run("terminal", func(t *testing.T) {
		t.Parallel()
		var buf bytes.Buffer
		clock := start
		p := &batchProgress{w: &buf, live: true, total: 4, start: start, now: func() time.Time { return clock }, quit: make(chan struct{}), running: map[int]bool{}}
		clock = clock.Add(time.Second)
		p.started(ok.Job)
		p.started(cached.Job)
		p.started(failed.Job)
		p.record(ok)
		p.record(cached) // within the throttle: not drawn
		clock = clock.Add(time.Second)
		p.record(failed)
		p.record(notRun)
		p.tick()
		p.finish(sum)
		const clear = "\r\033[K"
		assert.Equal(t, clear+"[######------------------] 1/4  2 running  0 failed  0 cached  1.0 jobs/s"+
			clear+"  failed jobs/c: model request 1: i/o timeout\n"+
			clear+"[##################------] 3/4  0 running  1 failed  1 cached  1.5 jobs/s"+
			clear+"[##################------] 3/4  0 running  1 failed  1 cached  1.5 jobs/s"+
			clear+"4 jobs: 2 ok (1 cached), 1 failed, 1 not run, 2.0s, 1.5 jobs/s\n", buf.String())
	})
	t.Run("log", func(t *testing.T) {
		t.Parallel()
		var buf bytes.Buffer
		clock := start
		p := &batchProgress{w: &buf, total: 4, start: start, now: func() time.Time { return clock }, quit: make(chan struct{}), running: map[int]bool{}}
		clock = clock.Add(4 * time.Second)
		p.started(ok.Job)
		p.started(cached.Job)
		p.started(failed.Job)
		p.record(ok)
		p.record(failed)
		p.tick()
		p.finish(sum)
		assert.Equal(t, "  failed jobs/c: model request 1: i/o timeout\n"+
			"2/4 jobs done, 1 running, 1 failed, 0 cached, 0.5 jobs/s\n"+
			"4 jobs: 2 ok (1 cached), 1 failed, 1 not run, 2.0s, 1.5 jobs/s\n", buf.String())
	})
	t.Run("quiet", func(t *testing.T) {
		t.Parallel()
		var p *batchProgress
		p.record(ok)
		p.finish(sum)
		p.stop()
	})
}

// SPEC - is for run and validate: batch and submit read the spec from its
// file (a queued job carries the file and the script beside it), so they
// refuse - as a usage error instead of reading stdin.
func TestBatchAndSubmitRefuseASpecFromStdin(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, args := range [][]string{
		{"batch", "-", dir},
		{"batch", "-", dir, "--nats", "nats://127.0.0.1:1"},
		{"submit", "-", dir, "--nats", "nats://127.0.0.1:1"},
	} {
		t.Run(strings.Join(args[:2], " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Main(context.Background(), args, strings.NewReader("model: test\ninstructions: Hi.\n"), &stdout, &stderr)
			assert.Equal(t, exitUsage, code, stderr.String())
			assert.Empty(t, stdout.String())
			assert.Contains(t, stderr.String(), "agentspec: "+args[0]+" reads SPEC from a file, not from stdin (-)")
		})
	}
}
