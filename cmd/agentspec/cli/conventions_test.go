package cli

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/runtime"
)

// syncBuffer is a bytes.Buffer a process writes while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// waitFor polls until cond holds, failing the test after a generous bound.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// exitCode runs cmd and returns its exit code.
func exitCode(t *testing.T, err error) int {
	t.Helper()
	if err == nil {
		return 0
	}
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	return exit.ExitCode()
}

// writeFiles writes name -> content under dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		path := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	}
}

// Ctrl-C while --approve waits for an answer stops the run at once, with
// 130, and the change does not land, though stdin stays open.
func TestCtrlCWhileApproveAsks(t *testing.T) {
	t.Parallel()
	bin := agentspecBinary(t)
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"script.yaml": "turns:\n  - tool_calls: [{name: write_file, arguments: {path: out.md, content: \"hi\\n\"}}]\n  - text: done\n",
		"agent.yaml":  "model: script:script.yaml\ninstructions: Write.\ncapabilities: [FileSystem]\n",
	})
	cmd := exec.Command(bin, "run", "--approve", "--workspace", dir, filepath.Join(dir, "agent.yaml"))
	stdin, err := cmd.StdinPipe() // held open: no answer ever comes
	require.NoError(t, err)
	defer stdin.Close()
	var stderr syncBuffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	waitFor(t, "the approval prompt", func() bool { return strings.Contains(stderr.String(), "Apply this change? [y/N] ") })
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("the run did not stop on Ctrl-C while asking; stderr: %s", stderr.String())
	}
	assert.Equal(t, 130, exitCode(t, err), stderr.String())
	_, statErr := os.Stat(filepath.Join(dir, "out.md"))
	assert.ErrorIs(t, statErr, os.ErrNotExist, "the change must not land")
}

// readEvents reads an --events file as one map per line.
func readEvents(t *testing.T, path string) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var events []map[string]any
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		var ev map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &ev), line)
		events = append(events, ev)
	}
	return events
}

// Every event of --events carries its time and the run's id, and the
// tools' results carry their text.
func TestEventsCarryTimeRunIDAndToolText(t *testing.T) {
	t.Parallel()
	bin := agentspecBinary(t)
	dir := t.TempDir()
	long := strings.Repeat(strings.Repeat("x", 99)+"\n", runtime.MaxEventText/100+10) // lines read_file shows whole
	writeFiles(t, dir, map[string]string{
		"notes.md":    "hello from the notes\n",
		"long.txt":    long,
		"script.yaml": "turns:\n  - tool_calls: [{name: read_file, arguments: {path: notes.md}}, {name: read_file, arguments: {path: long.txt}}]\n  - text: done\n",
		"agent.yaml":  "model: script:script.yaml\ninstructions: Read.\ncapabilities: [FileSystem]\n",
	})
	eventsFile := filepath.Join(t.TempDir(), "events.jsonl")
	out, err := exec.Command(bin, "run", "-q", "--workspace", dir, "--events", eventsFile, filepath.Join(dir, "agent.yaml")).CombinedOutput()
	require.NoError(t, err, string(out))
	events := readEvents(t, eventsFile)
	require.NotEmpty(t, events)
	runID := events[0]["run_id"]
	require.NotEmpty(t, runID)
	var results []map[string]any
	for _, ev := range events {
		assert.Equal(t, runID, ev["run_id"], "one run, one id: %v", ev)
		stamp, _ := ev["time"].(string)
		assert.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z$`, stamp)
		if ev["kind"] == runtime.KindToolResult {
			results = append(results, ev)
		}
	}
	assert.Equal(t, runtime.KindRunEnd, events[len(events)-1]["kind"])
	require.Len(t, results, 2)
	assert.Contains(t, results[0]["text"], "hello from the notes")
	assert.Nil(t, results[0]["text_truncated"])
	text, _ := results[1]["text"].(string)
	assert.Equal(t, runtime.MaxEventText, utf8.RuneCountInString(text), "the text is capped")
	assert.Equal(t, true, results[1]["text_truncated"])
	assert.Greater(t, results[1]["chars"], float64(runtime.MaxEventText))
}

// The events file is written as the run goes: a run killed while it waits
// for the model has already written every event up to the request.
func TestEventsSurviveAKilledRun(t *testing.T) {
	t.Parallel()
	bin := agentspecBinary(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		<-r.Context().Done() // never answers
	}))
	defer srv.Close()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"agent.yaml": "model: openai:gpt-test\ninstructions: Wait.\n"})
	eventsFile := filepath.Join(dir, "events.jsonl")
	cmd := exec.Command(bin, "run", "-q", "--events", eventsFile, filepath.Join(dir, "agent.yaml"))
	cmd.Env = append(os.Environ(), "OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL="+srv.URL+"/v1")
	require.NoError(t, cmd.Start())
	waitFor(t, "the model_request event in the file", func() bool {
		data, _ := os.ReadFile(eventsFile)
		return strings.Contains(string(data), `"kind":"run.model_request"`)
	})
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	events := readEvents(t, eventsFile) // every line whole
	assert.Equal(t, runtime.KindModelRequest, events[len(events)-1]["kind"])
}

// Provider retries are events, and the final error counts every attempt,
// naming the earlier failures when they differ from the last.
func TestProviderRetriesAreEventsAndCountedHonestly(t *testing.T) {
	t.Parallel()
	bin := agentspecBinary(t)
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		if calls.Add(1) <= 2 {
			w.Header().Set("Retry-After-Ms", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, `{"error": {"message": "overloaded", "type": "server_error"}}`)
			return
		}
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"error": {"message": "Incorrect API key provided", "type": "invalid_request_error", "code": "invalid_api_key"}}`)
	}))
	defer srv.Close()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"agent.yaml": "model: openai:gpt-test\ninstructions: Hi.\n"})
	eventsFile := filepath.Join(dir, "events.jsonl")
	cmd := exec.Command(bin, "run", "--events", eventsFile, filepath.Join(dir, "agent.yaml"))
	cmd.Env = append(os.Environ(), "OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL="+srv.URL+"/v1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	assert.Equal(t, exitFailure, exitCode(t, cmd.Run()))
	assert.Contains(t, stderr.String(), "openai: attempt 1 of 5 failed: HTTP 503: overloaded; retrying in")
	assert.Contains(t, stderr.String(), "authentication failed (401) after 2 retries: Incorrect API key provided")
	assert.Contains(t, stderr.String(), "(3 attempts; earlier ones failed with: attempt 1-2: HTTP 503: overloaded)")

	var retries []map[string]any
	for _, ev := range readEvents(t, eventsFile) {
		if ev["kind"] == runtime.KindModelRetry {
			retries = append(retries, ev)
		}
	}
	require.Len(t, retries, 2)
	for i, ev := range retries {
		assert.Equal(t, float64(503), ev["status"])
		assert.Equal(t, float64(i+1), ev["attempt"])
		assert.Equal(t, float64(5), ev["max_attempts"])
		assert.Equal(t, float64(1), ev["wait_ms"])
		assert.Equal(t, "openai", ev["provider"])
		assert.Equal(t, "overloaded", ev["reason"])
	}
}

// runBinary runs the agentspec binary in dir with stdin and returns its exit
// code, stdout and stderr.
func runBinary(t *testing.T, dir, stdin string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(agentspecBinary(t), args...)
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	return exitCode(t, cmd.Run()), stdout.String(), stderr.String()
}

const titleSpec = "model: test\ninstructions: Name it.\noutput_schema:\n  type: object\n  properties: {title: {type: string}}\n  required: [title]\n"

// With an output_schema, stdout is the answer's JSON and nothing else, so it
// pipes into jq; -o json gives the envelope.
func TestRunStdoutPipes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"agent.yaml": titleSpec})
	code, stdout, stderr := runBinary(t, dir, "", "run", "agent.yaml")
	require.Equal(t, 0, code, stderr)
	var answer map[string]any
	require.NoError(t, json.Unmarshal([]byte(stdout), &answer), stdout)
	assert.Contains(t, answer, "title")
	assert.Contains(t, stderr, "1 model request", "progress stays on stderr")

	code, stdout, stderr = runBinary(t, dir, "", "run", "-q", "-o", "json", "agent.yaml")
	require.Equal(t, 0, code, stderr)
	var env map[string]any
	require.NoError(t, json.Unmarshal([]byte(stdout), &env), stdout)
	assert.Contains(t, env["output"], "title")
	assert.Contains(t, env, "usage")
	assert.Equal(t, false, env["cached"])
}

// "-" as the spec reads it from stdin; its relative paths resolve from the
// current directory.
func TestSpecFromStdin(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"answers/script.yaml": "turns:\n  - text: from the script\n"})
	yamlSpec := "model: script:answers/script.yaml\ninstructions: Answer.\n"

	code, stdout, stderr := runBinary(t, dir, yamlSpec, "run", "-q", "-")
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, "from the script\n", stdout)

	code, _, stderr = runBinary(t, dir, `{"model": "script:answers/script.yaml", "instructions": "Answer."}`, "validate", "-v", "-")
	assert.Equal(t, 0, code, stderr)
	assert.Equal(t, "1 of 1 file valid: 0 problems, 0 warnings\n", stderr)

	code, _, stderr = runBinary(t, dir, "model: test\nbogus: 1\n", "validate", "-v", "-")
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, stderr, `<stdin>:2:1: unknown key "bogus"`)
	assert.Contains(t, stderr, "0 of 1 file valid: 1 problem, 0 warnings\n")

	code, _, stderr = runBinary(t, dir, yamlSpec, "run", "-", "-")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, "the spec comes from stdin (SPEC is -), so the input cannot come from stdin too")

	code, _, stderr = runBinary(t, dir, yamlSpec, "validate", "-", "-")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, "- (the spec on stdin) can be given only once")
}

// A flag the spec would ignore is an error that says why.
func TestIgnoredFlagsAreErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"script.yaml": "turns:\n  - text: ok\n",
		"agent.yaml":  "model: script:script.yaml\ninstructions: Answer.\n",
		"test.yaml":   "model: test\ninstructions: Answer.\n",
		"rec.json":    "{}",
		// A pipeline whose steps have no cache, nor the pipeline one.
		"pipeline.yaml": "steps:\n  a:\n    spec: agent.yaml\n  b:\n    spec: {model: test}\n    needs: [a]\n",
	})
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--replay", "rec.json", "agent.yaml"}, "--replay plays back a provider's HTTP exchanges, but the spec's model is a script (script:script.yaml), which makes none"},
		{[]string{"--record", "out.json", "test.yaml"}, "--record saves a provider's HTTP exchanges, but the spec's model is the offline test model, which makes none"},
		{[]string{"--no-cache", "agent.yaml"}, "--no-cache turns off the spec's result cache, but the spec has none"},
		{[]string{"--approve", "--input", "x", "agent.yaml"}, "--approve asks before each file change, but the spec has no capabilities"},
		{[]string{"batch", "--no-cache", "agent.yaml", "."}, "--no-cache turns off the spec's result cache, but the spec has none"},
		{[]string{"--no-cache", "pipeline.yaml"}, "--no-cache turns off the result cache, but neither the pipeline nor the spec of any of its steps has one"},
		{[]string{"batch", "--no-cache", "pipeline.yaml", "."}, "--no-cache turns off the result cache, but neither the pipeline nor the spec of any of its steps has one"},
	} {
		args := append([]string{"run"}, tc.args...)
		if tc.args[0] == "batch" {
			args = tc.args
		}
		code, stdout, stderr := runBinary(t, dir, "", args...)
		assert.Equal(t, exitUsage, code, "%v: %s", tc.args, stderr)
		assert.Empty(t, stdout)
		assert.Contains(t, stderr, tc.want, tc.args)
	}

	// A pipeline whose cache: is on, or with a step whose spec has a cache,
	// takes --no-cache.
	writeFiles(t, dir, map[string]string{
		"cached.yaml":              "model: test\ncache: {dir: cache}\n",
		"pipeline-cache.yaml":      "cache: {dir: cache}\nsteps:\n  a:\n    spec: test.yaml\n",
		"pipeline-step-cache.yaml": "steps:\n  a:\n    spec: test.yaml\n  b:\n    spec: cached.yaml\n    needs: [a]\n",
	})
	for _, file := range []string{"pipeline-cache.yaml", "pipeline-step-cache.yaml"} {
		code, _, stderr := runBinary(t, dir, "", "run", "-q", "--no-cache", file)
		assert.Equal(t, 0, code, "%s: %s", file, stderr)
	}
}

// batch --events DIR writes one events file per job, named after its
// workspace, each its own run with its own id.
func TestBatchEventsPerJob(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"jobs/alpha/x.txt": "a\n",
		"jobs/beta/x.txt":  "b\n",
		"more/beta/x.txt":  "c\n",
		"agent.yaml":       "model: test\ninstructions: Read.\ncapabilities: [FileSystem]\n",
	})
	eventsDir := filepath.Join(dir, "events")
	code, stdout, stderr := runBinary(t, dir, "", "batch", "-q", "--events", eventsDir, "agent.yaml", "jobs/*", "more/beta")
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, 3, strings.Count(stdout, "\n"))
	entries, err := os.ReadDir(eventsDir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	// alpha is unique; the two beta workspaces are told apart by their paths.
	assert.ElementsMatch(t, []string{"alpha.events.jsonl", "jobs_beta.events.jsonl", "more_beta.events.jsonl"}, names)
	ids := map[any]bool{}
	for _, name := range names {
		events := readEvents(t, filepath.Join(eventsDir, name))
		require.NotEmpty(t, events)
		assert.Equal(t, runtime.KindRunEnd, events[len(events)-1]["kind"], name)
		id := events[0]["run_id"]
		for _, ev := range events {
			assert.Equal(t, id, ev["run_id"], name)
		}
		ids[id] = true
	}
	assert.Len(t, ids, 3, "each job is a run of its own")

	writeFiles(t, dir, map[string]string{"a-file": "x"})
	code, _, stderr = runBinary(t, dir, "", "batch", "--events", "a-file", "agent.yaml", "jobs/*")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, "--events a-file is not a directory")
}

// A spec that is not UTF-8 (Latin-1 here) is reported at its first bad
// byte, by validate and by run, YAML and JSON alike.
func TestNotUTF8SpecsSayWhereAndWhat(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"latin1.yaml": "model: test\ninstructions: R\xe9sume the notes.\n",
		"latin1.json": "{\"model\": \"test\", \"instructions\": \"caf\xe9\"}",
	})
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"validate", "latin1.yaml"}, exitFailure, "latin1.yaml:2:16: the file is not UTF-8; save it as UTF-8"},
		{[]string{"validate", "latin1.json"}, exitFailure, "latin1.json:1:39: the file is not UTF-8; save it as UTF-8"},
		{[]string{"run", "latin1.json"}, exitUsage, "latin1.json:1:39: the file is not UTF-8; save it as UTF-8"},
	} {
		code, stdout, stderr := runBinary(t, dir, "", tc.args...)
		assert.Equal(t, tc.code, code, "%v: %s", tc.args, stderr)
		assert.Empty(t, stdout)
		assert.Contains(t, stderr, tc.want, tc.args)
	}
}

// Without an input the user message is "Begin.", as docs/running.md says.
func TestDefaultUserMessage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"script.yaml": "turns:\n  - expect: {message_contains: \"Begin.\"}\n    text: begun\n",
		"agent.yaml":  "model: script:script.yaml\ninstructions: Start.\n",
	})
	code, stdout, stderr := runBinary(t, dir, "", "run", "-q", "agent.yaml")
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, "begun\n", stdout)
}

// A declined change does not fail the run, and its progress line says what
// became of it.
func TestDeclinedChangeThroughTheBinary(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"existing.md": "keep me\n",
		"script.yaml": "turns:\n  - tool_calls: [{name: write_file, arguments: {path: existing.md, content: \"new\\n\"}}]\n  - text: left alone\n",
		"agent.yaml":  "model: script:script.yaml\ninstructions: Write.\ncapabilities: [FileSystem]\n",
	})
	code, stdout, stderr := runBinary(t, dir, "n\n", "run", "--approve", "agent.yaml")
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, "left alone\n", stdout)
	assert.Regexp(t, `(?m)^  write_file existing\.md  [0-9.]+ms  cancelled: the user declined the change$`, stderr)
	data, err := os.ReadFile(filepath.Join(dir, "existing.md"))
	require.NoError(t, err)
	assert.Equal(t, "keep me\n", string(data))
}
