package providers

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestPatchAnthropic(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		p    patch
		in   string
		want string
	}{
		{
			name: "consecutive turns merge; string content becomes a text block",
			in: `{"model":"m","messages":[
				{"role":"user","content":"hi"},
				{"role":"user","content":[{"type":"text","text":"there"}]},
				{"role":"assistant","content":[{"type":"text","text":"Reading."}]},
				{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"read","input":{"path":"a"}}]},
				{"role":"assistant","content":[{"type":"tool_use","id":"t2","name":"read","input":{"path":"b"}}]},
				{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"A"}]},
				{"role":"user","content":[{"type":"tool_result","tool_use_id":"t2","content":"B"}]}]}`,
			want: `{"model":"m","messages":[
				{"role":"user","content":[{"type":"text","text":"hi"},{"type":"text","text":"there"}]},
				{"role":"assistant","content":[{"type":"text","text":"Reading."},
					{"type":"tool_use","id":"t1","name":"read","input":{"path":"a"}},
					{"type":"tool_use","id":"t2","name":"read","input":{"path":"b"}}]},
				{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"A"},
					{"type":"tool_result","tool_use_id":"t2","content":"B"}]}]}`,
		},
		{
			name: "tool results move before text in a user turn",
			in: `{"messages":[{"role":"user","content":[{"type":"text","text":"keep going"}]},
				{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"A"}]}]}`,
			want: `{"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"A"},
				{"type":"text","text":"keep going"}]}]}`,
		},
		{
			name: "empty text beside a tool call is dropped, a null input becomes {}",
			in: `{"messages":[{"role":"assistant","content":[{"type":"text","text":""}]},
				{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"list","input":null}]}]}`,
			want: `{"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"list","input":{}}]}]}`,
		},
		{
			name: "a lone empty text is left for the API to judge",
			in:   `{"messages":[{"role":"user","content":""}]}`,
			want: `{"messages":[{"role":"user","content":[{"type":"text","text":""}]}]}`,
		},
		{
			name: "tools get an input schema; tool_choice none",
			p:    patch{toolChoiceNone: true},
			in: `{"messages":[],"tools":[{"name":"list","description":"d"},{"name":"x","input_schema":null},
				{"name":"read","input_schema":{"type":"object","properties":{"path":{"type":"string"}}}}]}`,
			want: `{"messages":[],"tool_choice":{"type":"none"},"tools":[
				{"name":"list","description":"d","input_schema":{"type":"object","properties":{}}},
				{"name":"x","input_schema":{"type":"object","properties":{}}},
				{"name":"read","input_schema":{"type":"object","properties":{"path":{"type":"string"}}}}]}`,
		},
		{
			name: "parallel tool use off leaves an explicit tool_choice alone",
			p:    patch{parallelToolCalls: ptr(false)},
			in:   `{"tools":[{"name":"a","input_schema":{}}],"tool_choice":{"type":"any"}}`,
			want: `{"tools":[{"name":"a","input_schema":{}}],"tool_choice":{"type":"any"}}`,
		},
		{
			name: "numbers survive untouched",
			in:   `{"temperature":0.1,"max_tokens":2048,"messages":[{"role":"user","content":[{"type":"text","text":"x"}]}]}`,
			want: `{"temperature":0.1,"max_tokens":2048,"messages":[{"role":"user","content":[{"type":"text","text":"x"}]}]}`,
		},
		{
			name: "content of an unknown shape leaves the body as it was",
			in:   `{"messages":[{"role":"user","content":42},{"role":"user","content":"x"}]}`,
			want: `{"messages":[{"role":"user","content":42},{"role":"user","content":"x"}]}`,
		},
		{
			name: "defaults added where missing, extra body set over generated members",
			p: patch{defaults: object{"top_p": json.RawMessage(`0.5`)},
				extra: object{"temperature": json.RawMessage(`0`), "thinking": json.RawMessage(`{"type":"enabled"}`)}},
			in:   `{"temperature":0.7,"messages":[]}`,
			want: `{"temperature":0,"top_p":0.5,"thinking":{"type":"enabled"},"messages":[]}`,
		},
		{name: "not JSON", in: `data: x`, want: ``},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := patchAnthropic([]byte(tt.in), tt.p)
			if tt.want == "" {
				assert.Equal(t, tt.in, string(got))
				return
			}
			assert.JSONEq(t, tt.want, string(got))
		})
	}
}

func TestPatchOpenAI(t *testing.T) {
	t.Parallel()
	const tools = `"tools":[{"type":"function","function":{"name":"read"}}]`
	tests := []struct {
		name string
		p    patch
		in   string
		want string
	}{
		{name: "nothing to do returns the same bytes", in: `{"model":"m", "max_completion_tokens":5}`, want: `{"model":"m", "max_completion_tokens":5}`},
		{name: "max_tokens for compatible servers", p: patch{legacyMaxTokens: true},
			in: `{"model":"m","max_completion_tokens":5}`, want: `{"model":"m","max_tokens":5}`},
		{name: "defaults added", p: patch{defaults: object{"top_p": json.RawMessage(`0.25`), "seed": json.RawMessage(`0`)}},
			in: `{"model":"m"}`, want: `{"model":"m","top_p":0.25,"seed":0}`},
		{name: "defaults already sent", p: patch{defaults: object{"top_p": json.RawMessage(`0.25`)}}, in: `{"top_p":0.5}`, want: `{"top_p":0.5}`},
		{name: "extra body set last, over generated members", p: patch{legacyMaxTokens: true, extra: object{
			"max_tokens": json.RawMessage(`9`), "reasoning_effort": json.RawMessage(`"low"`)}},
			in: `{"model":"m","max_completion_tokens":5}`, want: `{"model":"m","max_tokens":9,"reasoning_effort":"low"}`},
		{name: "tool choice and parallel calls with tools", p: patch{toolChoiceNone: true, parallelToolCalls: ptr(true)},
			in: `{` + tools + `}`, want: `{` + tools + `,"tool_choice":"none","parallel_tool_calls":true}`},
		{name: "no tool fields without tools", p: patch{toolChoiceNone: true, parallelToolCalls: ptr(false)},
			in: `{"tools":[]}`, want: `{"tools":[]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := patchOpenAI([]byte(tt.in), tt.p)
			assert.JSONEq(t, tt.want, string(got))
		})
	}
	same := []byte(`{"model":"m", "stream":true}`)
	assert.Equal(t, &same[0], &patchOpenAI(same, patch{})[0], "an untouched body is not re-encoded")
}

func TestWithToolChoiceNone(t *testing.T) {
	t.Parallel()
	assert.False(t, toolChoiceNone(context.Background()))
	assert.True(t, toolChoiceNone(WithToolChoiceNone(context.Background())))
}
