package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/capabilities/filesystem"
)

// runCLI runs the CLI in-process and returns its exit code and output.
func runCLI(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = Main(context.Background(), args, strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

func writeFile(t *testing.T, path, content string) string {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	return path
}

// A capability whose only tool fails fatally, to see exit status 1.
func init() {
	capabilities.MustRegister(capabilities.Type{
		Name: "TestBroken",
		New: func(context.Context, capabilities.Args) (capabilities.Capability, error) {
			return brokenCapability{}, nil
		},
	})
}

type brokenCapability struct{}

func (brokenCapability) Tools(context.Context) ([]capabilities.Tool, error) {
	return []capabilities.Tool{brokenTool{}}, nil
}

type brokenTool struct{}

func (brokenTool) Name() string               { return "explode" }
func (brokenTool) Description() string        { return "Always fails." }
func (brokenTool) Parameters() map[string]any { return map[string]any{"type": "object"} }
func (brokenTool) Call(context.Context, json.RawMessage) (string, error) {
	return "", errors.New("disk on fire")
}

func TestValidate(t *testing.T) {
	dir := t.TempDir()
	good := writeFile(t, filepath.Join(dir, "good.yaml"), "model: openai:gpt-4.1\ncapabilities:\n  - FileSystem: ./ws\n")
	bad := writeFile(t, filepath.Join(dir, "bad.yaml"), "model: openai:gpt-4.1\ninstructons: hi\nmax_tool_rounds: 0\n")

	// The capabilities are built as a run builds them, in the workspace.
	code, _, stderr := runCLI(t, "", "validate", "--workspace", dir, good)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, good+":3:17: capabilities[0].FileSystem.root_dir: root_dir './ws' does not exist")
	require.NoError(t, os.Mkdir(filepath.Join(dir, "ws"), 0o755))

	code, stdout, stderr := runCLI(t, "", "validate", "--workspace", dir, good)
	assert.Equal(t, 0, code, stderr)
	assert.Empty(t, stdout)
	assert.Empty(t, stderr)

	code, _, stderr = runCLI(t, "", "validate", "--workspace", dir, good, bad)
	assert.Equal(t, 1, code)
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	require.Len(t, lines, 2, stderr)
	assert.True(t, strings.HasPrefix(lines[0], bad+":2:1: "), lines[0])
	assert.Contains(t, lines[0], `"instructions"`)
	assert.True(t, strings.HasPrefix(lines[1], bad+":3:18: "), lines[1])

	code, _, stderr = runCLI(t, "", "validate", filepath.Join(dir, "missing.yaml"))
	assert.Equal(t, 2, code, "a file that is not there is a usage error")
	assert.Contains(t, stderr, "missing.yaml")

	code, _, _ = runCLI(t, "", "validate")
	assert.Equal(t, 2, code, "no file is a usage error")
}

// A directory is not read as a spec: the error says how to name the specs
// in it, which a CI job checking a folder of specs reaches for first.
func TestValidateADirectory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := writeFile(t, filepath.Join(dir, "agents", "good.yaml"), "model: test\n")
	agents := filepath.Dir(good)
	code, stdout, stderr := runCLI(t, "", "validate", good, agents)
	assert.Equal(t, exitUsage, code)
	assert.Empty(t, stdout)
	assert.Equal(t, agents+": is a directory, not a spec file; to check the specs in it, name them: agentspec validate "+
		filepath.Join(agents, "*.yaml")+"\n", stderr)
}

// A spec file larger than any spec may be is refused by its size, as a spec
// problem of that file, and one on stdin once that much of it is read.
func TestValidateTooLarge(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	huge := writeFile(t, filepath.Join(dir, "huge.yaml"), "model: test\n# ")
	require.NoError(t, os.Truncate(huge, 20_000_000))
	code, _, stderr := runCLI(t, "", "validate", huge)
	assert.Equal(t, exitFailure, code)
	assert.Equal(t, huge+": the file is 20 MB (20000000 bytes), larger than the 16 MB (16000000 bytes) a spec file may be\n", stderr)

	code, _, stderr = runCLI(t, "model: test\n#"+strings.Repeat("x", 16_000_000)+"\n", "validate", "-")
	assert.Equal(t, exitFailure, code)
	assert.Equal(t, "<stdin>: the spec is larger than the 16 MB (16000000 bytes) a spec file may be\n", stderr)
}

// A scripted model's file (turns: at its top level) is checked as a script,
// as a run checks the one its spec names, so that validate over every YAML
// file of a folder passes for the scripts beside the specs: it was checked
// as a spec and refused, turns being no key of a spec.
func TestValidateScriptFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := writeFile(t, filepath.Join(dir, "good.script.yaml"), "dialect: anthropic\nturns:\n  - text: hi\n")
	bad := writeFile(t, filepath.Join(dir, "bad.script.yaml"), "turns:\n  - txt: hi\n")
	code, stdout, stderr := runCLI(t, "", "validate", "-v", good)
	assert.Equal(t, 0, code, stderr)
	assert.Empty(t, stdout)
	assert.Equal(t, "1 of 1 file valid: 0 problems, 0 warnings\n", stderr)

	code, stdout, stderr = runCLI(t, "", "validate", good, bad)
	assert.Equal(t, exitFailure, code)
	assert.Empty(t, stdout)
	assert.Equal(t, bad+`:2:5: unknown key in turn 1 (did you mean "text"?); the keys are delay, error, expect, stop_reason, text, tool_calls, usage`+"\n", stderr)

	code, stdout, _ = runCLI(t, "", "validate", "-o", "json", bad)
	assert.Equal(t, exitFailure, code)
	var report struct {
		Files []fileResult
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &report), stdout)
	require.Len(t, report.Files, 1)
	require.Len(t, report.Files[0].Problems, 1)
	assert.Equal(t, problem{File: bad, Line: 2, Column: 5, Message: `unknown key in turn 1 (did you mean "text"?); the keys are delay, error, expect, stop_reason, text, tool_calls, usage`}, report.Files[0].Problems[0])

	// Every YAML file of the review-fix example, its specs, their scripts
	// and the pipeline, checked at once.
	example := filepath.Join(repoRoot, "examples", "pipelines", "review-fix")
	files, err := filepath.Glob(filepath.Join(example, "agents", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	code, _, stderr = runCLI(t, "", append([]string{"validate", "--workspace", filepath.Join(example, "workspace"), filepath.Join(example, "pipeline.yaml")}, files...)...)
	assert.Equal(t, 0, code, stderr)
}

// A spec that names no model, which a pydantic-ai spec may leave for run
// time, with a turns: key it has no business holding is a spec with an
// unknown key, not a script: checked as a script, each of its spec's keys
// was refused as no key of a script, and a run called it a script.
func TestSpecWithATurnsKeyIsNoScript(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := writeFile(t, filepath.Join(dir, "agent.yaml"), "instructions: Review the code.\nturns: 3\n")
	code, stdout, stderr := runCLI(t, "", "validate", file)
	assert.Equal(t, exitFailure, code)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, file+`:2:1: unknown key "turns"`)
	assert.NotContains(t, stderr, "the script")

	code, _, stderr = runCLI(t, "", "run", file, "--model", "test")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, file+`:2:1: unknown key "turns"`)
	assert.NotContains(t, stderr, "scripted model's file")

	// A script's own key misspelt keeps it a script.
	script := writeFile(t, filepath.Join(dir, "script.yaml"), "dialct: anthropic\nturns:\n  - text: hi\n")
	code, _, stderr = runCLI(t, "", "validate", script)
	assert.Equal(t, exitFailure, code)
	assert.Equal(t, script+`:1:1: unknown key in the script (did you mean "dialect"?); the keys are dialect, turns`+"\n", stderr)
}

// A scripted model's file given where a spec is read is told to be one,
// and how a spec runs on it, rather than checked as a spec and refused for
// its turns: key.
func TestScriptFileWhereASpecIsRead(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := writeFile(t, filepath.Join(dir, "script.yaml"), "turns:\n  - text: hi\n")
	want := file + ": is a scripted model's file (turns: at its top level), not a spec: a spec runs on it with model: script:PATH, PATH from the spec's directory\n"
	for _, args := range [][]string{
		{"run", file},
		{"run", file, "--model", "test"},
		{"batch", file, dir},
		{"tools", file},
		{"tool", "--spec", file, "read_file"},
		{"mcp", file},
	} {
		code, stdout, stderr := runCLI(t, "", args...)
		assert.Equal(t, exitUsage, code, args)
		assert.Empty(t, stdout, args)
		assert.Equal(t, want, stderr, args)
	}
}

// A directory given where a spec is read names the spec, or the specs and
// pipelines, in it, leaving out the scripts beside them: "is a directory"
// alone left a newcomer who ran agentspec run examples/quickstart to guess.
func TestDirectoryWhereASpecIsRead(t *testing.T) {
	t.Parallel()
	quickstart := filepath.Join(repoRoot, "examples", "quickstart")
	for _, args := range [][]string{
		{"run", quickstart},
		{"batch", quickstart, t.TempDir()},
		{"tools", quickstart},
		{"tool", "--spec", quickstart, "read_file"},
		{"mcp", quickstart},
	} {
		code, stdout, stderr := runCLI(t, "", args...)
		assert.Equal(t, exitUsage, code, args)
		assert.Empty(t, stdout, args)
		assert.Equal(t, "agentspec: "+quickstart+": is a directory, not a spec file (did you mean "+filepath.Join(quickstart, "agent.yaml")+"?)\n", stderr, args)
	}

	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "b.yaml"), "model: test\n")
	writeFile(t, filepath.Join(dir, "a.yml"), "steps:\n  x:\n    spec: b.yaml\n")
	writeFile(t, filepath.Join(dir, "b.script.yaml"), "turns: [{text: hi}]\n")
	writeFile(t, filepath.Join(dir, "notes.md"), "model: test\n")
	code, _, stderr := runCLI(t, "", "run", dir)
	assert.Equal(t, exitUsage, code)
	assert.Equal(t, "agentspec: "+dir+": is a directory, not a spec file; the specs and pipelines in it: "+
		filepath.Join(dir, "a.yml")+", "+filepath.Join(dir, "b.yaml")+"\n", stderr)

	// graph names the pipelines alone.
	code, _, stderr = runCLI(t, "", "graph", dir)
	assert.Equal(t, exitUsage, code)
	assert.Equal(t, "agentspec: "+dir+": is a directory, not a spec file (did you mean "+filepath.Join(dir, "a.yml")+"?)\n", stderr)
	reviewFix := filepath.Join(repoRoot, "examples", "pipelines", "review-fix")
	code, _, stderr = runCLI(t, "", "graph", reviewFix)
	assert.Equal(t, exitUsage, code)
	assert.Equal(t, "agentspec: "+reviewFix+": is a directory, not a spec file (did you mean "+filepath.Join(reviewFix, "pipeline.yaml")+"?)\n", stderr)

	empty := t.TempDir()
	code, _, stderr = runCLI(t, "", "run", empty)
	assert.Equal(t, exitUsage, code)
	assert.Equal(t, "agentspec: "+empty+": is a directory, not a spec file\n", stderr)
}

func TestValidateJSON(t *testing.T) {
	dir := t.TempDir()
	good := writeFile(t, filepath.Join(dir, "good.yaml"), "model: openai:gpt-4.1\n")
	bad := writeFile(t, filepath.Join(dir, "bad.json"), "{\"model\": 3}")

	code, stdout, stderr := runCLI(t, "", "validate", "--format", "json", good, bad)
	assert.Equal(t, 1, code)
	assert.Empty(t, stderr)
	var report struct {
		Valid bool
		Files []struct {
			File     string
			Valid    bool
			Problems []struct {
				File         string
				Line, Column int
				Message      string
			}
		}
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &report), stdout)
	assert.False(t, report.Valid)
	require.Len(t, report.Files, 2)
	assert.True(t, report.Files[0].Valid)
	assert.Empty(t, report.Files[0].Problems)
	assert.False(t, report.Files[1].Valid)
	require.Len(t, report.Files[1].Problems, 1)
	p := report.Files[1].Problems[0]
	assert.Equal(t, bad, p.File)
	assert.Equal(t, 1, p.Line)
	assert.Equal(t, 11, p.Column)
	assert.Contains(t, p.Message, "model")

	code, _, stderr = runCLI(t, "", "validate", "-o", "xml", good)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "--output must be text or json")
}

// -v ends validate's output with a summary: in text a line on stderr,
// with -o json an object in the report, stdout staying one JSON document
// and stderr empty.
func TestValidateVerboseJSONHasTheSummary(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := writeFile(t, filepath.Join(dir, "good.yaml"), "model: openai:gpt-4.1\n")
	bad := writeFile(t, filepath.Join(dir, "bad.json"), "{\"model\": 3}")

	code, _, stderr := runCLI(t, "", "validate", "-v", good, bad)
	assert.Equal(t, exitFailure, code)
	assert.True(t, strings.HasSuffix(stderr, "\n1 of 2 files valid: 1 problem, 0 warnings\n"), stderr)

	code, stdout, stderr := runCLI(t, "", "validate", "-v", "-o", "json", good, bad)
	assert.Equal(t, exitFailure, code)
	assert.Empty(t, stderr)
	var report map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(stdout), &report), stdout)
	assert.JSONEq(t, `{"files": 2, "valid": 1, "problems": 1, "warnings": 0}`, string(report["summary"]), stdout)

	code, stdout, _ = runCLI(t, "", "validate", "-o", "json", good, bad)
	assert.Equal(t, exitFailure, code)
	report = nil
	require.NoError(t, json.Unmarshal([]byte(stdout), &report), stdout)
	assert.NotContains(t, report, "summary", "without -v")
}

func TestSchemaPrintsEveryRegisteredType(t *testing.T) {
	code, stdout, stderr := runCLI(t, "", "schema")
	require.Equal(t, 0, code, stderr)
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(stdout), &doc))
	assert.Contains(t, stdout, `"FileSystem"`)
	assert.Contains(t, stdout, `"TestBroken"`)
	assert.Contains(t, stdout, `"max_read_lines"`)
}

func TestToolsListsTheSpecsTools(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(dir, "ws"), 0o755))
	file := writeFile(t, filepath.Join(dir, "agent.yaml"), "capabilities:\n  - FileSystem: {root_dir: ws, read_only: true, tools: [read_file, grep, write_file]}\n")

	code, stdout, stderr := runCLI(t, "", "tools", "--workspace", dir, "--format", "json", file)
	require.Equal(t, 0, code, stderr)
	var tools []struct {
		Name       string
		Parameters map[string]any
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &tools))
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
		assert.Equal(t, "object", tl.Parameters["type"], tl.Name)
	}
	assert.Equal(t, []string{"read_file", "grep"}, names, "reference order, read-only filtered")

	code, stdout, _ = runCLI(t, "", "tools", "--workspace", dir, file)
	require.Equal(t, 0, code)
	assert.Contains(t, stdout, "read_file\n    ")
	assert.Contains(t, stdout, "parameters: {")
}

// A spec whose capabilities offer no tools says so, as a pipeline's step
// does, rather than printing nothing; as JSON it is an empty list.
func TestToolsOfASpecWithoutTools(t *testing.T) {
	dir := t.TempDir()
	file := writeFile(t, filepath.Join(dir, "agent.yaml"), "model: test\n")
	code, stdout, stderr := runCLI(t, "", "tools", "--workspace", dir, file)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, "(no tools)\n", stdout)
	code, stdout, stderr = runCLI(t, "", "tools", "--workspace", dir, "-o", "json", file)
	require.Equal(t, 0, code, stderr)
	assert.JSONEq(t, "[]", stdout)
}

func TestToolsReportsFactoryErrorsAtTheirPosition(t *testing.T) {
	dir := t.TempDir()
	file := writeFile(t, filepath.Join(dir, "agent.yaml"), "capabilities:\n  - FileSystem:\n      root_dir: does-not-exist\n")
	code, _, stderr := runCLI(t, "", "tools", "--workspace", dir, file)
	assert.Equal(t, 2, code)
	assert.True(t, strings.HasPrefix(stderr, file+":3:17: "), stderr)
}

// An MCP server that does not start fails at its entry, as a capability
// that cannot be built from its options does (exit 2), and the help says so.
func TestToolsOfAServerThatDidNotStart(t *testing.T) {
	dir := t.TempDir()
	file := writeFile(t, filepath.Join(dir, "agent.yaml"), "model: test\ncapabilities:\n  - MCP: {command: [sh, -c, 'exit 3']}\n")
	code, stdout, stderr := runCLI(t, "", "tools", "--workspace", dir, file)
	assert.Equal(t, exitUsage, code)
	assert.Empty(t, stdout)
	assert.True(t, strings.HasPrefix(stderr, file+":3:5: "), stderr)
	assert.Contains(t, stderr, "did not start")

	code, help, _ := runCLI(t, "", "tools", "--help")
	require.Equal(t, 0, code)
	help = strings.Join(strings.Fields(help), " ")
	assert.Contains(t, help, "2 on usage errors and for a spec or pipeline that does not load or whose capabilities cannot be built (an MCP server that did not start, say)")
	assert.NotContains(t, help, "1 when a capability could not list its tools (an MCP server that did not start, say)")
}

func TestToolCallsAToolByHand(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "hello.txt"), "Hello, world!\n")

	code, stdout, stderr := runCLI(t, "", "tool", "--root", root, "read_file", `{"path": "hello.txt"}`)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, "[hello.txt | 1 lines | hash:d9014c462484]\n     1\tHello, world!\n", stdout)

	// Arguments from stdin.
	code, stdout, _ = runCLI(t, `{"path": "hello.txt"}`, "tool", "--root", root, "file_info", "-")
	require.Equal(t, 0, code)
	assert.Contains(t, stdout, "hash: d9014c462484")

	// A correctable error: exit 3, message on stderr.
	code, stdout, stderr = runCLI(t, "", "tool", "--root", root, "read_file", `{"path": "missing.txt"}`)
	assert.Equal(t, 3, code)
	assert.Empty(t, stdout)
	assert.Equal(t, "File not found: missing.txt\n", stderr)
}

type toolJSON struct {
	Tool   string
	OK     bool
	Retry  bool
	Output string
	Error  string
	Events []map[string]any
}

func TestToolJSONWithEventsAndCancel(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "a.txt"), "one\n")

	code, stdout, stderr := runCLI(t, "", "tool", "--root", root, "--json", "write_file", `{"path": "b.txt", "content": "new\n"}`)
	require.Equal(t, 0, code, stderr)
	var r toolJSON
	require.NoError(t, json.Unmarshal([]byte(stdout), &r), stdout)
	assert.True(t, r.OK)
	assert.Equal(t, "Wrote 4 chars (1 lines) to b.txt. [hash:7aa7a5359173]", r.Output)
	require.Len(t, r.Events, 2)
	assert.Equal(t, "file_system.file_change_request", r.Events[0]["kind"])
	assert.Equal(t, "file_system.file_written", r.Events[1]["kind"])
	assert.Equal(t, "b.txt", r.Events[1]["path"])
	assert.Equal(t, "7aa7a5359173", r.Events[1]["content_hash"])

	code, stdout, _ = runCLI(t, "", "tool", "--root", root, "--json", "--cancel-changes", "not today", "edit_file",
		`{"path": "a.txt", "old_text": "one", "new_text": "two"}`)
	require.Equal(t, 0, code, "a cancelled change is a success")
	r = toolJSON{}
	require.NoError(t, json.Unmarshal([]byte(stdout), &r))
	assert.Equal(t, "['a.txt' was not edited: not today]", r.Output)
	require.Len(t, r.Events, 1)
	assert.Equal(t, true, r.Events[0]["cancelled"])
	got, err := os.ReadFile(filepath.Join(root, "a.txt"))
	require.NoError(t, err)
	assert.Equal(t, "one\n", string(got), "nothing was written")

	code, stdout, _ = runCLI(t, "", "tool", "--root", root, "--json", "read_file", `{"path": "../outside"}`)
	assert.Equal(t, 3, code)
	r = toolJSON{}
	require.NoError(t, json.Unmarshal([]byte(stdout), &r))
	assert.True(t, r.Retry)
	assert.False(t, r.OK)
	assert.Equal(t, "Path '../outside' resolves outside the root directory.", r.Error)
	assert.Empty(t, r.Events, "a refused operation emits nothing")
}

// agentspec tool calls a tool as a run would: the spec's own files, and
// its script's, are not the tools' to change.
func TestToolProtectsTheSpecsFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	specFile := writeFile(t, filepath.Join(dir, "agent.yaml"), "model: script:turns.yaml\ncapabilities:\n  - FileSystem: {root_dir: .}\n")
	writeFile(t, filepath.Join(dir, "turns.yaml"), "turns:\n  - text: done\n")
	for _, name := range []string{"agent.yaml", "turns.yaml"} {
		code, _, stderr := runCLI(t, "", "tool", "--spec", specFile, "--workspace", dir, "write_file", `{"path": "`+name+`", "content": "x"}`)
		assert.Equal(t, 3, code, name)
		assert.Equal(t, "Path '"+name+"' is protected (matches '"+name+"').\n", stderr)
	}
	code, _, stderr := runCLI(t, "", "tool", "--spec", specFile, "--workspace", dir, "write_file", `{"path": "notes.md", "content": "x"}`)
	assert.Equal(t, 0, code, stderr)
}

func TestToolExitCodes(t *testing.T) {
	root := t.TempDir()
	dir := t.TempDir()
	broken := writeFile(t, filepath.Join(dir, "broken.yaml"), "capabilities:\n  - TestBroken\n")

	code, _, stderr := runCLI(t, "", "tool", "--spec", broken, "explode")
	assert.Equal(t, 1, code)
	assert.Equal(t, "disk on fire\n", stderr)

	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown tool", []string{"tool", "--root", root, "read_fil"}, `unknown tool "read_fil"`},
		{"args not JSON", []string{"tool", "--root", root, "read_file", "{path"}, "ARGS_JSON must be one JSON object"},
		{"args not an object", []string{"tool", "--root", root, "read_file", "[1]"}, "ARGS_JSON must be one JSON object"},
		{"root and spec", []string{"tool", "--root", root, "--spec", broken, "explode"}, "--root and --spec"},
		{"missing root", []string{"tool", "--root", filepath.Join(root, "nope"), "read_file"}, "--root"},
		{"bad spec", []string{"tool", "--spec", filepath.Join(dir, "nope.yaml"), "read_file"}, "nope.yaml"},
		{"no tool", []string{"tool"}, "arg"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, "", tt.args...)
			assert.Equal(t, 2, code, stderr)
			assert.Contains(t, stderr, tt.want)
		})
	}
}

// ARGS_JSON that is JSON but not an object says what it is, in JSON's
// words, not in Go's types.
func TestToolArgsNotAnObject(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	for args, found := range map[string]string{
		"[1]":            "found an array",
		`"notes.md"`:     "found a string",
		"3":              "found a number",
		"true":           "found a boolean",
		"null":           "found null",
		`{"path": "a"}x`: "invalid character 'x' after top-level value",
	} {
		code, stdout, stderr := runCLI(t, "", "tool", "--root", root, "read_file", args)
		assert.Equal(t, exitUsage, code, args)
		assert.Empty(t, stdout, args)
		assert.Equal(t, `agentspec: ARGS_JSON must be one JSON object, e.g. '{"path": "notes.md"}': `+found+"\n", stderr, args)
	}
}

func TestVersion(t *testing.T) {
	code, stdout, _ := runCLI(t, "", "version")
	assert.Equal(t, 0, code)
	assert.True(t, strings.HasPrefix(stdout, "agentspec "), stdout)
}

func TestToolCancelWithEmptyReasonStillCancels(t *testing.T) {
	root := t.TempDir()
	code, stdout, stderr := runCLI(t, "", "tool", "--root", root, "--json", "--cancel-changes", "", "write_file",
		`{"path": "fresh.txt", "content": "x"}`)
	require.Equal(t, 0, code, stderr)
	var r map[string]any
	require.NoError(t, json.Unmarshal([]byte(stdout), &r))
	assert.Equal(t, "['fresh.txt' was not written: cancelled by a listener]", r["output"])
	assert.Nil(t, r["error"], "error is null on success")
	assert.NoFileExists(t, filepath.Join(root, "fresh.txt"))
}

func TestToolRefusesFlagsThatWouldBeIgnored(t *testing.T) {
	code, _, stderr := runCLI(t, "", "tool", "--workspace", t.TempDir(), "read_file")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "--workspace only applies with --spec")
}

// tools, tool and mcp build a spec's capabilities as a run does: their
// {{placeholders}} filled from --var, and refused without a value, never
// built with the placeholder's text (a denied pattern that denies nothing).
func TestCapabilityPlaceholdersNeedVars(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "private.txt"), "topsecret\n")
	file := writeFile(t, filepath.Join(dir, "agent.yaml"), "capabilities:\n  - FileSystem:\n      denied_patterns: [\"{{hide}}\"]\n")
	missing := file + ":3:26: capabilities[0]: the options use {{hide}}, but no value was given for it (set it with --var hide=VALUE)"
	for _, args := range [][]string{
		{"tools", "--workspace", dir, file},
		{"tool", "--workspace", dir, "--spec", file, "read_file", `{"path": "private.txt"}`},
		{"mcp", "--workspace", dir, file},
	} {
		code, stdout, stderr := runCLI(t, "", args...)
		assert.Equal(t, 2, code, "%v", args)
		assert.NotContains(t, stdout, "topsecret", "%v", args)
		assert.Contains(t, stderr, missing, "%v", args)
	}
	code, _, stderr := runCLI(t, "", "tool", "--workspace", dir, "--spec", file, "--var", "hide=private.txt", "read_file", `{"path": "private.txt"}`)
	assert.Equal(t, 3, code)
	assert.Equal(t, "Path 'private.txt' is denied by pattern 'private.txt'.\n", stderr)
	code, stdout, stderr := runCLI(t, "", "tools", "--workspace", dir, "--var", "hide=private.txt", file)
	assert.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "read_file")

	code, _, stderr = runCLI(t, "", "tool", "--var", "hide=x", "read_file")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "--var fills the placeholders of --spec's capabilities")
}

func TestToolsRefusesTwoToolsOfOneName(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(dir, "a"), 0o755))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "b"), 0o755))
	file := writeFile(t, filepath.Join(dir, "agent.yaml"), "capabilities:\n  - FileSystem: a\n  - FileSystem: b\n")
	code, _, stderr := runCLI(t, "", "tools", "--workspace", dir, file)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, file+":3:5: tool \"read_file\" is offered by both FileSystem and FileSystem")
}

// A shell's completion offers the values a flag or argument takes: the
// formats of --output, and the tools `agentspec tool` would call.
func TestCompletionOffersValues(t *testing.T) {
	t.Parallel()
	complete := func(args ...string) []string {
		t.Helper()
		code, out, errOut := runCLI(t, "", append([]string{"__complete"}, args...)...)
		require.Equal(t, 0, code, errOut)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		require.NotEmpty(t, lines)
		assert.Equal(t, ":4", lines[len(lines)-1], "no file names offered")
		return lines[:len(lines)-1]
	}
	assert.Equal(t, []string{"text", "json"}, complete("run", "-o", ""))
	assert.Equal(t, []string{"text", "json"}, complete("queue", "stats", "--output", ""))
	assert.Equal(t, []string{"mermaid", "dot", "json"}, complete("graph", "-o", ""))
	assert.Equal(t, filesystem.AllToolNames, complete("tool", ""))

	dir := t.TempDir()
	spec := filepath.Join(dir, "agent.yaml")
	require.NoError(t, os.WriteFile(spec, []byte("model: test\ninstructions: Hi.\ncapabilities:\n  - PrefixTools: {prefix: docs, capability: {FileSystem: {root_dir: ., read_only: true, tools: [read_file, grep]}}}\n"), 0o644))
	assert.Equal(t, []string{"docs_read_file", "docs_grep"}, complete("tool", "--spec", spec, ""))

	// A key press starts no MCP server: its tools are not offered.
	marker := filepath.Join(dir, "started")
	require.NoError(t, os.WriteFile(spec, []byte("model: test\ninstructions: Hi.\ncapabilities:\n  - FileSystem: {root_dir: ., tools: [grep]}\n  - MCP: {command: [sh, -c, 'touch "+marker+"; sleep 5']}\n"), 0o644))
	assert.Equal(t, []string{"grep"}, complete("tool", "--spec", spec, ""))
	assert.NoFileExists(t, marker)
}

// --var completes with the names the file a command runs or checks can
// take, each as "name=" with no space after it: a spec's placeholders, a
// pipeline's inputs.
func TestCompletionOffersVars(t *testing.T) {
	t.Parallel()
	complete := func(args ...string) []string {
		t.Helper()
		code, out, errOut := runCLI(t, "", append([]string{"__complete"}, args...)...)
		require.Equal(t, 0, code, errOut)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		require.NotEmpty(t, lines)
		assert.Equal(t, ":6", lines[len(lines)-1], "no file names and no space after the name")
		return lines[:len(lines)-1]
	}
	dir := t.TempDir()
	agent := filepath.Join(dir, "agent.yaml")
	require.NoError(t, os.WriteFile(agent, []byte("model: test\ndescription: Reviews {{repo}}.\ninstructions: Review {{target}} for {{audience}}.\n"+
		"capabilities:\n  - FileSystem: {root_dir: '{{checkout}}'}\n"), 0o644))
	want := []string{"target=", "audience=", "repo=", "checkout="}
	for _, cmd := range []string{"run", "batch", "submit", "validate"} {
		assert.Equal(t, want, complete(cmd, agent, "--var", ""), cmd)
	}
	assert.Equal(t, []string{"audience="}, complete("run", agent, "--var", "au"))

	pipe := filepath.Join(dir, "pipeline.yaml")
	require.NoError(t, os.WriteFile(pipe, []byte("inputs:\n  type: object\n  properties: {n: {type: integer}, loud: {type: boolean}}\n"+
		"steps:\n  only:\n    input: \"n={{inputs.n}} loud={{inputs.loud}}\"\n    spec: {model: test}\n"), 0o644))
	assert.Equal(t, []string{"loud=", "n="}, complete("run", pipe, "--var", ""))
	assert.Empty(t, complete("run", filepath.Join(dir, "missing.yaml"), "--var", ""))

	// The inputs are those the checks know: listed through $ref and allOf,
	// named by a template where additionalProperties types them, or where
	// the pipeline has no inputs schema.
	require.NoError(t, os.WriteFile(pipe, []byte("inputs:\n  type: object\n  allOf:\n    - $ref: '#/$defs/base'\n"+
		"    - {type: object, properties: {extra: {type: string}}, additionalProperties: {type: integer}}\n"+
		"  $defs:\n    base: {type: object, properties: {n: {type: integer}}}\n"+
		"steps:\n  only:\n    input: \"{{inputs.n}} {{inputs.free}}\"\n    spec: {model: test}\n"), 0o644))
	assert.Equal(t, []string{"extra=", "free=", "n="}, complete("run", pipe, "--var", ""))
	require.NoError(t, os.WriteFile(pipe, []byte("steps:\n  only:\n    input: \"{{inputs.topic}}\"\n    spec: {model: test}\n"), 0o644))
	assert.Equal(t, []string{"topic="}, complete("run", pipe, "--var", ""))
}

// A tool name the capabilities do not offer is told with the one it most
// likely misspells, before the list of them, as an unknown command is.
func TestToolUnknownNameSuggestsTheNearest(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	const available = "available: create_directory, edit_file, file_info, find_files, grep, list_directory, list_files, read_file, search_files, write_file\n"
	code, stdout, stderr := runCLI(t, "", "tool", "--root", root, "read_fil")
	assert.Equal(t, exitUsage, code)
	assert.Empty(t, stdout)
	assert.Equal(t, `agentspec: unknown tool "read_fil" (did you mean "read_file"?); `+available, stderr)

	_, _, stderr = runCLI(t, "", "tool", "--root", root, "shell")
	assert.Equal(t, `agentspec: unknown tool "shell"; `+available, stderr)
}

// With -o json a call made prints its one object, whatever its outcome; a
// usage error, which makes no call, prints none on stdout, as the help says.
func TestToolJSONOnAUsageError(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	code, stdout, stderr := runCLI(t, "", "tool", "--root", root, "-o", "json", "read_fil")
	assert.Equal(t, exitUsage, code)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, `unknown tool "read_fil"`)
	code, stdout, _ = runCLI(t, "", "tool", "--root", root, "-o", "json", "read_file", `{"path": "none.txt"}`)
	assert.Equal(t, exitToolRetry, code)
	assert.Contains(t, stdout, `"retry":true`)

	_, help, _ := runCLI(t, "", "tool", "--help")
	help = strings.Join(strings.Fields(help), " ")
	assert.Contains(t, help, `exactly one object {"tool", "ok", "retry", "output", "error", "events"} on stdout for the call made; a usage or spec error makes none, and prints nothing there.`)
}

// A spec without tools says so, rather than list none as available.
func TestToolOfASpecWithoutTools(t *testing.T) {
	file := writeFile(t, filepath.Join(t.TempDir(), "agent.yaml"), "model: test\ninstructions: hi\n")
	code, _, stderr := runCLI(t, "", "tool", "--spec", file, "read_file")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, `unknown tool "read_file": the spec's capabilities offer no tools`)
}

// A shell completion has no script for is a usage error, as an unknown
// subcommand of queue or cache is, so `source <(agentspec completion tcsh)`
// does not read the help text as a script.
func TestCompletionOfAnUnknownShell(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := runCLI(t, "", "completion", "tcsh")
	assert.Equal(t, exitUsage, code)
	assert.Empty(t, stdout)
	assert.Equal(t, "agentspec: unknown command \"tcsh\" for \"agentspec completion\"; valid commands: bash, fish, powershell, zsh (see agentspec completion --help)\n", stderr)

	code, stdout, _ = runCLI(t, "", "completion")
	assert.Equal(t, 0, code, "without a shell it prints its help")
	assert.Contains(t, stdout, "Available Commands:")
}

// A command that reads its spec or pipeline from a file says so when given
// - (stdin), rather than look for a file named "-".
func TestStdinWhereAFileIsRead(t *testing.T) {
	t.Parallel()
	spec := "model: test\ncapabilities: [FileSystem]\n"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"tools", "-"}, "agentspec: tools reads SPEC from a file, not from stdin (-): save the spec to a file\n"},
		{[]string{"graph", "-"}, "agentspec: graph reads PIPELINE from a file, not from stdin (-): save the pipeline to a file\n"},
		{[]string{"tool", "--spec", "-", "list_directory"}, "agentspec: tool reads --spec from a file, not from stdin (-): save the spec to a file\n"},
		{[]string{"mcp", "-"}, "agentspec: mcp reads SPEC from a file, not from stdin (-): save the spec to a file\n"},
	} {
		code, stdout, stderr := runCLI(t, spec, tc.args...)
		assert.Equal(t, exitUsage, code, tc.args)
		assert.Empty(t, stdout, tc.args)
		assert.Equal(t, tc.want, stderr, tc.args)
	}
}

// A pipeline given on stdin (- as the spec) is said to be one, which run and
// validate read from a file only, rather than checked as a spec and told
// that steps: is a pipeline's key.
func TestPipelineOnStdin(t *testing.T) {
	t.Parallel()
	pipe := "steps:\n  a:\n    spec: {model: test}\noutputs:\n  a: \"{{steps.a.output}}\"\n"
	const want = "stdin holds a pipeline (steps: at its top level), which is read from a file, not from stdin (-): save the pipeline to a file\n"
	code, stdout, stderr := runCLI(t, pipe, "run", "-q", "-")
	assert.Equal(t, exitUsage, code)
	assert.Empty(t, stdout)
	assert.Equal(t, "agentspec: "+want, stderr)

	code, stdout, stderr = runCLI(t, pipe, "validate", "-")
	assert.Equal(t, exitUsage, code)
	assert.Empty(t, stdout)
	assert.Equal(t, "<stdin>: "+want, stderr)
}

// help for a command agentspec does not have is a usage error, as the
// command itself would be, not the root's usage on stdout with status 0.
func TestHelpOfAnUnknownCommand(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := runCLI(t, "", "help", "bogus")
	assert.Equal(t, exitUsage, code)
	assert.Empty(t, stdout)
	assert.Equal(t, "agentspec: unknown command \"bogus\" for \"agentspec\"; valid commands: batch, cache, completion, graph, mcp, queue, run, schema, submit, tool, tools, validate, version, worker (see agentspec --help)\n", stderr)

	code, stdout, stderr = runCLI(t, "", "help", "cache", "stat")
	assert.Equal(t, exitUsage, code)
	assert.Empty(t, stdout)
	assert.Equal(t, "agentspec: unknown command \"stat\" for \"agentspec cache\" (did you mean \"stats\"?); valid commands: clear, stats (see agentspec cache --help)\n", stderr)

	code, stdout, _ = runCLI(t, "", "help", "cache", "stats")
	assert.Equal(t, 0, code)
	assert.Contains(t, stdout, "agentspec cache stats [--dir DIR] [-o json]")
}

// A command agentspec does not have is told on one line, as every other
// usage error is, with the command it most likely misspells and the ones
// there are, at the root as under cache, queue and completion: the root's
// suggestion came on lines of its own, and the others named neither.
func TestUnknownCommandSaysWhatThereIs(t *testing.T) {
	t.Parallel()
	const root = "batch, cache, completion, graph, mcp, queue, run, schema, submit, tool, tools, validate, version, worker"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"xyzzy"}, `agentspec: unknown command "xyzzy" for "agentspec"; valid commands: ` + root + " (see agentspec --help)\n"},
		{[]string{"validat", "agent.yaml"}, `agentspec: unknown command "validat" for "agentspec" (did you mean "validate"?); valid commands: ` + root + " (see agentspec --help)\n"},
		{[]string{"Run", "agent.yaml"}, `agentspec: unknown command "Run" for "agentspec" (did you mean "run"?); valid commands: ` + root + " (see agentspec --help)\n"},
		{[]string{"cache", "stat"}, `agentspec: unknown command "stat" for "agentspec cache" (did you mean "stats"?); valid commands: clear, stats (see agentspec cache --help)` + "\n"},
		{[]string{"queue", "stat"}, `agentspec: unknown command "stat" for "agentspec queue" (did you mean "stats"?); valid commands: stats (see agentspec queue --help)` + "\n"},
		{[]string{"completion", "tcsh"}, `agentspec: unknown command "tcsh" for "agentspec completion"; valid commands: bash, fish, powershell, zsh (see agentspec completion --help)` + "\n"},
		{[]string{"help", "validat"}, `agentspec: unknown command "validat" for "agentspec" (did you mean "validate"?); valid commands: ` + root + " (see agentspec --help)\n"},
		{[]string{"help", "cache", "stat"}, `agentspec: unknown command "stat" for "agentspec cache" (did you mean "stats"?); valid commands: clear, stats (see agentspec cache --help)` + "\n"},
		// A flag of the command meant, which the one written lacks, does
		// not hide the word.
		{[]string{"validat", "agent.yaml", "--model", "test"}, `agentspec: unknown command "validat" for "agentspec" (did you mean "validate"?); valid commands: ` + root + " (see agentspec --help)\n"},
		{[]string{"rnu", "agent.yaml", "-o", "json"}, `agentspec: unknown command "rnu" for "agentspec" (did you mean "run"?); valid commands: ` + root + " (see agentspec --help)\n"},
		{[]string{"cache", "stat", "-o", "json"}, `agentspec: unknown command "stat" for "agentspec cache" (did you mean "stats"?); valid commands: clear, stats (see agentspec cache --help)` + "\n"},
		// Nor does --help, which is the parent's to give.
		{[]string{"validat", "--help"}, `agentspec: unknown command "validat" for "agentspec" (did you mean "validate"?); valid commands: ` + root + " (see agentspec --help)\n"},
		{[]string{"cache", "stat", "-h"}, `agentspec: unknown command "stat" for "agentspec cache" (did you mean "stats"?); valid commands: clear, stats (see agentspec cache --help)` + "\n"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := runCLI(t, "", tc.args...)
			assert.Equal(t, exitUsage, code)
			assert.Empty(t, stdout)
			assert.Equal(t, tc.want, stderr)
		})
	}
}

// A wrong number of arguments, or a flag cobra cannot read, says how the
// command is used and where its help is, rather than only counting: "accepts
// 1 arg(s), received 0" does not tell a newcomer which argument.
func TestUsageErrorsShowTheUsage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run"}, "agentspec: accepts between 1 and 2 arg(s), received 0 (usage: agentspec run SPEC|- [-] [flags]; see agentspec run --help)\n"},
		{[]string{"graph"}, "agentspec: accepts 1 arg(s), received 0 (usage: agentspec graph PIPELINE [flags]; see agentspec graph --help)\n"},
		{[]string{"validate"}, "agentspec: requires at least 1 arg(s), only received 0 (usage: agentspec validate FILE|-... [flags]; see agentspec validate --help)\n"},
		{[]string{"version", "x"}, "agentspec: unknown command \"x\" for \"agentspec version\" (usage: agentspec version [flags]; see agentspec version --help)\n"},
		{[]string{"run", "--bogus", "agent.yaml"}, "agentspec: unknown flag: --bogus (usage: agentspec run SPEC|- [-] [flags]; see agentspec run --help)\n"},
		{[]string{"cache", "stats", "--bogus"}, "agentspec: unknown flag: --bogus (usage: agentspec cache stats [--dir DIR] [-o json] [flags]; see agentspec cache stats --help)\n"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := runCLI(t, "", tc.args...)
			assert.Equal(t, exitUsage, code)
			assert.Empty(t, stdout)
			assert.Equal(t, tc.want, stderr)
		})
	}
}

// A flag the command does not have is told with the one it most likely
// misspells, and a long flag written with one dash, as Go's flag package
// takes it (-model, -var), is told to take two: pflag read -var as -v and an
// unknown -a, and said only that.
func TestUnknownFlagSuggestsTheNearest(t *testing.T) {
	t.Parallel()
	const run = "usage: agentspec run SPEC|- [-] [flags]; see agentspec run --help)\n"
	const validate = "usage: agentspec validate FILE|-... [flags]; see agentspec validate --help)\n"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "agent.yaml", "--modle", "test"}, "agentspec: unknown flag: --modle (did you mean --model?; " + run},
		{[]string{"run", "agent.yaml", "--Model", "test"}, "agentspec: unknown flag: --Model (did you mean --model?; " + run},
		{[]string{"run", "agent.yaml", "--no-cahce"}, "agentspec: unknown flag: --no-cahce (did you mean --no-cache?; " + run},
		{[]string{"run", "agent.yaml", "-model", "test"}, "agentspec: unknown shorthand flag: 'm' in -model (did you mean --model? a flag's name takes two dashes; " + run},
		{[]string{"run", "agent.yaml", "-workspace=."}, "agentspec: unknown shorthand flag: 'w' in -workspace=. (did you mean --workspace? a flag's name takes two dashes; " + run},
		{[]string{"validate", "agent.yaml", "-var", "x=1"}, "agentspec: unknown shorthand flag: 'a' in -ar (did you mean --var? a flag's name takes two dashes; " + validate},
		{[]string{"cache", "stats", "--drr", "x"}, "agentspec: unknown flag: --drr (did you mean --dir?; usage: agentspec cache stats [--dir DIR] [-o json] [flags]; see agentspec cache stats --help)\n"},
		{[]string{"run", "agent.yaml", "-x"}, "agentspec: unknown shorthand flag: 'x' in -x (" + run},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := runCLI(t, "", tc.args...)
			assert.Equal(t, exitUsage, code)
			assert.Empty(t, stdout)
			assert.Equal(t, tc.want, stderr)
		})
	}
}

// A --workspace that is missing or a file is named by its flag, as
// --workspace-root and --dir are, in every command that takes it.
func TestWorkspaceFlagThatIsNoDirectory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	spec := writeFile(t, filepath.Join(dir, "agent.yaml"), "model: test\n")
	missing := filepath.Join(dir, "missing")
	for _, args := range [][]string{
		{"run", spec},
		{"validate", spec},
		{"tools", spec},
		{"tool", "--spec", spec, "read_file"},
		{"mcp", spec},
	} {
		code, stdout, stderr := runCLI(t, "", append(args, "--workspace", missing)...)
		assert.Equal(t, exitUsage, code, args)
		assert.Empty(t, stdout, args)
		assert.Equal(t, "agentspec: --workspace "+missing+" does not exist\n", stderr, args)

		code, _, stderr = runCLI(t, "", append(args, "--workspace", spec)...)
		assert.Equal(t, exitUsage, code, args)
		assert.Equal(t, "agentspec: --workspace "+spec+" is not a directory\n", stderr, args)
	}
}

// -output, one dash, is read by the flag parser as -o with the value
// "utput": the refusal says that, and names --output.
func TestOneDashOutputIsToldItsTwoDashes(t *testing.T) {
	good := filepath.Join(t.TempDir(), "agent.yaml")
	require.NoError(t, os.WriteFile(good, []byte("model: test\ninstructions: Say hi.\n"), 0o644))
	code, _, stderr := runCLI(t, "", "validate", "-output", "json", good)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "-output is read as -o utput: did you mean --output? a flag's name takes two dashes")
	code, _, stderr = runCLI(t, "", "validate", "-output=json", good)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "-output=json is read as -o utput=json: did you mean --output=json? a flag's name takes two dashes")
}
