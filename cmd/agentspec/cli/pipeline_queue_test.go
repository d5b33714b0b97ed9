package cli

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// reviewFixExample is the example pipeline docs/pipelines.md runs.
var reviewFixExample = filepath.Join(repoRoot, "examples", "pipelines", "review-fix")

// copyTree copies the regular files under src into dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	require.NoError(t, filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		writeFile(t, filepath.Join(dst, rel), string(data))
		return nil
	}))
}

// treeOf reads the regular files under dir, by slash path.
func treeOf(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(path)
		files[filepath.ToSlash(rel)] = string(data)
		return err
	}))
	return files
}

// run PIPELINE --nats runs the jobs on two workers and prints what a local
// run prints, having made the same changes to the workspace.
func TestRunPipelineOverNATS(t *testing.T) {
	t.Parallel()
	file := filepath.Join(reviewFixExample, "pipeline.yaml")
	local := t.TempDir()
	copyTree(t, filepath.Join(reviewFixExample, "workspace"), local)
	want := invoke(t, "run", file, "--workspace", local, "-q")
	require.Equal(t, 0, want.code, want.stderr)

	url := startNATS(t)
	root := t.TempDir()
	startWorkerCmd(t, "--nats", url, "--workspace-root", root, "--name", "w1", "-q")
	startWorkerCmd(t, "--nats", url, "--workspace-root", root, "--name", "w2", "-q")
	ws := filepath.Join(root, "review-fix")
	copyTree(t, filepath.Join(reviewFixExample, "workspace"), ws)
	got := invoke(t, "run", file, "--nats", url, "--workspace-root", root, "--workspace", ws)
	require.Equal(t, 0, got.code, got.stderr)
	assert.JSONEq(t, want.stdout, got.stdout)
	assert.Regexp(t, `(?m)^fix\[1\] done in `, got.stderr)
	assert.Regexp(t, `(?m)^3 steps: 3 ok, 0 failed, 0 skipped, 0 not run; [1-9][0-9]* requests`, got.stderr, "the workers' usage is summed")
	assert.Equal(t, treeOf(t, local), treeOf(t, ws), "the workers changed the files the local run changed")

	// A job that fails on a worker fails its step, and the run.
	dir := pipelineDir(t, map[string]string{
		"pipeline.yaml": "steps:\n  first: {spec: first.yaml}\n  second: {spec: second.yaml, needs: [first]}\n",
		"first.yaml":    "model: script:fail.yaml\ninstructions: Fail.\n",
		"fail.yaml":     "turns:\n  - expect: {message_contains: never sent}\n    text: unreachable\n",
		"second.yaml":   "model: test\ninstructions: Answer.\n",
	})
	failed := invoke(t, "run", filepath.Join(dir, "pipeline.yaml"), "--nats", url, "--workspace-root", root, "--workspace", ws)
	assert.Equal(t, exitFailure, failed.code)
	assert.Contains(t, failed.stderr, "step first failed: ")
	assert.Contains(t, failed.stderr, "never sent")
	assert.Regexp(t, `(?m)^second not run$`, failed.stderr)
	assert.Empty(t, failed.stdout)
}

func TestRunPipelineOverNATSUsage(t *testing.T) {
	t.Parallel()
	dir := pipelineDir(t, map[string]string{
		"pipeline.yaml": "steps:\n  a: {spec: a.yaml}\n",
		"a.yaml":        "model: test\ninstructions: Answer.\n",
	})
	pipe, spec := filepath.Join(dir, "pipeline.yaml"), filepath.Join(dir, "a.yaml")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", pipe, "--workspace-root", dir}, "agentspec: --workspace-root needs --nats\n"},
		{[]string{"run", pipe, "--nats", "nats://127.0.0.1:1", "--ship", "--workspace-root", dir},
			"agentspec: --workspace-root names shared storage; --ship sends the workspace instead: give one of them\n"},
		{[]string{"run", pipe, "--nats", "nats://127.0.0.1:1", "--ship", "--ship-max", "0"},
			"agentspec: --ship-max must be from 1 to 1048576 (MiB), not 0\n"},
		{[]string{"run", pipe, "--ship"}, "agentspec: --ship needs --nats\n"},
		{[]string{"run", spec, "--nats", "nats://127.0.0.1:1"},
			"agentspec: --nats is for pipelines; to run one spec on the queue, use agentspec submit SPEC DIR --nats URL --wait\n"},
	} {
		out := invoke(t, tc.args...)
		assert.Equal(t, exitUsage, out.code, "%v: %s", tc.args, out.stderr)
		assert.Equal(t, tc.want, out.stderr, tc.args)
	}
}

// run PIPELINE --nats --ship: each job takes the workspace with it, and its
// changes are applied before the steps after it start; the workers' events
// of each job reach --events, tagged with its step and item.
func TestRunPipelineOverNATSShip(t *testing.T) {
	t.Parallel()
	file := filepath.Join(reviewFixExample, "pipeline.yaml")
	local := t.TempDir()
	copyTree(t, filepath.Join(reviewFixExample, "workspace"), local)
	want := invoke(t, "run", file, "--workspace", local, "-q")
	require.Equal(t, 0, want.code, want.stderr)

	url := startNATS(t)
	// The workers' own roots are empty: the workspace travels with each job.
	startWorkerCmd(t, "--nats", url, "--workspace-root", t.TempDir(), "--name", "w1", "-q")
	startWorkerCmd(t, "--nats", url, "--workspace-root", t.TempDir(), "--name", "w2", "-q")
	ws := t.TempDir()
	copyTree(t, filepath.Join(reviewFixExample, "workspace"), ws)
	events := filepath.Join(t.TempDir(), "events.jsonl")
	got := invoke(t, "run", file, "--nats", url, "--ship", "--workspace", ws, "--events", events)
	require.Equal(t, 0, got.code, got.stderr)
	assert.JSONEq(t, want.stdout, got.stdout)
	assert.Equal(t, treeOf(t, local), treeOf(t, ws), "the shipped jobs' changes were applied here")

	data, err := os.ReadFile(events)
	require.NoError(t, err)
	var fixEdits int
	runIDs := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var ev struct {
			Kind  string `json:"kind"`
			Step  string `json:"step"`
			Item  *int   `json:"item"`
			RunID string `json:"run_id"`
			JobID string `json:"job_id"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &ev), line)
		runIDs[ev.RunID] = true
		if ev.Kind == "file_system.file_edited" && ev.Step == "fix" && ev.Item != nil {
			fixEdits++
			assert.NotEmpty(t, ev.JobID, "the worker's run id is the job's: %s", line)
		}
	}
	assert.Equal(t, 2, fixEdits, "each fix item's edit, sent by its worker, is in the events file, tagged")
	assert.Len(t, runIDs, 1, "one run_id, the pipeline's, on every line")
	assert.Contains(t, string(data), `"kind":"pipeline.end"`)
}

// A step's spec written inline in the pipeline travels with its jobs, and
// the pipeline's cache: applies on the workers: a second run replays.
func TestRunPipelineOverNATSInlineAndCache(t *testing.T) {
	t.Parallel()
	dir := pipelineDir(t, map[string]string{
		"pipeline.yaml": `cache: true
steps:
  count:
    input: "Count {{inputs.what}}."
    spec:
      model: script:count.script.yaml
      instructions: Count what you are asked to.
      output_schema: {type: object, properties: {n: {type: integer}}, required: [n]}
  say:
    input: "There are {{steps.count.output.n}}."
    spec: {model: test, instructions: Repeat the input.}
outputs:
  n: "{{steps.count.output.n}}"
`,
		"count.script.yaml": "turns:\n  - expect: {message_contains: Count apples.}\n    text: '{\"n\": 3}'\n",
	})
	file := filepath.Join(dir, "pipeline.yaml")
	url := startNATS(t)
	root := t.TempDir()
	startWorkerCmd(t, "--nats", url, "--workspace-root", root, "--name", "w1", "-q")
	ws := filepath.Join(root, "job")
	require.NoError(t, os.Mkdir(ws, 0o755))
	first := invoke(t, "run", file, "--nats", url, "--workspace-root", root, "--workspace", ws, "--var", "what=apples")
	require.Equal(t, 0, first.code, first.stderr)
	assert.JSONEq(t, `{"n": 3}`, first.stdout)
	assert.Regexp(t, `(?m)^count done in [^,\n]*$`, first.stderr)

	again := invoke(t, "run", file, "--nats", url, "--workspace-root", root, "--workspace", ws, "--var", "what=apples")
	require.Equal(t, 0, again.code, again.stderr)
	assert.JSONEq(t, `{"n": 3}`, again.stdout)
	assert.Regexp(t, `(?m)^count done in .*, cached$`, again.stderr, "the pipeline's cache: applies to an inline spec on the workers")
	assert.Regexp(t, `(?m)^say done in .*, cached$`, again.stderr)
}

// batch PIPELINE DIR... runs the pipeline once per workspace on the queue's
// workers as it does here, and --events writes each workspace's events,
// the workers' included, to a file named after it.
func TestBatchPipelineOverNATSWithEvents(t *testing.T) {
	t.Parallel()
	dir := pipelineDir(t, map[string]string{
		"pipeline.yaml": `steps:
  extract:
    for_each: {glob: "*.md"}
    input: "{{item}}"
    spec: {model: "script:extract.yaml"}
outputs:
  facts: "{{steps.extract.outputs}}"
`,
		"extract.yaml": "turns:\n  - expect: {message_contains: .md}\n    text: facts\n",
	})
	url := startNATS(t)
	root := t.TempDir()
	startWorkerCmd(t, "--nats", url, "--workspace-root", root, "--name", "w1", "-q")
	one, two := filepath.Join(root, "one"), filepath.Join(root, "two")
	writeFile(t, filepath.Join(one, "a.md"), "# A")
	writeFile(t, filepath.Join(two, "a.md"), "# A")
	writeFile(t, filepath.Join(two, "b.md"), "# B")
	for _, args := range [][]string{
		{"-j", "2"},
		{"--nats", url, "--workspace-root", root, "-j", "2"},
	} {
		events := t.TempDir()
		out := invoke(t, append([]string{"batch", filepath.Join(dir, "pipeline.yaml"), one, two, "--events", events}, args...)...)
		require.Equal(t, 0, out.code, "%v: %s", args, out.stderr)
		assert.Equal(t, 2, strings.Count(out.stdout, `","ok":true,"outputs":`), out.stdout)
		assert.Regexp(t, `(?m)^extract\[1\] done in `, out.stderr, "a progress line per job")
		for ws, items := range map[string]int{"one": 1, "two": 2} {
			data, err := os.ReadFile(filepath.Join(events, ws+".events.jsonl"))
			require.NoError(t, err, args)
			assert.Equal(t, 1, strings.Count(string(data), `"kind":"pipeline.start"`), "%v %s", args, ws)
			assert.Equal(t, items, strings.Count(string(data), `"kind":"run.end","step":"extract"`), "%v %s: each job's own run.end, tagged", args, ws)
		}
	}
}
