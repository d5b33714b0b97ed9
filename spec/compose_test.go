package spec

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/schema"
)

// compileComposed compiles the schema l composes, as an editor would use it.
func compileComposed(t *testing.T, l *Loader) *jsonschema.Schema {
	t.Helper()
	b, err := l.Schema()
	require.NoError(t, err)
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	require.NoError(t, c.AddResource(schema.ID, doc))
	sch, err := c.Compile(schema.ID)
	require.NoError(t, err)
	return sch
}

func TestComposedSchemaShape(t *testing.T) {
	t.Parallel()
	b, err := testLoader(t).Schema()
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(b, &doc))
	assert.Equal(t, "https://json-schema.org/draft/2020-12/schema", doc["$schema"])
	assert.Equal(t, schema.ID, doc["$id"])
	assert.NotEmpty(t, doc["title"])

	defs := doc["$defs"].(map[string]any)
	forms := defs["capability"].(map[string]any)["anyOf"].([]any)
	// The bare names, one mapping form per type, the long form.
	require.Len(t, forms, 1+4+1)
	bare := forms[0].(map[string]any)
	assert.Equal(t, []any{"FileSystem", "Memory", "Thinking"}, bare["enum"], "WebSearch needs an engine, so it has no bare form")
	fs := forms[1].(map[string]any)
	assert.Equal(t, "FileSystem", fs["title"])
	assert.Equal(t, "Sandboxed file tools.", fs["description"])
	assert.Equal(t, "capabilities/FileSystem.json", defs["capability.FileSystem"].(map[string]any)["$id"])
	assert.Equal(t, "long form", forms[5].(map[string]any)["title"])
}

func TestComposedSchemaIsCachedPerRegistryVersion(t *testing.T) {
	t.Parallel()
	l := testLoader(t)
	first, err := l.Schema()
	require.NoError(t, err)
	again, err := l.Schema()
	require.NoError(t, err)
	assert.Equal(t, first, again)
	assert.NotContains(t, string(first), "capability.Clock")

	require.NoError(t, l.Registry.Register(capabilities.Type{
		Name: "Clock",
		New:  func(context.Context, capabilities.Args) (capabilities.Capability, error) { return nil, nil },
	}))
	after, err := l.Schema()
	require.NoError(t, err)
	assert.Contains(t, string(after), "capability.Clock")
}

func TestComposedSchemaWithEmptyRegistry(t *testing.T) {
	t.Parallel()
	l := &Loader{Registry: capabilities.NewRegistry()}
	sch := compileComposed(t, l)
	assert.NoError(t, sch.Validate(map[string]any{"capabilities": []any{}}))
	assert.Error(t, sch.Validate(map[string]any{"capabilities": []any{"FileSystem"}}))
	_, err := l.Load("agent.yaml", []byte("capabilities: [FileSystem]\n"))
	assert.EqualError(t, err, `agent.yaml:1:16: capabilities[0]: unknown capability type "FileSystem": no capability types are registered`)
}

// TestComposedSchemaAgreesWithLoader checks that the schema editors use
// accepts exactly the capability entries the loader accepts, the valid ones
// and the invalid ones.
func TestComposedSchemaAgreesWithLoader(t *testing.T) {
	t.Parallel()
	l := testLoader(t)
	sch := compileComposed(t, l)
	entries := []struct {
		entry string
		ok    bool
	}{
		// names alone
		{"Memory", true}, {"FileSystem", true}, {"Thinking", true}, {"WebSearch", false}, {"Nope", false}, {"memory", false},
		// name: nothing, a mapping, a value
		{"Memory:", true}, {"Memory: {}", true}, {"Memory: {size: 1}", false}, {"Memory: big", false}, {"Memory: [a]", false},
		{"FileSystem:", true}, {"FileSystem: ./work", true}, {"FileSystem: 5", false}, {"FileSystem: [a]", false},
		{"FileSystem: true", false}, {"FileSystem: {root_dir: ./work, read_only: true}", true},
		{"FileSystem: {rootdir: ./work}", false}, {"FileSystem: {max_read_lines: 0}", false},
		{"FileSystem: {tools: [read_file, read_file]}", false},
		{"Thinking: high", false}, {"Thinking: {effort: high}", true}, {"Thinking: {effort: extreme}", false}, {"Thinking:", true},
		{"WebSearch:", false}, {"WebSearch: ddg", true}, {"WebSearch: ''", false}, {"WebSearch: {engine: ddg}", true},
		{"WebSearch: {max_results: 3}", false}, {"WebSearch: {engine: ddg, max_results: 51}", false},
		// long form
		{"{name: FileSystem}", true}, {"{name: FileSystem, arguments: ./x}", true}, {"{name: FileSystem, arguments: [./x]}", true},
		{"{name: FileSystem, arguments: [./x, ./y]}", false}, {"{name: FileSystem, arguments: []}", false},
		{"{name: FileSystem, arguments: {read_only: true}}", true}, {"{name: FileSystem, arguments: {bogus: 1}}", false},
		{"{name: FileSystem, arguments: null}", true}, {"{name: FileSystem, arguments: [{root_dir: x}]}", false},
		{"{name: WebSearch}", false}, {"{name: WebSearch, arguments: ddg}", true}, {"{name: WebSearch, arguments: [ddg]}", true},
		{"{name: WebSearch, arguments: {engine: ddg}}", true}, {"{name: WebSearch, arguments: null}", false},
		{"{name: Thinking, arguments: high}", false}, {"{name: Thinking, arguments: {effort: low}}", true},
		{"{name: Memory, arguments: {}}", true}, {"{name: Memory, arguments: {a: 1}}", false}, {"{name: Memory, arguments: x}", false},
		{"{name: Memory, extra: 1}", false}, {"{name: Nope}", false}, {"{name: 5}", false}, {"{arguments: {}}", false},
		// not an entry
		{"{FileSystem: ., Thinking: {}}", false}, {"{FileSystem: , root_dir: .}", false}, {"{}", false},
		{"5", false}, {"null", false}, {"[FileSystem]", false}, {"true", false},
	}
	for _, tc := range entries {
		t.Run(tc.entry, func(t *testing.T) {
			t.Parallel()
			src := "capabilities:\n  - " + tc.entry + "\n"
			_, loadErr := l.Load("agent.yaml", []byte(src))
			d := parseYAML("agent.yaml", []byte(src), testEnv)
			require.Empty(t, d.errs)
			schemaErr := sch.Validate(d.root)
			assert.Equal(t, tc.ok, loadErr == nil, "loader: %v", loadErr)
			assert.Equal(t, tc.ok, schemaErr == nil, "schema: %v", schemaErr)
		})
	}
}

// TestValidSpecsMatchComposedSchema checks the example specs against the
// composed schema, after environment expansion (an editor sees ${VAR} itself).
func TestValidSpecsMatchComposedSchema(t *testing.T) {
	t.Parallel()
	sch := compileComposed(t, testLoader(t))
	for _, path := range specFiles(t, "valid") {
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		var d *document
		if filepath.Ext(path) == ".json" {
			d = parseJSON(path, data, testEnv)
		} else {
			d = parseYAML(path, data, testEnv)
		}
		require.Empty(t, d.errs, path)
		assert.NoError(t, sch.Validate(d.root), path)
	}
}

// An option that holds a capability entry takes, in the composed schema,
// what the capabilities list takes.
func TestComposedSchemaNestsEntries(t *testing.T) {
	t.Parallel()
	reg := capabilities.NewRegistry()
	noop := func(context.Context, capabilities.Args) (capabilities.Capability, error) { return nil, nil }
	require.NoError(t, reg.Register(capabilities.Type{Name: "Leaf", New: noop}))
	require.NoError(t, reg.Register(capabilities.Type{
		Name: "Wrap", New: noop, Nested: []string{"inner"}, NoBaseOptions: true,
		Schema: json.RawMessage(`{"type": "object", "additionalProperties": false, "required": ["inner"],
			"properties": {"inner": {"description": "the wrapped one"}}}`),
	}))
	l := &Loader{Registry: reg, LookupEnv: testEnv}
	sch := compileComposed(t, l)
	for entry, ok := range map[string]bool{
		"Wrap: {inner: Leaf}":                  true,
		"Wrap: {inner: {Leaf: {id: x}}}":       true,
		"Wrap: {inner: {Wrap: {inner: Leaf}}}": true,
		"Wrap: {inner: {name: Leaf}}":          true,
		"Wrap: {inner: Nope}":                  false,
		"Wrap: {inner: {Leaf: {bogus: 1}}}":    false,
		"Wrap: {inner: {Wrap: {inner: 5}}}":    false,
		"Wrap: {inner: Leaf, id: x}":           false,
	} {
		src := "capabilities:\n  - " + entry + "\n"
		_, loadErr := l.Load("agent.yaml", []byte(src))
		d := parseYAML("agent.yaml", []byte(src), testEnv)
		require.Empty(t, d.errs)
		assert.Equal(t, ok, loadErr == nil, "loader %s: %v", entry, loadErr)
		assert.Equal(t, ok, sch.Validate(d.root) == nil, "schema %s", entry)
	}
}

// The loader fills ${VAR} references before it checks types, so the
// schema editors use takes them wherever a number or a boolean goes, and
// still refuses other strings there.
func TestComposedSchemaTakesEnvReferencesForScalars(t *testing.T) {
	t.Parallel()
	l := testLoader(t)
	sch := compileComposed(t, l)
	for _, tc := range []struct {
		doc string
		ok  bool
	}{
		{`{"max_tool_rounds": "${ROUNDS}"}`, true},
		{`{"max_tool_rounds": "${ROUNDS:-10}"}`, true},
		{`{"max_tool_rounds": 10}`, true},
		{`{"max_tool_rounds": "ten"}`, false},
		{`{"max_tool_rounds": 0}`, false},
		{`{"model_settings": {"temperature": "${TEMPERATURE:-0.2}"}}`, true},
		{`{"model_settings": {"temperature": "warm"}}`, false},
		{`{"capabilities": [{"FileSystem": {"read_only": "${READ_ONLY:-true}"}}]}`, true},
		{`{"capabilities": [{"FileSystem": {"read_only": "yes"}}]}`, false},
		{`{"capabilities": [{"FileSystem": {"max_read_lines": "${LINES}"}}]}`, true},
		{`{"capabilities": [{"FileSystem": {"max_read_lines": 0}}]}`, false},
	} {
		var v any
		require.NoError(t, json.Unmarshal([]byte(tc.doc), &v))
		err := sch.Validate(v)
		assert.Equal(t, tc.ok, err == nil, "%s: %v", tc.doc, err)
	}
	// Widening copies: the registry's schemas are shared by every composition.
	a, err := (&Loader{Registry: l.Registry}).Schema()
	require.NoError(t, err)
	b, err := (&Loader{Registry: l.Registry}).Schema()
	require.NoError(t, err)
	assert.Equal(t, string(a), string(b), "composing twice gives one schema")
	// What the editor accepts, the loader does once the variables are set.
	env := map[string]string{"ROUNDS": "7", "READ_ONLY": "true"}
	ll := &Loader{Registry: l.Registry, LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }}
	s, err := ll.Load("agent.yaml", []byte("max_tool_rounds: ${ROUNDS}\ncapabilities:\n  - FileSystem:\n      read_only: ${READ_ONLY}\n"))
	require.NoError(t, err)
	assert.Equal(t, 7, s.MaxToolRounds)
}

// A string the schema constrains (a pattern, an enum, a const) may be an
// environment reference too: the loader checks the value it is filled with,
// so the editor does not flag docs/specs.md's own
// "base_url: ${LLM_BASE_URL:-https://api.openai.com/v1}", and still flags a
// value that is not a reference.
func TestComposedSchemaTakesEnvReferencesForConstrainedStrings(t *testing.T) {
	t.Parallel()
	l := testLoader(t)
	sch := compileComposed(t, l)
	for _, tc := range []struct {
		doc string
		ok  bool
	}{
		{`{"model_settings": {"base_url": "${LLM_BASE_URL:-https://api.openai.com/v1}"}}`, true},
		{`{"model_settings": {"base_url": "${LLM_BASE_URL}"}}`, true},
		{`{"model_settings": {"base_url": "ftp://example.com"}}`, false},
		{`{"model": "${MODEL}"}`, true},
		{`{"model": "${MODEL:-test}"}`, true},
		{`{"model": "gpt-5"}`, false},
		{`{"end_strategy": "${END:-early}"}`, true},
		{`{"end_strategy": "eventually"}`, false},
		{`{"version": "${VERSION:-1}"}`, true},
		{`{"version": 2}`, false},
		{`{"capabilities": [{"Thinking": {"effort": "${EFFORT:-high}"}}]}`, true},
		{`{"capabilities": [{"Thinking": {"effort": "extreme"}}]}`, false},
		{`{"capabilities": [{"name": "Thinking", "arguments": {"effort": "${EFFORT}"}}]}`, true},
		{`{"capabilities": [{"name": "Thinking", "arguments": {"effort": "extreme"}}]}`, false},
		{`{"steps": {"${STEP}": {"spec": "a.yaml"}}}`, false}, // a key is not filled
	} {
		var v any
		require.NoError(t, json.Unmarshal([]byte(tc.doc), &v))
		err := sch.Validate(v)
		assert.Equal(t, tc.ok, err == nil, "%s: %v", tc.doc, err)
	}
	// What the editor accepts, the loader does once the variables are filled.
	s, err := (&Loader{Registry: l.Registry, LookupEnv: func(string) (string, bool) { return "", false }}).Load("agent.yaml", []byte(
		"model: ${MODEL:-test}\nversion: ${VERSION:-1}\nend_strategy: ${END:-early}\n"+
			"model_settings:\n  base_url: ${LLM_BASE_URL:-https://api.openai.com/v1}\n"+
			"capabilities:\n  - Thinking: {effort: \"${EFFORT:-high}\"}\n"))
	require.NoError(t, err)
	assert.Equal(t, "test", s.Model)
}

// A capability option written null is the option left out, where the type
// takes no null of its own and the option is not required; the schema
// editors use does not flag it either, and still flags a required one's.
func TestComposedSchemaTakesNullForOptionalOptions(t *testing.T) {
	t.Parallel()
	l := testLoader(t)
	sch := compileComposed(t, l)
	for _, tc := range []struct {
		entry string
		ok    bool
	}{
		{"FileSystem: {root_dir: ., cwd: null, id: null, description: null, max_read_lines: null}", true},
		{"FileSystem: {read_only: ~, tools: ~}", true},
		{"WebSearch: {engine: ddg, max_results: ~}", true},
		{"{name: Thinking, arguments: {effort: null, budget: null}}", true},
		{"{name: WebSearch, arguments: {engine: ddg, max_results: null}}", true},
		{"WebSearch: {engine: null}", false},
		{"FileSystem: {nope: null}", false},
		{"FileSystem: {max_read_lines: 0}", false},
	} {
		src := "capabilities:\n  - " + tc.entry + "\n"
		_, loadErr := l.Load("agent.yaml", []byte(src))
		d := parseYAML("agent.yaml", []byte(src), testEnv)
		require.Empty(t, d.errs)
		schemaErr := sch.Validate(d.root)
		assert.Equal(t, tc.ok, loadErr == nil, "loader: %s: %v", tc.entry, loadErr)
		assert.Equal(t, tc.ok, schemaErr == nil, "schema: %s: %v", tc.entry, schemaErr)
	}
}

// The composed schema covers pipeline files too, so editors complete them:
// a file with steps: is checked as a pipeline, its inline specs as specs.
func TestComposedSchemaCoversPipelines(t *testing.T) {
	t.Parallel()
	l := &Loader{LookupEnv: testEnv}
	sch := compileComposed(t, l)
	for src, ok := range map[string]bool{
		"steps:\n  triage: {spec: agents/triage.yaml, input: '{{inputs.issue}}'}\n" +
			"  fix:\n    for_each: '{{steps.triage.output.files}}'\n    as: file\n    spec: agents/fix.yaml\n" +
			"    vars: {path: '{{file.path}}'}\n    max_parallel: 4\n    on_item_error: skip\n" +
			"  review: {spec: {model: test, instructions: Review.}, needs: [fix], when: \"{{steps.triage.output.files}} != []\"}\n" +
			"outputs: {review: '{{steps.review.output}}'}\ncache: true\n": true,
		"steps:\n  docs: {for_each: {glob: 'inbox/*.md'}, spec: a.yaml}\n": true,
		"steps:\n  a: {spec: a.yaml, foreach: x}\n":                        false, // unknown step key
		"steps:\n  Fix: {spec: a.yaml}\n":                                  false, // step name
		"steps:\n  a: {spec: {model: test, instructons: x}}\n":             false, // the inline spec is a spec
		"steps:\n  a: {spec: a.yaml, on_item_error: retry}\n":              false,
		"model: test\ninstructions: Still a spec.\n":                       true,
		"model: test\nsteps: {}\n":                                         false,
	} {
		d := parseYAML("p.yaml", []byte(src), testEnv)
		require.Empty(t, d.errs, src)
		err := sch.Validate(d.root)
		if ok {
			assert.NoError(t, err, src)
		} else {
			assert.Error(t, err, src)
		}
	}
}

// An empty value of a top-level key pydantic-ai reads null for loads as the
// key's absence; the schema editors use does not flag it either.
func TestComposedSchemaTakesNullForNullableKeys(t *testing.T) {
	t.Parallel()
	l := testLoader(t)
	sch := compileComposed(t, l)
	for _, key := range nullableKeys {
		src := "model: test\n" + key + ":\n"
		if key == "model" {
			src = "model:\n"
		}
		_, err := l.Load("agent.yaml", []byte(src))
		require.NoError(t, err, src)
		d := parseYAML("agent.yaml", []byte(src), testEnv)
		assert.NoError(t, sch.Validate(d.root), src)
	}
	var v any
	require.NoError(t, json.Unmarshal([]byte(`{"end_strategy": null}`), &v))
	assert.Error(t, sch.Validate(v), "end_strategy takes no null, in pydantic-ai either")
	require.NoError(t, json.Unmarshal([]byte(`{"name": 5}`), &v))
	assert.Error(t, sch.Validate(v), "the key's own schema still applies")
}
