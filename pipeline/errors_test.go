package pipeline

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/spec"
)

// agents are the step specs the error cases' pipelines name.
var agents = map[string]string{
	"agents/triage.yaml": `model: test
instructions: List the files to fix.
output_schema:
  type: object
  properties:
    files:
      type: array
      items: {$ref: '#/$defs/file'}
    count: {type: integer}
  $defs:
    file:
      type: object
      properties:
        path: {type: string}
        problem: {type: string}
`,
	"agents/fix.yaml": `model: test
instructions: Fix {{problem}} in {{path}}.
capabilities:
  - FileSystem: {root_dir: ., allowed_patterns: ['{{path}}']}
`,
	"agents/glob.yaml": `model: test
instructions: Fix {{problem}}.
capabilities:
  - FileSystem: {root_dir: ., allowed_patterns: ['{{path}}']}
`,
	"agents/plain.yaml":  "model: test\ninstructions: Do it.\n",
	"agents/bad.yaml":    "model: test\ninstructons: Do it.\n",
	"agents/nested.yaml": "steps:\n  a: {spec: plain.yaml}\n",
}

// writeAgents writes agents into dir.
func writeAgents(t *testing.T, dir string) {
	t.Helper()
	for name, text := range agents {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
	}
}

// load writes the pipeline src as p.yaml beside agents, loads it and returns
// its errors, paths relative to the directory.
func load(t *testing.T, src string) []string {
	t.Helper()
	dir := t.TempDir()
	writeAgents(t, dir)
	file := filepath.Join(dir, "p.yaml")
	require.NoError(t, os.WriteFile(file, []byte(src), 0o644))
	_, err := LoadFile(file)
	var es spec.Errors
	require.True(t, errors.As(err, &es), "want spec.Errors, got %v", err)
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = strings.ReplaceAll(e.Error(), dir+string(filepath.Separator), "")
	}
	return out
}

func TestLoadErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		src  string
		want []string
	}{
		{
			name: "missing spec file",
			src:  "steps:\n  a:\n    spec: agents/nope.yaml\n",
			want: []string{`p.yaml:3:11: steps.a.spec: agents/nope.yaml: no such file`},
		},
		{
			name: "no spec",
			src:  "steps:\n  a:\n    input: hi\n",
			want: []string{`p.yaml:2:3: steps: missing spec: every step names the agent spec it runs (spec: agents/NAME.yaml, or an inline mapping)`},
		},
		{
			name: "a spec that is not a path or a mapping",
			src:  "steps:\n  a:\n    spec: 3\n",
			want: []string{`p.yaml:3:11: steps.a.spec: expected a path to an agent spec, or an agent spec mapping, found 3 (a number)`},
		},
		{
			name: "errors in a step's spec file keep their own positions",
			src:  "steps:\n  a:\n    spec: agents/bad.yaml\n  b:\n    spec: agents/bad.yaml\n",
			want: []string{`agents/bad.yaml:2:1: unknown key "instructons" (did you mean "instructions"?)`},
		},
		{
			name: "errors in an inline spec are at their place in the pipeline",
			src:  "steps:\n  a:\n    spec:\n      model: test\n      max_tool_rounds: 0\n",
			want: []string{`p.yaml:5:24: max_tool_rounds: expected a positive integer, found 0`},
		},
		{
			name: "a pipeline naming itself as a step's spec",
			src:  "steps:\n  a:\n    spec: p.yaml\n",
			want: []string{`p.yaml:3:11: steps.a.spec: p.yaml is this pipeline; a step runs an agent spec`},
		},
		{
			name: "a pipeline as a step's spec",
			src:  "steps:\n  a:\n    spec: agents/nested.yaml\n",
			want: []string{`p.yaml:3:11: steps.a.spec: agents/nested.yaml is a pipeline, not an agent spec; a step runs an agent spec (pipelines do not nest)`},
		},
		{
			name: "unknown pipeline key",
			src:  "version: 1\nstep: {}\nsteps:\n  a: {spec: agents/plain.yaml}\n",
			want: []string{`p.yaml:2:1: unknown key "step" (did you mean "steps"?)`},
		},
		{
			name: "unknown step key",
			src:  "steps:\n  a:\n    spec: agents/plain.yaml\n    foreach: x\n    x-note: fine\n",
			want: []string{`p.yaml:4:5: steps.a: unknown key "foreach" (did you mean "for_each"?)`},
		},
		{
			name: "bad step name",
			src:  "steps:\n  Fix:\n    spec: agents/plain.yaml\n",
			want: []string{`p.yaml:2:3: steps: step name "Fix" must match [a-z][a-z0-9_-]*: lowercase letters, digits, _ and -, starting with a letter`},
		},
		{
			name: "reference to a missing step",
			src:  "steps:\n  triage: {spec: agents/triage.yaml}\n  a:\n    spec: agents/plain.yaml\n    input: \"see {{steps.triag.output}}\"\n",
			want: []string{`p.yaml:5:17: steps.triag: no step named 'triag'; did you mean 'triage'?`},
		},
		{
			name: "missing property with did-you-mean",
			src:  "steps:\n  triage: {spec: agents/triage.yaml}\n  a:\n    spec: agents/plain.yaml\n    input: \"{{steps.triage.output.file}}\"\n",
			want: []string{`p.yaml:5:13: steps.triage.output.file: triage's output_schema has no property 'file'; did you mean 'files'?`},
		},
		{
			name: "missing property inside an item reached through $ref",
			src:  "steps:\n  triage: {spec: agents/triage.yaml}\n  a:\n    spec: agents/plain.yaml\n    input: \"{{steps.triage.output.files[0].pth}}\"\n",
			want: []string{`p.yaml:5:13: steps.triage.output.files[0].pth: triage's output_schema has no property 'pth'; did you mean 'path'?`},
		},
		{
			name: "index into a non-array",
			src:  "steps:\n  triage: {spec: agents/triage.yaml}\n  a:\n    spec: agents/plain.yaml\n    input: \"{{steps.triage.output.count[0]}}\"\n",
			want: []string{`p.yaml:5:13: steps.triage.output.count[0]: steps.triage.output.count is an integer by triage's output_schema, not an array`},
		},
		{
			name: "an index past an array's maxItems",
			src: "steps:\n  t:\n    spec:\n      model: test\n      instructions: x\n" +
				"      output_schema: {type: object, properties: {pair: {type: array, maxItems: 2}}, required: [pair]}\n" +
				"  a:\n    spec: agents/plain.yaml\n    input: \"{{steps.t.output.pair[1]}} {{steps.t.output.pair[2]}}\"\n",
			want: []string{`p.yaml:9:40: steps.t.output.pair[2]: index 2 is past the end of steps.t.output.pair, which has at most 2 items by t's output_schema`},
		},
		{
			name: "an index past a tuple's prefixItems, with items: false",
			src: "steps:\n  t:\n    spec:\n      model: test\n      instructions: x\n" +
				"      output_schema: {type: object, properties: {p: {type: array, prefixItems: [{type: string}], items: false}}, required: [p]}\n" +
				"  a:\n    spec: agents/plain.yaml\n    input: \"{{steps.t.output.p[0]}} {{steps.t.output.p[1]}}\"\n",
			want: []string{`p.yaml:9:37: steps.t.output.p[1]: index 1 is past the end of steps.t.output.p, which has at most 1 item by t's output_schema`},
		},
		{
			name: "an index into an array that is always empty",
			src: "inputs:\n  type: object\n  properties: {none: {type: array, maxItems: 0}, some: {anyOf: [{type: array, maxItems: 3}, {type: 'null'}]}}\n" +
				"  required: [none, some]\n" +
				"steps:\n  a:\n    spec: agents/plain.yaml\n    input: \"{{inputs.none[0]}} {{inputs.some[2]}} {{inputs.some[3]}}\"\n",
			want: []string{
				`p.yaml:8:13: inputs.none[0]: index 0 is past the end of inputs.none, which has no items by the pipeline's inputs schema`,
				`p.yaml:8:51: inputs.some[3]: index 3 is past the end of inputs.some, which has at most 3 items by the pipeline's inputs schema`,
			},
		},
		{
			name: "a tuple's item typed by its prefixItems",
			src: "steps:\n  t:\n    spec:\n      model: test\n      instructions: x\n" +
				"      output_schema: {type: object, properties: {p: {type: array, prefixItems: [{type: object, properties: {a: {}}}], items: {type: string}}}, required: [p]}\n" +
				"  a:\n    spec: agents/plain.yaml\n    input: \"{{steps.t.output.p[0].a}} {{steps.t.output.p[5]}} {{steps.t.output.p[1].a}}\"\n",
			want: []string{`p.yaml:9:63: steps.t.output.p[1].a: steps.t.output.p[1] is a string by t's output_schema, which has no property 'a'`},
		},
		{
			name: ".a on a step without output_schema",
			src:  "steps:\n  plain: {spec: agents/plain.yaml}\n  a:\n    spec: agents/plain.yaml\n    input: \"{{steps.plain.output.a}}\"\n",
			want: []string{`p.yaml:5:13: steps.plain.output.a: plain has no output_schema, so its output is a string, which has no property 'a'`},
		},
		{
			name: ".a on an item of a fan-out step without output_schema",
			src:  "steps:\n  each:\n    for_each: {glob: '*.md'}\n    spec: agents/plain.yaml\n  a:\n    spec: agents/plain.yaml\n    input: \"{{steps.each.outputs[0].x}}\"\n",
			want: []string{`p.yaml:7:13: steps.each.outputs[0].x: each has no output_schema, so its output is a string, which has no property 'x'`},
		},
		{
			name: "outputs of a step that does not fan out",
			src:  "steps:\n  triage: {spec: agents/triage.yaml}\noutputs:\n  all: \"{{steps.triage.outputs}}\"\n",
			want: []string{`p.yaml:4:9: steps.triage.outputs: triage is not a fan-out step (it has no for_each): its answer is steps.triage.output`},
		},
		{
			name: "output of a step that fans out",
			src: "steps:\n  triage: {spec: agents/triage.yaml}\n  fix:\n    for_each: \"{{steps.triage.output.files}}\"\n" +
				"    spec: agents/fix.yaml\n    vars: {path: \"{{item.path}}\", problem: \"{{item.problem}}\"}\noutputs:\n  one: \"{{steps.fix.output}}\"\n",
			want: []string{`p.yaml:8:9: steps.fix.output: fix fans out (for_each): its answers are steps.fix.outputs, an array in item order`},
		},
		{
			name: "outputs referencing a missing step",
			src:  "steps:\n  triage: {spec: agents/triage.yaml}\noutputs:\n  files: \"{{steps.triage.output.files}}\"\n  done: \"{{steps.review.output}}\"\n",
			want: []string{`p.yaml:5:10: steps.review: no step named 'review'; the steps are triage`},
		},
		{
			name: "for_each that is not an array",
			src:  "steps:\n  triage: {spec: agents/triage.yaml}\n  fix:\n    for_each: \"{{steps.triage.output.count}}\"\n    spec: agents/plain.yaml\n",
			want: []string{`p.yaml:4:16: steps.fix.for_each: steps.triage.output.count is an integer by triage's output_schema, not an array; for_each needs an array`},
		},
		{
			name: "for_each over a step's text",
			src:  "steps:\n  plain: {spec: agents/plain.yaml}\n  fix:\n    for_each: \"{{steps.plain.output}}\"\n    spec: agents/plain.yaml\n",
			want: []string{`p.yaml:4:16: steps.fix.for_each: steps.plain.output is a string, not an array; for_each needs an array`},
		},
		{
			name: "for_each with text around the reference",
			src:  "steps:\n  triage: {spec: agents/triage.yaml}\n  fix:\n    for_each: \"all {{steps.triage.output.files}}\"\n    spec: agents/plain.yaml\n",
			want: []string{`p.yaml:4:15: steps.fix.for_each: expected one reference to an array ("{{steps.STEP.output.LIST}}") or {glob: PATTERN}, found "all {{steps.triage.output.files}}" (a string)`},
		},
		{
			name: "glob climbing out of the workspace",
			src:  "steps:\n  a:\n    for_each: {glob: ../docs/*.md}\n    spec: agents/plain.yaml\n",
			want: []string{`p.yaml:3:22: steps.a.for_each.glob: "../docs/*.md" leaves the workspace: a glob matches files inside the workspace`},
		},
		{
			name: "absolute glob",
			src:  "steps:\n  a:\n    for_each: {glob: /etc/*.conf}\n    spec: agents/plain.yaml\n",
			want: []string{`p.yaml:3:22: steps.a.for_each.glob: "/etc/*.conf" must be relative to the workspace: a glob matches files inside the workspace`},
		},
		{
			name: "invalid glob",
			src:  "steps:\n  a:\n    for_each: {glob: \"docs/[a.md\"}\n    spec: agents/plain.yaml\n",
			want: []string{`p.yaml:3:22: steps.a.for_each.glob: "docs/[a.md" is not a valid glob pattern`},
		},
		{
			name: "vars key that is not a placeholder",
			src:  "steps:\n  a:\n    spec: agents/fix.yaml\n    vars: {path: a.go, problem: x, pth: b}\n",
			want: []string{`p.yaml:4:36: steps.a.vars: agents/fix.yaml has no placeholder {{pth}}; did you mean {{path}}?`},
		},
		{
			name: "placeholder no var fills",
			src:  "steps:\n  a:\n    spec: agents/fix.yaml\n    vars: {path: a.go}\n",
			want: []string{`p.yaml:4:5: steps.a: agents/fix.yaml uses {{problem}}, which vars does not fill`},
		},
		{
			name: "placeholders without vars, one only in a capability argument",
			src:  "steps:\n  a:\n    spec: agents/glob.yaml\n",
			want: []string{
				`p.yaml:2:3: steps.a: agents/glob.yaml uses {{problem}}, which vars does not fill`,
				`p.yaml:2:3: steps.a: agents/glob.yaml uses {{path}}, which vars does not fill`,
			},
		},
		{
			name: "a reference written in an inline spec",
			src:  "steps:\n  a:\n    spec: {model: test, instructions: \"Fix {{inputs.issue}}\"}\n",
			want: []string{`p.yaml:2:3: steps.a: the inline spec uses {{inputs.issue}}, which vars does not fill; a spec's placeholders are filled by vars only: vars: {NAME: "{{inputs.issue}}"}, and {{NAME}} in the spec`},
		},
		{
			name: "a cycle of references and needs",
			src: "steps:\n  a:\n    spec: agents/plain.yaml\n    input: \"{{steps.c.output}}\"\n" +
				"  b:\n    spec: agents/plain.yaml\n    needs: [a]\n  c:\n    spec: agents/plain.yaml\n    needs: [b]\n",
			want: []string{`p.yaml:7:13: steps.b.needs[0]: the steps depend on each other in a cycle: a -> c -> b -> a (each needs the one after it); a pipeline's graph must be acyclic`},
		},
		{
			name: "a step using its own answer",
			src:  "steps:\n  a:\n    spec: agents/plain.yaml\n    input: \"{{steps.a.output}}\"\n",
			want: []string{`p.yaml:4:13: steps.a: a step cannot use its own answer`},
		},
		{
			name: "needs naming a missing step, and itself",
			src:  "steps:\n  build:\n    spec: agents/plain.yaml\n  a:\n    spec: agents/plain.yaml\n    needs: [biuld, a]\n",
			want: []string{
				`p.yaml:6:13: steps.a.needs[0]: no step named 'biuld'; did you mean 'build'?`,
				`p.yaml:6:20: steps.a.needs[1]: a step cannot need itself`,
			},
		},
		{
			name: "input not in the inputs schema",
			src:  "inputs:\n  type: object\n  properties: {issue: {type: string}}\nsteps:\n  a:\n    spec: agents/plain.yaml\n    input: \"{{inputs.isue}}\"\n",
			want: []string{`p.yaml:7:13: inputs.isue: the pipeline's inputs schema has no property 'isue'; did you mean 'issue'?`},
		},
		{
			name: "a path into an input without a schema",
			src:  "steps:\n  a:\n    spec: agents/plain.yaml\n    input: \"{{inputs.issue.title}}\"\n",
			want: []string{`p.yaml:4:13: inputs.issue.title: the pipeline has no inputs schema, so inputs.issue is a string, which has no property 'title'`},
		},
		{
			name: "inputs that are not an object schema",
			src:  "inputs: {type: string}\nsteps:\n  a: {spec: agents/plain.yaml}\n",
			want: []string{`p.yaml:1:9: inputs: expected an object schema (type: object): the inputs are named values, --var NAME=VALUE`},
		},
		{
			name: "inputs that are no JSON Schema",
			src:  "inputs: {type: object, properties: {a: {type: 3}}}\nsteps:\n  a: {spec: agents/plain.yaml}\n",
			want: []string{`p.yaml:1:47: inputs.properties.a.type: expected one of "array", "boolean", "integer", "null", "number", "object", "string", found 3 (a number)`},
		},
		{
			name: "inputs whose schema breaks deep inside, as an output_schema would",
			src: "inputs:\n  type: object\n  properties:\n    a:\n      type: object\n      properties:\n        b: {type: strin}\n" +
				"        c: {minLength: -1}\nsteps:\n  a: {spec: agents/plain.yaml}\n",
			want: []string{
				`p.yaml:7:19: inputs.properties.a.properties.b.type: expected one of "array", "boolean", "integer", "null", "number", "object", "string", found "strin" (did you mean "string"?)`,
				`p.yaml:8:24: inputs.properties.a.properties.c.minLength: expected at least 0, found -1`,
			},
		},
		{
			name: "inputs whose schema refers outside itself",
			src:  "inputs:\n  type: object\n  properties:\n    d: {$ref: 'other.json'}\nsteps:\n  a: {spec: agents/plain.yaml}\n",
			want: []string{`p.yaml:4:15: inputs.properties.d.$ref: cannot resolve $ref "other.json": a schema in a spec must be self-contained (agentspec does not fetch schemas from files or the network); put definitions under $defs`},
		},
		{
			name: "the item in a step without for_each",
			src:  "steps:\n  a:\n    spec: agents/plain.yaml\n    input: \"{{item.path}}\"\n",
			want: []string{`p.yaml:4:13: item: item is a for_each item, and step a has no for_each`},
		},
		{
			name: "the item in its own for_each",
			src:  "steps:\n  a:\n    for_each: \"{{item}}\"\n    spec: agents/plain.yaml\n",
			want: []string{`p.yaml:3:16: item: the item item is defined in the step's input and vars, one job per item; for_each and when are the step's own`},
		},
		{
			name: "a field the items do not have, named by as",
			src: "steps:\n  triage: {spec: agents/triage.yaml}\n  fix:\n    for_each: \"{{steps.triage.output.files}}\"\n    as: file\n" +
				"    spec: agents/fix.yaml\n    vars: {path: \"{{file.pth}}\", problem: \"{{item.problem}}\"}\n",
			want: []string{
				`p.yaml:7:19: file.pth: triage's output_schema has no property 'pth'; did you mean 'path'?`,
				`p.yaml:7:44: item: unknown reference 'item': a reference starts with 'inputs', 'steps', 'file'`,
			},
		},
		{
			name: "text between braces that is not a reference",
			src:  "steps:\n  a:\n    spec: agents/plain.yaml\n    input: \"see {{ steps.a output }}\"\n",
			want: []string{`p.yaml:4:17: steps.a.input: {{steps.a output}} is not a reference: expected {{inputs.NAME}}, {{steps.STEP.output}}, {{steps.STEP.outputs}} or the for_each item, with .member and [index] after it`},
		},
		{
			name: "an index too large to be one",
			src:  "steps:\n  triage: {spec: agents/triage.yaml}\n  a:\n    spec: agents/plain.yaml\n    input: \"{{steps.triage.output.files[99999999999999999999].path}}\"\n",
			want: []string{`p.yaml:5:13: steps.a.input: {{steps.triage.output.files[99999999999999999999].path}}: index 99999999999999999999 is too large: an index is at most ` + strconv.Itoa(math.MaxInt)},
		},
		{
			name: "fan-out keys without for_each",
			src:  "steps:\n  a:\n    spec: agents/plain.yaml\n    as: doc\n    max_parallel: 2\n",
			want: []string{
				`p.yaml:4:5: steps.a: as is for a fan-out step: give the step a for_each, or remove as`,
				`p.yaml:5:5: steps.a: max_parallel is for a fan-out step: give the step a for_each, or remove max_parallel`,
			},
		},
		{
			name: "bad fan-out settings",
			src:  "steps:\n  a:\n    for_each: {glob: '*.md'}\n    as: steps\n    max_parallel: 0\n    on_item_error: retry\n    spec: agents/plain.yaml\n",
			want: []string{
				`p.yaml:4:9: steps.a.as: "steps" names a kind of reference already ({{steps.NAME}}); choose another name for the item`,
				`p.yaml:5:19: steps.a.max_parallel: expected a positive integer, found 0 (a number)`,
				`p.yaml:6:20: steps.a.on_item_error: expected fail or skip, found "retry" (a string)`,
			},
		},
		{
			name: "when that is not a string, vars value that is not a string",
			src:  "steps:\n  a:\n    spec: agents/fix.yaml\n    vars: {path: a, problem: 3}\n    when: true\n",
			want: []string{
				`p.yaml:4:5: steps.a: agents/fix.yaml uses {{problem}}, which vars does not fill`,
				`p.yaml:4:30: steps.a.vars.problem: expected a string, found 3 (a number); quote it`,
				`p.yaml:5:11: steps.a.when: expected a string, found true (a boolean)`,
			},
		},
		{
			name: "a reference in when to a missing step",
			src:  "steps:\n  a:\n    spec: agents/plain.yaml\n    when: \"{{steps.b.output}} == 'yes'\"\n",
			want: []string{`p.yaml:4:12: steps.b: no step named 'b'; did you mean 'a'?`},
		},
		{
			name: "a when that is not true or false",
			src:  "steps:\n  t: {spec: agents/triage.yaml}\n  a:\n    spec: agents/plain.yaml\n    when: \"{{steps.t.output.files}}\"\n",
			want: []string{`p.yaml:5:11: steps.a.when: when must be true or false, and this expression is of type list(map(string, dyn))`},
		},
		{
			name: "a when that compares a count with a string",
			src:  "steps:\n  t: {spec: agents/triage.yaml}\n  a:\n    spec: agents/plain.yaml\n    when: \"{{steps.t.output.count}} > 'three'\"\n",
			want: []string{`p.yaml:5:37: steps.a.when: when is not a valid expression: found no matching overload for '_>_' applied to '(int or null, string)'`},
		},
		{
			// vars fill the placeholders --var fills, and a workspace path has none.
			name: "a placeholder in a step spec's input_globs",
			src: "steps:\n  a:\n    for_each: {glob: '*.txt'}\n    spec:\n      model: test\n      instructions: Fix {{path}}.\n" +
				"      workspace: {input_globs: ['{{path}}']}\n    vars: {path: '{{item}}'}\n",
			want: []string{`p.yaml:7:33: workspace.input_globs[0]: {{path}} is not filled here; placeholders are filled in instructions, ` +
				`description and the string values of capability arguments only, and a workspace path is matched as written: write one that needs no value`},
		},
		{
			name: "a when that adds an integer to a number",
			src: "steps:\n  t:\n    spec:\n      model: test\n      output_schema: {type: object, properties: {score: {type: number}}, required: [score]}\n" +
				"  a:\n    spec: agents/plain.yaml\n    when: \"{{steps.t.output.score}} + 1 > 2\"\n",
			want: []string{`p.yaml:8:37: steps.a.when: when is not a valid expression: found no matching overload for '_+_' applied to '(double, int)'; a number is a double, and CEL's arithmetic does not mix doubles and ints: write 1.0 for 1, or double(...) around an integer`},
		},
		{
			// CEL types an object as a map of dyn: a member's type is its
			// schema's, and what CEL does with it is checked here.
			name: "a when that adds an integer to a number member of an object",
			src: "steps:\n  t:\n    spec:\n      model: test\n      output_schema: {type: object, properties: {score: {type: number}}, required: [score]}\n" +
				"  a:\n    spec: agents/plain.yaml\n    when: \"{{steps.t.output}}.score + 1 > 2\"\n",
			want: []string{`p.yaml:8:37: steps.a.when: when is not a valid expression: found no matching overload for '_+_' applied to '(double, int)'; a number is a double, and CEL's arithmetic does not mix doubles and ints: write 1.0 for 1, or double(...) around an integer`},
		},
		{
			// CEL types an object as a map, whose keys it does not know: a
			// member taken from one is checked against its schema here.
			name: "a when that takes a member its schema does not have from an object",
			src:  "steps:\n  t: {spec: agents/triage.yaml}\n  a:\n    spec: agents/plain.yaml\n    when: \"has({{steps.t.output}}.count) && {{steps.t.output}}.cuont > 0\"\n",
			want: []string{`p.yaml:5:64: steps.a.when: {{steps.t.output}}.cuont: t's output_schema has no property 'cuont'; did you mean 'count'?`},
		},
		{
			name: "a when that takes a member its schema does not have from an item of a list",
			src: "steps:\n  t: {spec: agents/triage.yaml}\n  a:\n    spec: agents/plain.yaml\n" +
				"    when: \"{{steps.t.output.files}} != null && {{steps.t.output.files}}.exists(f, f.path == 'a' || f.probelm == 'b')\"\n",
			want: []string{`p.yaml:5:102: steps.a.when: f.probelm: t's output_schema has no property 'probelm'; did you mean 'problem'?`},
		},
		{
			name: "a when that takes a member its schema does not have from an indexed item",
			src:  "steps:\n  t: {spec: agents/triage.yaml}\n  a:\n    spec: agents/plain.yaml\n    when: \"{{steps.t.output}}.files[0].pth == 'a'\"\n",
			want: []string{`p.yaml:5:40: steps.a.when: {{steps.t.output}}.files[0].pth: t's output_schema has no property 'pth'; did you mean 'path'?`},
		},
		{
			name: "a when that is a string member of an object",
			src: "steps:\n  t:\n    spec:\n      model: test\n      output_schema: {type: object, properties: {ok: {type: string}}, required: [ok]}\n" +
				"  a:\n    spec: agents/plain.yaml\n    when: \"{{steps.t.output}}.ok\"\n",
			want: []string{`p.yaml:8:11: steps.a.when: when must be true or false, and this expression is of type string`},
		},
		{
			name: "a when that joins a string member of an object with ||",
			src: "steps:\n  t:\n    spec:\n      model: test\n      output_schema: {type: object, properties: {ok: {type: string}}, required: [ok]}\n" +
				"  a:\n    spec: agents/plain.yaml\n    when: \"false || {{steps.t.output}}.ok\"\n",
			want: []string{`p.yaml:8:40: steps.a.when: when is not a valid expression: expected type 'bool' but found 'string'`},
		},
		{
			name: "a when that uses an item that may be null without testing it",
			src: "steps:\n  t:\n    spec:\n      model: test\n      output_schema: {type: object, properties: {l: {type: array, items: {type: [string, 'null']}}}, required: [l]}\n" +
				"  a:\n    spec: agents/plain.yaml\n    when: \"{{steps.t.output.l}}.exists(s, s == 'b' || s.startsWith('a'))\"\n",
			want: []string{`p.yaml:8:55: steps.a.when: s may be null (t's output_schema allows null), and then this when fails: test it first, as s != null && ...`},
		},
		{
			name: "a when that takes a member from an integer member of an object",
			src: "steps:\n  t:\n    spec:\n      model: test\n      output_schema: {type: object, properties: {n: {type: integer}}, required: [n]}\n" +
				"  a:\n    spec: agents/plain.yaml\n    when: \"{{steps.t.output}}.n.x == 1\"\n",
			want: []string{`p.yaml:8:33: steps.a.when: {{steps.t.output}}.n.x: {{steps.t.output}}.n is an integer by t's output_schema, which has no property 'x'`},
		},
		{
			name: "a when that takes an optional member from an object without testing it",
			src:  "steps:\n  t: {spec: agents/triage.yaml}\n  a:\n    spec: agents/plain.yaml\n    when: \"{{steps.t.output}}.count > 0\"\n",
			want: []string{`p.yaml:5:31: steps.a.when: {{steps.t.output}}.count may be absent (t's output_schema does not require 'count'), ` +
				`and then this when fails: test it first, as has({{steps.t.output}}.count) && ...`},
		},
		{
			name: "a when that takes an optional member from an item of a list without testing it",
			src: "steps:\n  t: {spec: agents/triage.yaml}\n  a:\n    spec: agents/plain.yaml\n" +
				"    when: \"has({{steps.t.output}}.files) && {{steps.t.output}}.files.exists(f, f.path == 'a')\"\n",
			want: []string{`p.yaml:5:82: steps.a.when: f.path may be absent (t's output_schema does not require 'path'), ` +
				`and then this when fails: test it first, as has(f.path) && ...`},
		},
		{
			// '{{...}}' is the text {{...}}, never the value: refused, with the
			// expression as it should read.
			name: "a reference inside a string literal of a when",
			src:  "steps:\n  t: {spec: agents/triage.yaml}\n  a:\n    spec: agents/plain.yaml\n    when: \"'{{steps.t.output.files}}' == 'x'\"\n",
			want: []string{`p.yaml:5:13: steps.a.when: {{steps.t.output.files}} is inside a string literal, where it is that text and is never filled; ` +
				`a reference is a value of its own: write it outside the quotes: {{steps.t.output.files}} == 'x'`},
		},
		{
			// The expression as it should read keeps every escape as written.
			name: "a reference inside a string literal of a when, beside escapes",
			src: "steps:\n  t: {spec: agents/triage.yaml}\n  a:\n    spec: agents/plain.yaml\n    when: |-\n" +
				"      '{{steps.t.output.files}}' == '\\{{x}}' || 'a\\\\\\{{steps.t.output.count}}' == ''\n",
			want: []string{`p.yaml:6:8: steps.a.when: {{steps.t.output.files}} is inside a string literal, where it is that text and is never filled; ` +
				`a reference is a value of its own: write it outside the quotes: ` +
				`{{steps.t.output.files}} == '\{{x}}' || 'a\\\{{steps.t.output.count}}' == ''`},
		},
		{
			name: "a reference inside a longer string literal of a when",
			src:  "steps:\n  t: {spec: agents/triage.yaml}\n  a:\n    spec: agents/plain.yaml\n    when: \"size({{steps.t.output.files}}) > 0 && 'n={{steps.t.output.files}}' != ''\"\n",
			want: []string{`p.yaml:5:53: steps.a.when: {{steps.t.output.files}} is inside a string literal, where it is that text and is never filled; ` +
				`a reference is a value of its own: write it outside the quotes, and join text to it with + ('prefix-' + {{steps.t.output.files}})`},
		},
		{
			name: "a reference inside a comment of a when",
			src:  "steps:\n  t: {spec: agents/triage.yaml}\n  a:\n    spec: agents/plain.yaml\n    when: |-\n      true // {{steps.t.output.files}}\n",
			want: []string{`p.yaml:6:15: steps.a.when: {{steps.t.output.files}} is inside a comment, so the expression does not use it`},
		},
		{
			// count is not required: absent, it is null, and null > 0 fails.
			name: "a when that uses an optional property without testing it",
			src:  "steps:\n  t: {spec: agents/triage.yaml}\n  a:\n    spec: agents/plain.yaml\n    when: \"{{steps.t.output.count}} > 0\"\n",
			want: []string{`p.yaml:5:12: steps.a.when: {{steps.t.output.count}} may be absent (t's output_schema does not require 'count'), ` +
				`and then this when fails: test it first, as {{steps.t.output.count}} != null && ...`},
		},
		{
			name: "a when that uses a nullable value without testing it",
			src: "steps:\n  t:\n    spec:\n      model: test\n      instructions: x\n" +
				"      output_schema: {type: object, properties: {n: {type: [integer, 'null']}}, required: [n]}\n" +
				"  a:\n    spec: agents/plain.yaml\n    when: \"{{steps.t.output.n}} + 1 > 2\"\n",
			want: []string{`p.yaml:9:12: steps.a.when: {{steps.t.output.n}} may be null (t's output_schema allows null), ` +
				`and then this when fails: test it first, as {{steps.t.output.n}} != null && ...`},
		},
		{
			// k is required of m, but m may be null: then k is null too.
			name: "a when that uses a member of a nullable object without testing it",
			src: "steps:\n  t:\n    spec:\n      model: test\n      instructions: x\n" +
				"      output_schema: {type: object, properties: {m: {type: [object, 'null'], properties: {k: {type: string}}, required: [k]}}, required: [m]}\n" +
				"  a:\n    spec: agents/plain.yaml\n    when: \"{{steps.t.output.m.k}}.startsWith('x')\"\n",
			want: []string{`p.yaml:9:12: steps.a.when: {{steps.t.output.m.k}} may be absent (t's output_schema allows steps.t.output.m to be null), ` +
				`and then this when fails: test it first, as {{steps.t.output.m.k}} != null && ...`},
		},
		{
			// An answer's missing member is not filled from its schema's
			// default, as an input's is: it is absent all the same.
			name: "a when that uses an optional output property with a default",
			src: "steps:\n  t:\n    spec:\n      model: test\n      instructions: x\n" +
				"      output_schema: {type: object, properties: {n: {type: integer, default: 1}}}\n" +
				"  a:\n    spec: agents/plain.yaml\n    when: \"{{steps.t.output.n}} > 2\"\n",
			want: []string{`p.yaml:9:12: steps.a.when: {{steps.t.output.n}} may be absent (t's output_schema does not require 'n'), ` +
				`and then this when fails: test it first, as {{steps.t.output.n}} != null && ...`},
		},
		{
			name: "an optional input in a when, untested",
			src: "inputs:\n  type: object\n  properties: {level: {type: integer}, depth: {type: integer, default: 2}}\n" +
				"steps:\n  a:\n    spec: agents/plain.yaml\n    when: \"{{inputs.depth}} > 1 && {{inputs.level}} > 1\"\n",
			want: []string{`p.yaml:7:36: steps.a.when: {{inputs.level}} may be absent (the pipeline's inputs schema does not require 'level', nor give it a default), ` +
				`and then this when fails: test it first, as {{inputs.level}} != null && ...`},
		},
		{
			name: "a when that does not parse",
			src:  "steps:\n  t: {spec: agents/triage.yaml}\n  a:\n    spec: agents/plain.yaml\n    when: \"{{steps.t.output.files}} !=\"\n",
			want: []string{`p.yaml:5:39: steps.a.when: when is not a valid expression: Syntax error: mismatched input '<EOF>' expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}`},
		},
		{
			// A reference is told where it is written, after an escape or
			// on a block's later line as on a plain line.
			name: "references after an escape and in a block",
			src: "steps:\n  a:\n    spec: agents/plain.yaml\n    input: \"say \\\"hi\\\" {{steps.zz.output}}\"\n" +
				"  b:\n    spec: agents/plain.yaml\n    input: |\n      first line\n      then {{steps.yy.output}}\n",
			want: []string{
				`p.yaml:4:24: steps.zz: no step named 'zz'; the steps are a, b`,
				`p.yaml:9:12: steps.yy: no step named 'yy'; the steps are a, b`,
			},
		},
		{
			// CEL's errors are told where they are in the file, through
			// YAML's quoting, escapes and blocks.
			name: "a when's error in single quotes, after an escaped quote",
			src:  "steps:\n  t: {spec: agents/triage.yaml}\n  a:\n    spec: agents/plain.yaml\n    when: '{{steps.t.output.count}} != null && ''a'' > 3'\n",
			want: []string{`p.yaml:5:54: steps.a.when: when is not a valid expression: found no matching overload for '_>_' applied to '(string, int)'`},
		},
		{
			name: "a when's error in double quotes, after an escape",
			src:  "steps:\n  t: {spec: agents/triage.yaml}\n  a:\n    spec: agents/plain.yaml\n    when: \"{{steps.t.output.count}} != null && \\\"a\\\" > 3\"\n",
			want: []string{`p.yaml:5:54: steps.a.when: when is not a valid expression: found no matching overload for '_>_' applied to '(string, int)'`},
		},
		{
			name: "a when's error after an escaped reference",
			src:  "steps:\n  a:\n    spec: agents/plain.yaml\n    when: \"'\\\\{{x}}' > 1\"\n",
			want: []string{`p.yaml:4:22: steps.a.when: when is not a valid expression: found no matching overload for '_>_' applied to '(string, int)'`},
		},
		{
			name: "a when's error in a plain scalar",
			src:  "steps:\n  a:\n    spec: agents/plain.yaml\n    when: true && 1 > 'x'\n",
			want: []string{`p.yaml:4:21: steps.a.when: when is not a valid expression: found no matching overload for '_>_' applied to '(int, string)'`},
		},
		{
			name: "a when's error on the second line of a literal block",
			src: "steps:\n  t: {spec: agents/triage.yaml}\n  a:\n    spec: agents/plain.yaml\n    when: |\n" +
				"      {{steps.t.output.count}} != null &&\n        {{steps.t.output.count}} > 'x'\n",
			want: []string{`p.yaml:7:34: steps.a.when: when is not a valid expression: found no matching overload for '_>_' applied to '(int or null, string)'`},
		},
		{
			name: "a when's error on the second line of a folded block",
			src: "steps:\n  t: {spec: agents/triage.yaml}\n  a:\n    spec: agents/plain.yaml\n    when: >-\n" +
				"      {{steps.t.output.count}} != null\n      && 1 > 'x'\n",
			want: []string{`p.yaml:7:12: steps.a.when: when is not a valid expression: found no matching overload for '_>_' applied to '(int, string)'`},
		},
		{
			name: "top-level values of the wrong kind",
			src:  "version: 2\nname: [x]\ncache: {dir: ''}\nsteps:\n  a: {spec: agents/plain.yaml}\noutputs: [a]\n",
			want: []string{
				`p.yaml:1:10: version: expected 1, found 2 (a number)`,
				`p.yaml:2:7: name: expected a string, found a list`,
				`p.yaml:3:14: cache.dir: expected a directory, found "" (a string)`,
				`p.yaml:6:10: outputs: expected a mapping of output names to templates, found a list`,
			},
		},
		{
			name: "no steps",
			src:  "steps: {}\n",
			want: []string{`p.yaml:1:8: steps: a pipeline has at least one step`},
		},
		{
			name: "not a pipeline",
			src:  "model: test\n",
			want: []string{`p.yaml: not a pipeline: a pipeline is a mapping with steps: at its top level`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.want, load(t, tt.src))
		})
	}
}

func TestLoadJSONPositions(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "plain.yaml"), []byte(agents["agents/plain.yaml"]), 0o644))
	file := filepath.Join(dir, "p.json")
	src := "{\"steps\": {\n  \"a\": {\"spec\": \"plain.yaml\", \"input\": \"{{steps.b.output}}\"}}}\n"
	_, err := (&Loader{}).Load(file, []byte(src))
	require.Error(t, err)
	assert.Equal(t, file+`:2:41: steps.b: no step named 'b'; did you mean 'a'?`, err.Error())
}

// A step's spec file, and the pipeline file, larger than any spec may be are
// refused for their size before they are read, as agentspec validate refuses
// such a spec file, rather than read whole (one of comments then loaded).
func TestLoadStepSpecTooLarge(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	huge := filepath.Join(dir, "huge.yaml")
	require.NoError(t, os.WriteFile(huge, []byte("model: test\n# "), 0o644))
	require.NoError(t, os.Truncate(huge, 20_000_000))
	file := filepath.Join(dir, "p.yaml")
	require.NoError(t, os.WriteFile(file, []byte("steps:\n  a:\n    spec: huge.yaml\n"), 0o644))
	_, err := LoadFile(file)
	var es spec.Errors
	require.True(t, errors.As(err, &es), "want spec.Errors, got %v", err)
	require.Len(t, es, 1)
	assert.Equal(t, huge+": the file is 20 MB (20000000 bytes), larger than the 16 MB (16000000 bytes) a spec file may be", es[0].Error())

	bigPipeline := filepath.Join(dir, "big.yaml")
	require.NoError(t, os.WriteFile(bigPipeline, []byte("steps:\n  a: {spec: p.yaml}\n# "), 0o644))
	require.NoError(t, os.Truncate(bigPipeline, 20_000_000))
	_, err = LoadFile(bigPipeline)
	require.True(t, errors.As(err, &es), "want spec.Errors, got %v", err)
	require.Len(t, es, 1)
	assert.Equal(t, bigPipeline+": the file is 20 MB (20000000 bytes), larger than the 16 MB (16000000 bytes) a spec file may be", es[0].Error())
}
