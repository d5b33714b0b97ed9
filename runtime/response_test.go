package runtime

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/tmc/langchaingo/llms"
)

func TestCollect(t *testing.T) {
	t.Parallel()
	call := func(id, typ, name, args string) llms.ToolCall {
		return llms.ToolCall{ID: id, Type: typ, FunctionCall: &llms.FunctionCall{Name: name, Arguments: args}}
	}
	cases := []struct {
		name string
		resp *llms.ContentResponse
		want turn
	}{
		{
			name: "nil response",
			resp: nil,
			want: turn{},
		},
		{
			name: "openai: one choice with text and calls",
			resp: &llms.ContentResponse{Choices: []*llms.ContentChoice{{
				Content:        "Reading.",
				StopReason:     "tool_calls",
				ToolCalls:      []llms.ToolCall{call("a", "function", "read_file", `{"path":"x"}`), call("b", "function", "list_directory", "")},
				GenerationInfo: map[string]any{"PromptTokens": 10, "CompletionTokens": 3, "TotalTokens": 13},
			}}},
			want: turn{
				blocks:     []llms.ContentPart{llms.TextContent{Text: "Reading."}, call("a", "function", "read_file", `{"path":"x"}`), call("b", "function", "list_directory", "{}")},
				text:       "Reading.",
				calls:      []llms.ToolCall{call("a", "function", "read_file", `{"path":"x"}`), call("b", "function", "list_directory", "{}")},
				stopReason: "tool_calls",
				usage:      tokens{input: 10, output: 3},
			},
		},
		{
			name: "anthropic: one choice per block, usage on each",
			resp: &llms.ContentResponse{Choices: []*llms.ContentChoice{
				{Content: "First.", StopReason: "tool_use", GenerationInfo: map[string]any{"InputTokens": 7, "OutputTokens": 2}},
				{ToolCalls: []llms.ToolCall{call("t1", "", "grep", "null")}, StopReason: "tool_use", GenerationInfo: map[string]any{"InputTokens": 7, "OutputTokens": 2}},
				{Content: "Then.", StopReason: "tool_use", GenerationInfo: map[string]any{"InputTokens": 7, "OutputTokens": 2}},
			}},
			want: turn{
				blocks:     []llms.ContentPart{llms.TextContent{Text: "First."}, call("t1", "function", "grep", "{}"), llms.TextContent{Text: "Then."}},
				text:       "First.\nThen.",
				calls:      []llms.ToolCall{call("t1", "function", "grep", "{}")},
				stopReason: "tool_use",
				usage:      tokens{input: 7, output: 2},
			},
		},
		{
			name: "missing ids are made up; nameless calls dropped",
			resp: &llms.ContentResponse{Choices: []*llms.ContentChoice{{
				ToolCalls: []llms.ToolCall{
					{Type: "function"},
					call("", "", "", `{"x":1}`),
					call("", "", "read_file", " "),
					call("", "", "read_file", `{}`),
				},
			}}},
			want: turn{
				blocks: []llms.ContentPart{call("call_agentspec_1", "function", "read_file", "{}"), call("call_agentspec_2", "function", "read_file", "{}")},
				calls:  []llms.ToolCall{call("call_agentspec_1", "function", "read_file", "{}"), call("call_agentspec_2", "function", "read_file", "{}")},
				usage:  tokens{none: true},
			},
		},
		{
			name: "tool stop reason without calls is lost",
			resp: &llms.ContentResponse{Choices: []*llms.ContentChoice{{StopReason: "tool_calls", ToolCalls: []llms.ToolCall{{ID: "x", Type: "function"}}}}},
			want: turn{stopReason: "tool_calls", lost: true, usage: tokens{none: true}},
		},
		{
			name: "usage as JSON numbers from a replayed response",
			resp: &llms.ContentResponse{Choices: []*llms.ContentChoice{nil, {Content: "hi", GenerationInfo: map[string]any{"InputTokens": float64(4), "OutputTokens": int64(1)}}}},
			want: turn{blocks: []llms.ContentPart{llms.TextContent{Text: "hi"}}, text: "hi", usage: tokens{input: 4, output: 1}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var ids idSource
			assert.Equal(t, tc.want, collect(tc.resp, ids.next))
		})
	}
}

func TestCollectDoesNotModifyTheResponse(t *testing.T) {
	t.Parallel()
	fc := &llms.FunctionCall{Name: "read_file", Arguments: ""}
	resp := &llms.ContentResponse{Choices: []*llms.ContentChoice{{ToolCalls: []llms.ToolCall{{FunctionCall: fc}}}}}
	var ids idSource
	collect(resp, ids.next)
	assert.Equal(t, "", fc.Arguments)
	assert.Equal(t, "", resp.Choices[0].ToolCalls[0].ID)
}

func TestReplay(t *testing.T) {
	t.Parallel()
	a := llms.ToolCall{ID: "a", Type: "function", FunctionCall: &llms.FunctionCall{Name: "read_file", Arguments: `{"path":"x"}`}}
	b := llms.ToolCall{ID: "b", Type: "function", FunctionCall: &llms.FunctionCall{Name: "grep", Arguments: `not json`}}
	text := llms.TextContent{Text: "Looking."}
	tr := turn{blocks: []llms.ContentPart{text, a, b}, text: "Looking.", calls: []llms.ToolCall{a, b}}

	assert.Equal(t, []llms.MessageContent{{Role: ai, Parts: []llms.ContentPart{text, a, b}}}, replay(DialectOpenAI, tr))

	safeB := b
	safeB.FunctionCall = &llms.FunctionCall{Name: "grep", Arguments: "{}"}
	assert.Equal(t, []llms.MessageContent{
		{Role: ai, Parts: []llms.ContentPart{text}},
		{Role: ai, Parts: []llms.ContentPart{a}},
		{Role: ai, Parts: []llms.ContentPart{safeB}},
	}, replay(DialectAnthropic, tr), "arguments that are not an object would break the anthropic client")

	noText := turn{blocks: []llms.ContentPart{a}, calls: []llms.ToolCall{a}}
	assert.Equal(t, []llms.MessageContent{{Role: ai, Parts: []llms.ContentPart{a}}}, replay(DialectOpenAI, noText))
}
