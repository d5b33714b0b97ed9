package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// validate refuses what run would refuse before its first model request,
// and reports it at the same position.
func TestValidateRefusesWhatRunRefuses(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "docs", "a.md"), "hello\n")
	writeFile(t, filepath.Join(dir, "broken.yaml"), "turns:\n  - tool_calls: 3\n")
	cases := []struct {
		name, src string
		want      []string // substrings of stderr, in order
	}{
		{"tool-name collision", "model: test\ncapabilities:\n  - FileSystem: {read_only: true}\n  - FileSystem: ./docs\n",
			[]string{`SPEC:4:5: capabilities[1]: FileSystem offers tools named "read_file", "list_directory"`,
				`as FileSystem at SPEC:3:5 (capabilities[0]) does`, `wrap one of them in PrefixTools`}},
		{"missing script", "model: script:nope.yaml\n",
			[]string{`SPEC:1:8: cannot read the script file ` + filepath.Join(dir, "nope.yaml") + `: no such file`}},
		{"malformed script", "model: script:broken.yaml\n",
			[]string{`SPEC:1:8: invalid script file`, filepath.Join(dir, "broken.yaml") + `:2:17: `}},
		// A spec without a model is the one difference: pydantic-ai takes
		// the model at run time, so validate notes it (TestModelFlag) while
		// run without --model refuses it.
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			file := writeFile(t, filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")+".yaml"), c.src)
			code, _, vStderr := runCLI(t, "", "validate", "--workspace", dir, file)
			assert.Equal(t, 1, code, vStderr)
			code, _, rStderr := runCLI(t, "", "run", "-q", "--workspace", dir, file)
			assert.Equal(t, 2, code, "a spec run refuses is a spec error: %s", rStderr)
			for _, w := range c.want {
				w = strings.ReplaceAll(w, "SPEC", file)
				assert.Contains(t, vStderr, w)
				assert.Contains(t, rStderr, w)
			}
		})
	}
}

func TestValidateVars(t *testing.T) {
	dir := t.TempDir()
	file := writeFile(t, filepath.Join(dir, "agent.yaml"), "model: test\ninstructions: Focus on {{focus}}.\n")

	code, _, stderr := runCLI(t, "", "validate", file)
	assert.Equal(t, 0, code, "without --var the placeholders are not checked: %s", stderr)

	code, _, stderr = runCLI(t, "", "validate", "--var", "focus=errors", file)
	assert.Equal(t, 0, code, stderr)

	code, _, stderr = runCLI(t, "", "validate", "--var", "fokus=errors", file)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, `--var fokus: the spec has no {{fokus}} placeholder; it has {{focus}}`)

	code, _, stderr = runCLI(t, "", "validate", "--var", "focus=x", "--var", "extra=1", file)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, `--var extra`)

	// A capability's placeholders are the spec's, not the instructions'.
	file3 := writeFile(t, filepath.Join(dir, "caps.yaml"), "model: test\ninstructions: Focus on {{focus}}.\n"+
		"capabilities:\n  - FileSystem: {allowed_patterns: ['{{pat}}']}\n")
	code, _, stderr = runCLI(t, "", "validate", "--workspace", dir, "--var", "focus=x", "--var", "pat=*.go", "--var", "extra=1", file3)
	assert.Equal(t, 1, code)
	assert.Equal(t, file3+": --var extra: the spec has no {{extra}} placeholder; it has {{focus}}, {{pat}}\n", stderr)
	code, _, stderr = runCLI(t, "", "validate", "--workspace", dir, "--var", "focus=x", file3)
	assert.Equal(t, 1, code)
	assert.Equal(t, file3+":4:38: capabilities[0]: the options use {{pat}}, but no value was given for it (set it with --var pat=VALUE)\n", stderr)

	file2 := writeFile(t, filepath.Join(dir, "two.yaml"), "model: test\ninstructions: [\"{{a}}\", \"{{b}}\"]\n")
	code, _, stderr = runCLI(t, "", "validate", "--var", "a=1", file2)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, `instructions use variable "b", but no value was given (set it with --var b=VALUE)`)
}

// A backslash escapes a placeholder, as in Handlebars: instructions can
// show the model a template, \{{name}}, which run sends as {{name}} and
// which needs no --var (one given for it is refused as unknown).
func TestEscapedPlaceholderNeedsNoVar(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "turns.yaml"), "turns:\n  - expect: {system_contains: 'Reply with {{name}} replaced, for me.'}\n    text: done\n")
	file := writeFile(t, filepath.Join(dir, "agent.yaml"), "model: script:turns.yaml\ninstructions: Reply with \\{{name}} replaced, for {{who}}.\n")

	code, _, stderr := runCLI(t, "", "validate", "--var", "who=me", file)
	assert.Equal(t, 0, code, stderr)
	code, stdout, stderr := runCLI(t, "", "run", "--workspace", dir, "--var", "who=me", file)
	assert.Equal(t, 0, code, stderr)
	assert.Equal(t, "done\n", stdout)

	code, _, stderr = runCLI(t, "", "run", "--workspace", dir, "--var", "who=me", "--var", "name=x", file)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "--var name: the spec has no {{name}} placeholder; it has {{who}}")
}

func TestWarningsForKeysWithoutEffect(t *testing.T) {
	dir := t.TempDir()
	file := writeFile(t, filepath.Join(dir, "agent.yaml"), "model: test\ninstrument: true\nend_strategy: early\n"+
		"x-defaults: &ro {read_only: true}\ncapabilities:\n  - FileSystem: {<<: *ro, id: fs, defer_loading: true}\n")
	code, _, stderr := runCLI(t, "", "validate", "--workspace", dir, file)
	require.Equal(t, 0, code, "warnings do not make a spec invalid: %s", stderr)
	assert.Contains(t, stderr, file+":2:1: warning: instrument: has no effect in agentspec")
	assert.Contains(t, stderr, file+":3:1: warning: end_strategy: has no effect in agentspec")
	assert.Contains(t, stderr, file+":6:35: warning: capabilities[0].FileSystem.defer_loading: has no effect in agentspec")

	code, stdout, stderr := runCLI(t, "", "run", "--workspace", dir, file)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "warning: instrument: has no effect")
	assert.Contains(t, stdout, `"list_directory"`)
}

func TestValidateJSONReportsWarnings(t *testing.T) {
	dir := t.TempDir()
	file := writeFile(t, filepath.Join(dir, "agent.json"), `{"model": "test", "end_strategy": "early"}`)
	code, stdout, stderr := runCLI(t, "", "validate", "--format", "json", file)
	require.Equal(t, 0, code, stderr)
	var report struct {
		Valid bool
		Files []struct {
			Valid    bool
			Warnings []problem
		}
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &report), stdout)
	assert.True(t, report.Valid)
	require.Len(t, report.Files, 1)
	assert.Equal(t, []problem{{File: file, Line: 1, Column: 19,
		Message: "warning: end_strategy: has no effect in agentspec: an answer never comes with tool calls, so every tool call the model makes is run"}},
		report.Files[0].Warnings)
}

// A name given twice with --var takes its last value, as terraform's -var
// and helm's --set do, so that a wrapper script's defaults are overridden
// by the flags after them: in the instructions a run sends, in the options
// validate builds a capability with, and in a pipeline's inputs. Every
// command taking --var says so.
func TestRepeatedVarTakesTheLastValue(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "turns.yaml"), "turns:\n  - expect: {system_contains: 'Review second.'}\n    text: done\n")
	file := writeFile(t, filepath.Join(dir, "agent.yaml"), "model: script:turns.yaml\ninstructions: Review {{repo}}.\n")
	code, stdout, stderr := runCLI(t, "", "run", "--workspace", dir, "--var", "repo=first", "--var", "repo=second", file)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, "done\n", stdout)

	require.NoError(t, os.Mkdir(filepath.Join(dir, "there"), 0o755))
	caps := writeFile(t, filepath.Join(dir, "caps.yaml"), "model: test\ncapabilities:\n  - FileSystem: {root_dir: '{{root}}'}\n")
	code, _, stderr = runCLI(t, "", "validate", "--workspace", dir, "--var", "root=missing", "--var", "root=there", caps)
	assert.Equal(t, 0, code, "the root that exists is the last one: %s", stderr)
	code, _, stderr = runCLI(t, "", "validate", "--workspace", dir, "--var", "root=there", "--var", "root=missing", caps)
	assert.Equal(t, 1, code, "the root that does not exist is the last one: %s", stderr)
	assert.Contains(t, stderr, "missing")

	pdir := pipelineDir(t, map[string]string{
		"pipeline.yaml": "inputs:\n  type: object\n  properties: {n: {type: integer}}\nsteps:\n  only:\n    input: \"n={{inputs.n}}\"\n    spec: {model: \"script:answer.yaml\"}\n",
		"answer.yaml":   "turns:\n  - expect: {message_contains: n=7}\n    text: fine\n",
	})
	code, stdout, stderr = runCLI(t, "", "run", filepath.Join(pdir, "pipeline.yaml"), "--workspace", t.TempDir(), "--var", "n=1", "--var", "n=7", "-q")
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, "fine\n", stdout)

	for _, command := range []string{"run", "validate", "batch", "submit", "tools", "tool", "mcp"} {
		_, help, _ := runCLI(t, "", command, "--help")
		help = strings.Join(strings.Fields(help), " ")
		assert.Contains(t, help, "a name given again takes its last value", command)
	}
}

// A placeholder of the instructions without a value is told at its {{, as
// one of a capability's options is, by run and by validate --var alike:
// in a plain, quoted or block scalar and in a list's element, each name at
// the first place the instructions write it. (The description's {{x}}
// takes the --var validate needs to check placeholders at all.)
func TestMissingInstructionVarIsAtThePlaceholder(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ name, instructions, want string }{
		{"plain", "instructions: Review {{who}}.\n", "SPEC:3:22: "},
		{"double-quoted", "instructions: \"Say \\\"hi\\\" to {{who}}\"\n", "SPEC:3:30: "},
		{"single-quoted", "instructions: 'it''s {{ who }}'\n", "SPEC:3:22: "},
		{"literal block", "instructions: |\n  First line.\n  Then {{who}} and {{who}}.\n", "SPEC:5:8: "},
		{"folded block", "instructions: >-\n  First {{x}}.\n\n    {{who}} indented.\n", "SPEC:6:5: "},
		{"list", "instructions:\n  - Read {{x}}.\n  - \"Then {{who}}\"\n  - Again {{who}}.\n", "SPEC:5:11: "},
		// Where the source does not read as the value (an escape of
		// another form), the scalar's start is told.
		{"after an escape", "instructions: \"\\tthen {{who}}\"\n", "SPEC:3:15: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := writeFile(t, filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".yaml"),
				"model: test\ndescription: About {{x}}.\n"+tc.instructions)
			want := strings.ReplaceAll(tc.want, "SPEC", file) + `instructions use variable "who", but no value was given (set it with --var who=VALUE)` + "\n"
			code, _, stderr := runCLI(t, "", "validate", "--var", "x=1", file)
			assert.Equal(t, 1, code, stderr)
			assert.Equal(t, want, stderr)
			code, _, stderr = runCLI(t, "", "run", "-q", "--workspace", dir, "--var", "x=1", file)
			assert.Equal(t, exitUsage, code, stderr)
			assert.Equal(t, want, stderr)
		})
	}

	// Two names: each its own problem, in the order of the file.
	file := writeFile(t, filepath.Join(dir, "two.yaml"), "model: test\ninstructions: [\"{{b}}\", \"{{a}} {{b}}\"]\n")
	code, _, stderr := runCLI(t, "", "run", "-q", "--workspace", dir, file)
	assert.Equal(t, exitUsage, code, stderr)
	assert.Equal(t, file+`:2:17: instructions use variable "b", but no value was given (set it with --var b=VALUE)`+"\n"+
		file+`:2:26: instructions use variable "a", but no value was given (set it with --var a=VALUE)`+"\n", stderr)
}
