package spec

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/capabilities"
)

func TestRetriesForms(t *testing.T) {
	t.Parallel()
	cases := []struct {
		src           string
		tools         int
		output        *int
		file          string
		wantErrSubstr string
	}{
		{src: "model: test\n", tools: DefaultRetries},
		{src: "retries: 5\n", tools: 5, output: ptrTo(5)},
		{src: "retries: {tools: 2, output: 4}\n", tools: 2, output: ptrTo(4)},
		{src: "retries: {output: 0}\n", tools: DefaultRetries, output: ptrTo(0)},
		{src: "retries: {}\n", tools: DefaultRetries},
		{src: `{"retries": {"tools": 1}}`, file: "agent.json", tools: 1},
		{src: "retries: {tool: 2}\n", wantErrSubstr: `agent.yaml:1:11: retries: unknown key "tool" (did you mean "tools"?)`},
		{src: "retries: {tools: -1}\n", wantErrSubstr: `agent.yaml:1:18: retries.tools: expected a non-negative integer, found -1`},
	}
	for _, c := range cases {
		file := c.file
		if file == "" {
			file = "agent.yaml"
		}
		var l Loader
		s, err := l.Load(file, []byte(c.src))
		if c.wantErrSubstr != "" {
			require.Error(t, err, c.src)
			assert.Contains(t, err.Error(), c.wantErrSubstr)
			continue
		}
		require.NoError(t, err, c.src)
		assert.Equal(t, c.tools, s.Retries, c.src)
		assert.Equal(t, c.output, s.OutputRetries, c.src)
	}
}

func ptrTo(n int) *int { return &n }

func TestExtensionKeysAreDropped(t *testing.T) {
	t.Parallel()
	var l Loader
	s, err := l.Load("agent.yaml", []byte("x-base: &b {temperature: 0.3}\nmodel: test\nmodel_settings: *b\n"))
	require.NoError(t, err)
	assert.NotContains(t, s.Document, "x-base", "x- keys are not part of what the spec means")
	require.NotNil(t, s.ModelSettings.Temperature)
	assert.Equal(t, 0.3, *s.ModelSettings.Temperature)

	_, err = l.Load("agent.yaml", []byte("y-base: 1\n"))
	assert.ErrorContains(t, err, `agent.yaml:1:1: unknown key "y-base"`)
	_, err = l.Load("agent.yaml", []byte("model_settings: {x-temp: 1}\n"))
	assert.Error(t, err, "only top-level x- keys are ignored")
}

func TestOutputSchemaMustBeAnObjectSchema(t *testing.T) {
	t.Parallel()
	accepted := []string{
		"output_schema: {type: object}\n",
		"output_schema: {type: object, properties: {a: {$ref: '#/$defs/A'}}, $defs: {A: {type: string}}}\n",
		"output_schema: {$ref: '#/$defs/R', $defs: {R: {type: object, properties: {n: {type: integer}}}}}\n",
	}
	for _, src := range accepted {
		var l Loader
		_, err := l.Load("agent.yaml", []byte(src))
		assert.NoError(t, err, src)
	}
	refused := map[string]string{
		"output_schema: {type: string}\n":                    `agent.yaml:1:23: output_schema: expected an object schema (type: object, or a $ref to one under $defs): the answer is one JSON object; found type "string"`,
		"output_schema: {}\n":                                `agent.yaml:1:16: output_schema: expected an object schema`,
		"output_schema: {properties: {a: {type: string}}}\n": `found no type`,
		"output_schema: {type: [object, 'null']}\n":          `found type ["object","null"]`,
		"output_schema:\n  type: object\n  properties: {next: {$ref: '#/$defs/Node'}}\n  $defs:\n    Node: {type: object, properties: {next: {$ref: '#/$defs/Node'}}}\n": `agent.yaml:5:5: output_schema.$defs.Node: refers to itself through $ref; an output schema cannot be recursive`,
	}
	for src, want := range refused {
		var l Loader
		_, err := l.Load("agent.yaml", []byte(src))
		require.Error(t, err, src)
		assert.Contains(t, err.Error(), want, src)
	}
}

func TestWarningsAtTheirKeys(t *testing.T) {
	t.Parallel()
	var l Loader
	s, err := l.Load("agent.yaml", []byte(`model: test
instrument: {service: x}
end_strategy: graceful
deps_schema: {type: object, properties: {user: {type: string}}}
description: For {{team}}
instructions: ['Hello {{user}}', 'Bye {{ guest }}']
`))
	require.NoError(t, err)
	var got []string
	for _, w := range s.Warnings {
		got = append(got, w.Error())
	}
	assert.Equal(t, []string{
		"agent.yaml:2:1: warning: instrument: has no effect in agentspec (it is pydantic-ai's Logfire switch); --events FILE records every event of a run",
		"agent.yaml:3:1: warning: end_strategy: has no effect in agentspec: an answer never comes with tool calls, so every tool call the model makes is run",
		"agent.yaml:5:1: warning: description: uses {{team}}, which deps_schema does not list among its properties",
		"agent.yaml:6:1: warning: instructions: uses {{guest}}, which deps_schema does not list among its properties",
	}, got)
	assert.Equal(t, "graceful", s.EndStrategy)
	assert.JSONEq(t, `{"type": "object", "properties": {"user": {"type": "string"}}}`, string(s.DepsSchema))
}

func TestYAML11Booleans(t *testing.T) {
	t.Parallel()
	var l Loader
	s, err := l.Load("agent.yaml", []byte("cache: On\nmodel_settings: {parallel_tool_calls: no}\nmetadata: {flag: YES, word: 'yes'}\n"))
	require.NoError(t, err)
	require.NotNil(t, s.Cache)
	require.NotNil(t, s.ModelSettings.ParallelToolCalls)
	assert.False(t, *s.ModelSettings.ParallelToolCalls)
	assert.Equal(t, map[string]any{"flag": true, "word": "yes"}, s.Metadata)
}

// pydantic-ai's capabilities default most options to None, so an option
// written null is the option left out, where the type takes no null there.
func TestNullCapabilityOptionsAreLeftOut(t *testing.T) {
	t.Parallel()
	s, err := testLoader(t).Load("agent.yaml", []byte(`capabilities:
  - FileSystem: {root_dir: ., cwd: null, id: null, description: null}
  - WebSearch: {engine: ddg, max_results: ~}
  - name: Thinking
    arguments: {effort: null, budget: null}
`))
	require.NoError(t, err)
	require.Len(t, s.Capabilities, 3)
	assert.JSONEq(t, `{"root_dir": ".", "cwd": null}`, string(s.Capabilities[0].Options), "a null the schema takes is kept")
	assert.JSONEq(t, `{"engine": "ddg"}`, string(s.Capabilities[1].Options))
	assert.JSONEq(t, `{}`, string(s.Capabilities[2].Options))
	assert.Equal(t, map[string]any{"root_dir": ".", "cwd": nil, "id": nil, "description": nil},
		s.Document["capabilities"].([]any)[0].(map[string]any)["FileSystem"], "the document keeps what the file says")

	_, err = testLoader(t).Load("agent.yaml", []byte("capabilities:\n  - WebSearch: {engine: null}\n  - FileSystem: {nope: null}\n"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `agent.yaml:2:25: capabilities[0].WebSearch.engine: expected a non-empty string, found an empty value`)
	assert.Contains(t, err.Error(), `agent.yaml:3:18: capabilities[1].FileSystem: unknown option "nope"`)
}

// PyYAML reads an unquoted 1:30 as the base-60 integer 90 (YAML 1.1).
func TestYAML11Sexagesimals(t *testing.T) {
	t.Parallel()
	var l Loader
	s, err := l.Load("agent.yaml", []byte("tool_timeout: 1:30\nmetadata: {at: 1:02:03, neg: -1:00, text: '1:30', model: ollama:qwen3:8b, port: 8080:80}\n"))
	require.NoError(t, err)
	assert.Equal(t, 90*time.Second, s.ToolTimeout)
	assert.Equal(t, map[string]any{"at": json.Number("3723"), "neg": json.Number("-60"), "text": "1:30",
		"model": "ollama:qwen3:8b", "port": "8080:80"}, s.Metadata)

	_, err = l.Load("agent.yaml", []byte("name: 10:30\n"))
	assert.ErrorContains(t, err, `agent.yaml:1:7: name: expected a string, found 630 (a number); unquoted, 10:30 takes the type of its value: write "10:30" to keep it a string`)
}

// pydantic-ai reads retries and tool_timeout in pydantic's lax mode: a
// string holding a number, an integer's float without a fraction and a
// boolean are taken as the number.
func TestLaxNumbers(t *testing.T) {
	t.Parallel()
	cases := []struct {
		file, src    string
		tools        int
		output       *int
		timeout      time.Duration
		wantErr      string
		wantNoOutput bool
	}{
		{src: `retries: "3"`, tools: 3, output: ptrTo(3)},
		{src: `retries: ' 3 '`, tools: 3, output: ptrTo(3)},
		{src: `retries: "+3"`, tools: 3, output: ptrTo(3)},
		{src: `retries: "3.0"`, tools: 3, output: ptrTo(3)},
		{src: `retries: 3.0`, tools: 3, output: ptrTo(3)},
		{src: `retries: true`, tools: 1, output: ptrTo(1)},
		{src: `retries: no`, tools: 0, output: ptrTo(0)},
		{src: `retries: {tools: "2", output: "0"}`, tools: 2, output: ptrTo(0)},
		{file: "agent.json", src: `{"retries": {"tools": "4"}, "tool_timeout": "2.5"}`, tools: 4, timeout: 2500 * time.Millisecond},
		{src: `tool_timeout: "30"`, tools: DefaultRetries, timeout: 30 * time.Second},
		{src: `tool_timeout: "1e3"`, tools: DefaultRetries, timeout: 1000 * time.Second},
		{src: `tool_timeout: ".5"`, tools: DefaultRetries, timeout: 500 * time.Millisecond},
		{src: `tool_timeout: true`, tools: DefaultRetries, timeout: time.Second},
		// What pydantic-ai refuses too.
		{src: `retries: "2.5"`, wantErr: `agent.yaml:1:10: retries: expected a non-negative integer, or a mapping (tools: 3, output: 2), found "2.5" (a string)`},
		{src: `retries: "three"`, wantErr: `agent.yaml:1:10: retries: expected a non-negative integer, or a mapping (tools: 3, output: 2), found "three" (a string)`},
		{src: `retries: "1_0"`, tools: 10, output: ptrTo(10)},
		{src: `retries: "007"`, tools: 7, output: ptrTo(7)},
		{src: `retries: "-0"`, tools: 0, output: ptrTo(0)},
		{src: `tool_timeout: "1_5"`, tools: DefaultRetries, timeout: 15 * time.Second},
		{src: `retries: "99999999999999999999"`, wantErr: `agent.yaml:1:10: retries: expected an integer of at most 9223372036854775807, found "99999999999999999999"`},
		{src: `retries: "-1"`, wantErr: `agent.yaml:1:10: retries: expected a non-negative integer, found "-1"`},
		{src: `retries: {tools: "x"}`, wantErr: `agent.yaml:1:18: retries.tools: expected a non-negative integer, found "x" (a string)`},
		{src: `tool_timeout: "soon"`, wantErr: `agent.yaml:1:15: tool_timeout: expected a positive number, found "soon" (a string)`},
		{src: `tool_timeout: "0"`, wantErr: `agent.yaml:1:15: tool_timeout: expected a positive number, found "0"`},
		{src: `tool_timeout: false`, wantErr: `agent.yaml:1:15: tool_timeout: expected a positive number, found false`},
		{src: `tool_timeout: "inf"`, wantErr: `found "inf" (a string)`},
		// Elsewhere values are not coerced.
		{src: `max_tool_rounds: "3"`, wantErr: `agent.yaml:1:18: max_tool_rounds: expected a positive integer, found "3" (a string)`},
	}
	for _, c := range cases {
		file := c.file
		if file == "" {
			file = "agent.yaml"
		}
		var l Loader
		s, err := l.Load(file, []byte(c.src))
		if c.wantErr != "" {
			require.Error(t, err, c.src)
			assert.Contains(t, err.Error(), c.wantErr, c.src)
			continue
		}
		require.NoError(t, err, c.src)
		assert.Equal(t, c.tools, s.Retries, c.src)
		assert.Equal(t, c.output, s.OutputRetries, c.src)
		assert.Equal(t, c.timeout, s.ToolTimeout, c.src)
	}
}

// pydantic-ai's V1 names of the Google providers load, meaning what they
// meant there, with a warning that pydantic-ai itself now refuses them.
func TestV1GoogleProvidersWarn(t *testing.T) {
	t.Parallel()
	var l Loader
	for _, c := range []struct{ model, want string }{
		{"google-gla:gemini-2.5-flash", `agent.yaml:1:8: warning: model: google-gla is pydantic-ai V1's name for google (the Gemini API), which pydantic-ai now refuses as an unknown model; write google:gemini-2.5-flash for a spec both load`},
		{"google-vertex:gemini-2.5-pro", `agent.yaml:1:8: warning: model: google-vertex is pydantic-ai V1's name for google-cloud (Gemini on Vertex AI), which pydantic-ai now refuses as an unknown model; write google-cloud:gemini-2.5-pro for a spec both load`},
	} {
		s, err := l.Load("agent.yaml", []byte("model: "+c.model+"\n"))
		require.NoError(t, err)
		require.Len(t, s.Warnings, 1, c.model)
		assert.Equal(t, c.want, s.Warnings[0].Error())
	}
	s, err := l.Load("agent.yaml", []byte("model: google-cloud:gemini-2.5-pro\n"))
	require.NoError(t, err)
	assert.Empty(t, s.Warnings)
}

// pydantic-ai's other V1 names, which agentspec refuses as V2 does, are
// refused with the name to write instead, not a near spelling of another
// provider: grok is xAI's, not Groq's.
func TestRetiredProvidersNameTheirSuccessor(t *testing.T) {
	t.Parallel()
	var l Loader
	for _, c := range []struct{ model, want string }{
		{"grok:grok-4", `agent.yaml:1:8: model: unknown model provider "grok": it is pydantic-ai V1's name for xai, which V2 refuses too; write xai:grok-4`},
		{"vertexai:gemini-2.5-pro", `agent.yaml:1:8: model: unknown model provider "vertexai": it is pydantic-ai V1's name for google-cloud, which V2 refuses too; write google-cloud:gemini-2.5-pro`},
		{"gateway/gemini:gemini-2.5-pro", `agent.yaml:1:8: model: unknown model provider "gateway/gemini": it is pydantic-ai V1's name for gateway/google-cloud, which V2 refuses too; write gateway/google-cloud:gemini-2.5-pro`},
		{"gateway/google-vertex:gemini-2.5-pro", `agent.yaml:1:8: model: unknown model provider "gateway/google-vertex": it is pydantic-ai V1's name for gateway/google-cloud, which V2 refuses too; write gateway/google-cloud:gemini-2.5-pro`},
	} {
		_, err := l.Load("agent.yaml", []byte("model: "+c.model+"\n"))
		assert.EqualError(t, err, c.want, c.model)
	}
}

// A root $ref is an object schema when what it refers to is one: the answer
// is one JSON object, as the message says.
func TestOutputSchemaRefToANonObject(t *testing.T) {
	t.Parallel()
	accepted := []string{
		"output_schema: {$ref: '#/$defs/R', $defs: {R: {$ref: '#/$defs/S'}, S: {type: object}}}\n",
		"output_schema: {$ref: '#/$defs/R', $defs: {R: {type: object, properties: {a: {$ref: '#/$defs/A'}}}, A: {type: string}}}\n",
	}
	for _, src := range accepted {
		var l Loader
		_, err := l.Load("agent.yaml", []byte(src))
		assert.NoError(t, err, src)
	}
	refused := map[string]string{
		"output_schema: {$ref: '#/$defs/A', $defs: {A: {type: string}}}\n": `agent.yaml:1:23: output_schema.$ref: expected an object schema (type: object, or a $ref to one under $defs): ` +
			`the answer is one JSON object; found a $ref to type "string"`,
		"output_schema:\n  $ref: '#/$defs/A'\n  $defs:\n    A: {properties: {a: {type: string}}}\n": `agent.yaml:2:9: output_schema.$ref: expected an object schema (type: object, or a $ref to one under $defs): ` +
			`the answer is one JSON object; found a $ref to a schema with no type`,
		"output_schema: {$ref: '#/$defs/A', $defs: {A: {$ref: '#/$defs/B'}, B: {type: array}}}\n": `found a $ref to type "array"`,
	}
	for src, want := range refused {
		var l Loader
		_, err := l.Load("agent.yaml", []byte(src))
		require.Error(t, err, src)
		assert.Contains(t, err.Error(), want, src)
	}
}

// An option a type still reads under a name its reference has deprecated
// (FileSystem's protected_patterns, now read_only_patterns) loads, with a
// warning at its key saying what to write instead.
func TestDeprecatedOptionWarnsAtItsKey(t *testing.T) {
	t.Parallel()
	reg := capabilities.NewRegistry()
	require.NoError(t, reg.Register(capabilities.Type{
		Name:       "Files",
		Schema:     json.RawMessage(`{"type": "object", "properties": {"old": {"type": "array"}, "new": {"type": "array"}}}`),
		Deprecated: map[string]string{"old": "write new"},
		New: func(context.Context, capabilities.Args) (capabilities.Capability, error) {
			return nil, errors.New("not built")
		},
	}))
	s, err := (&Loader{Registry: reg}).Load("agent.yaml", []byte("model: test\ncapabilities:\n  - Files: {new: []}\n  - Files:\n      old: []\n"))
	require.NoError(t, err)
	var got []string
	for _, w := range s.Warnings {
		got = append(got, w.Error())
	}
	assert.Equal(t, []string{"agent.yaml:5:7: warning: capabilities[1].Files.old: is deprecated: write new"}, got)
}
