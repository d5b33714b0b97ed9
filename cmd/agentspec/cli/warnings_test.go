package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/capabilities"
)

// A FileSystem rooted at / loads and runs, but validate and run say, at
// root_dir's value, that it reaches the whole disk.
func TestCapabilityWarnings(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "agent.yaml")
	require.NoError(t, os.WriteFile(file, []byte("model: test\ninstructions: Say hi.\ncapabilities:\n  - FileSystem: {root_dir: /, read_only: true}\n"), 0o644))

	code, out, errOut := runCLI(t, "", "validate", file)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out+errOut, file+":4:28: warning: capabilities[0].FileSystem.root_dir: root_dir '/' is the root of the file system")

	code, out, errOut = runCLI(t, "", "validate", "--format", "json", file)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, `"line": 4,`)
	assert.Contains(t, out, `"message": "warning: capabilities[0].FileSystem.root_dir: root_dir '/' is the root of the file system`)

	code, _, errOut = runCLI(t, "", "run", file)
	require.Equal(t, 0, code, errOut)
	warnings := 0
	for _, line := range strings.Split(errOut, "\n") {
		if strings.HasPrefix(line, file+":4:28: warning: capabilities[0].FileSystem.root_dir: root_dir '/'") {
			warnings++
		}
	}
	assert.Equal(t, 1, warnings, "once: %s", errOut)

	// -q silences them, in run, batch and a pipeline alike.
	code, _, errOut = runCLI(t, "", "run", "-q", file)
	require.Equal(t, 0, code, errOut)
	assert.Empty(t, errOut)
	code, _, errOut = runCLI(t, "", "batch", "-q", file, dir)
	require.Equal(t, 0, code, errOut)
	assert.Empty(t, errOut)
	pipe := filepath.Join(dir, "pipeline.yaml")
	require.NoError(t, os.WriteFile(pipe, []byte("version: 1\nsteps:\n  hi:\n    spec: agent.yaml\n    input: Say hi.\n"), 0o644))
	code, _, errOut = runCLI(t, "", "run", pipe, "--workspace", dir)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, errOut, "root_dir '/' is the root of the file system")
	code, _, errOut = runCLI(t, "", "run", "-q", pipe, "--workspace", dir)
	require.Equal(t, 0, code, errOut)
	assert.Empty(t, errOut)
}

// Progress lines name a refused change by the kind the tool's error says,
// not by its words: a custom tool whose message merely mentions protection
// is an error, and a refusal worded otherwise is still a refusal.
func TestRefusalIsTyped(t *testing.T) {
	cases := []struct {
		kind capabilities.Refusal
		msg  string
		want string
	}{
		{"", "Path 'x' is protected (matches 'x').", "error: Path 'x' is protected (matches 'x')."},
		{"", "Conflict: nobody agrees", "error: Conflict: nobody agrees"},
		{capabilities.RefusedProtected, "Ce chemin est protégé.", "protected: Ce chemin est protégé."},
		{capabilities.RefusedConflict, "Conflict: file 'a' has changed", "conflict: file 'a' has changed"},
		{capabilities.RefusedCommand, "Command 'rm' is denied.", "refused: Command 'rm' is denied."},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, refusal(c.kind, c.msg))
	}
}

// The warning that cwd is deprecated is said at cwd's value, in
// FileSystem and in Shell, in every form of entry, where the spec would be
// changed, and not at the capability's entry.
func TestCwdWarningIsAtItsValue(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	file := filepath.Join(dir, "agent.yaml")
	require.NoError(t, os.WriteFile(file, []byte("model: test\ninstructions: Say hi.\ncapabilities:\n"+
		"  - FileSystem:\n      root_dir: .\n      cwd: sub\n      tools: [read_file]\n"+
		"  - Shell: {cwd: sub, sandbox: off}\n"+
		"  - PrefixTools: {prefix: p_, capability: {FileSystem: {cwd: sub}}}\n"+
		"  - {name: FileSystem, arguments: {root_dir: ., cwd: sub, tools: [file_info]}}\n"), 0o644))

	code, out, errOut := runCLI(t, "", "validate", "--workspace", dir, file)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out+errOut, file+":6:12: warning: capabilities[0].FileSystem.cwd: cwd is deprecated in pydantic-ai-harness")
	assert.Contains(t, out+errOut, file+":8:18: warning: capabilities[1].Shell.cwd: `Shell(cwd=...)` is deprecated and ignored")
	assert.Contains(t, out+errOut, file+":8:5: warning: capabilities[1]: Shell sandbox is off", "a warning of no one option is the entry's")
	assert.Contains(t, out+errOut, file+":9:62: warning: capabilities[2].PrefixTools.capability.FileSystem.cwd: cwd is deprecated in pydantic-ai-harness")
	assert.Contains(t, out+errOut, file+":10:54: warning: capabilities[3].arguments.cwd: cwd is deprecated in pydantic-ai-harness")
	assert.NotContains(t, out+errOut, ":4:5: warning")
}

// FileSystem's warning of a root_dir that reaches too far, and Shell's of
// an env name that holds a provider's key, are said at those options'
// values, where the spec would be changed, as cwd's is.
func TestRootDirAndEnvWarningsAreAtTheirValues(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "agent.yaml")
	require.NoError(t, os.WriteFile(file, []byte("model: test\ninstructions: Say hi.\ncapabilities:\n"+
		"  - FileSystem:\n      root_dir: /\n      tools: [read_file]\n"+
		"  - Shell:\n      env: {OPENAI_API_KEY: sk-test}\n"), 0o644))

	code, out, errOut := runCLI(t, "", "validate", "--workspace", dir, file)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out+errOut, file+":5:17: warning: capabilities[0].FileSystem.root_dir: root_dir '/' is the root of the file system")
	assert.Contains(t, out+errOut, file+":8:12: warning: capabilities[1].Shell.env: env names OPENAI_API_KEY")
}
