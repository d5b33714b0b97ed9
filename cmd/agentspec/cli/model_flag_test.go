package cli

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A spec may leave its model for run time, as pydantic-ai's may: validate
// notes it, run takes --model, and --model wins over the spec's own.
func TestModelFlag(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bare := writeFile(t, filepath.Join(dir, "bare.yaml"), "instructions: Answer.\n")
	scripted := writeFile(t, filepath.Join(dir, "scripted.yaml"), "model: script:never.yaml\ninstructions: Answer.\n")

	code, _, stderr := runCLI(t, "", "validate", bare)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "bare.yaml:1:1: note: the spec names no model; give it at run time: agentspec run --model PROVIDER:NAME")

	code, _, stderr = runCLI(t, "", "run", bare, "-q")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, "and none was given at run time (--model)")

	code, stdout, stderr := runCLI(t, "", "run", bare, "--model", "test", "-q")
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, "success (no tool calls)\n", stdout)

	code, stdout, stderr = runCLI(t, "", "run", scripted, "--model", "test", "-q")
	require.Equal(t, 0, code, "--model wins: the script the spec names is not read: %s", stderr)
	assert.Equal(t, "success (no tool calls)\n", stdout)

	code, _, stderr = runCLI(t, "", "validate", bare, "--model", "nosuch:x")
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, stderr, `unknown model provider "nosuch"`, "--model is checked as the spec's own model is")

	// What is wrong with --model is said of --model, not at the model line
	// of a spec whose own model is fine.
	code, _, stderr = runCLI(t, "", "run", scripted, "--model", "nope", "-q")
	assert.Equal(t, exitUsage, code)
	assert.Equal(t, "--model: model: expected \"provider:name\" (e.g. \"anthropic:claude-sonnet-4-6\") or test, found \"nope\"\n", stderr)
	code, _, stderr = runCLI(t, "", "validate", bare, "--model", "script:missing.yaml")
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, stderr, "--model: cannot read the script file "+filepath.Join(dir, "missing.yaml"), "from the spec's directory")

	code, _, stderr = runCLI(t, "", "validate", bare, "--model", "deepseek:deepseek-chat")
	require.Equal(t, 0, code, stderr)
	assert.NotContains(t, stderr, "note:")

	ws := t.TempDir()
	code, stdout, stderr = runCLI(t, "", "batch", bare, ws, "--model", "test", "-q")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, `"output":"success (no tool calls)"`)
}

// --model reaches every step of a pipeline, here and on the queue's workers.
func TestModelFlagPipeline(t *testing.T) {
	t.Parallel()
	dir := pipelineDir(t, map[string]string{
		"pipeline.yaml": "steps:\n  first: {spec: bare.yaml}\n  second:\n    needs: [first]\n    spec: {instructions: Answer.}\n",
		"bare.yaml":     "instructions: Answer.\n",
	})
	file := filepath.Join(dir, "pipeline.yaml")
	code, _, stderr := runCLI(t, "", "validate", file)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "step first: note: the spec names no model")
	assert.Contains(t, stderr, "step second: note: the spec names no model")

	code, stdout, stderr := runCLI(t, "", "run", file, "--model", "test", "-q")
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, "success (no tool calls)\n", stdout)

	url := startNATS(t)
	root := t.TempDir()
	startWorkerCmd(t, "--nats", url, "--workspace-root", root, "--name", "w1", "-q")
	ws := filepath.Join(root, "ws")
	writeFile(t, filepath.Join(ws, "README"), "x")
	out := invoke(t, "run", file, "--model", "test", "--nats", url, "--workspace-root", root, "--workspace", ws, "-q")
	require.Equal(t, 0, out.code, out.stderr)
	assert.Equal(t, "success (no tool calls)\n", out.stdout, "the workers run the steps with --model")
}
