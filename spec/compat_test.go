package spec

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
