package cli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// LocalWorkspace: DIR makes DIR the run's workspace, as --workspace does: a
// relative one resolves against --workspace, and FileSystem works inside it.
func TestLocalWorkspace(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "write.script.yaml"), `turns:
  - tool_calls:
      - name: write_file
        arguments: {path: notes.txt, content: "inside\n"}
  - expect: {tool_result_contains: "Wrote 7 chars"}
    text: done
`)
	spec := writeFile(t, filepath.Join(dir, "agent.yaml"), "model: script:write.script.yaml\ncapabilities:\n  - LocalWorkspace: repo\n  - FileSystem\n")
	ws := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(ws, "repo"), 0o755))
	code, stdout, stderr := runCLI(t, "", "run", spec, "--workspace", ws, "-q")
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, "done\n", stdout)
	data, err := os.ReadFile(filepath.Join(ws, "repo", "notes.txt"))
	require.NoError(t, err, "the file lands in the LocalWorkspace's directory")
	assert.Equal(t, "inside\n", string(data))
	_, err = os.Stat(filepath.Join(ws, "notes.txt"))
	assert.ErrorIs(t, err, os.ErrNotExist, "not in the workspace the run was given")

	// A directory that is not there fails the run before any request.
	code, _, stderr = runCLI(t, "", "run", spec, "--workspace", t.TempDir(), "-q")
	assert.Equal(t, exitFailure, code)
	assert.Regexp(t, `agent.yaml:3:21: capabilities\[0\]\.LocalWorkspace\.working_dir: local workspace directory .*/repo does not exist`, stderr)

	// read_only: true leaves FileSystem its read tools alone.
	ro := writeFile(t, filepath.Join(dir, "ro.yaml"), "model: script:write.script.yaml\ncapabilities:\n  - LocalWorkspace: {working_dir: repo, read_only: true}\n  - FileSystem\n")
	code, _, stderr = runCLI(t, "", "run", ro, "--workspace", ws, "-q")
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, stderr, `; the tools are: file_info, find_files, list_directory, read_file, search_files`)
	code, stdout, stderr = runCLI(t, "", "tools", ro, "--workspace", ws)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "read_file")
	assert.NotContains(t, stdout, "write_file")
}

func TestLocalWorkspaceSpecErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, tc := range map[string]struct{ spec, want string }{
		"two.yaml": {"model: test\ncapabilities:\n  - LocalWorkspace: .\n  - LocalWorkspace: sub\n",
			"two.yaml:4:5: capabilities[1]: a run has one workspace, and the LocalWorkspace at " + filepath.Join(dir, "two.yaml") + ":3:5 sets it already"},
		"deferred.yaml": {"model: test\ncapabilities:\n  - LocalWorkspace: {working_dir: ., defer_loading: true, id: ws}\n",
			"deferred.yaml:3:38: capabilities[0].LocalWorkspace.defer_loading: LocalWorkspace cannot be loaded later: the workspace is the run's from its start"},
		"memory.yaml": {"model: test\ncapabilities:\n  - Memory\n",
			"memory.yaml:3:5: capabilities[0]: `Memory` is a pydantic-ai-harness capability agentspec does not provide; remove it, or register a Go type of that name (see capabilities.Register)"},
	} {
		path := writeFile(t, filepath.Join(dir, name), tc.spec)
		code, _, stderr := runCLI(t, "", "validate", path)
		assert.Equal(t, exitFailure, code, name)
		assert.Contains(t, stderr, tc.want, name)
	}
}

// The newest harness FileSystem takes its root from the workspace and only
// warns of cwd: such a spec loads, with the warning at cwd's value.
func TestHarnessFileSystemDefaults(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(ws, "src"), 0o755))
	spec := writeFile(t, filepath.Join(t.TempDir(), "agent.yaml"),
		"model: test\ncapabilities:\n  - LocalWorkspace: .\n  - FileSystem: {cwd: src, read_only_patterns: ['**/.env']}\n")
	code, stdout, stderr := runCLI(t, "", "validate", spec, "--workspace", ws)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout+stderr, "agent.yaml:4:23: warning: capabilities[1].FileSystem.cwd: cwd is deprecated in pydantic-ai-harness, which ignores it: set the working directory on the workspace (LocalWorkspace: DIR). agentspec still resolves relative paths against it.")
}

// Shell works in the LocalWorkspace: its commands start there, get the
// workspace's env under the Shell's own, and a read-only workspace leaves
// Shell no tools.
func TestLocalWorkspaceShell(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "sh.script.yaml"), `turns:
  - tool_calls:
      - name: run_command
        arguments: {command: 'echo "$A $B"; pwd; cat here.txt'}
  - text: done
`)
	spec := writeFile(t, filepath.Join(dir, "agent.yaml"), `model: script:sh.script.yaml
capabilities:
  - LocalWorkspace: {working_dir: repo, env: {A: workspace, B: workspace}}
  - Shell: {env: {B: shell}, sandbox: off}
`)
	ws := t.TempDir()
	writeFile(t, filepath.Join(ws, "repo", "here.txt"), "in repo\n")
	events := filepath.Join(t.TempDir(), "events.jsonl")
	code, stdout, stderr := runCLI(t, "", "run", spec, "--workspace", ws, "-q", "--events", events)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, "done\n", stdout)
	data, err := os.ReadFile(events)
	require.NoError(t, err)
	real, err := filepath.EvalSymlinks(filepath.Join(ws, "repo"))
	require.NoError(t, err)
	assert.Contains(t, string(data), `[stdout]\nworkspace shell\n`+real+`\nin repo\n`)

	ro := writeFile(t, filepath.Join(dir, "ro.yaml"), "model: test\ncapabilities:\n  - LocalWorkspace: {working_dir: repo, read_only: true}\n  - FileSystem\n  - Shell\n")
	code, stdout, stderr = runCLI(t, "", "tools", ro, "--workspace", ws)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "read_file")
	assert.NotContains(t, stdout, "run_command", "a read-only workspace runs no commands")
}

// A LocalWorkspace directory may come later than the check: validate says
// the capabilities that work in it wait for it, rather than blame their
// own paths; run, which must start in it, fails at the entry.
func TestLocalWorkspaceToCome(t *testing.T) {
	dir := t.TempDir()
	file := writeFile(t, filepath.Join(dir, "agent.yaml"), "model: test\ninstructions: hi\ncapabilities:\n  - LocalWorkspace: ./repo\n  - FileSystem: {root_dir: .}\n")
	code, _, stderr := runCLI(t, "", "validate", file, "--workspace", dir)
	assert.Equal(t, 0, code, stderr)
	assert.Equal(t, file+":4:5: warning: capabilities[0].LocalWorkspace: "+filepath.Join(dir, "repo")+
		" does not exist yet: the other capabilities work in it, and are built and checked only once it does\n", stderr)

	code, _, stderr = runCLI(t, "", "run", file, "--workspace", dir, "-q")
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, stderr, file+":4:21: capabilities[0].LocalWorkspace.working_dir: local workspace directory "+filepath.Join(dir, "repo")+" does not exist")
}

// A LocalWorkspace naming a file, which run refuses, is refused by validate
// too: unlike a directory still to come, a file will not become one.
func TestLocalWorkspaceOnAFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := writeFile(t, filepath.Join(dir, "agent.yaml"), "model: test\ncapabilities:\n  - LocalWorkspace: ./agent.yaml\n")
	code, _, stderr := runCLI(t, "", "validate", file, "--workspace", dir)
	assert.Equal(t, exitFailure, code, stderr)
	assert.Equal(t, file+":3:5: capabilities[0].LocalWorkspace: "+file+" is not a directory: the run's workspace must be one\n", stderr)

	code, _, stderr = runCLI(t, "", "run", file, "--workspace", dir, "-q")
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, stderr, "local workspace directory "+file+" is not a directory")
}

// A LocalWorkspace whose directory is missing is reported as every spec
// problem is, FILE:LINE:COL first, so that whatever reads such lines (an
// editor, a CI problem matcher) finds the file, by run as by tools.
func TestLocalWorkspaceMissingIsReportedAtItsPosition(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := writeFile(t, filepath.Join(dir, "agent.yaml"), "model: test\ncapabilities:\n  - LocalWorkspace: ./repo\n")
	want := file + ":3:21: capabilities[0].LocalWorkspace.working_dir: local workspace directory " + filepath.Join(dir, "repo") + " does not exist\n"
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"run", file, "--workspace", dir, "-q"}, exitFailure},
		{[]string{"tools", file, "--workspace", dir}, exitUsage},
		{[]string{"tool", "--spec", file, "--workspace", dir, "read_file"}, exitUsage},
	} {
		code, stdout, stderr := runCLI(t, "", tc.args...)
		assert.Equal(t, tc.code, code, tc.args)
		assert.Empty(t, stdout, tc.args)
		assert.Equal(t, want, stderr, tc.args)
	}
}
