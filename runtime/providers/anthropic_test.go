package providers

// Wire tests of the Messages API model (anthropic-sdk-go) against bodies in
// the shapes the API sends: thinking and redacted thinking with signatures,
// server tool blocks, refusals, truncation, cache usage, stream errors.

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/agentspec/agentspec/runtime/providers/providertest"
	"github.com/agentspec/agentspec/spec"
)

// A turn with thinking, redacted thinking, text and a tool call, as the
// Messages API returns it with extended thinking on, and its stream.
const (
	thinkingTurnJSON = `{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-5",
"content":[
 {"type":"thinking","thinking":"The user wants a.txt. I should read it.","signature":"EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"},
 {"type":"redacted_thinking","data":"EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"},
 {"type":"text","text":"Let me read it."},
 {"type":"tool_use","id":"toolu_01","name":"read_file","input":{"path":"a.txt"}}],
"stop_reason":"tool_use","stop_sequence":null,
"usage":{"input_tokens":120,"output_tokens":80,"cache_creation_input_tokens":1000,"cache_read_input_tokens":2000}}`
)

var thinkingTurnSSE = providertest.SSE(
	`event: message_start
data: {"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":120,"output_tokens":1,"cache_creation_input_tokens":1000,"cache_read_input_tokens":2000}}}`,
	`event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`,
	`event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"The user wants a.txt. "}}`,
	`event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"I should read it."}}`,
	`event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"}}`,
	`event: content_block_stop
data: {"type":"content_block_stop","index":0}`,
	`event: content_block_start
data: {"type":"content_block_start","index":1,"content_block":{"type":"redacted_thinking","data":"EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"}}`,
	`event: content_block_stop
data: {"type":"content_block_stop","index":1}`,
	`event: ping
data: {"type": "ping"}`,
	`event: content_block_start
data: {"type":"content_block_start","index":2,"content_block":{"type":"text","text":""}}`,
	`event: content_block_delta
data: {"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"Let me "}}`,
	`event: content_block_delta
data: {"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"read it."}}`,
	`event: content_block_stop
data: {"type":"content_block_stop","index":2}`,
	`event: content_block_start
data: {"type":"content_block_start","index":3,"content_block":{"type":"tool_use","id":"toolu_01","name":"read_file","input":{}}}`,
	`event: content_block_delta
data: {"type":"content_block_delta","index":3,"delta":{"type":"input_json_delta","partial_json":"{\"path\": \"a."}}`,
	`event: content_block_delta
data: {"type":"content_block_delta","index":3,"delta":{"type":"input_json_delta","partial_json":"txt\"}"}}`,
	`event: content_block_stop
data: {"type":"content_block_stop","index":3}`,
	`event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":80}}`,
	`event: message_stop
data: {"type":"message_stop"}`,
)

func anthropicText(text, stop string) string {
	return `{"id":"msg_02","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":` +
		string(jsonValue(text)) + `}],"stop_reason":"` + stop + `","stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":5}}`
}

// anthropicTextSSE is anthropicText as a stream.
func anthropicTextSSE(text, stop string) string {
	return providertest.SSE(
		`event: message_start
data: {"type":"message_start","message":{"id":"msg_02","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":1}}}`,
		`event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
		`event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":`+string(jsonValue(text))+`}}`,
		`event: content_block_stop
data: {"type":"content_block_stop","index":0}`,
		`event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"`+stop+`","stop_sequence":null},"usage":{"output_tokens":5}}`,
		`event: message_stop
data: {"type":"message_stop"}`)
}

func anthropicModelAt(t *testing.T, srv *providertest.RecordedServer, ref string, settings spec.ModelSettings, native ...NativeTool) *Model {
	t.Helper()
	policy, _ := instant()
	settings.BaseURL = srv.URL
	m, err := New(ref, settings, Options{Getenv: env("ANTHROPIC_API_KEY", "sk-ant-test"), retry: policy, NativeTools: native})
	require.NoError(t, err)
	return m
}

// turnOf is the whole turn a response carries for replay.
func turnOf(t *testing.T, resp *llms.ContentResponse) []llms.ContentPart {
	t.Helper()
	require.Len(t, resp.Choices, 1)
	parts, ok := resp.Choices[0].GenerationInfo[InfoTurn].([]llms.ContentPart)
	require.True(t, ok, "the response carries its turn")
	return parts
}

// blocksOf decodes the content of message i of a Messages request.
func blocksOf(t *testing.T, req providertest.Request, i int) []map[string]any {
	t.Helper()
	var body struct {
		Messages []struct {
			Role    string           `json:"role"`
			Content []map[string]any `json:"content"`
		} `json:"messages"`
	}
	require.NoError(t, json.Unmarshal(req.Body, &body))
	require.Greater(t, len(body.Messages), i, "%s", req.Body)
	return body.Messages[i].Content
}

func TestAnthropicThinkingIsKeptAndSentBack(t *testing.T) {
	t.Parallel()
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "json", true: "sse"}[stream], func(t *testing.T) {
			t.Parallel()
			first, second := thinkingTurnJSON, anthropicText("It says alpha.", "end_turn")
			if stream {
				first, second = thinkingTurnSSE, anthropicTextSSE("It says alpha.", "end_turn")
			}
			srv := providertest.NewRecordedServer(t, providertest.Recorded{Body: first}, providertest.Recorded{Body: second})
			m := anthropicModelAt(t, srv, "anthropic:claude-sonnet-4-5", spec.ModelSettings{Thinking: &spec.Thinking{Enabled: true, Effort: "low"}})
			opts := []llms.CallOption{llms.WithTools([]llms.Tool{readFileTool})}
			if stream {
				opts = append(opts, llms.WithStreamingFunc(func(_ context.Context, _ []byte) error { return nil }))
			}
			history := []llms.MessageContent{human("What is in a.txt?")}
			resp, err := m.GenerateContent(t.Context(), history, opts...)
			require.NoError(t, err)

			c := resp.Choices[0]
			assert.Equal(t, "Let me read it.", c.Content)
			assert.Equal(t, "The user wants a.txt. I should read it.", c.ReasoningContent)
			require.Len(t, c.ToolCalls, 1)
			assert.Equal(t, `{"path":"a.txt"}`, c.ToolCalls[0].FunctionCall.Arguments)
			assert.Equal(t, 1000, c.GenerationInfo[InfoCacheWriteTokens])
			assert.Equal(t, 2000, c.GenerationInfo[InfoCacheReadTokens])
			assert.Equal(t, 120+1000+2000, c.GenerationInfo[InfoInputTokens], "the cache's tokens are input tokens")
			turn := turnOf(t, resp)
			require.Len(t, turn, 4)

			req := srv.Requests()[0].JSON()
			assert.Equal(t, map[string]any{"type": "enabled", "budget_tokens": 2048.0}, req["thinking"], "low is pydantic-ai's 2048 tokens")
			assert.Equal(t, float64(DefaultMaxTokens+2048), req["max_tokens"], "the budget is added to the default bound")
			assert.NotContains(t, req, "temperature", "with thinking on the API takes only its default")

			// The turn goes back whole, then the failed tool result.
			history = append(history, llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: turn},
				llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{
					llms.ToolCallResponse{ToolCallID: "toolu_01", Name: "read_file", Content: "Error: no such file"}, ToolError}})
			resp, err = m.GenerateContent(t.Context(), history, opts...)
			require.NoError(t, err)
			assert.Equal(t, "It says alpha.", resp.Choices[0].Content)

			sent := srv.Requests()[1]
			assistant := blocksOf(t, sent, 1)
			require.Len(t, assistant, 4, "%s", sent.Body)
			assert.Equal(t, map[string]any{"type": "thinking", "thinking": "The user wants a.txt. I should read it.",
				"signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"}, assistant[0], "thinking goes back with its signature")
			assert.Equal(t, map[string]any{"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"}, assistant[1])
			assert.Equal(t, "text", assistant[2]["type"])
			assert.Equal(t, "tool_use", assistant[3]["type"])
			assert.Equal(t, map[string]any{"path": "a.txt"}, assistant[3]["input"])
			results := blocksOf(t, sent, 2)
			require.Len(t, results, 1)
			assert.Equal(t, "tool_result", results[0]["type"])
			assert.Equal(t, true, results[0]["is_error"], "a failed tool result says so")
		})
	}
}

// Interleaved thinking: each assistant turn of a tool conversation keeps its
// own thinking blocks, in order, when the whole conversation is sent again.
func TestAnthropicInterleavedThinking(t *testing.T) {
	t.Parallel()
	second := `{"id":"msg_03","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[
 {"type":"thinking","thinking":"a.txt says alpha; now b.txt.","signature":"sig-two"},
 {"type":"tool_use","id":"toolu_02","name":"read_file","input":{"path":"b.txt"}}],
"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":200,"output_tokens":40}}`
	srv := providertest.NewRecordedServer(t, providertest.Recorded{Body: thinkingTurnJSON}, providertest.Recorded{Body: second},
		providertest.Recorded{Body: anthropicText("alpha and beta", "end_turn")})
	m := anthropicModelAt(t, srv, "anthropic:claude-sonnet-4-5", spec.ModelSettings{
		Provider: map[string]any{"anthropic_thinking": map[string]any{"type": "enabled", "budget_tokens": json.Number("3000")},
			"anthropic_betas": []any{"interleaved-thinking-2025-05-14"}}})
	opts := llms.WithTools([]llms.Tool{readFileTool})
	history := []llms.MessageContent{human("Read a.txt, then b.txt.")}
	for i, id := range []string{"toolu_01", "toolu_02"} {
		resp, err := m.GenerateContent(t.Context(), history, opts)
		require.NoError(t, err, "round %d", i+1)
		history = append(history, llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: turnOf(t, resp)}, result(id, "read_file", "text"))
	}
	_, err := m.GenerateContent(t.Context(), history, opts)
	require.NoError(t, err)

	reqs := srv.Requests()
	require.Len(t, reqs, 3)
	assert.Equal(t, "interleaved-thinking-2025-05-14", reqs[0].Header.Get("Anthropic-Beta"))
	assert.Equal(t, map[string]any{"type": "enabled", "budget_tokens": 3000.0}, reqs[0].JSON()["thinking"])
	var types []string
	for _, i := range []int{1, 3} {
		for _, b := range blocksOf(t, reqs[2], i) {
			types = append(types, b["type"].(string))
		}
	}
	assert.Equal(t, []string{"thinking", "redacted_thinking", "text", "tool_use", "thinking", "tool_use"}, types)
	assert.Equal(t, "sig-two", blocksOf(t, reqs[2], 3)[0]["signature"])
}

func TestAnthropicAdaptiveThinking(t *testing.T) {
	t.Parallel()
	srv := providertest.NewRecordedServer(t, providertest.Recorded{Body: anthropicText("ok", "end_turn")})
	m := anthropicModelAt(t, srv, "anthropic:claude-sonnet-4-6", spec.ModelSettings{Thinking: &spec.Thinking{Enabled: true, Effort: "xhigh"}})
	_, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("hi")})
	require.NoError(t, err)
	req := srv.Requests()[0].JSON()
	assert.Equal(t, map[string]any{"type": "adaptive"}, req["thinking"])
	assert.Equal(t, map[string]any{"effort": "max"}, req["output_config"])
	assert.Equal(t, float64(DefaultMaxTokens), req["max_tokens"])
}

func TestAnthropicThinkingBudgetRules(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		settings spec.ModelSettings
		want     string
	}{
		{name: "budget at max_tokens", settings: spec.ModelSettings{MaxTokens: 2048, Thinking: &spec.Thinking{Enabled: true, Effort: "low"}},
			want: "anthropic does not support model_settings.thinking: the thinking budget (2048 tokens) must be below model_settings.max_tokens (2048)"},
		{name: "budget below the minimum", settings: spec.ModelSettings{Thinking: &spec.Thinking{Enabled: true, Budget: 500}},
			want: "anthropic does not support model_settings.thinking: a thinking budget of 500 tokens is below the API's minimum of 1024"},
		{name: "provider key", settings: spec.ModelSettings{MaxTokens: 1000, Provider: map[string]any{
			"anthropic_thinking": map[string]any{"type": "enabled", "budget_tokens": json.Number("1024")}}},
			want: "anthropic does not support model_settings.anthropic_thinking: the thinking budget (1024 tokens) must be below model_settings.max_tokens (1000)"},
		{name: "temperature", settings: spec.ModelSettings{Temperature: ptr(0.2), Thinking: &spec.Thinking{Enabled: true}},
			want: "anthropic does not support model_settings.thinking: with thinking on, the API takes no temperature but 1; remove model_settings.temperature"},
		{name: "another provider's key", settings: spec.ModelSettings{Provider: map[string]any{"openai_reasoning_effort": "low"}},
			want: "anthropic does not support model_settings.openai_reasoning_effort: it is read by openai models only"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.EqualError(t, Validate("anthropic:claude-sonnet-4-5", tt.settings), tt.want)
		})
	}
	assert.NoError(t, Validate("anthropic:claude-sonnet-4-5", spec.ModelSettings{Thinking: &spec.Thinking{Enabled: false}, Temperature: ptr(0.2)}),
		"thinking off sends nothing")
}

func TestAnthropicRefusalAndTruncation(t *testing.T) {
	t.Parallel()
	refusal := `{"id":"msg_r","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],
"stop_reason":"refusal","stop_sequence":null,"stop_details":{"type":"refusal","category":"cyber","explanation":"This request asks for malware."},
"usage":{"input_tokens":10,"output_tokens":0}}`
	srv := providertest.NewRecordedServer(t, providertest.Recorded{Body: refusal},
		providertest.Recorded{Body: anthropicText("The answer is", "max_tokens")})
	m := anthropicModelAt(t, srv, "anthropic:claude-sonnet-4-5", spec.ModelSettings{})
	resp, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("hi")})
	require.NoError(t, err)
	assert.Equal(t, StopRefusal, resp.Choices[0].StopReason)
	assert.Equal(t, "This request asks for malware.", resp.Choices[0].GenerationInfo[InfoRefusal])
	resp, err = m.GenerateContent(t.Context(), []llms.MessageContent{human("hi")})
	require.NoError(t, err)
	assert.Equal(t, StopMaxTokens, resp.Choices[0].StopReason)
}

func TestAnthropicStreamErrors(t *testing.T) {
	t.Parallel()
	overloaded := providertest.SSE(
		`event: message_start
data: {"type":"message_start","message":{"id":"msg_e","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":1}}}`,
		`event: error
data: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
	invalid := providertest.SSE(`event: error
data: {"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long"}}`)
	noop := llms.WithStreamingFunc(func(context.Context, []byte) error { return nil })

	t.Run("retried like a 529", func(t *testing.T) {
		t.Parallel()
		srv := providertest.NewRecordedServer(t, providertest.Recorded{Body: overloaded}, providertest.Recorded{Body: thinkingTurnSSE})
		m := anthropicModelAt(t, srv, "anthropic:claude-sonnet-4-5", spec.ModelSettings{})
		resp, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("hi")}, noop)
		require.NoError(t, err)
		assert.Equal(t, "Let me read it.", resp.Choices[0].Content)
		assert.Len(t, srv.Requests(), 2)
	})
	t.Run("a request error fails", func(t *testing.T) {
		t.Parallel()
		srv := providertest.NewRecordedServer(t, providertest.Recorded{Body: invalid})
		m := anthropicModelAt(t, srv, "anthropic:claude-sonnet-4-5", spec.ModelSettings{})
		_, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("hi")}, noop)
		require.Error(t, err)
		assert.Equal(t, "anthropic: error in the response stream: invalid_request_error: prompt is too long", err.Error())
		assert.Equal(t, "anthropic: error in the response stream: invalid_request_error: prompt is too long", Describe(err))
	})
	t.Run("a cut stream fails", func(t *testing.T) {
		t.Parallel()
		cut := thinkingTurnSSE[:strings.Index(thinkingTurnSSE, "event: message_delta")]
		srv := providertest.NewRecordedServer(t, providertest.Recorded{Body: cut})
		m := anthropicModelAt(t, srv, "anthropic:claude-sonnet-4-5", spec.ModelSettings{})
		_, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("hi")}, noop)
		assert.ErrorContains(t, err, "the stream ended before message_stop")
	})
}

// Server tool blocks (server_tool_use, web_search_tool_result) are kept and
// sent back; a native web search reaches the request as the API's tool.
func TestAnthropicServerToolBlocks(t *testing.T) {
	t.Parallel()
	searched := `{"id":"msg_s","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[
 {"type":"text","text":"Let me search."},
 {"type":"server_tool_use","id":"srvtoolu_01","name":"web_search","input":{"query":"agentspec"}},
 {"type":"web_search_tool_result","tool_use_id":"srvtoolu_01","content":[{"type":"web_search_result","url":"https://example.com","title":"Example","encrypted_content":"EqgfCioIARgB","page_age":null}]},
 {"type":"server_tool_use","id":"srvtoolu_02","name":"web_fetch","input":{"url":"https://example.com"}},
 {"type":"web_fetch_tool_result","tool_use_id":"srvtoolu_02","content":{"type":"web_fetch_result","url":"https://example.com","retrieved_at":"2026-12-02T10:00:00Z","content":{"type":"document","source":{"type":"text","media_type":"text/plain","data":"Example Domain"},"title":"Example"}}},
 {"type":"server_tool_use","id":"srvtoolu_03","name":"bash_code_execution","input":{"command":"echo hi"}},
 {"type":"bash_code_execution_tool_result","tool_use_id":"srvtoolu_03","content":{"type":"bash_code_execution_result","stdout":"hi\n","stderr":"","return_code":0,"content":[]}},
 {"type":"tool_use","id":"toolu_09","name":"read_file","input":{"path":"notes.md"}}],
"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":5,"server_tool_use":{"web_search_requests":1}}}`
	srv := providertest.NewRecordedServer(t, providertest.Recorded{Body: searched}, providertest.Recorded{Body: anthropicText("done", "end_turn")})
	m := anthropicModelAt(t, srv, "anthropic:claude-sonnet-4-5", spec.ModelSettings{},
		NativeTool{Kind: "web_search", Options: map[string]any{"max_uses": json.Number("3"), "allowed_domains": []any{"example.com"}}})
	resp, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("search")}, llms.WithTools([]llms.Tool{readFileTool}))
	require.NoError(t, err)
	history := []llms.MessageContent{human("search"), {Role: llms.ChatMessageTypeAI, Parts: turnOf(t, resp)}, result("toolu_09", "read_file", "notes")}
	_, err = m.GenerateContent(t.Context(), history, llms.WithTools([]llms.Tool{readFileTool}))
	require.NoError(t, err)

	reqs := srv.Requests()
	tools := reqs[0].JSON()["tools"].([]any)
	require.Len(t, tools, 2)
	assert.Equal(t, map[string]any{"type": "web_search_20250305", "name": "web_search", "max_uses": 3.0, "allowed_domains": []any{"example.com"}}, tools[1])
	assistant := blocksOf(t, reqs[1], 1)
	var types []string
	for _, b := range assistant {
		types = append(types, b["type"].(string))
	}
	assert.Equal(t, []string{"text", "server_tool_use", "web_search_tool_result", "server_tool_use", "web_fetch_tool_result",
		"server_tool_use", "bash_code_execution_tool_result", "tool_use"}, types, "every block goes back, in order")
	assert.Equal(t, "Example Domain", assistant[4]["content"].(map[string]any)["content"].(map[string]any)["source"].(map[string]any)["data"])
	assert.Equal(t, "hi\n", assistant[6]["content"].(map[string]any)["stdout"])
	assert.Equal(t, "EqgfCioIARgB", assistant[2]["content"].([]any)[0].(map[string]any)["encrypted_content"], "the encrypted result goes back unchanged")
}

func TestNativeToolsAreChecked(t *testing.T) {
	t.Parallel()
	_, err := New("groq:llama", spec.ModelSettings{}, Options{Getenv: env("GROQ_API_KEY", "k"), NativeTools: []NativeTool{{Kind: "web_fetch"}}})
	assert.EqualError(t, err, "groq does not run the native tool web_fetch; the providers that do: anthropic, gateway/anthropic")
	_, err = New("anthropic:claude", spec.ModelSettings{}, Options{Getenv: env("ANTHROPIC_API_KEY", "k"),
		NativeTools: []NativeTool{{Kind: "web_search", Options: map[string]any{"search_context_size": "high"}}}})
	assert.EqualError(t, err, "anthropic: the native tool web_search takes no search_context_size (OpenAI's)")
	assert.True(t, HasNative("anthropic:claude-sonnet-4-5", "web_search"))
	assert.False(t, HasNative("openai:gpt-5", "web_search"), "Chat Completions has no native tools here")
}

// The anthropic_ keys and the unified ones reach the Messages request.
func TestAnthropicSettingsReachTheWire(t *testing.T) {
	t.Parallel()
	srv := providertest.NewRecordedServer(t, providertest.Recorded{Body: anthropicText("ok", "end_turn")})
	m := anthropicModelAt(t, srv, "anthropic:claude-sonnet-4-5", spec.ModelSettings{
		TopK: ptr(40), ServiceTier: "default", ToolChoice: &spec.ToolChoice{Mode: "required", Tools: []string{"read_file"}},
		ParallelToolCalls: ptr(false),
		Provider: map[string]any{
			"anthropic_metadata":               map[string]any{"user_id": "u-1"},
			"anthropic_cache_instructions":     true,
			"anthropic_cache_tool_definitions": "1h",
			"anthropic_cache_messages":         true,
			"anthropic_eager_input_streaming":  true,
			"anthropic_speed":                  "fast",
		}})
	_, err := m.GenerateContent(t.Context(), []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeSystem, "Be brief."), human("hi")},
		llms.WithTools([]llms.Tool{readFileTool}))
	require.NoError(t, err)
	body := srv.Requests()[0].JSON()
	assert.Equal(t, 40.0, body["top_k"])
	assert.Equal(t, "standard_only", body["service_tier"])
	assert.Equal(t, map[string]any{"user_id": "u-1"}, body["metadata"])
	assert.Equal(t, "fast", body["speed"])
	assert.Equal(t, map[string]any{"type": "tool", "name": "read_file", "disable_parallel_tool_use": true}, body["tool_choice"])
	assert.Equal(t, []any{map[string]any{"type": "text", "text": "Be brief.", "cache_control": map[string]any{"type": "ephemeral"}}}, body["system"])
	tool := body["tools"].([]any)[0].(map[string]any)
	assert.Equal(t, map[string]any{"type": "ephemeral", "ttl": "1h"}, tool["cache_control"])
	assert.Equal(t, true, tool["eager_input_streaming"])
	msgs := body["messages"].([]any)
	last := msgs[len(msgs)-1].(map[string]any)["content"].([]any)
	assert.Equal(t, map[string]any{"type": "ephemeral"}, last[len(last)-1].(map[string]any)["cache_control"])
}

func TestAnthropicNativeBetasAndThinkingRules(t *testing.T) {
	t.Parallel()
	srv := providertest.NewRecordedServer(t, providertest.Recorded{Body: anthropicText("ok", "end_turn")})
	m := anthropicModelAt(t, srv, "anthropic:claude-sonnet-4-5", spec.ModelSettings{Provider: map[string]any{"anthropic_betas": []any{"context-1m-2025-08-07"}}},
		NativeTool{Kind: "web_fetch", Options: map[string]any{"enable_citations": true}}, NativeTool{Kind: "code_execution"})
	_, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("hi")})
	require.NoError(t, err)
	req := srv.Requests()[0]
	assert.Equal(t, "context-1m-2025-08-07,web-fetch-2025-09-10,code-execution-2025-08-25", req.Header.Get("Anthropic-Beta"))
	assert.Equal(t, []any{
		map[string]any{"type": "web_fetch_20250910", "name": "web_fetch", "citations": map[string]any{"enabled": true}},
		map[string]any{"type": "code_execution_20250825", "name": "code_execution"},
	}, req.JSON()["tools"])

	assert.EqualError(t, Validate("anthropic:claude-sonnet-4-5", spec.ModelSettings{Thinking: &spec.Thinking{Enabled: true}, ToolChoice: &spec.ToolChoice{Mode: "required"}}),
		"anthropic does not support model_settings.thinking: with thinking on, the API lets the model choose its tools: tool_choice may be auto or none")
	assert.EqualError(t, Validate("anthropic:claude-sonnet-4-5", spec.ModelSettings{Thinking: &spec.Thinking{Enabled: true}, TopP: ptr(0.5)}),
		"anthropic does not support model_settings.thinking: with thinking on, the API takes a top_p between 0.95 and 1 only")
}

// With adaptive thinking the text block after the thinking often begins
// with newlines; the answer and the replayed block keep them all, streamed
// and not.
func TestAnthropicTextKeepsLeadingNewlines(t *testing.T) {
	t.Parallel()
	const answer = "\n\n\n2 + 2 = 4"
	whole := `{"id":"msg_01Nl","type":"message","role":"assistant","model":"claude-opus-4-6","content":[` +
		`{"type":"thinking","thinking":"Simple arithmetic.","signature":"EuYBCkQYAiJAk3Q0nl"},` +
		`{"type":"text","text":"\n\n\n2 + 2 = 4"}],` +
		`"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":18,"output_tokens":24}}`
	stream := providertest.SSE(
		`event: message_start
data: {"type":"message_start","message":{"id":"msg_01Nl","type":"message","role":"assistant","model":"claude-opus-4-6","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":18,"output_tokens":1}}}`,
		`event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`,
		`event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Simple arithmetic."}}`,
		`event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EuYBCkQYAiJAk3Q0nl"}}`,
		`event: content_block_stop
data: {"type":"content_block_stop","index":0}`,
		`event: content_block_start
data: {"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`,
		`event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"\n\n"}}`,
		`event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"\n2 + 2"}}`,
		`event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":" = 4"}}`,
		`event: content_block_stop
data: {"type":"content_block_stop","index":1}`,
		`event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":24}}`,
		`event: message_stop
data: {"type":"message_stop"}`)
	for name, body := range map[string]string{"json": whole, "sse": stream} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := providertest.NewRecordedServer(t, providertest.Recorded{Body: body}, providertest.Recorded{Body: anthropicText("ok", "end_turn")})
			m := anthropicModelAt(t, srv, "anthropic:claude-opus-4-6", spec.ModelSettings{Thinking: &spec.Thinking{Enabled: true}})
			var streamed strings.Builder
			var opts []llms.CallOption
			if name == "sse" {
				opts = append(opts, llms.WithStreamingFunc(func(_ context.Context, b []byte) error { streamed.Write(b); return nil }))
			}
			resp, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("2+2?")}, opts...)
			require.NoError(t, err)
			assert.Equal(t, answer, resp.Choices[0].Content)
			if name == "sse" {
				assert.Equal(t, answer, streamed.String())
			}
			history := []llms.MessageContent{human("2+2?"), {Role: llms.ChatMessageTypeAI, Parts: turnOf(t, resp)}, human("and 3+3?")}
			_, err = m.GenerateContent(t.Context(), history)
			require.NoError(t, err)
			assistant := blocksOf(t, srv.Requests()[1], 1)
			require.Len(t, assistant, 2)
			assert.Equal(t, map[string]any{"type": "thinking", "thinking": "Simple arithmetic.", "signature": "EuYBCkQYAiJAk3Q0nl"}, assistant[0])
			assert.Equal(t, answer, assistant[1]["text"])
		})
	}
}

// Server tool blocks, and blocks of types this SDK version does not model,
// go back exactly as the API sent them, in order, streamed and not; the
// answer is the text blocks joined.
func TestAnthropicServerBlocksGoBackVerbatim(t *testing.T) {
	t.Parallel()
	blocks := []string{
		`{"type":"text","text":"I'll look that up."}`,
		`{"type":"server_tool_use","id":"srvtoolu_01WYG3","name":"web_search","input":{"query":"agentspec release"},"caller":{"type":"direct"}}`,
		`{"type":"web_search_tool_result","tool_use_id":"srvtoolu_01WYG3","content":[{"type":"web_search_result","url":"https://example.com/r","title":"Release","encrypted_content":"EqgfCioIARgBIiQ3","page_age":"April 30, 2026"}],"caller":{"type":"direct"}}`,
		`{"type":"server_tool_use","id":"srvtoolu_02Kx","name":"tool_search_tool_regex","input":{"pattern":"weather"}}`,
		`{"type":"tool_search_tool_result","tool_use_id":"srvtoolu_02Kx","content":{"type":"tool_search_tool_search_result","tool_references":[{"type":"tool_reference","tool_name":"get_weather"}]}}`,
		`{"type":"advisor_tool_result","tool_use_id":"srvtoolu_03Ad","content":{"type":"advisor_result","text":"Cite the release notes."}}`,
		`{"type":"server_tool_use","id":"srvtoolu_04Er","name":"web_search","input":{"query":"agentspec changelog"}}`,
		`{"type":"web_search_tool_result","tool_use_id":"srvtoolu_04Er","content":{"type":"web_search_tool_result_error","error_code":"max_uses_exceeded"}}`,
		`{"type":"text","text":"The release is out.","citations":[{"type":"web_search_result_location","url":"https://example.com/r","title":"Release","encrypted_index":"Eo8BCioI","cited_text":"Released today."}]}`,
	}
	whole := `{"id":"msg_01Srv","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[` + strings.Join(blocks, ",") +
		`],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":120,"output_tokens":60,"server_tool_use":{"web_search_requests":1}}}`
	ev := func(name, data string) string { return "event: " + name + "\ndata: " + data }
	events := []string{ev("message_start", `{"type":"message_start","message":{"id":"msg_01Srv","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":120,"output_tokens":1}}}`)}
	for i, b := range blocks {
		start, delta := b, ""
		switch {
		case strings.HasPrefix(b, `{"type":"text"`):
			var v map[string]any
			require.NoError(t, json.Unmarshal([]byte(b), &v))
			start, delta = `{"type":"text","text":""}`, `{"type":"text_delta","text":`+string(jsonValue(v["text"]))+`}`
			if c, ok := v["citations"]; ok {
				start = `{"type":"text","text":"","citations":[]}`
				events = append(events, ev("content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":%s}`, i, start)),
					ev("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"citations_delta","citation":%s}}`, i, jsonValue(c.([]any)[0]))))
				start = ""
			}
		case strings.HasPrefix(b, `{"type":"server_tool_use"`):
			var v map[string]any
			require.NoError(t, json.Unmarshal([]byte(b), &v))
			delta = `{"type":"input_json_delta","partial_json":` + string(jsonValue(string(jsonValue(v["input"])))) + `}`
			v["input"] = map[string]any{}
			start = string(jsonValue(v))
		}
		if start != "" {
			events = append(events, ev("content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":%s}`, i, start)))
		}
		if delta != "" {
			events = append(events, ev("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":%s}`, i, delta)))
		}
		events = append(events, ev("content_block_stop", fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, i)))
	}
	events = append(events,
		ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":60,"server_tool_use":{"web_search_requests":1}}}`),
		ev("message_stop", `{"type":"message_stop"}`))
	for name, body := range map[string]string{"json": whole, "sse": providertest.SSE(events...)} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := providertest.NewRecordedServer(t, providertest.Recorded{Body: body}, providertest.Recorded{Body: anthropicText("ok", "end_turn")})
			m := anthropicModelAt(t, srv, "anthropic:claude-sonnet-4-5", spec.ModelSettings{},
				NativeTool{Kind: "web_search", Options: map[string]any{}})
			var opts []llms.CallOption
			if name == "sse" {
				opts = append(opts, streamOn)
			}
			resp, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("news?")}, opts...)
			require.NoError(t, err)
			assert.Equal(t, "I'll look that up.The release is out.", resp.Choices[0].Content)
			history := []llms.MessageContent{human("news?"), {Role: llms.ChatMessageTypeAI, Parts: turnOf(t, resp)}, human("thanks")}
			_, err = m.GenerateContent(t.Context(), history)
			require.NoError(t, err)
			var sent struct {
				Messages []struct {
					Content []json.RawMessage `json:"content"`
				} `json:"messages"`
			}
			require.NoError(t, json.Unmarshal(srv.Requests()[1].Body, &sent))
			require.Len(t, sent.Messages, 3)
			got := sent.Messages[1].Content
			require.Len(t, got, len(blocks))
			for i, b := range blocks {
				assert.JSONEq(t, b, string(got[i]), "block %d", i)
			}
		})
	}
}

// Cache control reaches a tool or block given as JSON too: a native tool
// declared last, a block kept as the API sent it ending the conversation.
func TestAnthropicCacheControlOnJSON(t *testing.T) {
	t.Parallel()
	srv := providertest.NewRecordedServer(t, providertest.Recorded{Body: anthropicText("ok", "end_turn")})
	m := anthropicModelAt(t, srv, "anthropic:claude-sonnet-4-5", spec.ModelSettings{Provider: map[string]any{
		"anthropic_cache_tool_definitions": true,
		"anthropic_cache_messages":         "5m",
	}}, NativeTool{Kind: "web_search"})
	block := blockPart([]byte(`{"type":"thinking","thinking":"hm","signature":"sig"}`))
	_, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("hi"), {Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{block}}},
		llms.WithTools([]llms.Tool{readFileTool}))
	require.NoError(t, err)
	body := srv.Requests()[0].JSON()
	tools := body["tools"].([]any)
	require.Len(t, tools, 2)
	assert.Nil(t, tools[0].(map[string]any)["cache_control"], "only the last tool is marked")
	assert.Equal(t, "web_search", tools[1].(map[string]any)["name"])
	assert.Equal(t, map[string]any{"type": "ephemeral"}, tools[1].(map[string]any)["cache_control"])
	msgs := body["messages"].([]any)
	last := msgs[len(msgs)-1].(map[string]any)["content"].([]any)
	assert.Equal(t, map[string]any{"type": "thinking", "thinking": "hm", "signature": "sig",
		"cache_control": map[string]any{"type": "ephemeral", "ttl": "5m"}}, last[len(last)-1])
}

// Claude Opus 4.7 and the models after it take no sampling settings: a
// spec's temperature, top_p or top_k is refused before any request, on
// Anthropic's API and on Bedrock's, and the default temperature is not
// sent; the models before them still get it.
func TestLatestClaudeTakesNoSamplingSettings(t *testing.T) {
	t.Parallel()
	for _, ref := range []string{"anthropic:claude-opus-4-7", "anthropic:claude-sonnet-5", "anthropic:claude-fable-5-1",
		"bedrock:us.anthropic.claude-opus-4-8-v1:0", "gateway/anthropic:claude-opus-5"} {
		for key, s := range map[string]spec.ModelSettings{
			"temperature": {Temperature: ptr(0.2)}, "top_p": {TopP: ptr(0.9)}, "top_k": {TopK: ptr(5)},
		} {
			var unsupported *UnsupportedSettingError
			require.ErrorAs(t, Validate(ref, s), &unsupported, "%s %s", ref, key)
			assert.Equal(t, key, unsupported.Setting)
			assert.Contains(t, unsupported.Reason, "takes no sampling settings")
		}
	}
	body := firstBody(t, "anthropic:claude-opus-4-7", spec.ModelSettings{}, env("ANTHROPIC_API_KEY", "sk-ant-test"))
	assert.NotContains(t, body, "temperature")
	body = firstBody(t, "bedrock:us.anthropic.claude-opus-4-7-v1:0", spec.ModelSettings{}, env("AWS_BEARER_TOKEN_BEDROCK", "k", "AWS_REGION", "us-east-1"))
	assert.NotContains(t, body["inferenceConfig"], "temperature")

	body = firstBody(t, "anthropic:claude-opus-4-6", spec.ModelSettings{}, env("ANTHROPIC_API_KEY", "sk-ant-test"))
	assert.Equal(t, 1.0, body["temperature"])
	body = firstBody(t, "bedrock:us.anthropic.claude-sonnet-4-5-20250929-v1:0", spec.ModelSettings{}, env("AWS_BEARER_TOKEN_BEDROCK", "k", "AWS_REGION", "us-east-1"))
	assert.Equal(t, 1.0, body["inferenceConfig"].(map[string]any)["temperature"])
	require.NoError(t, Validate("anthropic:claude-opus-4-6", spec.ModelSettings{Temperature: ptr(0.2), TopK: ptr(5)}))
}

// Claude Opus 4.7 and the models after it think adaptively only: a token
// budget, the unified one or anthropic_thinking's, is refused before any
// request, saying to give an effort, where the API would refuse it; the
// models before them still take one.
func TestLatestClaudeRefusesAThinkingBudget(t *testing.T) {
	t.Parallel()
	budget := spec.ModelSettings{Thinking: &spec.Thinking{Enabled: true, Budget: 4000}}
	enabled := spec.ModelSettings{Provider: map[string]any{
		"anthropic_thinking": map[string]any{"type": "enabled", "budget_tokens": json.Number("4000")}}}
	for _, tt := range []struct {
		ref, key string
		settings spec.ModelSettings
	}{
		{"anthropic:claude-opus-4-7", "thinking", budget},
		{"anthropic:claude-sonnet-5", "anthropic_thinking", enabled},
		{"bedrock:us.anthropic.claude-opus-4-8-v1:0", "thinking", budget},
	} {
		var unsupported *UnsupportedSettingError
		require.ErrorAs(t, Validate(tt.ref, tt.settings), &unsupported, tt.ref)
		assert.Equal(t, tt.key, unsupported.Setting)
		assert.Contains(t, unsupported.Reason, "adaptive thinking only")
	}
	require.NoError(t, Validate("anthropic:claude-opus-4-6", budget))
	require.NoError(t, Validate("anthropic:claude-opus-4-6", enabled))
	require.NoError(t, Validate("bedrock:us.anthropic.claude-opus-4-6-v1:0", budget))
	require.NoError(t, Validate("anthropic:claude-opus-4-7", spec.ModelSettings{Thinking: &spec.Thinking{Enabled: true, Effort: "high"}}))
}

// thinking: xhigh is the effort xhigh on the Claude models that take it
// (Opus 4.7 and later, Sonnet 5, Fable 5, Mythos 5), on Anthropic's API
// and Bedrock's, and max on the adaptive models before them, as
// pydantic-ai maps it.
func TestClaudeXhighEffort(t *testing.T) {
	t.Parallel()
	xhigh := spec.ModelSettings{Thinking: &spec.Thinking{Enabled: true, Effort: "xhigh"}}
	anthropicKey, bedrockKey := env("ANTHROPIC_API_KEY", "sk-ant-test"), env("AWS_BEARER_TOKEN_BEDROCK", "k", "AWS_REGION", "us-east-1")
	effort := func(body map[string]any, config string) any { return body[config].(map[string]any)["effort"] }
	assert.Equal(t, "xhigh", effort(firstBody(t, "anthropic:claude-opus-4-7", xhigh, anthropicKey), "output_config"))
	assert.Equal(t, "xhigh", effort(firstBody(t, "anthropic:claude-sonnet-5", xhigh, anthropicKey), "output_config"))
	assert.Equal(t, "max", effort(firstBody(t, "anthropic:claude-opus-4-6", xhigh, anthropicKey), "output_config"))
	assert.Equal(t, "xhigh", effort(firstBody(t, "bedrock:us.anthropic.claude-opus-4-8-v1:0", xhigh, bedrockKey), "outputConfig"))
	assert.Equal(t, "max", effort(firstBody(t, "bedrock:us.anthropic.claude-sonnet-4-6-v1:0", xhigh, bedrockKey), "outputConfig"))
}

// Claude Mythos Preview thinks adaptively, as the SDK's deprecation of
// thinking {type: enabled} for it says (thinking_warn.go), and knows no
// xhigh (pydantic-ai lists it with no newer model's capability): the
// unified thinking is adaptive with an effort, xhigh being max, on
// Anthropic's API and Bedrock's, not a budget named by the effort.
func TestMythosPreviewThinksAdaptively(t *testing.T) {
	t.Parallel()
	anthropicKey, bedrockKey := env("ANTHROPIC_API_KEY", "sk-ant-test"), env("AWS_BEARER_TOKEN_BEDROCK", "k", "AWS_REGION", "us-east-1")
	for effort, want := range map[string]string{"medium": "medium", "minimal": "low", "xhigh": "max"} {
		s := spec.ModelSettings{Thinking: &spec.Thinking{Enabled: true, Effort: effort}}
		body := firstBody(t, "anthropic:claude-mythos-preview", s, anthropicKey)
		assert.Equal(t, map[string]any{"type": "adaptive"}, body["thinking"], effort)
		assert.Equal(t, map[string]any{"effort": want}, body["output_config"], effort)
		assert.Equal(t, float64(DefaultMaxTokens), body["max_tokens"], "no budget is added: %s", effort)
		body = firstBody(t, "bedrock:us.anthropic.claude-mythos-preview", s, bedrockKey)
		assert.Equal(t, map[string]any{"type": "adaptive"}, body["additionalModelRequestFields"].(map[string]any)["thinking"], effort)
		assert.Equal(t, map[string]any{"effort": want}, body["outputConfig"], effort)
	}
}

// A text block of whitespace only, as Claude may write before a call, is
// not sent back: the Messages API refuses a message whose text is only
// whitespace ("text content blocks must contain non-whitespace text"), as
// Converse does, so a turn that held one failed every request after it.
func TestAnthropicWhitespaceTextIsNotSent(t *testing.T) {
	t.Parallel()
	srv := providertest.NewRecordedServer(t, providertest.Recorded{Body: anthropicText("done", "end_turn")})
	m := anthropicModelAt(t, srv, "anthropic:claude-sonnet-4-5", spec.ModelSettings{})
	call := llms.ToolCall{ID: "toolu_01", Type: "function", FunctionCall: &llms.FunctionCall{Name: "read_file", Arguments: `{"path":"a.txt"}`}}
	history := []llms.MessageContent{
		human("read a.txt"),
		{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{llms.TextContent{Text: "\n\n"}, call}},
		result("toolu_01", "read_file", "alpha"),
	}
	_, err := m.GenerateContent(t.Context(), history)
	require.NoError(t, err)
	blocks := blocksOf(t, srv.Requests()[0], 1)
	require.Len(t, blocks, 1)
	assert.Equal(t, "tool_use", blocks[0]["type"])
}

// Claude Fable 5.1 and Mythos 5.1 take no forced tool call: a spec's
// tool_choice of required or a named tool is refused before any request,
// on Anthropic's API and Bedrock's, where the API would answer 400
// ("tool_choice: type \"tool\" and \"any\" are not supported for this
// model"), as Anthropic's migration guide for them says; auto and none
// still go, and the models before them still take a forced call.
func TestClaudeFable51TakesNoForcedToolChoice(t *testing.T) {
	t.Parallel()
	required := spec.ModelSettings{ToolChoice: &spec.ToolChoice{Mode: "required"}}
	named := spec.ModelSettings{ToolChoice: &spec.ToolChoice{Tools: []string{"read_file"}}}
	for _, ref := range []string{"anthropic:claude-fable-5-1", "anthropic:claude-mythos-5-1", "bedrock:us.anthropic.claude-fable-5-1", "gateway/anthropic:claude-fable-5-1"} {
		for name, s := range map[string]spec.ModelSettings{"required": required, "named": named} {
			var unsupported *UnsupportedSettingError
			require.ErrorAs(t, Validate(ref, s), &unsupported, "%s %s", ref, name)
			assert.Equal(t, "tool_choice", unsupported.Setting)
			assert.Contains(t, unsupported.Reason, "forced tool call")
		}
		require.NoError(t, Validate(ref, spec.ModelSettings{ToolChoice: &spec.ToolChoice{Mode: "auto"}}), ref)
	}
	require.NoError(t, Validate("anthropic:claude-mythos-5-1", spec.ModelSettings{ToolChoice: &spec.ToolChoice{Mode: "none"}}))
	require.NoError(t, Validate("anthropic:claude-opus-5", required))
	require.NoError(t, Validate("bedrock:us.anthropic.claude-sonnet-4-5-20250929-v1:0", named))
}

// Claude Fable 5 and 5.1 and Mythos 5 and 5.1 always think:
// anthropic_thinking {type: disabled} is refused before any request, where
// the API would answer 400, as Anthropic's migration guide to the 5.1
// models and Bedrock's adaptive thinking guide say; the other models still
// take it.
func TestAlwaysThinkingClaudeRefusesThinkingDisabled(t *testing.T) {
	t.Parallel()
	disabled := spec.ModelSettings{Provider: map[string]any{"anthropic_thinking": map[string]any{"type": "disabled"}}}
	for _, ref := range []string{"anthropic:claude-fable-5", "anthropic:claude-fable-5-1", "anthropic:claude-mythos-5", "anthropic:claude-mythos-5-1"} {
		var unsupported *UnsupportedSettingError
		require.ErrorAs(t, Validate(ref, disabled), &unsupported, ref)
		assert.Equal(t, "anthropic_thinking", unsupported.Setting)
		assert.Contains(t, unsupported.Reason, "always thinks")
	}
	require.NoError(t, Validate("anthropic:claude-opus-5", disabled))
	require.NoError(t, Validate("anthropic:claude-fable-5-1", spec.ModelSettings{Thinking: &spec.Thinking{Enabled: false}}),
		"thinking: false sends nothing")
}

// Claude Opus 5 caps its effort at high while its thinking is disabled:
// anthropic_effort xhigh or max beside anthropic_thinking {type: disabled}
// is refused before any request, where the API would answer 400, as
// pydantic-ai's profile for it says (Opus 4.8 takes every level).
func TestOpus5TopEffortWithThinkingDisabled(t *testing.T) {
	t.Parallel()
	with := func(effort string) spec.ModelSettings {
		return spec.ModelSettings{Provider: map[string]any{"anthropic_thinking": map[string]any{"type": "disabled"}, "anthropic_effort": effort}}
	}
	for _, effort := range []string{"xhigh", "max"} {
		var unsupported *UnsupportedSettingError
		require.ErrorAs(t, Validate("anthropic:claude-opus-5", with(effort)), &unsupported, effort)
		assert.Equal(t, "anthropic_effort", unsupported.Setting)
		assert.Contains(t, unsupported.Reason, "high at most")
	}
	require.NoError(t, Validate("anthropic:claude-opus-5", with("high")))
	require.NoError(t, Validate("anthropic:claude-opus-4-8", with("max")))
	require.NoError(t, Validate("anthropic:claude-opus-5", spec.ModelSettings{Provider: map[string]any{"anthropic_effort": "max"}}))
}

// A forced tool call (tool_choice required or a named tool) goes beside
// adaptive thinking, which takes it, as pydantic-ai's Anthropic model has
// it ("adaptive thinking, unlike extended thinking, is compatible with a
// forced tool_choice"), on Anthropic's API and Bedrock's; beside a thinking
// budget it is still refused before any request.
func TestAdaptiveThinkingTakesAForcedToolChoice(t *testing.T) {
	t.Parallel()
	required := &spec.ToolChoice{Mode: "required"}
	named := &spec.ToolChoice{Tools: []string{"read_file"}}
	for _, tc := range []struct {
		ref string
		s   spec.ModelSettings
	}{
		{"anthropic:claude-sonnet-4-6", spec.ModelSettings{Thinking: &spec.Thinking{Enabled: true, Effort: "high"}, ToolChoice: required}},
		{"anthropic:claude-opus-4-7", spec.ModelSettings{Thinking: &spec.Thinking{Enabled: true}, ToolChoice: named}},
		{"anthropic:claude-opus-4-6", spec.ModelSettings{ToolChoice: required, Provider: map[string]any{"anthropic_thinking": map[string]any{"type": "adaptive"}}}},
		{"bedrock:us.anthropic.claude-sonnet-4-6", spec.ModelSettings{Thinking: &spec.Thinking{Enabled: true}, ToolChoice: required}},
		{"bedrock:us.anthropic.claude-opus-4-7", spec.ModelSettings{Thinking: &spec.Thinking{Enabled: true, Effort: "low"}, ToolChoice: named}},
	} {
		require.NoError(t, Validate(tc.ref, tc.s), tc.ref)
	}
	for ref, s := range map[string]spec.ModelSettings{
		"anthropic:claude-sonnet-4-5":                          {Thinking: &spec.Thinking{Enabled: true}, ToolChoice: required},
		"anthropic:claude-sonnet-4-6":                          {Thinking: &spec.Thinking{Enabled: true, Budget: 4000}, ToolChoice: named},
		"bedrock:us.anthropic.claude-sonnet-4-5-20250929-v1:0": {Thinking: &spec.Thinking{Enabled: true}, ToolChoice: required},
	} {
		var unsupported *UnsupportedSettingError
		require.ErrorAs(t, Validate(ref, s), &unsupported, ref)
		assert.Contains(t, unsupported.Reason, "choose its tools", ref)
	}
}
