package testmodel

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"
)

func decode(t *testing.T, s string) any {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(s)))
	require.NoError(t, err)
	return v
}

func TestGenerate(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, schema, want string
	}{
		{"const", `{"const": 7}`, `7`},
		{"enum", `{"type": "string", "enum": ["b", "c"]}`, `"b"`},
		{"examples", `{"type": "string", "examples": ["x.go"]}`, `"x.go"`},
		{"no type", `{}`, `"a"`},
		// As pydantic-ai: properties without a type are no object.
		{"properties without type", `{"properties": {"x": {"type": "integer"}}, "required": ["x"]}`, `"a"`},
		{"string", `{"type": "string"}`, `"a"`},
		{"minLength", `{"type": "string", "minLength": 3}`, `"aaa"`},
		{"minLength 0", `{"type": "string", "minLength": 0}`, `""`},
		{"maxLength 0", `{"type": "string", "maxLength": 0}`, `""`},
		{"date", `{"type": "string", "format": "date"}`, `"2024-01-01"`},
		{"uri", `{"type": "string", "format": "uri"}`, `"https://example.com"`},
		{"date-time", `{"type": "string", "format": "date-time"}`, `"2024-01-01T00:00:00Z"`},
		{"email", `{"type": "string", "format": "email"}`, `"a@example.com"`},
		{"integer", `{"type": "integer"}`, `0`},
		{"minimum", `{"type": "integer", "minimum": 5, "maximum": 9}`, `5`},
		{"maximum only", `{"type": "integer", "maximum": -2}`, `-2`},
		{"exclusiveMinimum", `{"type": "integer", "exclusiveMinimum": 0}`, `1`},
		{"exclusiveMaximum", `{"type": "number", "exclusiveMaximum": 0}`, `-1`},
		{"number", `{"type": "number"}`, `0`},
		{"boolean", `{"type": "boolean"}`, `false`},
		{"null", `{"type": "null"}`, `null`},
		{"nullable", `{"type": ["null", "string"]}`, `"a"`},
		{"anyOf", `{"anyOf": [{"type": "integer"}, {"type": "string"}]}`, `0`},
		{"required only", `{"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}, "required": ["b"]}`, `{"b":0}`},
		{"all optional", `{"type": "object", "properties": {"a": {"type": "string"}}}`, `{}`},
		{"additionalProperties", `{"type": "object", "required": ["additionalProperty"], "properties": {"additionalProperty": {"type": "integer"}}, "additionalProperties": {"type": "boolean"}}`, `{"additionalProperty":0,"additionalProperty_":false}`},
		{"array", `{"type": "array", "items": {"type": "string"}}`, `["a"]`},
		{"array minItems", `{"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2}`, `[0,0]`},
		// Padding to minItems adds no further item, as in pydantic-ai's
		// TestModel; the extra one comes only when minItems is met already.
		{"array minItems padded", `{"type": "array", "items": {"type": "integer"}, "minItems": 2}`, `[0,0]`},
		{"prefixItems then one", `{"type": "array", "prefixItems": [{"type": "boolean"}], "items": {"type": "string"}, "minItems": 1}`, `[false,"a"]`},
		{"array any items", `{"type": "array", "items": {}}`, `[]`},
		{"prefixItems", `{"type": "array", "prefixItems": [{"type": "boolean"}, {"type": "string"}], "items": false}`, `[false,"a"]`},
		// uniqueItems: each item is made with the next seed, as in
		// pydantic-ai's TestModel, and the values after the array keep it.
		{"unique integers", `{"type": "array", "items": {"type": "integer"}, "minItems": 3, "uniqueItems": true}`, `[0,1,2]`},
		{"unique strings", `{"type": "array", "items": {"type": "string"}, "minItems": 2, "uniqueItems": true}`, `["a","b"]`},
		{"unique extra item", `{"type": "array", "items": {"type": "string", "minLength": 2}, "uniqueItems": true}`, `["aa"]`},
		{"unique enum", `{"type": "array", "items": {"enum": ["x", "y"]}, "minItems": 2, "uniqueItems": true}`, `["x","y"]`},
		{"unique examples", `{"type": "array", "items": {"type": "string", "examples": ["x", "y"]}, "minItems": 2, "uniqueItems": true}`, `["x","y"]`},
		{"unique anyOf", `{"type": "array", "items": {"anyOf": [{"type": "integer"}, {"type": "string"}]}, "minItems": 2, "uniqueItems": true}`, `[0,"b"]`},
		{"unique booleans", `{"type": "array", "items": {"type": "boolean"}, "minItems": 2, "uniqueItems": true}`, `[false,true]`},
		{"unique bounded", `{"type": "array", "items": {"type": "integer", "minimum": 5, "maximum": 7}, "minItems": 3, "uniqueItems": true}`, `[5,6,7]`},
		{"unique below a maximum", `{"type": "array", "items": {"type": "integer", "maximum": 5}, "minItems": 2, "uniqueItems": true}`, `[5,4]`},
		{"unique numbers", `{"type": "array", "items": {"type": "number", "exclusiveMinimum": 0.5}, "minItems": 2, "uniqueItems": true}`, `[1.5,2.5]`},
		{"unique dates", `{"type": "array", "items": {"type": "string", "format": "date"}, "minItems": 2, "uniqueItems": true}`, `["2024-01-01","2024-01-02"]`},
		{"unique date-times", `{"type": "array", "items": {"type": "string", "format": "date-time"}, "minItems": 2, "uniqueItems": true}`, `["2024-01-01T00:00:00Z","2024-01-02T00:00:00Z"]`},
		{"unique emails", `{"type": "array", "items": {"type": "string", "format": "email"}, "minItems": 2, "uniqueItems": true}`, `["a@example.com","b@example.com"]`},
		{"unique uris", `{"type": "array", "items": {"type": "string", "format": "uri"}, "minItems": 2, "uniqueItems": true}`, `["https://example.com","https://example.com/1"]`},
		{"unique untyped", `{"type": "array", "minItems": 2, "uniqueItems": true}`, `["a","b"]`},
		{"unique objects", `{"type": "array", "items": {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}, "minItems": 2, "uniqueItems": true}`, `[{"id":0},{"id":1}]`},
		{"unique free objects", `{"type": "array", "items": {"type": "object", "additionalProperties": true}, "minItems": 2, "uniqueItems": true}`, `[{"additionalProperty":"a"},{"additionalProperty":"b"}]`},
		{"unique prefixItems", `{"type": "array", "prefixItems": [{"type": "string"}, {"type": "string"}], "uniqueItems": true}`, `["a","b"]`},
		{"seed goes on after the array", `{"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string"}, "minItems": 2, "uniqueItems": true}, "title": {"type": "string"}, "n": {"type": "integer"}}, "required": ["tags", "title", "n"]}`,
			`{"tags":["a","b"],"title":"c","n":2}`},
		{"ref", `{"type": "object", "required": ["p"], "properties": {"p": {"$ref": "#/$defs/P"}}, "$defs": {"P": {"type": "object", "required": ["x"], "properties": {"x": {"type": "number"}}}}}`, `{"p":{"x":0}}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			// Decoded as the model decodes it: properties are made in
			// the order they are written.
			got := generated(t, c.schema)
			assert.JSONEq(t, c.want, got)
			// What is generated is valid against the schema.
			comp := jsonschema.NewCompiler()
			require.NoError(t, comp.AddResource("s.json", decode(t, c.schema)))
			compiled, err := comp.Compile("s.json")
			require.NoError(t, err)
			assert.NoError(t, compiled.Validate(decode(t, got)))
		})
	}
}

func TestCharsAsPydanticAI(t *testing.T) {
	t.Parallel()
	for seed, want := range map[int]string{0: "a", 1: "b", 25: "z", 26: "A", 52: "0", 62: "!", 93: "~", 94: "aa", 95: "ab", 188: "ba"} {
		assert.Equal(t, want, (&generator{seed: seed}).char(), "seed %d", seed)
	}
}

func TestGenerateErrors(t *testing.T) {
	t.Parallel()
	_, err := Generate(decode(t, `{"type": "object", "required": ["p"], "properties": {"p": {"$ref": "#/$defs/Missing"}}}`))
	assert.ErrorContains(t, err, `property p: cannot resolve $ref "#/$defs/Missing"`)
	_, err = Generate(decode(t, `{"type": "tuple"}`))
	assert.ErrorContains(t, err, `unknown type "tuple"`)
}

func tool(name, params string) llms.Tool {
	var p map[string]any
	if err := json.Unmarshal([]byte(params), &p); err != nil {
		panic(err)
	}
	return llms.Tool{Type: "function", Function: &llms.FunctionDefinition{Name: name, Parameters: p}}
}

func TestFirstTurnCallsEveryTool(t *testing.T) {
	t.Parallel()
	m, err := New(nil)
	require.NoError(t, err)
	msgs := []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "Begin.")}
	resp, err := m.GenerateContent(context.Background(), msgs, llms.WithTools([]llms.Tool{
		tool("read_file", `{"type": "object", "properties": {"path": {"type": "string"}, "limit": {"type": "integer"}}, "required": ["path"]}`),
		tool("now", `{"type": "object", "properties": {}}`),
	}))
	require.NoError(t, err)
	require.Len(t, resp.Choices, 1)
	calls := resp.Choices[0].ToolCalls
	require.Len(t, calls, 2)
	assert.Equal(t, "pyd_ai_tool_call_id__read_file", calls[0].ID, "as pydantic-ai names them")
	assert.Equal(t, "pyd_ai_tool_call_id__now", calls[1].ID)
	assert.Equal(t, "read_file", calls[0].FunctionCall.Name)
	assert.JSONEq(t, `{"path": "a"}`, calls[0].FunctionCall.Arguments)
	assert.Equal(t, "now", calls[1].FunctionCall.Name)
	assert.JSONEq(t, `{}`, calls[1].FunctionCall.Arguments)
}

func TestFinalAnswer(t *testing.T) {
	t.Parallel()
	history := []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeHuman, "Begin."),
		{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{llms.ToolCall{ID: "1", Type: "function", FunctionCall: &llms.FunctionCall{Name: "now", Arguments: "{}"}}}},
		{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{
			llms.ToolCallResponse{ToolCallID: "1", Name: "now", Content: "12:00"},
			llms.ToolCallResponse{ToolCallID: "2", Name: "read_file", Content: "Error: File not found: a"},
			llms.ToolCallResponse{ToolCallID: "3", Name: "clock", Content: "tick"},
		}},
	}
	tools := llms.WithTools([]llms.Tool{tool("now", `{"type": "object"}`)})

	m, err := New(nil)
	require.NoError(t, err)
	resp, err := m.GenerateContent(context.Background(), history, tools)
	require.NoError(t, err)
	assert.Empty(t, resp.Choices[0].ToolCalls, "tools are called in the first round only")
	assert.Equal(t, `{"now":"12:00","clock":"tick"}`, resp.Choices[0].Content, "failed calls are left out, the order is kept")

	resp, err = m.GenerateContent(context.Background(), history[:1])
	require.NoError(t, err)
	assert.Equal(t, NoToolCalls, resp.Choices[0].Content)

	m, err = New(json.RawMessage(`{"type": "object", "properties": {"answer": {"type": "string"}, "confidence": {"type": "number"}}, "required": ["answer", "confidence"]}`))
	require.NoError(t, err)
	resp, err = m.GenerateContent(context.Background(), history, tools)
	require.NoError(t, err)
	assert.JSONEq(t, `{"answer": "a", "confidence": 0}`, resp.Choices[0].Content)
}

// generated is what Generate makes of schema, as the test model writes it.
func generated(t *testing.T, schema string) string {
	t.Helper()
	sch, err := decodeOrdered([]byte(schema))
	require.NoError(t, err)
	v, err := Generate(sch)
	require.NoError(t, err)
	b, err := marshal(v)
	require.NoError(t, err)
	return string(b)
}

// TestGenerateAsPydanticAI pins the text pydantic-ai's TestModel writes:
// an object's keys in the order of its properties, a number as a float,
// no HTML escapes.
func TestGenerateAsPydanticAI(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, schema, want string
	}{
		{"properties order", `{"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}, "score": {"type": "number"}}, "required": ["score", "name", "age"]}`,
			`{"name":"a","age":0,"score":0.0}`},
		{"nested", `{"type": "object", "properties": {"z": {"type": "object", "properties": {"y": {"type": "boolean"}, "x": {"type": "null"}}, "required": ["x", "y"]}}, "required": ["z"]}`,
			`{"z":{"y":false,"x":null}}`},
		{"required beyond properties last", `{"type": "object", "properties": {"b": {"type": "string"}}, "required": ["z", "b"], "additionalProperties": true}`,
			`{"b":"a","z":"a","additionalProperty":"a"}`},
		{"number", `{"type": "number"}`, `0.0`},
		{"number minimum", `{"type": "number", "minimum": 2}`, `2.0`},
		{"number fraction", `{"type": "number", "minimum": 2.5}`, `2.5`},
		{"unique numbers", `{"type": "array", "items": {"type": "number", "minimum": 1}, "minItems": 2, "uniqueItems": true}`, `[1.0,2.0]`},
		{"integer", `{"type": "integer", "minimum": 1e3}`, `1000`},
		{"const kept as written", `{"const": {"b": 1.0, "a": 2}}`, `{"b":1.0,"a":2}`},
		{"no HTML escapes", `{"enum": ["<a & b>"]}`, `"<a & b>"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got := generated(t, c.schema)
			assert.Equal(t, c.want, got)
			comp := jsonschema.NewCompiler()
			require.NoError(t, comp.AddResource("s.json", decode(t, c.schema)))
			compiled, err := comp.Compile("s.json")
			require.NoError(t, err)
			assert.NoError(t, compiled.Validate(decode(t, got)), "what is generated is valid against the schema")
		})
	}
}

func TestAnswerText(t *testing.T) {
	t.Parallel()
	m, err := New(json.RawMessage(`{"type": "object", "properties": {"verdict": {"enum": ["<ok>"]}, "confidence": {"type": "number"}, "answer": {"type": "string"}}, "required": ["answer", "confidence", "verdict"]}`))
	require.NoError(t, err)
	msgs := []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "Begin.")}
	resp, err := m.GenerateContent(context.Background(), msgs)
	require.NoError(t, err)
	assert.Equal(t, `{"verdict":"<ok>","confidence":0.0,"answer":"a"}`, resp.Choices[0].Content)

	m, err = New(nil)
	require.NoError(t, err)
	msgs = append(msgs,
		llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{llms.ToolCall{ID: "1", Type: "function", FunctionCall: &llms.FunctionCall{Name: "fetch", Arguments: "{}"}}}},
		llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{llms.ToolCallResponse{ToolCallID: "1", Name: "fetch", Content: "<p>a & b</p>"}}})
	resp, err = m.GenerateContent(context.Background(), msgs)
	require.NoError(t, err)
	assert.Equal(t, `{"fetch":"<p>a & b</p>"}`, resp.Choices[0].Content)
}

func TestToolArgumentsInPropertiesOrder(t *testing.T) {
	t.Parallel()
	m, err := New(nil)
	require.NoError(t, err)
	msgs := []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "Begin.")}
	params := json.RawMessage(`{"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}, "count": {"type": "number"}}, "required": ["count", "content", "path"]}`)
	resp, err := m.GenerateContent(context.Background(), msgs, llms.WithTools([]llms.Tool{
		{Type: "function", Function: &llms.FunctionDefinition{Name: "write", Parameters: params}},
	}))
	require.NoError(t, err)
	assert.Equal(t, `{"path":"a","content":"a","count":0.0}`, resp.Choices[0].ToolCalls[0].FunctionCall.Arguments)
}
