package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pipelineDir writes files (slash paths) into a fresh directory.
func pipelineDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		writeFile(t, filepath.Join(dir, filepath.FromSlash(name)), content)
	}
	return dir
}

// reviewFix is the triage -> fix each file -> review shape, offline: the
// test model answers each step from its output_schema.
var reviewFix = map[string]string{
	"pipeline.yaml": `version: 1
name: fix-issues
inputs:
  type: object
  properties: {issue: {type: string}}
  required: [issue]
steps:
  triage:
    spec: agents/triage.yaml
    input: "{{inputs.issue}}"
  fix:
    for_each: "{{steps.triage.output.files}}"
    as: file
    spec: agents/fix.yaml
    vars: {path: "{{file.path}}", problem: "{{file.problem}}"}
    max_parallel: 2
  review:
    spec: agents/review.yaml
    vars: {changes: "{{steps.fix.outputs}}"}
    when: "{{steps.triage.output.files}} != []"
outputs:
  approved: "{{steps.review.output.approved}}"
  changed: "{{steps.fix.outputs}}"
`,
	"agents/triage.yaml": `model: test
instructions: List the files to fix.
output_schema:
  type: object
  properties:
    files:
      type: array
      items:
        type: object
        properties: {path: {type: string}, problem: {type: string}}
        required: [path, problem]
  required: [files]
`,
	"agents/fix.yaml": `model: test
instructions: Fix {{problem}} in {{path}}.
output_schema:
  type: object
  properties: {path: {type: string}, summary: {type: string}}
  required: [path, summary]
`,
	"agents/review.yaml": `model: test
instructions: Review {{changes}}.
output_schema:
  type: object
  properties: {approved: {type: boolean}, notes: {type: string}}
  required: [approved, notes]
`,
}

func TestRunPipelineReviewFix(t *testing.T) {
	t.Parallel()
	dir := pipelineDir(t, reviewFix)
	events := filepath.Join(t.TempDir(), "events.jsonl")
	code, stdout, stderr := runCLI(t, "", "run", filepath.Join(dir, "pipeline.yaml"), "--workspace", t.TempDir(),
		"--var", "issue=crash on empty input", "--events", events, "-j", "2")
	require.Equal(t, 0, code, stderr)

	var out map[string]any
	require.NoError(t, json.Unmarshal([]byte(stdout), &out), stdout)
	assert.Contains(t, out, "approved")
	changed, ok := out["changed"].([]any)
	require.True(t, ok, "fix's outputs: %s", stdout)
	assert.NotEmpty(t, changed)
	assert.Regexp(t, `(?m)^triage started$`, stderr)
	assert.Regexp(t, `(?m)^fix\[0\] done in [0-9.]+m?s$`, stderr)
	assert.Regexp(t, `(?m)^review done in `, stderr)
	assert.Regexp(t, `(?m)^3 steps: 3 ok, 0 failed, 0 skipped, 0 not run; `, stderr)

	data, err := os.ReadFile(events)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	assert.True(t, strings.HasPrefix(lines[0], `{"kind":"pipeline.start"`), lines[0])
	assert.True(t, strings.HasPrefix(lines[len(lines)-1], `{"kind":"pipeline.end"`), lines[len(lines)-1])
	assert.Contains(t, string(data), `{"kind":"run.end","step":"fix","item":0,"ok":true`)

	code, stdout, stderr = runCLI(t, "", "run", filepath.Join(dir, "pipeline.yaml"), "--workspace", t.TempDir(),
		"--var", "issue=x", "-q")
	require.Equal(t, 0, code, stderr)
	assert.Empty(t, stderr, "-q prints no progress")
	assert.NotEmpty(t, stdout)
}

// failing has a step that fails, one that needs it and one on its own.
var failing = map[string]string{
	"pipeline.yaml": `steps:
  first:
    spec: {model: "script:fail.yaml"}
  second:
    input: "{{steps.first.output}}"
    spec: {model: "script:answer.yaml"}
  alone:
    spec: {model: "script:answer.yaml"}
`,
	"fail.yaml":   "turns:\n  - error: the provider is down\n",
	"answer.yaml": "turns:\n  - text: fine\n",
}

func TestRunPipelineFailure(t *testing.T) {
	t.Parallel()
	dir := pipelineDir(t, failing)
	code, stdout, stderr := runCLI(t, "", "run", filepath.Join(dir, "pipeline.yaml"), "--workspace", t.TempDir(), "-o", "json")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "step first failed: ")
	assert.Contains(t, stderr, "the provider is down")
	assert.Regexp(t, `(?m)^second not run$`, stderr)

	var env struct {
		Outputs any                       `json:"outputs"`
		Steps   map[string]map[string]any `json:"steps"`
		Usage   map[string]any            `json:"usage"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &env), "the envelope is printed on failure too: %s", stdout)
	assert.Nil(t, env.Outputs)
	assert.Equal(t, false, env.Steps["first"]["ok"])
	assert.Equal(t, true, env.Steps["second"]["not_run"])
	assert.Equal(t, true, env.Steps["alone"]["ok"])
	assert.Equal(t, "fine", env.Steps["alone"]["output"])
	assert.Contains(t, env.Usage, "requests")

	code, stdout, _ = runCLI(t, "", "run", filepath.Join(dir, "pipeline.yaml"), "--workspace", t.TempDir(), "-q")
	assert.Equal(t, 1, code)
	assert.Empty(t, stdout, "no outputs when a step failed")
}

func TestRunPipelineEnvelope(t *testing.T) {
	t.Parallel()
	dir := pipelineDir(t, map[string]string{
		"pipeline.yaml": `steps:
  only:
    input: "{{inputs.input}}"
    spec: {model: "script:answer.yaml"}
`,
		"answer.yaml": "turns:\n  - expect: {message_contains: hello}\n    text: fine\n",
	})
	code, stdout, stderr := runCLI(t, "", "run", filepath.Join(dir, "pipeline.yaml"), "--workspace", t.TempDir(),
		"--input", "hello", "-o", "json", "-q")
	require.Equal(t, 0, code, stderr)
	var env map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(stdout), &env))
	assert.ElementsMatch(t, []string{"outputs", "steps", "usage"}, keys(env))
	assert.JSONEq(t, `"fine"`, string(env["outputs"]), "without outputs:, the last step's output")
	assert.JSONEq(t, `{"only": {"ok": true, "cached": false, "skipped": false, "output": "fine", "error": null,
		"usage": {"requests": 1, "requests_without_usage": 1, "input_tokens": 0, "output_tokens": 0, "tool_calls": 0, "elapsed_ms": 0}}}`,
		string(regexp.MustCompile(`"elapsed_ms":\s*[0-9.]+`).ReplaceAll(env["steps"], []byte(`"elapsed_ms":0`))))
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestRunPipelineInputs(t *testing.T) {
	t.Parallel()
	dir := pipelineDir(t, map[string]string{
		"pipeline.yaml": `inputs:
  type: object
  properties: {n: {type: integer}, loud: {type: boolean}}
  required: [n]
steps:
  only:
    input: "n={{inputs.n}} loud={{inputs.loud}}"
    spec: {model: "script:answer.yaml"}
`,
		"answer.yaml": "turns:\n  - expect: {message_contains: n=7 loud=true}\n    text: fine\n",
	})
	file := filepath.Join(dir, "pipeline.yaml")
	code, stdout, stderr := runCLI(t, "", "run", file, "--workspace", t.TempDir(), "--var", "n=7", "--var", "loud=true", "-q")
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, "fine\n", stdout, "a text answer, as run prints it")

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--var", "n=seven"}, `--var n: input n is an integer, and "seven" is not one`},
		{[]string{"--var", "loud=true"}, "missing property 'n'"},
		{[]string{"--var", "n=1", "--record", "x.json"}, "not for pipelines"},
		// An input the pipeline neither lists nor references would change
		// nothing: a misspelt one is refused, not run with its default.
		{[]string{"--var", "n=1", "--var", "lowd=true"}, "--var lowd: the pipeline's inputs schema does not list lowd and no step uses inputs.lowd (its inputs: loud, n)"},
		{[]string{"--var", "n=1", "--input", "hi"}, "--input fills inputs.input, which the pipeline's inputs schema does not list and no step uses (its inputs: loud, n)"},
	} {
		code, _, stderr := runCLI(t, "", append([]string{"run", file, "--workspace", t.TempDir()}, tc.args...)...)
		assert.Equal(t, 2, code, tc.args)
		assert.Contains(t, stderr, tc.want)
	}
}

// --var gives each input the type the static checks read from the inputs
// schema: through $ref, a list of types, anyOf, enum and
// additionalProperties, not only a property's own type: string; a string
// input keeps what was given, digits or not.
func TestRunPipelineInputsTypedAsChecked(t *testing.T) {
	t.Parallel()
	dir := pipelineDir(t, map[string]string{
		"pipeline.yaml": `inputs:
  type: object
  $defs: {count: {type: integer}}
  properties:
    n: {$ref: "#/$defs/count"}
    m: {type: [integer, "null"]}
    k: {anyOf: [{type: number}, {type: boolean}]}
    e: {enum: [1, 2, 3]}
    code: {type: string}
  additionalProperties: {type: array}
  required: [n, m, k, e, code, list]
steps:
  only:
    input: "n={{inputs.n}} m={{inputs.m}} k={{inputs.k}} e={{inputs.e}} code={{inputs.code}} list={{inputs.list}}"
    when: "{{inputs.n}} + {{inputs.e}} == 5 && {{inputs.m}} == null && {{inputs.code}} == '007'"
    spec: {model: "script:answer.yaml"}
`,
		"answer.yaml": "turns:\n  - expect: {message_contains: 'n=3 m=null k=true e=2 code=007 list=[1,\"a\"]'}\n    text: fine\n",
	})
	file := filepath.Join(dir, "pipeline.yaml")
	code, stdout, stderr := runCLI(t, "", "run", file, "--workspace", t.TempDir(), "-q", "-o", "json",
		"--var", "n=3", "--var", "m=null", "--var", "k=true", "--var", "e=2", "--var", "code=007", "--var", `list=[1,"a"]`)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, `"output": "fine"`, "the step ran, its when true")

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--var", "n=three"}, `--var n: input n is an integer, and "three" is not one`},
		{[]string{"--var", "n=3.5"}, `--var n: input n is an integer, and "3.5" is not one`},
		{[]string{"--var", "m=x"}, `--var m: input m is an integer or null, and "x" is not one`},
		{[]string{"--var", "k=[]"}, `--var k: input k is a boolean or number, and "[]" is not one`},
		{[]string{"--var", "list={}"}, `--var list: input list is an array, and "{}" is not one`},
	} {
		code, _, stderr := runCLI(t, "", append([]string{"run", file, "--workspace", t.TempDir()}, tc.args...)...)
		assert.Equal(t, 2, code, tc.args)
		assert.Contains(t, stderr, tc.want)
	}
}

func TestRunPipelineWhenSkips(t *testing.T) {
	t.Parallel()
	dir := pipelineDir(t, map[string]string{
		"pipeline.yaml": `inputs:
  type: object
  properties: {go: {type: boolean}}
  required: [go]
steps:
  gate:
    when: "{{inputs.go}}"
    spec: {model: "script:answer.yaml"}
  after:
    input: "{{steps.gate.output}}"
    spec: {model: "script:answer.yaml"}
`,
		"answer.yaml": "turns:\n  - text: fine\n",
	})
	code, stdout, stderr := runCLI(t, "", "run", filepath.Join(dir, "pipeline.yaml"), "--workspace", t.TempDir(),
		"--var", "go=false", "-o", "json")
	require.Equal(t, 0, code, "skipped is not failed: %s", stderr)
	assert.NotContains(t, stderr, "started")
	assert.Regexp(t, `(?m)^gate skipped$`, stderr)
	assert.Regexp(t, `(?m)^after skipped$`, stderr)
	var env struct {
		Steps map[string]map[string]any `json:"steps"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &env))
	assert.Equal(t, true, env.Steps["after"]["skipped"])
}

// A when that fails as it runs is told at its place in the pipeline file,
// in the summary and in the -o json envelope, as a load's errors are.
func TestRunPipelineWhenErrorIsPlaced(t *testing.T) {
	t.Parallel()
	dir := pipelineDir(t, map[string]string{
		"pipeline.yaml": `inputs:
  type: object
  properties: {d: {type: integer}}
  required: [d]
steps:
  gate:
    when: "10 / {{inputs.d}} > 1"
    spec: {model: "script:answer.yaml"}
`,
		"answer.yaml": "turns:\n  - text: fine\n",
	})
	file := filepath.Join(dir, "pipeline.yaml")
	want := file + ":7:15: steps.gate.when: division by zero"
	code, _, stderr := runCLI(t, "", "run", file, "--workspace", t.TempDir(), "--var", "d=0")
	assert.Equal(t, 1, code, stderr)
	assert.Contains(t, stderr, "step gate failed: "+want)
	code, stdout, stderr := runCLI(t, "", "run", file, "--workspace", t.TempDir(), "--var", "d=0", "-o", "json")
	assert.Equal(t, 1, code, stderr)
	var env struct {
		Steps map[string]struct {
			Error string `json:"error"`
		} `json:"steps"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &env), stdout)
	assert.Equal(t, want, env.Steps["gate"].Error)
}

func TestRunPipelineResumeByCache(t *testing.T) {
	t.Parallel()
	dir := pipelineDir(t, map[string]string{
		"pipeline.yaml": `cache: {dir: cache}
steps:
  extract:
    for_each: {glob: "inbox/*.md"}
    input: "{{item}}"
    spec: {model: "script:extract.yaml"}
  merge:
    input: "{{steps.extract.outputs}}"
    spec: {model: "script:merge.yaml"}
`,
		"extract.yaml": "turns:\n  - text: facts\n",
		"merge.yaml":   "turns:\n  - text: report\n",
	})
	ws := pipelineDir(t, map[string]string{"inbox/a.md": "# A", "inbox/b.md": "# B"})
	run := func() (fresh, cached []string) {
		t.Helper()
		code, _, stderr := runCLI(t, "", "run", filepath.Join(dir, "pipeline.yaml"), "--workspace", ws)
		require.Equal(t, 0, code, stderr)
		for _, m := range regexp.MustCompile(`(?m)^(\S+) done in \S+(, cached)?$`).FindAllStringSubmatch(stderr, -1) {
			if m[2] != "" {
				cached = append(cached, m[1])
			} else {
				fresh = append(fresh, m[1])
			}
		}
		return fresh, cached
	}
	fresh, cached := run()
	assert.ElementsMatch(t, []string{"extract[0]", "extract[1]", "merge"}, fresh)
	assert.Empty(t, cached)

	writeFile(t, filepath.Join(ws, "inbox", "c.md"), "# C")
	fresh, cached = run()
	assert.ElementsMatch(t, []string{"extract[2]", "merge"}, fresh, "the new document's job and its consumer call a model")
	assert.ElementsMatch(t, []string{"extract[0]", "extract[1]"}, cached)
}

// The events log run writes in the workspace is no item of a glob that
// matches it: a second run fans out over the same documents, and replays.
func TestRunPipelineGlobLeavesOutTheEventsLog(t *testing.T) {
	t.Parallel()
	ws := pipelineDir(t, map[string]string{
		"pipeline.yaml": `cache: {dir: .cache}
steps:
  extract:
    for_each: {glob: "**/*.jsonl"}
    input: "{{item}}"
    spec: {model: "script:extract.yaml"}
`,
		"extract.yaml":  "turns:\n  - text: facts\n",
		"inbox/a.jsonl": "{}",
	})
	for run := range 2 {
		code, stdout, stderr := runCLI(t, "", "run", filepath.Join(ws, "pipeline.yaml"), "--workspace", ws,
			"--events", filepath.Join(ws, "events.jsonl"))
		require.Equal(t, 0, code, stderr)
		assert.Equal(t, `["facts"]`+"\n", stdout, "run %d: inbox/a.jsonl alone", run)
		if run == 1 {
			assert.Contains(t, stderr, "extract[0] done in", "replayed")
			assert.Contains(t, stderr, ", cached\n")
		}
	}
}

func TestPipelineLoadErrors(t *testing.T) {
	t.Parallel()
	files := map[string]string{}
	for k, v := range reviewFix {
		files[k] = v
	}
	files["pipeline.yaml"] = strings.Replace(reviewFix["pipeline.yaml"], "output.files}}\"\n    as:", "output.file}}\"\n    as:", 1)
	dir := pipelineDir(t, files)
	file := filepath.Join(dir, "pipeline.yaml")
	want := file + ":12:16: steps.triage.output.file: triage's output_schema has no property 'file'; did you mean 'files'?"

	code, _, stderr := runCLI(t, "", "validate", file)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, want+"\n")

	code, stdout, stderr := runCLI(t, "", "run", file, "--var", "issue=x", "--workspace", t.TempDir())
	assert.Equal(t, 2, code, "a pipeline that does not load")
	assert.Contains(t, stderr, want+"\n")
	assert.Empty(t, stdout)

	code, _, stderr = runCLI(t, "", "validate", filepath.Join(pipelineDir(t, reviewFix), "pipeline.yaml"), "-v")
	assert.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "1 of 1 file valid")
}

// validate checks each step's spec as it checks a spec: what run would
// refuse before its first model request.
func TestValidatePipelineChecksSteps(t *testing.T) {
	t.Parallel()
	dir := pipelineDir(t, map[string]string{
		"pipeline.yaml": `steps:
  a:
    spec: {instructions: hi}
  b:
    spec: {model: "script:missing.yaml"}
`,
	})
	file := filepath.Join(dir, "pipeline.yaml")
	code, _, stderr := runCLI(t, "", "validate", file, "--workspace", t.TempDir())
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, file+":2:3: step a: note: the spec names no model; give it at run time")
	assert.Contains(t, stderr, file+":5:19: cannot read the script file ")
}

// Two steps that run one spec file share its problems, told once by
// validate and by run, as the loader tells the file's own mistakes once.
func TestPipelineStepsOfOneSpecTellItsProblemOnce(t *testing.T) {
	t.Parallel()
	dir := pipelineDir(t, map[string]string{
		"pipeline.yaml": "steps:\n  a: {spec: agents/x.yaml}\n  b: {spec: agents/x.yaml}\n",
		"agents/x.yaml": "model: test\ninstructions: hi\ncapabilities:\n  - FileSystem: {root_dir: missing}\n",
	})
	file := filepath.Join(dir, "pipeline.yaml")
	for _, args := range [][]string{{"validate", file}, {"run", file}} {
		code, _, stderr := runCLI(t, "", append(args, "--workspace", dir)...)
		assert.NotZero(t, code, args[0])
		assert.Equal(t, 1, strings.Count(stderr, "root_dir 'missing' does not exist"), "%s: %s", args[0], stderr)
	}
}

// A capability whose options use a placeholder is built once it has a
// value: validate without --var leaves it unbuilt and says so; with --var it
// is built as run builds it, and fails as run would.
func TestValidateTemplatedCapability(t *testing.T) {
	t.Parallel()
	dir := pipelineDir(t, map[string]string{
		"fix.yaml": `model: test
instructions: Fix {{file}}.
capabilities:
  - FileSystem:
      root_dir: "{{package}}"
      allowed_patterns: ["{{file}}"]
`,
		"grades/stats.py": "x = 1\n",
	})
	file := filepath.Join(dir, "fix.yaml")
	code, _, stderr := runCLI(t, "", "validate", file, "--workspace", dir)
	assert.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, file+":4:5: warning: capabilities[0].FileSystem: not built here: its options use {{file}}, {{package}} (--var NAME=VALUE gives their values)")

	code, _, stderr = runCLI(t, "", "validate", file, "--workspace", dir, "--var", "package=grades", "--var", "file=stats.py")
	assert.Equal(t, 0, code, stderr)
	assert.Empty(t, stderr)

	code, _, stderr = runCLI(t, "", "validate", file, "--workspace", dir, "--var", "package=missing", "--var", "file=stats.py")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "root_dir 'missing' does not exist")
}

// run refuses what a step's spec cannot run with before any step starts,
// as run refuses a spec before its first request: exit 2, no step run.
func TestRunPipelineChecksStepsFirst(t *testing.T) {
	t.Parallel()
	dir := pipelineDir(t, map[string]string{
		"pipeline.yaml": `version: 1
steps:
  a:
    spec: {model: test, instructions: hi}
  b:
    needs: [a]
    spec:
      model: test
      instructions: hi
      capabilities:
        - FileSystem: a
        - FileSystem: b
`,
		"a/x": "x", "b/x": "x",
	})
	file := filepath.Join(dir, "pipeline.yaml")
	code, stdout, stderr := runCLI(t, "", "run", file, "--workspace", dir)
	assert.Equal(t, 2, code)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, file+":12:11: capabilities[1]: FileSystem offers tools named")
	assert.NotContains(t, stderr, "a started")
}

// A step whose provider has no key is found before the first step runs,
// not when its turn comes after the others have run (and been paid for):
// every such step is told at once, by name, for run and batch alike. Not
// parallel: it sets the environment.
func TestRunPipelineChecksCredentialsFirst(t *testing.T) {
	for _, v := range []string{"OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"} {
		t.Setenv(v, "")
	}
	dir := pipelineDir(t, map[string]string{
		"pipeline.yaml": `steps:
  first:
    spec: {model: "script:answer.yaml"}
  draft:
    input: "{{steps.first.output}}"
    spec: {model: "openai:gpt-4o-mini"}
  review:
    input: "{{steps.draft.output}}"
    spec: {model: "anthropic:claude-sonnet-4-5"}
`,
		"answer.yaml": "turns:\n  - text: fine\n",
	})
	file := filepath.Join(dir, "pipeline.yaml")
	code, stdout, stderr := runCLI(t, "", "run", file, "--workspace", t.TempDir())
	assert.Equal(t, 1, code, "as run's for a missing key: %s", stderr)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, file+":4:3: steps.draft: openai: API key not set: set the OPENAI_API_KEY environment variable")
	assert.Contains(t, stderr, file+":7:3: steps.review: anthropic: API key not set: set the ANTHROPIC_API_KEY environment variable")
	assert.NotContains(t, stderr, "first started", "no step runs")

	code, stdout, stderr = runCLI(t, "", "batch", file, t.TempDir(), t.TempDir())
	assert.Equal(t, 1, code, stderr)
	assert.Empty(t, stdout)
	assert.Equal(t, 1, strings.Count(stderr, "OPENAI_API_KEY"), "told once, whatever the workspaces: %s", stderr)
	assert.NotContains(t, stderr, "started")

	// validate checks a pipeline without the keys its runs will have.
	code, _, stderr = runCLI(t, "", "validate", file)
	assert.Equal(t, 0, code, stderr)

	// A step that cannot run as written makes it a usage error, told with
	// the missing key.
	require.NoError(t, os.Remove(filepath.Join(dir, "answer.yaml")))
	code, _, stderr = runCLI(t, "", "run", file, "--workspace", t.TempDir())
	assert.Equal(t, 2, code, stderr)
	assert.Contains(t, stderr, "answer.yaml")
	assert.Contains(t, stderr, "steps.draft: openai: API key not set")
}

// Without outputs:, a pipeline prints its last step's answer as run prints
// it: text as it is, a schema's value as JSON.
func TestRunPipelinePrintsTheLastAnswerAsRun(t *testing.T) {
	t.Parallel()
	dir := pipelineDir(t, map[string]string{
		"text.yaml": "version: 1\nsteps:\n  a:\n    spec: {model: test, instructions: hi}\n",
		"json.yaml": "version: 1\nsteps:\n  a:\n    spec:\n      model: test\n      instructions: hi\n" +
			"      output_schema: {type: object, properties: {n: {type: integer}}, required: [n]}\n",
	})
	code, stdout, stderr := runCLI(t, "", "run", "-q", filepath.Join(dir, "text.yaml"), "--workspace", dir)
	require.Equal(t, 0, code, stderr)
	specOut := writeFile(t, filepath.Join(dir, "a.yaml"), "model: test\ninstructions: hi\n")
	_, want, _ := runCLI(t, "", "run", "-q", specOut, "--workspace", dir)
	assert.Equal(t, want, stdout)
	assert.NotContains(t, stdout, `"`)

	code, stdout, stderr = runCLI(t, "", "run", "-q", filepath.Join(dir, "json.yaml"), "--workspace", dir)
	require.Equal(t, 0, code, stderr)
	var v map[string]any
	assert.NoError(t, json.Unmarshal([]byte(stdout), &v), stdout)
}

// tools lists a pipeline's tools step by step; a capability whose options
// use a var the file gives as text is built with it, as every job builds it.
func TestToolsOfAPipeline(t *testing.T) {
	t.Parallel()
	dir := pipelineDir(t, map[string]string{
		"pipeline.yaml": `version: 1
steps:
  a:
    spec:
      model: test
      instructions: hi
      capabilities: [{FileSystem: {tools: [read_file]}}]
  b:
    spec: fix.yaml
    vars: {path: x}
    needs: [a]
`,
		"fix.yaml": "model: test\ninstructions: Fix {{path}}.\ncapabilities:\n  - FileSystem: {allowed_patterns: [\"{{path}}\"]}\n",
	})
	file := filepath.Join(dir, "pipeline.yaml")
	code, stdout, stderr := runCLI(t, "", "tools", file, "--workspace", dir)
	require.Equal(t, 0, code, stderr)
	assert.True(t, strings.HasPrefix(stdout, "step a:\nread_file\n"), stdout)
	assert.Contains(t, stdout, "\n\nstep b:\nread_file\n")
	assert.NotContains(t, stderr, "warning")

	code, stdout, stderr = runCLI(t, "", "tools", "-o", "json", file, "--workspace", dir)
	require.Equal(t, 0, code, stderr)
	var steps []struct {
		Step  string
		Tools []struct{ Name string }
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &steps))
	require.Len(t, steps, 2)
	assert.Equal(t, "a", steps[0].Step)
	assert.Equal(t, "read_file", steps[0].Tools[0].Name)
	assert.Equal(t, "b", steps[1].Step)
	require.NotEmpty(t, steps[1].Tools)
	assert.Equal(t, "read_file", steps[1].Tools[0].Name)
}

// tools lists the tools of a step whose capability is built per job from
// the item's values, as built with those values written as the pipeline
// writes them, or with the workspace where it refuses that, and says so; a capability that reaches a server, which
// could only be listed by starting what a job names, is said to be built
// per job, not listed as offering nothing.
func TestToolsOfAPipelineStepBuiltPerJob(t *testing.T) {
	t.Parallel()
	dir := pipelineDir(t, map[string]string{
		"pipeline.yaml": `version: 1
steps:
  list:
    spec:
      model: test
      output_schema:
        type: object
        properties: {files: {type: array, items: {type: string}}}
        required: [files]
  fix:
    for_each: "{{steps.list.output.files}}"
    as: file
    spec: fix.yaml
    vars: {path: "src/{{file}}"}
  serve:
    spec:
      model: test
      capabilities: [{MCP: {command: ["{{server}}"]}}]
    vars: {server: "{{steps.list.output.files[0]}}"}
`,
		// The second entry's root_dir, src/{{file}}, is no directory: it
		// is built with the workspace in its place, and does not keep the
		// first from being built as the file writes it.
		"fix.yaml": "model: test\ninstructions: Fix {{path}}.\ncapabilities:\n" +
			"  - FileSystem: {tools: [read_file, write_file], allowed_patterns: [\"{{path}}\"]}\n" +
			"  - FileSystem: {tools: [list_directory], root_dir: \"{{path}}\"}\n",
	})
	file := filepath.Join(dir, "pipeline.yaml")
	code, stdout, stderr := runCLI(t, "", "tools", file, "--workspace", dir)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "\n\nstep fix:\nread_file\n", stdout)
	assert.Contains(t, stdout, "\n\nwrite_file\n", stdout)
	assert.Contains(t, stdout, "\n\nlist_directory\n", stdout)
	assert.NotContains(t, stdout, "(not listed: capabilities[1].FileSystem")
	assert.NotContains(t, stdout, "step fix:\n    (no tools)")
	assert.Contains(t, stdout, "\n\nstep serve:\n    (not listed: capabilities[0].MCP, built per job)\n")
	assert.Contains(t, stderr, filepath.Join(dir, "fix.yaml")+":4:5: warning: capabilities[0].FileSystem: built per job, with the step's vars: listed as built with {{path}} as vars writes it, src/{{file}}")
	assert.Contains(t, stderr, filepath.Join(dir, "fix.yaml")+":5:5: warning: capabilities[1].FileSystem: built per job, with the step's vars: listed as built with . (the workspace) for {{path}}, which it refuses as vars writes them")
	assert.Contains(t, stderr, file+":18:22: warning: capabilities[0].MCP: not built here: its options use {{server}} (built per job, with the step's vars)")

	code, stdout, stderr = runCLI(t, "", "tools", "-o", "json", file, "--workspace", dir)
	require.Equal(t, 0, code, stderr)
	var steps []struct {
		Step      string
		Tools     []struct{ Name string }
		NotListed []string `json:"not_listed"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &steps), stdout)
	require.Len(t, steps, 3)
	assert.Equal(t, "fix", steps[1].Step)
	require.Len(t, steps[1].Tools, 3)
	assert.Equal(t, "read_file", steps[1].Tools[0].Name)
	assert.Equal(t, "list_directory", steps[1].Tools[2].Name)
	assert.Empty(t, steps[1].NotListed)
	assert.Equal(t, "serve", steps[2].Step)
	assert.Empty(t, steps[2].Tools)
	assert.Equal(t, []string{"capabilities[0].MCP"}, steps[2].NotListed)
}

func TestBatchPipeline(t *testing.T) {
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
	one := pipelineDir(t, map[string]string{"a.md": "# A"})
	two := pipelineDir(t, map[string]string{"a.md": "# A", "b.md": "# B"})
	code, stdout, stderr := runCLI(t, "", "batch", filepath.Join(dir, "pipeline.yaml"), one, two, "-q")
	require.Equal(t, 0, code, stderr)
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	require.Len(t, lines, 2)
	got := map[string]int{}
	for _, l := range lines {
		var line struct {
			Workspace string                    `json:"workspace"`
			OK        bool                      `json:"ok"`
			Outputs   struct{ Facts []string }  `json:"outputs"`
			Steps     map[string]map[string]any `json:"steps"`
			Error     *string                   `json:"error"`
		}
		require.NoError(t, json.Unmarshal([]byte(l), &line), l)
		assert.True(t, line.OK, l)
		assert.Nil(t, line.Error)
		assert.Contains(t, line.Steps, "extract")
		got[filepath.Base(line.Workspace)] = len(line.Outputs.Facts)
	}
	assert.Equal(t, map[string]int{filepath.Base(one): 1, filepath.Base(two): 2}, got, "one answer per document of each workspace")

	// A workspace whose step fails is a line with ok false; the others go on.
	failDir := pipelineDir(t, failing)
	code, stdout, stderr = runCLI(t, "", "batch", filepath.Join(failDir, "pipeline.yaml"), one, two)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "2 of 2 workspaces failed")
	lines = strings.Split(strings.TrimSpace(stdout), "\n")
	require.Len(t, lines, 2)
	for _, l := range lines {
		assert.Contains(t, l, `"ok":false`)
		assert.Contains(t, l, `step first failed`)
		assert.Contains(t, l, `"not_run":true`)
	}
}

// batch checks a pipeline's steps in every workspace, as run checks them in
// its one, before any step runs in any: a pipeline that cannot run, in
// every workspace or in one, is refused (exit 2) with nothing run.
func TestBatchPipelineChecksStepsFirst(t *testing.T) {
	t.Parallel()
	dir := pipelineDir(t, map[string]string{
		"collide.yaml": `version: 1
steps:
  a:
    spec: {model: test, instructions: hi}
  b:
    needs: [a]
    spec:
      model: test
      instructions: hi
      capabilities:
        - FileSystem: a
        - FileSystem: b
`,
		"rooted.yaml": `version: 1
steps:
  a:
    spec: {model: test, instructions: hi}
  b:
    needs: [a]
    spec:
      model: test
      instructions: hi
      capabilities:
        - FileSystem: {root_dir: sub}
`,
	})
	one := pipelineDir(t, map[string]string{"sub/x": "x", "a/x": "x", "b/x": "x"})
	two := pipelineDir(t, map[string]string{"a/x": "x", "b/x": "x"})

	file := filepath.Join(dir, "collide.yaml")
	code, stdout, stderr := runCLI(t, "", "batch", file, one, two)
	assert.Equal(t, 2, code, stderr)
	assert.Empty(t, stdout, "no workspace ran")
	assert.Contains(t, stderr, file+":12:11: capabilities[1]: FileSystem offers tools named")
	assert.Equal(t, 1, strings.Count(stderr, "FileSystem offers tools named"), "a problem of every workspace is told once: %s", stderr)
	assert.NotContains(t, stderr, "started")

	file = filepath.Join(dir, "rooted.yaml")
	code, stdout, stderr = runCLI(t, "", "batch", file, one, two)
	assert.Equal(t, 2, code, stderr)
	assert.Empty(t, stdout, "no workspace ran, not even the one the pipeline can run in")
	assert.Contains(t, stderr, "workspace "+two+": ")
	assert.Contains(t, stderr, "root_dir 'sub' does not exist")
	assert.NotContains(t, stderr, one+":")
	assert.NotContains(t, stderr, "started")

	code, stdout, stderr = runCLI(t, "", "batch", file, one, "-q")
	assert.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, `"ok":true`)
}

// Ctrl-C stops a pipeline as it stops a run: exit 130, the running job
// stopped, and the envelope says what did not run.
func TestRunPipelineInterrupted(t *testing.T) {
	t.Parallel()
	bin := agentspecBinary(t)
	dir := pipelineDir(t, map[string]string{
		"pipeline.yaml": `steps:
  slow:
    spec: {model: "script:slow.yaml"}
  after:
    input: "{{steps.slow.output}}"
    spec: {model: "script:slow.yaml"}
`,
		"slow.yaml": "turns:\n  - text: done\n    delay: 1m\n",
	})
	cmd := exec.Command(bin, "run", filepath.Join(dir, "pipeline.yaml"), "--workspace", t.TempDir(), "-o", "json")
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	lines := bufio.NewScanner(stderr)
	started := false
	for lines.Scan() {
		if lines.Text() == "slow started" {
			started = true
			break
		}
	}
	if !started {
		_ = cmd.Process.Kill()
		t.Fatal("the pipeline never started its first job")
	}
	require.NoError(t, cmd.Process.Signal(os.Interrupt))
	_, _ = io.Copy(io.Discard, stderr) // to its end, as the process exits: Wait closes the pipe
	err = cmd.Wait()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	assert.Equal(t, 130, exit.ExitCode())
	var env struct {
		Steps map[string]map[string]any `json:"steps"`
	}
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &env), stdout.String())
	assert.Equal(t, false, env.Steps["slow"]["ok"])
	assert.Equal(t, true, env.Steps["after"]["not_run"])
}
