package providers

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"
)

func TestInfoRoundTrip(t *testing.T) {
	t.Parallel()
	call := llms.ToolCall{ID: "c1", Type: "function", FunctionCall: &llms.FunctionCall{Name: "f", Arguments: "{}"}}
	for _, tc := range []struct {
		name string
		info Info
	}{
		{"empty", Info{}},
		{"usage", Info{Usage: Usage{Input: 1, Output: 2, CacheWrite: 3, CacheRead: 4, Reasoning: 5}}},
		{"refusal", Info{Refused: true, Refusal: "no"}},
		{"empty refusal", Info{Refused: true}},
		{"turn", Info{Turn: []llms.ContentPart{blockPart([]byte(`{"type":"thinking"}`)), llms.TextContent{Text: "hi"}, call}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var c llms.ContentChoice
			SetInfo(&c, tc.info)
			got, usage, turn := ReadInfo(&c)
			assert.True(t, usage)
			assert.True(t, turn)
			assert.Equal(t, tc.info, got)
		})
	}
}

func TestSetInfoKeys(t *testing.T) {
	t.Parallel()
	c := llms.ContentChoice{GenerationInfo: map[string]any{"Other": true}}
	SetInfo(&c, Info{Usage: Usage{Input: 1, Output: 2, CacheWrite: 3, CacheRead: 4, Reasoning: 5}, Refused: true, Refusal: "r"})
	assert.Equal(t, map[string]any{
		"Other":                    true,
		"InputTokens":              1,
		"OutputTokens":             2,
		"CacheCreationInputTokens": 3,
		"CacheReadInputTokens":     4,
		"ReasoningTokens":          5,
		"Refusal":                  "r",
		"Turn":                     []llms.ContentPart(nil),
	}, c.GenerationInfo, "the keys are what langchaingo users read")
	SetInfo(&c, Info{})
	_, refused := c.GenerationInfo["Refusal"]
	assert.True(t, refused, "SetInfo adds, it never removes")
}

func TestReadInfo(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		info  map[string]any
		want  Info
		usage bool
		turn  bool
	}{
		{name: "nothing"},
		{name: "langchaingo openai", info: map[string]any{"PromptTokens": 10, "CompletionTokens": 3, "TotalTokens": 13},
			want: Info{Usage: Usage{Input: 10, Output: 3}}, usage: true},
		{name: "ours win", info: map[string]any{"InputTokens": 7, "PromptTokens": 10, "CompletionTokens": 3},
			want: Info{Usage: Usage{Input: 7, Output: 3}}, usage: true},
		{name: "number types", info: map[string]any{"InputTokens": float64(4), "OutputTokens": int64(1),
			"CacheReadInputTokens": int32(2), "ReasoningTokens": json.Number("9")},
			want: Info{Usage: Usage{Input: 4, Output: 1, CacheRead: 2, Reasoning: 9}}, usage: true},
		{name: "bad json number", info: map[string]any{"InputTokens": json.Number("x")}},
		{name: "cache alone is no usage", info: map[string]any{"CacheReadInputTokens": 5},
			want: Info{Usage: Usage{CacheRead: 5}}},
		{name: "not a string refusal", info: map[string]any{"Refusal": 1}},
		{name: "nil turn", info: map[string]any{"Turn": []llms.ContentPart(nil)}, turn: true},
		{name: "untyped turn", info: map[string]any{"Turn": []any{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, usage, turn := ReadInfo(&llms.ContentChoice{GenerationInfo: tc.info})
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.usage, usage, "usage")
			assert.Equal(t, tc.turn, turn, "turn")
		})
	}
}

func TestStopReasons(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		reason          string
		truncated, tool bool
	}{
		{"max_tokens", true, false},
		{"length", true, false},
		{"tool_calls", false, true},
		{"tool_use", false, true},
		{"function_call", false, true},
		{"stop", false, false},
		{"end_turn", false, false},
		{"refusal", false, false},
		{"pause_turn", false, false},
		{"", false, false},
	} {
		assert.Equal(t, tc.truncated, Truncated(tc.reason), tc.reason)
		assert.Equal(t, tc.tool, ToolStop(tc.reason), tc.reason)
	}
}

func TestBlocks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		in   any
		json string
	}{
		{"chat reasoning", chatBlock{Type: blockReasoning, Field: "reasoning_content", Text: "hm"},
			`{"type":"reasoning","field":"reasoning_content","text":"hm"}`},
		{"chat call extra", chatBlock{Type: blockCallExtra, ID: "c1", Extra: json.RawMessage(`{"google":{}}`)},
			`{"type":"call_extra","id":"c1","extra":{"google":{}}}`},
		{"gemini part", geminiBlock{Type: blockGeminiPart, Part: json.RawMessage(`{"text":"t","thought":true}`)},
			`{"type":"gemini_part","part":{"text":"t","thought":true}}`},
		{"gemini signature", geminiBlock{Type: blockGeminiSignature, Signature: "sig"},
			`{"type":"gemini_signature","signature":"sig"}`},
		{"bedrock reasoning", bedrockBlock{Type: blockBedrockReasoning, Text: "t", Signature: "s", Redacted: []byte{1}},
			`{"type":"bedrock_reasoning","text":"t","signature":"s","redacted":"AQ=="}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := encodeBlock(tc.in)
			raw, ok := IsBlock(p)
			require.True(t, ok)
			assert.JSONEq(t, tc.json, string(raw))
			assert.True(t, isBlock(p))
			assert.False(t, isToolError(p))
			back := reflect.New(reflect.TypeOf(tc.in))
			require.True(t, decodeBlock(p, back.Interface()))
			assert.Equal(t, tc.in, back.Elem().Interface())
		})
	}
}

func TestNotBlocks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		part      llms.ContentPart
		toolError bool
	}{
		{"text", llms.TextContent{Text: `{"type":"reasoning"}`}, false},
		{"image", llms.BinaryContent{MIMEType: "image/png", Data: []byte(`{}`)}, false},
		{"tool error", ToolError, true},
		{"call", llms.ToolCall{ID: "c"}, false},
	} {
		_, ok := IsBlock(tc.part)
		assert.False(t, ok, tc.name)
		var b chatBlock
		assert.False(t, decodeBlock(tc.part, &b), tc.name)
		assert.Equal(t, tc.toolError, isToolError(tc.part), tc.name)
	}
	var b chatBlock
	assert.False(t, decodeBlock(blockPart([]byte("not json")), &b), "a block that is not JSON")
}
