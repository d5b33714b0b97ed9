package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/capabilities/filesystem"
	"github.com/agentspec/agentspec/runtime/providers"
	"github.com/agentspec/agentspec/runtime/providers/providertest"
	"github.com/agentspec/agentspec/runtime/script"
	"github.com/agentspec/agentspec/spec"
)

// Runs given their own workspaces run side by side without seeing each
// other's files.
func TestConcurrentRunsStayInTheirWorkspaces(t *testing.T) {
	t.Parallel()
	const n = 8
	parent := t.TempDir()
	workspaces := make([]string, n)
	for i := range workspaces {
		workspaces[i] = filepath.Join(parent, fmt.Sprintf("job-%d", i))
		writeFiles(t, workspaces[i], map[string]string{"input.txt": fmt.Sprintf("input of job %d\n", i)})
	}
	s := newSpec(withFileSystem)

	results := make([]*Result, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			m := script.New(
				script.Calls(script.Call("read_file", map[string]any{"path": "input.txt"})),
				script.Calls(script.Call("write_file", map[string]any{"path": "output.txt", "content": fmt.Sprintf("output of job %d\n", i)})),
				script.Calls(script.Call("list_directory", map[string]any{"path": "."})),
				script.Calls(script.Call("read_file", map[string]any{"path": fmt.Sprintf("../job-%d/input.txt", (i+1)%n)})),
				script.Say("done"),
			)
			results[i], errs[i] = Run(context.Background(), s, WithModel(m, DialectOpenAI), WithWorkspace(workspaces[i]))
		})
	}
	wg.Wait()

	for i := range n {
		require.NoError(t, errs[i], "job %d", i)
		seen := toolResults(results[i].Transcript)
		require.Len(t, seen, 4)
		assert.Contains(t, seen[0], fmt.Sprintf("input of job %d", i))
		assert.Contains(t, seen[2], "output.txt")
		for j := range n {
			if j != i {
				assert.NotContains(t, strings.Join(seen, "\n"), fmt.Sprintf("job %d\n", j), "job %d saw job %d's files", i, j)
			}
		}
		assert.True(t, strings.HasPrefix(seen[3], retryPrefix), "a path out of the workspace is refused: %s", seen[3])

		entries, err := os.ReadDir(workspaces[i])
		require.NoError(t, err)
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		assert.Equal(t, []string{"input.txt", "output.txt"}, names)
		out, err := os.ReadFile(filepath.Join(workspaces[i], "output.txt"))
		require.NoError(t, err)
		assert.Equal(t, fmt.Sprintf("output of job %d\n", i), string(out))
	}
}

// batchFixture is a spec file whose script model copies input.txt to
// output.txt, and workspaces holding an input.txt each.
type batchFixture struct {
	spec       *spec.Spec
	workspaces []string
}

const batchScript = `
turns:
  - tool_calls: [{name: read_file, arguments: {path: input.txt}}]
  - expect: {tool_result_contains: "input of job"}
    tool_calls: [{name: write_file, arguments: {path: output.txt, content: "copied\n"}}]
  - text: '{"copied": true}'
`

func newBatchFixture(t *testing.T, n int, specExtra string) batchFixture {
	t.Helper()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"turns.yaml": batchScript,
		"agent.yaml": "version: 1\nmodel: script:turns.yaml\ninstructions: Copy input.txt to output.txt.\n" +
			"capabilities: [FileSystem]\noutput_schema: {type: object}\n" +
			"workspace:\n  input_globs: [input.txt]\n  expected_output_files: [output.txt]\n" + specExtra,
	})
	s, err := spec.LoadFile(filepath.Join(dir, "agent.yaml"))
	require.NoError(t, err)
	f := batchFixture{spec: s}
	for i := range n {
		ws := filepath.Join(dir, fmt.Sprintf("job-%02d", i))
		writeFiles(t, ws, map[string]string{"input.txt": fmt.Sprintf("input of job %d\n", i)})
		f.workspaces = append(f.workspaces, ws)
	}
	return f
}

// collector gathers a batch's results.
type collector struct {
	mu      sync.Mutex
	results []JobResult
}

func (c *collector) add(r JobResult) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.results = append(c.results, r)
}

func (c *collector) byIndex() []JobResult {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := slices.Clone(c.results)
	slices.SortFunc(out, func(a, b JobResult) int { return a.Index - b.Index })
	return out
}

func TestBatch(t *testing.T) {
	t.Parallel()
	f := newBatchFixture(t, 6, "")
	var col collector
	var evMu sync.Mutex
	writtenIn := map[string][]string{} // job workspace -> roots of the files it wrote
	listen := func(ctx context.Context, ev capabilities.Event) error {
		if w, ok := ev.(*filesystem.FileWrittenEvent); ok {
			job, ok := JobFrom(ctx)
			require.True(t, ok, "events carry their job")
			evMu.Lock()
			writtenIn[job.Workspace] = append(writtenIn[job.Workspace], w.RootDir)
			evMu.Unlock()
		}
		return nil
	}
	sum, err := Batch(context.Background(), f.spec, f.workspaces, BatchOptions{
		Concurrency: 3,
		Options:     []Option{WithListener(listen)},
		OnResult:    col.add,
	})
	require.NoError(t, err)
	assert.Equal(t, BatchSummary{Total: 6, OK: 6, Elapsed: sum.Elapsed}, sum)

	results := col.byIndex()
	require.Len(t, results, 6)
	for i, r := range results {
		assert.Equal(t, Job{Index: i, Workspace: f.workspaces[i]}, r.Job)
		require.NoError(t, r.Err)
		assert.JSONEq(t, `{"copied": true}`, string(r.Result.JSON))
		assert.FileExists(t, filepath.Join(f.workspaces[i], "output.txt"))
		real, err := filepath.EvalSymlinks(f.workspaces[i])
		require.NoError(t, err)
		assert.Equal(t, []string{real}, writtenIn[f.workspaces[i]], "job %d wrote in its own workspace only", i)
	}
}

func TestBatchWithTheCache(t *testing.T) {
	t.Parallel()
	f := newBatchFixture(t, 5, "cache: {dir: .cache}\n")
	first, err := Batch(context.Background(), f.spec, f.workspaces, BatchOptions{Concurrency: 2})
	require.NoError(t, err)
	assert.Equal(t, 5, first.OK)
	assert.Zero(t, first.Cached)

	// One input changes: that job runs again, the others are replayed.
	writeFiles(t, f.workspaces[3], map[string]string{"input.txt": "input of job 3, revised\n"})
	var col collector
	second, err := Batch(context.Background(), f.spec, f.workspaces, BatchOptions{Concurrency: 2, OnResult: col.add})
	require.NoError(t, err)
	assert.Equal(t, 5, second.OK)
	assert.Equal(t, 4, second.Cached)
	for _, r := range col.byIndex() {
		assert.Equal(t, r.Index != 3, r.Result.Cached, "job %d", r.Index)
	}

	third, err := Batch(context.Background(), f.spec, f.workspaces, BatchOptions{Concurrency: 2, Options: []Option{WithoutCache()}})
	require.NoError(t, err)
	assert.Zero(t, third.Cached)
}

func TestBatchFailingJobDoesNotStopTheOthers(t *testing.T) {
	t.Parallel()
	f := newBatchFixture(t, 5, "")
	require.NoError(t, os.Remove(filepath.Join(f.workspaces[2], "input.txt")))
	var col collector
	sum, err := Batch(context.Background(), f.spec, f.workspaces, BatchOptions{Concurrency: 2, OnResult: col.add})
	require.NoError(t, err, "failed jobs are reported, not returned")
	assert.Equal(t, 4, sum.OK)
	assert.Equal(t, 1, sum.Failed)
	for _, r := range col.byIndex() {
		if r.Index == 2 {
			assert.ErrorIs(t, r.Err, script.ErrDiverged)
			continue
		}
		assert.NoError(t, r.Err)
	}
}

func TestBatchChecksOnceBeforeRunning(t *testing.T) {
	t.Parallel()
	f := newBatchFixture(t, 3, "")
	f.spec.Instructions = []string{"Copy {{what}}."}
	called := false
	_, err := Batch(context.Background(), f.spec, f.workspaces, BatchOptions{OnResult: func(JobResult) { called = true }})
	var missing *MissingVarError
	require.ErrorAs(t, err, &missing)
	assert.False(t, called, "no job ran")

	sum, err := Batch(context.Background(), f.spec, nil, BatchOptions{Options: []Option{WithVars(map[string]string{"what": "x"})}})
	require.NoError(t, err)
	assert.Equal(t, BatchSummary{Elapsed: sum.Elapsed}, sum)
}

func TestBatchInterruptedBetweenJobs(t *testing.T) {
	t.Parallel()
	f := newBatchFixture(t, 6, "")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var col collector
	sum, err := Batch(ctx, f.spec, f.workspaces, BatchOptions{Concurrency: 1, OnResult: func(r JobResult) {
		col.add(r)
		if r.Index == 1 {
			cancel()
		}
	}})
	require.ErrorIs(t, err, ErrInterrupted)
	assert.Equal(t, 2, sum.OK)
	assert.Equal(t, 4, sum.NotRun)
	results := col.byIndex()
	require.Len(t, results, 6, "every job is reported")
	for _, r := range results[2:] {
		assert.ErrorIs(t, r.Err, ErrNotRun)
		assert.ErrorIs(t, r.Err, ErrInterrupted)
		assert.Nil(t, r.Result)
		assert.NoFileExists(t, filepath.Join(r.Workspace, "output.txt"))
	}
}

// Cancelling while jobs are running stops them between tool calls: a call
// that started finishes, none starts after, nothing is left half-written.
func TestBatchInterruptedMidRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"turns.yaml": `
turns:
  - tool_calls:
      - {name: write_file, arguments: {path: a.txt, content: "complete\n"}}
      - {name: stop, arguments: {}}
      - {name: write_file, arguments: {path: b.txt, content: "never\n"}}
  - text: never
`,
		"agent.yaml": "version: 1\nmodel: script:turns.yaml\ncapabilities: [FileSystem]\n",
	})
	s, err := spec.LoadFile(filepath.Join(dir, "agent.yaml"))
	require.NoError(t, err)
	var workspaces []string
	for i := range 6 {
		ws := filepath.Join(dir, fmt.Sprintf("job-%d", i))
		require.NoError(t, os.Mkdir(ws, 0o755))
		workspaces = append(workspaces, ws)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop := funcTool{name: "stop", fn: func(context.Context, json.RawMessage) (string, error) {
		cancel() // as Ctrl-C would
		return "stopping", nil
	}}
	var col collector
	sum, err := Batch(ctx, s, workspaces, BatchOptions{
		Concurrency: 2,
		Options:     []Option{WithCapabilities(toolCaps{stop})},
		OnResult:    col.add,
	})
	require.ErrorIs(t, err, ErrInterrupted)
	assert.Zero(t, sum.OK)
	assert.Positive(t, sum.Failed)
	assert.Positive(t, sum.NotRun)
	assert.Equal(t, 6, sum.Failed+sum.NotRun)
	written := 0
	for _, r := range col.byIndex() {
		require.ErrorIs(t, r.Err, ErrInterrupted, "job %d", r.Index)
		assert.NoFileExists(t, filepath.Join(r.Workspace, "b.txt"), "no call starts after the interruption")
		a, err := os.ReadFile(filepath.Join(r.Workspace, "a.txt"))
		if err == nil {
			written++
			assert.Equal(t, "complete\n", string(a), "a call that started finished")
		}
		if errors.Is(r.Err, ErrNotRun) {
			assert.Nil(t, r.Result)
			assert.NoFileExists(t, filepath.Join(r.Workspace, "a.txt"))
		}
	}
	assert.Positive(t, written, "the job that stopped the batch had written a.txt")
}

// cancelOnTools cancels the batch as a job lists its tools: the job was
// handed out, but the interruption comes before its first model request.
type cancelOnTools struct{ cancel context.CancelFunc }

func (c cancelOnTools) Tools(context.Context) ([]capabilities.Tool, error) {
	c.cancel()
	return nil, nil
}

// A job taken just as the batch is interrupted did nothing in its
// workspace: it is reported as not run, in order with the others, not as a
// failure.
func TestBatchJobInterruptedBeforeItsFirstRequest(t *testing.T) {
	t.Parallel()
	f := newBatchFixture(t, 3, "")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var col collector
	sum, err := Batch(ctx, f.spec, f.workspaces, BatchOptions{
		Concurrency: 1,
		Options:     []Option{WithCapabilities(cancelOnTools{cancel})},
		OnResult:    col.add,
	})
	require.ErrorIs(t, err, ErrInterrupted)
	assert.Equal(t, BatchSummary{Total: 3, NotRun: 3, Elapsed: sum.Elapsed}, sum)
	var order []int
	for _, r := range col.results {
		order = append(order, r.Index)
		assert.ErrorIs(t, r.Err, ErrNotRun)
		assert.Nil(t, r.Result)
	}
	assert.Equal(t, []int{0, 1, 2}, order, "jobs that did not run are reported last, in order")
}

// OnStart comes before each job's first event, once per job, and each job's
// events carry a run id of its own.
func TestBatchOnStartPrecedesTheJobsEvents(t *testing.T) {
	t.Parallel()
	f := newBatchFixture(t, 4, "")
	var mu sync.Mutex
	started := map[int]bool{}
	runIDs := map[int]map[string]bool{}
	var late []string
	listen := func(ctx context.Context, ev capabilities.Event) error {
		job, _ := JobFrom(ctx)
		id, ok := RunIDFrom(ctx)
		mu.Lock()
		defer mu.Unlock()
		if !started[job.Index] {
			late = append(late, fmt.Sprintf("job %d: %s before OnStart", job.Index, ev.Kind()))
		}
		if ok {
			if runIDs[job.Index] == nil {
				runIDs[job.Index] = map[string]bool{}
			}
			runIDs[job.Index][id] = true
		}
		return nil
	}
	onStart := func(job Job) {
		mu.Lock()
		defer mu.Unlock()
		assert.False(t, started[job.Index], "job %d started twice", job.Index)
		started[job.Index] = true
	}
	_, err := Batch(context.Background(), f.spec, f.workspaces, BatchOptions{
		Concurrency: 2, Options: []Option{WithListener(listen)}, OnStart: onStart,
	})
	require.NoError(t, err)
	assert.Empty(t, late)
	assert.Len(t, started, 4)
	all := map[string]bool{}
	for i := range 4 {
		require.Len(t, runIDs[i], 1, "job %d has one run id", i)
		for id := range runIDs[i] {
			all[id] = true
		}
	}
	assert.Len(t, all, 4, "every job its own id")
}

// The jobs of a batch share what the AWS credential chain found: it is
// asked once for the batch, not once per job. The chain's
// credential_process counts the times it is asked. Not parallel: the chain
// reads the process's environment.
func TestBatchAsksTheAWSChainOnce(t *testing.T) {
	creds := providertest.AWSCredentials{AccessKeyID: "AKIDPROCESS", SecretAccessKey: "process-secret", Region: "us-east-1"}
	asked := providertest.AWSCredentialProcess(t, creds)
	const n = 4
	srv := providertest.NewBedrockSigV4Server(t, creds, slices.Repeat([]providertest.Reply{providertest.Text("done")}, n)...)
	s := newSpec(func(s *spec.Spec) {
		s.Model = "bedrock:anthropic.claude-sonnet-4-5"
		s.ModelSettings.BaseURL = srv.URL
	})
	workspaces := make([]string, n)
	for i := range workspaces {
		workspaces[i] = t.TempDir()
	}
	sum, err := Batch(t.Context(), s, workspaces, BatchOptions{Concurrency: 2, OnResult: func(r JobResult) {
		assert.NoError(t, r.Err, "job %d", r.Index)
	}})
	require.NoError(t, err)
	assert.Equal(t, n, sum.OK)
	assert.Equal(t, 1, asked(), "times the credential chain was asked")
}

// The jobs of a batch share Gemini's Application Default Credentials and
// the token they fetched, even with provider options of the caller's that
// give no CredentialCache: one token for the batch, not one per job.
func TestBatchFetchesOneVertexToken(t *testing.T) {
	t.Parallel()
	const n = 4
	srv := providertest.NewVertexServer(t, "proj-batch", "us-central1", slices.Repeat([]providertest.Reply{providertest.Text("done")}, n)...)
	key := srv.KeyFile(t, t.TempDir())
	s := newSpec(func(s *spec.Spec) {
		s.Model = "google-cloud:gemini-2.5-flash"
		s.ModelSettings.BaseURL = srv.URL
	})
	workspaces := make([]string, n)
	for i := range workspaces {
		workspaces[i] = t.TempDir()
	}
	getenv := func(k string) string { return map[string]string{"GOOGLE_APPLICATION_CREDENTIALS": key}[k] }
	sum, err := Batch(t.Context(), s, workspaces, BatchOptions{Concurrency: 2,
		Options:  []Option{WithProviderOptions(providers.Options{Getenv: getenv})},
		OnResult: func(r JobResult) { assert.NoError(t, r.Err, "job %d", r.Index) }})
	require.NoError(t, err)
	assert.Equal(t, n, sum.OK)
	assert.Equal(t, 1, srv.Grants(), "tokens fetched")
}
