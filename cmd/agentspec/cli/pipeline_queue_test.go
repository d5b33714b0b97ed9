package cli

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// reviewFixExample is the example pipeline the README runs.
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
		"inline.yaml":   "steps:\n  a: {spec: a.yaml}\n  b:\n    spec: {model: test}\n",
		"a.yaml":        "model: test\ninstructions: Answer.\n",
	})
	pipe, inline, spec := filepath.Join(dir, "pipeline.yaml"), filepath.Join(dir, "inline.yaml"), filepath.Join(dir, "a.yaml")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", pipe, "--workspace-root", dir}, "agentspec: --workspace-root needs --nats\n"},
		{[]string{"run", pipe, "--nats", "nats://127.0.0.1:1", "--ship"},
			"agentspec: --ship is not for pipelines yet: each job's changes would have to come back before the steps after it start; put the workspace on storage the workers share and give --workspace-root\n"},
		{[]string{"run", spec, "--nats", "nats://127.0.0.1:1"},
			"agentspec: --nats is for pipelines; to run one spec on the queue, use agentspec submit SPEC DIR --nats URL --wait\n"},
		{[]string{"run", inline, "--nats", "nats://127.0.0.1:1"},
			"agentspec: " + inline + ":3:3: step b: an inline spec cannot travel to a worker, which gets a spec file with each job; move it to a file of its own to run the pipeline with --nats\n"},
	} {
		out := invoke(t, tc.args...)
		assert.Equal(t, exitUsage, out.code, "%v: %s", tc.args, out.stderr)
		assert.Equal(t, tc.want, out.stderr, tc.args)
	}
}
