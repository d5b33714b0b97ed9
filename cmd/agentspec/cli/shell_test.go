package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/internal/confine"
)

// A run's progress says what became of each command: its exit, its
// timeout, its refusal; --approve asks before each, and a declined one
// does not run.
func TestRunShellProgress(t *testing.T) {
	t.Parallel()
	f := newRunFixture(t)
	f.write(t, "script.yaml", `
turns:
  - tool_calls:
      - {name: run_command, arguments: {command: echo hi}}
      - {name: run_command, arguments: {command: sleep 5, timeout_seconds: 0.5}}
      - {name: run_command, arguments: {command: rm notes.md}}
      - {name: run_command, arguments: {command: touch declined}}
  - expect: {tool_result_contains: "[Command was not run: the user declined the change]"}
    text: Done.
`)
	specPath := f.write(t, "agent.yaml", "version: 1\nmodel: script:script.yaml\ncapabilities: [{Shell: {sandbox: off}}]\n")
	out := invokeRun(t, "y\ny\nn\n", specPath, "--workspace", f.workspace, "--approve")
	require.Equal(t, 0, out.code, out.stderr)
	assert.Equal(t, "Done.\n", out.stdout)
	assert.Contains(t, out.stderr, "capabilities[0]: Shell sandbox is off: commands can change files outside the workspace, read secrets and reach the network")
	assert.Contains(t, out.stderr, "The agent wants to run `echo hi` in .:\n")
	assert.Regexp(t, `(?m)^  run_command echo hi  [0-9.]+m?s  exit 0$`, out.stderr)
	assert.Regexp(t, `(?m)^  run_command sleep 5  [0-9.]+m?s  timed out after 0\.5s$`, out.stderr)
	assert.Regexp(t, `(?m)^  run_command rm notes\.md  [0-9.]+m?s  refused: Command 'rm' is denied\.$`, out.stderr)
	assert.Regexp(t, `(?m)^  run_command touch declined  [0-9.]+m?s  cancelled: the user declined the change$`, out.stderr)
	assert.NotContains(t, out.stderr, "The agent wants to run `rm notes.md`", "a refused command is not asked about")
	_, err := os.Stat(filepath.Join(f.workspace, "declined"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

// An agent runs a project's tests and reads their outcome, its commands
// confined wherever the system can confine them.
func TestRunShellRunsAProjectsTests(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds a Go test binary with an empty build cache (the command's HOME is its own)")
	}
	sandbox := "on"
	if confine.Available() != nil {
		sandbox = "off"
	}
	f := newRunFixture(t)
	for name, content := range map[string]string{
		"go.mod":       "module example.com/calc\n\ngo 1.22\n",
		"calc.go":      "package calc\n\nfunc Add(a, b int) int { return a - b }\n",
		"calc_test.go": "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif got := Add(2, 3); got != 5 {\n\t\tt.Fatalf(\"Add(2, 3) = %d, want 5\", got)\n\t}\n}\n",
	} {
		require.NoError(t, os.WriteFile(filepath.Join(f.workspace, name), []byte(content), 0o644))
	}
	f.write(t, "script.yaml", `
turns:
  - tool_calls:
      - {name: run_command, arguments: {command: "GOFLAGS=-mod=mod GOTOOLCHAIN=local go test ./...", timeout_seconds: 300}}
  - expect: {tool_result_contains: "Add(2, 3) = -1, want 5"}
    tool_calls:
      - {name: run_command, arguments: {command: "sed -i 's/a - b/a + b/' calc.go && GOTOOLCHAIN=local go test ./...", timeout_seconds: 300}}
  - expect: {tool_result_contains: "ok  \texample.com/calc"}
    text: Fixed.
`)
	specPath := f.write(t, "agent.yaml", "version: 1\nmodel: script:script.yaml\ncapabilities: [{Shell: {sandbox: "+sandbox+"}}]\n")
	out := invokeRun(t, "", specPath, "--workspace", f.workspace)
	require.Equal(t, 0, out.code, out.stderr)
	assert.Equal(t, "Fixed.\n", out.stdout)
	assert.Regexp(t, regexp.MustCompile(`(?m)^  run_command .*go test.*  exit 1$`), out.stderr)
	assert.Regexp(t, regexp.MustCompile(`(?m)^  run_command sed .*  exit 0$`), out.stderr)
}

// `agentspec tool` runs a Shell tool directly: it warns that the sandbox
// is off, and --cancel-changes cancels the command.
func TestToolShell(t *testing.T) {
	t.Parallel()
	f := newRunFixture(t)
	specPath := f.write(t, "agent.yaml", "version: 1\nmodel: test\ncapabilities: [{Shell: {sandbox: off}}]\n")
	code, stdout, stderr := runCLI(t, "", "tool", "--spec", specPath, "--workspace", f.workspace, "run_command", `{"command": "cat notes.md"}`)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, "[stdout]\n# Notes\nhello from the notes\n", stdout)
	assert.Contains(t, stderr, "Shell sandbox is off: commands can change files outside the workspace, read secrets and reach the network")

	code, stdout, stderr = runCLI(t, "", "tool", "--spec", specPath, "--workspace", f.workspace, "--cancel-changes", "dry run", "run_command", `{"command": "touch x"}`)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, "[Command was not run: dry run]\n", stdout)
	_, err := os.Stat(filepath.Join(f.workspace, "x"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

// The events `agentspec tool -o json` reports are those of a run's call and
// its end: a background command, killed as the call ends, is reported
// again then, with no exit code, as a run's end reports it.
func TestToolReportsTheEndOfABackgroundCommand(t *testing.T) {
	t.Parallel()
	f := newRunFixture(t)
	specPath := f.write(t, "agent.yaml", "version: 1\nmodel: test\ncapabilities: [{Shell: {sandbox: off}}]\n")
	code, stdout, stderr := runCLI(t, "", "tool", "--spec", specPath, "--workspace", f.workspace, "-o", "json", "start_command", `{"command": "sleep 30"}`)
	require.Equal(t, 0, code, stderr)
	var report struct {
		Output string `json:"output"`
		Events []struct {
			Kind     string `json:"kind"`
			ID       string `json:"id"`
			ExitCode *int   `json:"exit_code"`
		} `json:"events"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &report), stdout)
	id := report.Output[len(report.Output)-32:]
	require.Len(t, report.Events, 3, stdout)
	assert.Equal(t, "shell.command_request", report.Events[0].Kind)
	for _, ev := range report.Events[1:] {
		assert.Equal(t, "shell.command", ev.Kind)
		assert.Equal(t, id, ev.ID)
		assert.Nil(t, ev.ExitCode)
	}
}
