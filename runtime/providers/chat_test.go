package providers

// Wire tests of the Chat Completions model (openai-go) for every
// OpenAI-compatible provider, and against bodies in the shapes real servers
// send: streamOn tool calls by index, error chunks, refusals, reasoning.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/agentspec/agentspec/runtime/providers/providertest"
	"github.com/agentspec/agentspec/spec"
)

// Every provider served through Chat Completions does one tool round, at
// its default base URL, with its own key variable, streaming and not.
func TestEveryChatProviderToolRound(t *testing.T) {
	t.Parallel()
	for _, p := range table {
		if p.api != apiChat || p.unavailable != "" {
			continue
		}
		for _, stream := range []bool{false, true} {
			t.Run(p.name+map[bool]string{false: "", true: "/sse"}[stream], func(t *testing.T) {
				t.Parallel()
				srv := providertest.NewOpenAIServer(t,
					providertest.Calls(providertest.ToolCall{ID: "call_1", Name: "read_file", Arguments: `{"path":"a.txt"}`}),
					providertest.Text("It says alpha."))
				kv := []string{}
				if len(p.keyEnvs) > 0 {
					kv = append(kv, p.keyEnvs[0], "key-"+p.name)
				}
				kv = append(kv, "AZURE_OPENAI_ENDPOINT", "https://example.openai.azure.com/openai/v1", "SNOWFLAKE_ACCOUNT", "acme")
				policy, _ := instant()
				m, err := New(p.name+":some-model", spec.ModelSettings{}, Options{
					Getenv: env(kv...), Transport: redirect{srv.URL}, retry: policy})
				require.NoError(t, err)
				opts := []llms.CallOption{llms.WithTools([]llms.Tool{readFileTool})}
				if stream {
					opts = append(opts, llms.WithStreamingFunc(func(context.Context, []byte) error { return nil }))
				}
				history := []llms.MessageContent{human("What is in a.txt?")}
				resp, err := m.GenerateContent(t.Context(), history, opts...)
				require.NoError(t, err)
				history = append(history, llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: turnOf(t, resp)},
					result("call_1", "read_file", "alpha"))
				resp, err = m.GenerateContent(t.Context(), history, opts...)
				require.NoError(t, err)
				assert.Equal(t, "It says alpha.", resp.Choices[0].Content)

				reqs := srv.Requests()
				require.Len(t, reqs, 2)
				base := p.baseURL
				switch {
				case p.name == "azure":
					base = "https://example.openai.azure.com/openai/v1"
				case p.name == "snowflake":
					base = "https://acme.snowflakecomputing.com/api/v2/cortex/v1"
				case strings.HasPrefix(p.name, "gateway/"):
					base = gatewayBase("key") + p.baseSuffix
				}
				u, _ := url.Parse(base)
				assert.Equal(t, strings.TrimRight(u.Path, "/")+"/chat/completions", reqs[0].Path, "the provider's documented base URL")
				if p.keyOptional {
					assert.NotEmpty(t, reqs[0].Header.Get("Authorization"))
				} else {
					assert.Equal(t, "Bearer key-"+p.name, reqs[0].Header.Get("Authorization"), "the key comes from %s", p.keyEnvs[0])
				}
				assert.Equal(t, "some-model", reqs[0].JSON()["model"])
			})
		}
	}
}

func chatModelAt(t *testing.T, srv *providertest.RecordedServer, ref string, settings spec.ModelSettings) *Model {
	t.Helper()
	policy, _ := instant()
	settings.BaseURL = srv.URL + "/v1"
	name, _, _ := strings.Cut(ref, ":")
	p, _ := lookup(name)
	m, err := New(ref, settings, Options{Getenv: env(p.keyEnvs[0], "k"), retry: policy})
	require.NoError(t, err)
	return m
}

var streamOn = llms.WithStreamingFunc(func(context.Context, []byte) error { return nil })

// Tool calls streamOn in parallel, their fragments interleaved, the id and
// the name arriving once and late, are assembled by index.
func TestChatToolCallsAssembledByIndex(t *testing.T) {
	t.Parallel()
	body := providertest.SSE(
		`data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":null},"finish_reason":null}]}`,
		`data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"read_file","arguments":"{\"pa"}}]},"finish_reason":null}]}`,
		`data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"read_file","arguments":"{\"path\":"}}]},"finish_reason":null}]}`,
		`data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"th\":\"a.txt\"}"}}]},"finish_reason":null}]}`,
		`data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"\"b.txt\"}"}}]},"finish_reason":null}]}`,
		`data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","function":{"arguments":""}}]},"finish_reason":null}]}`,
		`data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
		`data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":50,"completion_tokens":20,"total_tokens":70,"prompt_tokens_details":{"cached_tokens":32},"completion_tokens_details":{"reasoning_tokens":12}}}`,
		`data: [DONE]`)
	srv := providertest.NewRecordedServer(t, providertest.Recorded{Body: body})
	m := chatModelAt(t, srv, "openai:gpt-5", spec.ModelSettings{})
	resp, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("read both")}, llms.WithTools([]llms.Tool{readFileTool}), streamOn)
	require.NoError(t, err)
	c := resp.Choices[0]
	require.Len(t, c.ToolCalls, 2)
	assert.Equal(t, "call_a", c.ToolCalls[0].ID, "an id that arrives late is kept")
	assert.Equal(t, `{"path":"a.txt"}`, c.ToolCalls[0].FunctionCall.Arguments)
	assert.Equal(t, "call_b", c.ToolCalls[1].ID)
	assert.Equal(t, `{"path":"b.txt"}`, c.ToolCalls[1].FunctionCall.Arguments)
	assert.Equal(t, "tool_calls", c.StopReason)
	assert.Equal(t, 32, c.GenerationInfo[InfoCacheReadTokens])
	assert.Equal(t, 12, c.GenerationInfo[InfoReasoningTokens])
	assert.Equal(t, true, srv.Requests()[0].JSON()["stream_options"].(map[string]any)["include_usage"])
}

func TestChatStreamErrorChunks(t *testing.T) {
	t.Parallel()
	serverError := providertest.SSE(
		`data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"Hel"},"finish_reason":null}]}`,
		`data: {"error":{"message":"The server had an error while processing your request.","type":"server_error","code":null}}`)
	invalid := providertest.SSE(`data: {"error":{"message":"Invalid schema for function 'read_file'","type":"invalid_request_error","code":"invalid_function_parameters"}}`)
	ok := providertest.SSE(
		`data: {"id":"c2","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"Hello"},"finish_reason":null}]}`,
		`data: {"id":"c2","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
		`data: [DONE]`)
	t.Run("retried like a 500", func(t *testing.T) {
		t.Parallel()
		srv := providertest.NewRecordedServer(t, providertest.Recorded{Body: serverError}, providertest.Recorded{Body: ok})
		m := chatModelAt(t, srv, "openrouter:openai/gpt-5", spec.ModelSettings{})
		resp, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("hi")}, streamOn)
		require.NoError(t, err)
		assert.Equal(t, "Hello", resp.Choices[0].Content, "the failed attempt's text is not kept")
	})
	t.Run("a request error fails", func(t *testing.T) {
		t.Parallel()
		srv := providertest.NewRecordedServer(t, providertest.Recorded{Body: invalid})
		m := chatModelAt(t, srv, "openai:gpt-5", spec.ModelSettings{})
		_, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("hi")}, streamOn)
		assert.EqualError(t, err, "openai: error in the response stream: invalid_request_error: Invalid schema for function 'read_file'")
	})
	t.Run("a stream without a finish fails", func(t *testing.T) {
		t.Parallel()
		srv := providertest.NewRecordedServer(t, providertest.Recorded{Body: ok[:strings.Index(ok, `data: {"id":"c2","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},`)]})
		m := chatModelAt(t, srv, "openai:gpt-5", spec.ModelSettings{})
		_, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("hi")}, streamOn)
		assert.ErrorContains(t, err, "the stream ended without a finish_reason")
	})
}

func TestChatRefusalAndLength(t *testing.T) {
	t.Parallel()
	refusal := `{"id":"c","object":"chat.completion","created":1,"model":"gpt-5","choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":"I can't help with that."},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":5,"total_tokens":10}}`
	length := `{"id":"c","object":"chat.completion","created":1,"model":"gpt-5","choices":[{"index":0,"message":{"role":"assistant","content":"The answer is"},"finish_reason":"length"}],"usage":{"prompt_tokens":5,"completion_tokens":5,"total_tokens":10}}`
	srv := providertest.NewRecordedServer(t, providertest.Recorded{Body: refusal}, providertest.Recorded{Body: length})
	m := chatModelAt(t, srv, "openai:gpt-5", spec.ModelSettings{})
	resp, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("hi")})
	require.NoError(t, err)
	assert.Equal(t, "I can't help with that.", resp.Choices[0].GenerationInfo[InfoRefusal])
	resp, err = m.GenerateContent(t.Context(), []llms.MessageContent{human("hi")})
	require.NoError(t, err)
	assert.Equal(t, StopLength, resp.Choices[0].StopReason)
}

// An answer Azure's or OpenAI's content filter stopped (finish_reason
// content_filter, the text cut or left out) is a blocked response, as
// Bedrock's content_filtered and Gemini's SAFETY are, whole and streamed:
// never a finished answer.
func TestChatContentFilterIsBlocked(t *testing.T) {
	t.Parallel()
	whole := `{"id":"c","object":"chat.completion","created":1,"model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":"Here is how to"},"finish_reason":"content_filter"}],"usage":{"prompt_tokens":5,"completion_tokens":4,"total_tokens":9}}`
	streamed := providertest.SSE(
		`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"role":"assistant","content":"Here is how to"},"finish_reason":null}]}`,
		`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{},"finish_reason":"content_filter"}]}`,
		`data: [DONE]`)
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "json", true: "sse"}[stream], func(t *testing.T) {
			t.Parallel()
			body, opts := whole, []llms.CallOption(nil)
			if stream {
				body, opts = streamed, append(opts, streamOn)
			}
			srv := providertest.NewRecordedServer(t, providertest.Recorded{Body: body})
			m := chatModelAt(t, srv, "openai:gpt-4o", spec.ModelSettings{})
			resp, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("hi")}, opts...)
			require.NoError(t, err)
			info, _, _ := ReadInfo(resp.Choices[0])
			assert.True(t, info.Refused, "a filtered answer is not a finished one")
			assert.Equal(t, "the response was blocked (content_filter)", info.Refusal)
		})
	}
}

func TestChatReasoningSettings(t *testing.T) {
	t.Parallel()
	done := `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`
	tests := []struct {
		ref      string
		settings spec.ModelSettings
		want     map[string]any
	}{
		{"openai:o4-mini", spec.ModelSettings{Thinking: &spec.Thinking{Enabled: true}}, map[string]any{"reasoning_effort": "medium"}},
		{"openai:o4-mini", spec.ModelSettings{Thinking: &spec.Thinking{Enabled: true, Effort: "low"},
			Provider: map[string]any{"openai_reasoning_effort": "high"}}, map[string]any{"reasoning_effort": "high"}},
		{"openai:gpt-5.1", spec.ModelSettings{Thinking: &spec.Thinking{Enabled: false}}, map[string]any{"reasoning_effort": "none"}},
		{"openrouter:x", spec.ModelSettings{Thinking: &spec.Thinking{Enabled: true, Effort: "high"}},
			map[string]any{"reasoning": map[string]any{"effort": "high", "enabled": true}}},
		{"deepseek:deepseek-reasoner", spec.ModelSettings{Thinking: &spec.Thinking{Enabled: true}},
			map[string]any{"thinking": map[string]any{"type": "enabled"}}},
		{"groq:qwen3", spec.ModelSettings{Thinking: &spec.Thinking{Enabled: true}, Provider: map[string]any{"groq_reasoning_format": "raw"}},
			map[string]any{"reasoning_format": "raw"}},
		{"mistral:magistral-medium", spec.ModelSettings{Thinking: &spec.Thinking{Enabled: true, Effort: "low"}}, map[string]any{"reasoning_effort": "high"}},
		{"openai:gpt-5", spec.ModelSettings{ServiceTier: "flex", Provider: map[string]any{"openai_prompt_cache_key": "k1"}},
			map[string]any{"service_tier": "flex", "prompt_cache_key": "k1"}},
		{"openai:gpt-5", spec.ModelSettings{ToolChoice: &spec.ToolChoice{Mode: "required", Tools: []string{"read_file"}}},
			map[string]any{"tool_choice": map[string]any{"type": "function", "function": map[string]any{"name": "read_file"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.ref+jsonOf(t, tt.want), func(t *testing.T) {
			t.Parallel()
			srv := providertest.NewRecordedServer(t, providertest.Recorded{Body: done})
			m := chatModelAt(t, srv, tt.ref, tt.settings)
			_, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("hi")}, llms.WithTools([]llms.Tool{readFileTool}))
			require.NoError(t, err)
			body := srv.Requests()[0].JSON()
			for k, v := range tt.want {
				assert.Equal(t, v, body[k], k)
			}
		})
	}
}

// DeepSeek wants the reasoning_content of a turn with tool calls back in
// the next request; other providers do not get it.
func TestDeepSeekReasoningGoesBack(t *testing.T) {
	t.Parallel()
	first := `{"id":"c","object":"chat.completion","created":1,"model":"deepseek-reasoner","choices":[{"index":0,"message":{"role":"assistant","content":"","reasoning_content":"I need a.txt first.","tool_calls":[{"index":0,"id":"call_00","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"a.txt\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":10,"completion_tokens":10,"total_tokens":20,"prompt_cache_hit_tokens":8}}`
	done := `{"id":"c2","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"alpha"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`
	for _, ref := range []string{"deepseek:deepseek-reasoner", "together:deepseek-ai/DeepSeek-R1"} {
		t.Run(ref, func(t *testing.T) {
			t.Parallel()
			srv := providertest.NewRecordedServer(t, providertest.Recorded{Body: first}, providertest.Recorded{Body: done})
			m := chatModelAt(t, srv, ref, spec.ModelSettings{})
			resp, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("read")}, llms.WithTools([]llms.Tool{readFileTool}))
			require.NoError(t, err)
			assert.Equal(t, "I need a.txt first.", resp.Choices[0].ReasoningContent)
			assert.Equal(t, 8, resp.Choices[0].GenerationInfo[InfoCacheReadTokens])
			history := []llms.MessageContent{human("read"), {Role: llms.ChatMessageTypeAI, Parts: turnOf(t, resp)}, result("call_00", "read_file", "alpha")}
			_, err = m.GenerateContent(t.Context(), history, llms.WithTools([]llms.Tool{readFileTool}))
			require.NoError(t, err)
			var body struct {
				Messages []map[string]any `json:"messages"`
			}
			require.NoError(t, json.Unmarshal(srv.Requests()[1].Body, &body))
			assistant := body.Messages[1]
			if ref == "deepseek:deepseek-reasoner" {
				assert.Equal(t, "I need a.txt first.", assistant["reasoning_content"])
			} else {
				assert.NotContains(t, assistant, "reasoning_content")
			}
			assert.Len(t, assistant["tool_calls"], 1)
		})
	}
}

// Mistral's reasoning models send content as a list of thinking and text
// parts, streaming and not.
func TestMistralContentParts(t *testing.T) {
	t.Parallel()
	parts := `[{"type":"thinking","thinking":[{"type":"text","text":"Two plus two."}]},{"type":"text","text":"4"}]`
	whole := `{"id":"c","object":"chat.completion","created":1,"model":"magistral-medium-latest","choices":[{"index":0,"message":{"role":"assistant","content":` + parts + `},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`
	stream := providertest.SSE(
		`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"magistral-medium-latest","choices":[{"index":0,"delta":{"role":"assistant","content":[{"type":"thinking","thinking":[{"type":"text","text":"Two plus two."}]}]},"finish_reason":null}]}`,
		`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"magistral-medium-latest","choices":[{"index":0,"delta":{"content":"4"},"finish_reason":"stop"}]}`,
		`data: [DONE]`)
	for name, body := range map[string]string{"json": whole, "sse": stream} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := providertest.NewRecordedServer(t, providertest.Recorded{Body: body})
			m := chatModelAt(t, srv, "mistral:magistral-medium-latest", spec.ModelSettings{})
			var opts []llms.CallOption
			if name == "sse" {
				opts = append(opts, streamOn)
			}
			resp, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("2+2?")}, opts...)
			require.NoError(t, err)
			assert.Equal(t, "4", resp.Choices[0].Content)
			assert.Equal(t, "Two plus two.", resp.Choices[0].ReasoningContent)
		})
	}
}

func TestChatToolUseFailed(t *testing.T) {
	t.Parallel()
	failed := `{"error":{"message":"Failed to call a function. Please adjust your prompt. See 'failed_generation' for more details.","type":"invalid_request_error","code":"tool_use_failed","failed_generation":"<function=read_file>{\"path\": a.txt}</function>"}}`
	srv := providertest.NewRecordedServer(t, providertest.Recorded{Status: 400, Body: failed})
	m := chatModelAt(t, srv, "groq:llama-3.3-70b-versatile", spec.ModelSettings{})
	_, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("read")}, llms.WithTools([]llms.Tool{readFileTool}))
	var perr *Error
	require.ErrorAs(t, err, &perr)
	wrote, ok := perr.ToolUseFailed()
	assert.True(t, ok)
	assert.Equal(t, `<function=read_file>{"path": a.txt}</function>`, wrote)
}

func TestChatSettingsRefused(t *testing.T) {
	t.Parallel()
	tests := []struct {
		ref      string
		settings spec.ModelSettings
		want     string
	}{
		{"openai:gpt-5", spec.ModelSettings{TopK: ptr(5)},
			"openai does not support model_settings.top_k: the Chat Completions API has no top_k; a server that takes it can get it through extra_body"},
		{"openai:gpt-5", spec.ModelSettings{Provider: map[string]any{"openai_text_verbosity": "low"}},
			"openai does not support model_settings.openai_text_verbosity: it belongs to the Responses API; use openai-responses:"},
		{"openai-responses:gpt-5", spec.ModelSettings{Provider: map[string]any{"openai_logprobs": true}},
			"openai-responses does not support model_settings.openai_logprobs: the Responses API has no such parameter; it belongs to Chat Completions (openai-chat:)"},
		{"openai-responses:gpt-5", spec.ModelSettings{Provider: map[string]any{"openai_continuous_usage_stats": true}},
			"openai-responses does not support model_settings.openai_continuous_usage_stats: the Responses API has no such parameter; it belongs to Chat Completions (openai-chat:)"},
		{"groq:x", spec.ModelSettings{ServiceTier: "flex"}, "groq does not support model_settings.service_tier: only OpenAI's APIs have service tiers"},
		{"huggingface:x", spec.ModelSettings{Thinking: &spec.Thinking{Enabled: true}},
			"huggingface does not support model_settings.thinking: agentspec knows no reasoning switch for it; send the provider's own field through extra_body"},
		{"openai:gpt-5", spec.ModelSettings{Thinking: &spec.Thinking{Enabled: true, Budget: 4000}},
			"openai does not support model_settings.thinking: a token budget is Anthropic's; give an effort (minimal, low, medium, high, xhigh)"},
		{"mistral:x", spec.ModelSettings{Provider: map[string]any{"anthropic_thinking": map[string]any{"type": "adaptive"}}},
			"mistral does not support model_settings.anthropic_thinking: it is read by anthropic models only"},
		{"google-vertex:gemini-2.5-pro", spec.ModelSettings{LogitBias: map[string]int{"1": 1}},
			"google-vertex does not support model_settings.logit_bias: generateContent has no such field"},
		{"google:gemini-2.5-pro", spec.ModelSettings{Provider: map[string]any{"google_safety_settings": []any{}}},
			"google does not support model_settings.google_safety_settings: agentspec does not send it yet"},
		{"bedrock:us.anthropic.claude-sonnet-4-5-20250929-v1:0", spec.ModelSettings{Seed: ptr(1)},
			"bedrock does not support model_settings.seed: the Converse API has no such field; a model that takes it can get it through bedrock_additional_model_requests_fields"},
		{"bedrock:amazon.titan-text-express-v1", spec.ModelSettings{Thinking: &spec.Thinking{Enabled: true}},
			"bedrock does not support model_settings.thinking: agentspec knows the reasoning switch of Claude and OpenAI models on Bedrock only; " +
				"send the model's own field through bedrock_additional_model_requests_fields"},
	}
	for _, tt := range tests {
		assert.EqualError(t, Validate(tt.ref, tt.settings), tt.want, tt.ref)
	}
}

// Gemini's OpenAI-compatible endpoint: the thought signature in a tool
// call's extra_content goes back with the call; google_thinking_config is
// sent in its extra_body instead of reasoning_effort.
func TestGeminiThoughtSignatures(t *testing.T) {
	t.Parallel()
	first := `{"id":"g1","object":"chat.completion","created":1,"model":"gemini-3-pro-preview","choices":[{"index":0,"message":{"role":"assistant","tool_calls":[{"extra_content":{"google":{"thought_signature":"CtgBAdHtim9"}},"function":{"arguments":"{\"path\":\"a.txt\"}","name":"read_file"},"id":"function-call-1","type":"function"}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15,"completion_tokens_details":{"reasoning_tokens":40}}}`
	done := `{"id":"g2","object":"chat.completion","created":1,"model":"gemini-3-pro-preview","choices":[{"index":0,"message":{"role":"assistant","content":"alpha"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`
	srv := providertest.NewRecordedServer(t, providertest.Recorded{Body: first}, providertest.Recorded{Body: done})
	m := chatModelAt(t, srv, "google:gemini-3-pro-preview", spec.ModelSettings{Thinking: &spec.Thinking{Enabled: true},
		Provider: map[string]any{"google_thinking_config": map[string]any{"thinking_level": "low", "include_thoughts": true}}})
	resp, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("read")}, llms.WithTools([]llms.Tool{readFileTool}))
	require.NoError(t, err)
	assert.Equal(t, 40, resp.Choices[0].GenerationInfo[InfoReasoningTokens])
	history := []llms.MessageContent{human("read"), {Role: llms.ChatMessageTypeAI, Parts: turnOf(t, resp)}, result("function-call-1", "read_file", "alpha")}
	_, err = m.GenerateContent(t.Context(), history, llms.WithTools([]llms.Tool{readFileTool}))
	require.NoError(t, err)

	reqs := srv.Requests()
	body := reqs[0].JSON()
	assert.Equal(t, map[string]any{"google": map[string]any{"thinking_config": map[string]any{"thinking_level": "low", "include_thoughts": true}}}, body["extra_body"])
	assert.NotContains(t, body, "reasoning_effort", "Gemini takes thinking_config or reasoning_effort, not both")
	var sent struct {
		Messages []map[string]any `json:"messages"`
	}
	require.NoError(t, json.Unmarshal(reqs[1].Body, &sent))
	call := sent.Messages[1]["tool_calls"].([]any)[0].(map[string]any)
	assert.Equal(t, map[string]any{"google": map[string]any{"thought_signature": "CtgBAdHtim9"}}, call["extra_content"])
	assert.Equal(t, "function-call-1", call["id"])
}

func TestOpenRouterAppHeaders(t *testing.T) {
	t.Parallel()
	srv := providertest.NewOpenAIServer(t, providertest.Text("ok"))
	policy, _ := instant()
	m, err := New("openrouter:openai/gpt-5", spec.ModelSettings{}, Options{Transport: redirect{srv.URL}, retry: policy,
		Getenv: env("OPENROUTER_API_KEY", "k", "OPENROUTER_APP_URL", "https://example.com/app", "OPENROUTER_APP_TITLE", "agentspec")})
	require.NoError(t, err)
	_, err = m.GenerateContent(t.Context(), []llms.MessageContent{human("hi")})
	require.NoError(t, err)
	h := srv.Requests()[0].Header
	assert.Equal(t, "https://example.com/app", h.Get("HTTP-Referer"))
	assert.Equal(t, "agentspec", h.Get("X-Title"))
}

// Groq reports a call the model wrote but the server could not parse inside
// the stream too: as an error chunk after a 200, or as a 400 before any
// event. Both are the same correctable mistake as the non-streamed 400.
func TestChatStreamedToolUseFailed(t *testing.T) {
	t.Parallel()
	const wrote = `<function=read_file>{"path": a.txt}</function>`
	errorBody := `{"error":{"message":"Failed to call a function. Please adjust your prompt. See 'failed_generation' for more details.","type":"invalid_request_error","code":"tool_use_failed","failed_generation":` + string(jsonValue(wrote)) + `,"status_code":400}}`
	tests := map[string]providertest.Recorded{
		"error chunk": {Body: providertest.SSE(
			`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"llama-3.3-70b-versatile","system_fingerprint":"fp_1","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}],"x_groq":{"id":"req_1"}}`,
			`data: `+errorBody)},
		"400 before the stream": {Status: 400, Body: errorBody},
	}
	for name, rec := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := providertest.NewRecordedServer(t, rec)
			m := chatModelAt(t, srv, "groq:llama-3.3-70b-versatile", spec.ModelSettings{})
			_, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("read")}, llms.WithTools([]llms.Tool{readFileTool}), streamOn)
			var perr *Error
			require.ErrorAs(t, err, &perr)
			got, ok := perr.ToolUseFailed()
			assert.True(t, ok, "%v", err)
			assert.Equal(t, wrote, got)
			assert.Len(t, srv.Requests(), 1, "the same request is not sent again")
		})
	}
}

// Snowflake Cortex ends its streams with no finish_reason and sometimes no
// [DONE]: a stream that ended cleanly with text or complete tool calls is
// the end of the turn. A stream cut in a tool call's arguments, or by the
// network, still fails.
func TestChatStreamWithoutFinishReason(t *testing.T) {
	t.Parallel()
	chunk := func(delta string) string {
		return `data: {"id":"c9a1","created":1764770000,"model":"claude-sonnet-4-5","choices":[{"delta":` + delta + `}],"usage":{"prompt_tokens":12,"completion_tokens":4,"total_tokens":16}}`
	}
	text := providertest.SSE(chunk(`{"content":"Hello"}`), chunk(`{"content":" there."}`))
	calls := providertest.SSE(
		chunk(`{"content":"Reading."}`),
		chunk(`{"tool_calls":[{"index":0,"id":"tooluse_abc","type":"function","function":{"name":"read_file","arguments":""}}]}`),
		chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"path\":"}}]}`),
		chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"\"a.txt\"}"}}]}`),
		`data: [DONE]`)
	cut := providertest.SSE(
		chunk(`{"tool_calls":[{"index":0,"id":"tooluse_abc","type":"function","function":{"name":"read_file","arguments":"{\"path\":"}}]}`))
	t.Run("text", func(t *testing.T) {
		t.Parallel()
		srv := providertest.NewRecordedServer(t, providertest.Recorded{Body: text})
		m := chatModelAt(t, srv, "snowflake:claude-sonnet-4-5", spec.ModelSettings{})
		resp, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("hi")}, streamOn)
		require.NoError(t, err)
		assert.Equal(t, "Hello there.", resp.Choices[0].Content)
		assert.Equal(t, "stop", resp.Choices[0].StopReason)
		assert.Equal(t, 12, resp.Choices[0].GenerationInfo[InfoInputTokens])
	})
	t.Run("tool calls", func(t *testing.T) {
		t.Parallel()
		srv := providertest.NewRecordedServer(t, providertest.Recorded{Body: calls})
		m := chatModelAt(t, srv, "snowflake:claude-sonnet-4-5", spec.ModelSettings{})
		resp, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("read")}, llms.WithTools([]llms.Tool{readFileTool}), streamOn)
		require.NoError(t, err)
		c := resp.Choices[0]
		assert.Equal(t, "tool_calls", c.StopReason)
		require.Len(t, c.ToolCalls, 1)
		assert.Equal(t, `{"path":"a.txt"}`, c.ToolCalls[0].FunctionCall.Arguments)
	})
	t.Run("cut in a tool call", func(t *testing.T) {
		t.Parallel()
		srv := providertest.NewRecordedServer(t, providertest.Recorded{Body: cut})
		m := chatModelAt(t, srv, "snowflake:claude-sonnet-4-5", spec.ModelSettings{})
		_, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("read")}, llms.WithTools([]llms.Tool{readFileTool}), streamOn)
		assert.ErrorContains(t, err, "the stream ended without a finish_reason")
	})
	t.Run("cut by the network", func(t *testing.T) {
		t.Parallel()
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, chunk(`{"content":"Hel"}`)+"\n\n")
			w.(http.Flusher).Flush()
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.Close() // the chunked body never ends
			}
		}))
		t.Cleanup(srv.Close)
		policy, _ := instant()
		policy.max = 0
		m, err := New("snowflake:claude-sonnet-4-5", spec.ModelSettings{BaseURL: srv.URL + "/v1"}, Options{Getenv: env("SNOWFLAKE_TOKEN", "k"), retry: policy})
		require.NoError(t, err)
		_, err = m.GenerateContent(t.Context(), []llms.MessageContent{human("hi")}, streamOn)
		assert.ErrorIs(t, err, io.ErrUnexpectedEOF, "the text that came is not taken as the answer")
	})
	t.Run("other providers still need a finish_reason", func(t *testing.T) {
		t.Parallel()
		srv := providertest.NewRecordedServer(t, providertest.Recorded{Body: text})
		m := chatModelAt(t, srv, "openai:gpt-5", spec.ModelSettings{})
		_, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("hi")}, streamOn)
		assert.ErrorContains(t, err, "the stream ended without a finish_reason")
	})
}

// deepSeekRound is one DeepSeek thinking-mode turn as a completion and as
// its stream: reasoning_content, then a call or the answer.
func deepSeekRound(n int, reasoning, callID, path, answer string) (whole, stream string) {
	id := fmt.Sprintf("ds-%d", n)
	msg := map[string]any{"role": "assistant", "content": answer, "reasoning_content": reasoning}
	finish := "stop"
	chunk := func(delta, finish string) string {
		f := "null"
		if finish != "" {
			f = `"` + finish + `"`
		}
		return `data: {"id":"` + id + `","object":"chat.completion.chunk","created":1764770000,"model":"deepseek-reasoner","system_fingerprint":"fp_ds","choices":[{"index":0,"delta":` + delta + `,"logprobs":null,"finish_reason":` + f + `}]}`
	}
	half := len(reasoning) / 2
	events := []string{
		chunk(`{"role":"assistant","content":null,"reasoning_content":""}`, ""),
		chunk(`{"content":null,"reasoning_content":`+string(jsonValue(reasoning[:half]))+`}`, ""),
		chunk(`{"content":null,"reasoning_content":`+string(jsonValue(reasoning[half:]))+`}`, ""),
	}
	if callID != "" {
		args := `{"path":"` + path + `"}`
		msg["content"] = ""
		msg["tool_calls"] = []any{map[string]any{"index": 0, "id": callID, "type": "function",
			"function": map[string]any{"name": "read_file", "arguments": args}}}
		finish = "tool_calls"
		events = append(events,
			chunk(`{"content":"","reasoning_content":null}`, ""),
			chunk(`{"tool_calls":[{"index":0,"id":"`+callID+`","type":"function","function":{"name":"read_file","arguments":""}}]}`, ""),
			chunk(`{"tool_calls":[{"index":0,"function":{"arguments":`+string(jsonValue(args))+`}}]}`, ""))
	} else {
		events = append(events, chunk(`{"content":`+string(jsonValue(answer))+`,"reasoning_content":null}`, ""))
	}
	events = append(events, chunk(`{"content":"","reasoning_content":null}`, finish),
		`data: {"id":"`+id+`","object":"chat.completion.chunk","created":1764770000,"model":"deepseek-reasoner","system_fingerprint":"fp_ds","choices":[],"usage":{"prompt_tokens":40,"completion_tokens":20,"total_tokens":60,"prompt_cache_hit_tokens":32,"prompt_cache_miss_tokens":8,"completion_tokens_details":{"reasoning_tokens":15}}}`,
		`data: [DONE]`)
	whole = string(jsonValue(map[string]any{"id": id, "object": "chat.completion", "created": 1764770000, "model": "deepseek-reasoner",
		"choices": []any{map[string]any{"index": 0, "message": msg, "logprobs": nil, "finish_reason": finish}},
		"usage":   map[string]any{"prompt_tokens": 40, "completion_tokens": 20, "total_tokens": 60, "prompt_cache_hit_tokens": 32, "prompt_cache_miss_tokens": 8}}))
	return whole, providertest.SSE(events...)
}

// In thinking mode DeepSeek wants every assistant message with tool calls
// to carry its own reasoning_content, in every later request of the turn:
// after two tool rounds, the first round's reasoning is still there.
func TestDeepSeekReasoningOfEveryRoundGoesBack(t *testing.T) {
	t.Parallel()
	for name, reasonings := range map[string][]string{
		"every round":         {"I need a.txt first.", "Now b.txt, which a.txt names.", "Both read; answer."},
		"a round without any": {"I need a.txt first.", "", "Both read; answer."}, // an empty reasoning_content goes back for it
	} {
		t.Run(name, func(t *testing.T) { testDeepSeekReasoningRounds(t, reasonings) })
	}
}

func testDeepSeekReasoningRounds(t *testing.T, reasonings []string) {
	t.Parallel()
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "json", true: "sse"}[stream], func(t *testing.T) {
			t.Parallel()
			var bodies []providertest.Recorded
			for i, r := range []struct{ id, path, answer string }{{"call_0_a", "a.txt", ""}, {"call_0_b", "b.txt", ""}, {"", "", "alpha, beta"}} {
				whole, sse := deepSeekRound(i, reasonings[i], r.id, r.path, r.answer)
				bodies = append(bodies, providertest.Recorded{Body: map[bool]string{false: whole, true: sse}[stream]})
			}
			srv := providertest.NewRecordedServer(t, bodies...)
			m := chatModelAt(t, srv, "deepseek:deepseek-reasoner", spec.ModelSettings{Thinking: &spec.Thinking{Enabled: true}})
			opts := []llms.CallOption{llms.WithTools([]llms.Tool{readFileTool})}
			if stream {
				opts = append(opts, streamOn)
			}
			history := []llms.MessageContent{human("read a.txt and what it names")}
			for i, id := range []string{"call_0_a", "call_0_b", ""} {
				resp, err := m.GenerateContent(t.Context(), history, opts...)
				require.NoError(t, err)
				assert.Equal(t, reasonings[i], resp.Choices[0].ReasoningContent)
				if id == "" {
					assert.Equal(t, "alpha, beta", resp.Choices[0].Content)
					break
				}
				history = append(history, llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: turnOf(t, resp)}, result(id, "read_file", "file "+id))
			}
			reqs := srv.Requests()
			require.Len(t, reqs, 3)
			for n, req := range reqs {
				var body struct {
					Messages []map[string]any `json:"messages"`
				}
				require.NoError(t, json.Unmarshal(req.Body, &body))
				var got []any
				for _, msg := range body.Messages {
					if msg["role"] == "assistant" {
						assert.Contains(t, msg, "tool_calls", "request %d", n)
						got = append(got, msg["reasoning_content"])
					}
				}
				want := []any{}
				for _, r := range reasonings[:n] {
					want = append(want, r)
				}
				assert.Equal(t, want, append([]any{}, got...), "request %d: each assistant turn with calls carries its own reasoning", n)
			}
		})
	}
}

// OpenRouter answers 200 and puts the error in the body, with no choices,
// when the upstream model fails after the request was accepted: that is a
// failed request naming the provider's message and the upstream reason it
// relays in metadata.raw, not an empty answer; its code 502 is retried as
// the status would be.
func TestChatErrorBodyWithSuccessStatus(t *testing.T) {
	t.Parallel()
	body := `{"error":{"message":"Provider returned error","code":502,"metadata":{"raw":"upstream connect error or disconnect/reset before headers","provider_name":"Chutes"}},"user_id":"user_2yZ4kQ"}`
	bodies := make([]providertest.Recorded, 5)
	for i := range bodies {
		bodies[i] = providertest.Recorded{Body: body}
	}
	srv := providertest.NewRecordedServer(t, bodies...)
	m := chatModelAt(t, srv, "openrouter:deepseek/deepseek-chat-v3.1", spec.ModelSettings{})
	resp, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("hi")}, llms.WithTools([]llms.Tool{readFileTool}))
	require.Error(t, err, "an empty answer came instead: %+v", resp)
	var perr *Error
	require.ErrorAs(t, err, &perr)
	assert.Equal(t, "openrouter", perr.Provider)
	assert.Equal(t, "Provider returned error (Chutes): upstream connect error or disconnect/reset before headers", perr.Message)
	assert.Equal(t, "502", perr.Type)
	assert.Equal(t, 4, perr.Retries)
	assert.Equal(t, "openrouter: HTTP 200: Provider returned error (Chutes): upstream connect error or disconnect/reset before headers", err.Error())
	assert.Equal(t, "openrouter: request failed (200) after 4 retries: Provider returned error (Chutes): upstream connect error or disconnect/reset before headers", Describe(err))
	_, correctable := perr.ToolUseFailed()
	assert.False(t, correctable)
	assert.Len(t, srv.Requests(), 5)
}

// An error OpenRouter relays inside a successful answer (the body of a 200,
// a chunk of the stream, the choice itself) is retried when its code is one
// a status would be retried for, and fails at once otherwise, with the
// upstream reason; an answer that ends with finish_reason "error" and says
// no more is a failure, not an empty answer.
func TestChatErrorInSuccessfulAnswer(t *testing.T) {
	t.Parallel()
	okWhole := `{"id":"gen-1","object":"chat.completion","created":1,"model":"anthropic/claude-sonnet-4.5","choices":[{"index":0,"message":{"role":"assistant","content":"Hello"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`
	okStream := providertest.SSE(
		`data: {"id":"gen-2","object":"chat.completion.chunk","created":1,"model":"anthropic/claude-sonnet-4.5","choices":[{"index":0,"delta":{"role":"assistant","content":"Hello"},"finish_reason":null}]}`,
		`data: {"id":"gen-2","object":"chat.completion.chunk","created":1,"model":"anthropic/claude-sonnet-4.5","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
		`data: [DONE]`)
	overloaded := `{"message":"Provider returned error","code":502,"metadata":{"raw":"{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}","provider_name":"Anthropic"}}`
	rateLimited := `{"message":"Provider returned error","code":429,"metadata":{"raw":"anthropic/claude-sonnet-4.5 is temporarily rate-limited upstream. Please retry shortly.","provider_name":"Google"}}`
	for _, tc := range []struct {
		name      string
		first     string
		stream    bool
		retried   bool
		reason    string // what the retry or the failure names
		then      string // the answer after a retry
		wantError string
	}{
		{name: "body of a 200, code 502", first: `{"error":` + overloaded + `,"user_id":"user_1"}`,
			retried: true, reason: "Provider returned error (Anthropic): overloaded_error: Overloaded", then: okWhole},
		{name: "the choice, code 502", first: `{"id":"gen-1","object":"chat.completion","created":1,"model":"anthropic/claude-sonnet-4.5","choices":[{"index":0,"message":{"role":"assistant","content":""},"finish_reason":"error","native_finish_reason":null,"error":` + overloaded + `}]}`,
			retried: true, reason: "Provider returned error (Anthropic): overloaded_error: Overloaded", then: okWhole},
		{name: "stream chunk, code 429", stream: true, first: providertest.SSE(
			`data: {"id":"gen-2","object":"chat.completion.chunk","created":1,"model":"anthropic/claude-sonnet-4.5","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`,
			`data: {"id":"gen-2","object":"chat.completion.chunk","created":1,"model":"anthropic/claude-sonnet-4.5","provider":"Google","error":`+rateLimited+`,"choices":[{"index":0,"delta":{"content":""},"finish_reason":"error"}]}`),
			retried: true, reason: "Provider returned error (Google): anthropic/claude-sonnet-4.5 is temporarily rate-limited upstream. Please retry shortly.", then: okStream},
		{name: "body of a 200, code 400", first: `{"error":{"message":"Provider returned error","code":400,"metadata":{"raw":"{\"error\":{\"message\":\"messages.1: tool_use ids must be unique\",\"type\":\"invalid_request_error\"}}","provider_name":"Anthropic"}}}`,
			wantError: "openrouter: HTTP 200: Provider returned error (Anthropic): invalid_request_error: messages.1: tool_use ids must be unique"},
		{name: "finish_reason error, whole", first: `{"id":"gen-3","object":"chat.completion","created":1,"model":"anthropic/claude-sonnet-4.5","choices":[{"index":0,"message":{"role":"assistant","content":""},"finish_reason":"error"}]}`,
			wantError: `openrouter: HTTP 200: the answer ended with finish_reason "error"`},
		{name: "finish_reason error, streamed", stream: true, first: providertest.SSE(
			`data: {"id":"gen-4","object":"chat.completion.chunk","created":1,"model":"anthropic/claude-sonnet-4.5","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`,
			`data: {"id":"gen-4","object":"chat.completion.chunk","created":1,"model":"anthropic/claude-sonnet-4.5","choices":[{"index":0,"delta":{"content":""},"finish_reason":"error"}]}`,
			`data: [DONE]`),
			wantError: `openrouter: error in the response stream: the answer ended with finish_reason "error"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			bodies := []providertest.Recorded{{Body: tc.first}}
			if tc.then != "" {
				bodies = append(bodies, providertest.Recorded{Body: tc.then})
			}
			srv := providertest.NewRecordedServer(t, bodies...)
			var told []RetryInfo
			policy, _ := instant()
			m, err := New("openrouter:anthropic/claude-sonnet-4.5", spec.ModelSettings{BaseURL: srv.URL + "/v1"}, Options{
				Getenv: env("OPENROUTER_API_KEY", "k"), retry: policy,
				OnRetry: func(r RetryInfo) { told = append(told, r) },
			})
			require.NoError(t, err)
			var opts []llms.CallOption
			if tc.stream {
				opts = append(opts, streamOn)
			}
			resp, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("hi")}, opts...)
			if tc.wantError != "" {
				require.Error(t, err, "an answer came instead: %+v", resp)
				assert.Equal(t, tc.wantError, err.Error())
				assert.Empty(t, told)
				assert.Len(t, srv.Requests(), 1)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, "Hello", text(resp))
			require.Len(t, told, 1)
			assert.Contains(t, told[0].Reason, tc.reason)
			assert.Len(t, srv.Requests(), 2)
		})
	}
}

// Some OpenAI-compatible servers send "error": null on every chunk: the
// stream is read, and an error that is there still fails it.
func TestChatStreamNullErrorMember(t *testing.T) {
	t.Parallel()
	srv := providertest.NewRecordedServer(t, providertest.Recorded{Body: providertest.SSE(
		`data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","error":null,"choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"},"finish_reason":null}]}`,
		`data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","error":null,"choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":null,"error":null}]}`,
		`data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","error":null,"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
		`data: [DONE]`)}, providertest.Recorded{Body: providertest.SSE(
		`data: {"id":"c2","object":"chat.completion.chunk","created":1,"model":"m","error":null,"choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"},"finish_reason":null}]}`,
		`data: {"error":{"message":"Invalid schema for function 'read_file'","type":"invalid_request_error","code":"invalid_function_parameters"}}`)})
	m := chatModelAt(t, srv, "openai:gpt-5", spec.ModelSettings{})
	resp, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("hi")}, streamOn)
	require.NoError(t, err)
	assert.Equal(t, "Hello", text(resp))
	_, err = m.GenerateContent(t.Context(), []llms.MessageContent{human("hi")}, streamOn)
	assert.EqualError(t, err, "openai: error in the response stream: invalid_request_error: Invalid schema for function 'read_file'")
}

// thinking: false is left out of a request to a model that always reasons
// (OpenAI's o-series, the first GPT-5 models, the GPT-5.x chat, codex and
// pro ones; Gemini's Pro models from 2.5 on), which refuses a reasoning
// effort of none or a thinking budget of 0, as pydantic-ai leaves it out;
// the models that can stop reasoning still get it.
func TestThinkingOffIsNotSentToModelsThatAlwaysReason(t *testing.T) {
	t.Parallel()
	off := spec.ModelSettings{Thinking: &spec.Thinking{Enabled: false}}
	tests := []struct {
		ref, key string
		path     []string // where the setting goes in the body
		want     any      // nil: absent
	}{
		{"openai:o3", "OPENAI_API_KEY", []string{"reasoning_effort"}, nil},
		{"openai:o4-mini", "OPENAI_API_KEY", []string{"reasoning_effort"}, nil},
		{"openai:gpt-5", "OPENAI_API_KEY", []string{"reasoning_effort"}, nil},
		{"openai:gpt-5-mini-2025-08-07", "OPENAI_API_KEY", []string{"reasoning_effort"}, nil},
		{"openai:gpt-5.1-codex-max", "OPENAI_API_KEY", []string{"reasoning_effort"}, nil},
		{"openai:gpt-5.2-chat-latest", "OPENAI_API_KEY", []string{"reasoning_effort"}, nil},
		{"openai:gpt-5.4-pro", "OPENAI_API_KEY", []string{"reasoning_effort"}, nil},
		{"openai:gpt-5.1", "OPENAI_API_KEY", []string{"reasoning_effort"}, "none"},
		{"openai:gpt-5.3-codex", "OPENAI_API_KEY", []string{"reasoning_effort"}, "none"},
		{"openai:gpt-5.5", "OPENAI_API_KEY", []string{"reasoning_effort"}, "none"},
		{"openai-responses:o3", "OPENAI_API_KEY", []string{"reasoning"}, nil},
		{"openai-responses:gpt-5-codex", "OPENAI_API_KEY", []string{"reasoning"}, nil},
		{"openai-responses:gpt-5.2", "OPENAI_API_KEY", []string{"reasoning", "effort"}, "none"},
		{"google:gemini-2.5-pro", "GOOGLE_API_KEY", []string{"reasoning_effort"}, nil},
		{"google:gemini-2.5-flash", "GOOGLE_API_KEY", []string{"reasoning_effort"}, "none"},
		{"google-vertex:gemini-2.5-pro", "GOOGLE_API_KEY", []string{"generationConfig", "thinkingConfig"}, nil},
		{"google-vertex:gemini-2.5-flash", "GOOGLE_API_KEY", []string{"generationConfig", "thinkingConfig"}, map[string]any{"thinkingBudget": 0.0}},
	}
	for _, tt := range tests {
		t.Run(tt.ref, func(t *testing.T) {
			t.Parallel()
			var got any = firstBody(t, tt.ref, off, env(tt.key, "test-key"))
			for _, k := range tt.path {
				got, _ = got.(map[string]any)[k]
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

// The default temperature is not sent to OpenAI's reasoning models on Chat
// Completions, which refuse a temperature while they reason, as it is not
// on the Responses API: 1 is their default anyway. A spec's own is sent,
// and other models still get the default.
func TestChatDefaultTemperatureNotSentToReasoningModels(t *testing.T) {
	t.Parallel()
	key := env("OPENAI_API_KEY", "sk-test")
	high := spec.ModelSettings{Thinking: &spec.Thinking{Enabled: true, Effort: "high"}}
	for _, ref := range []string{"openai:o3", "openai:gpt-5", "openai:gpt-5.2", "openai:gpt-5.2-codex", "azure:o4-mini"} {
		getenv := key
		if strings.HasPrefix(ref, "azure:") {
			getenv = env("AZURE_OPENAI_API_KEY", "k", "OPENAI_API_VERSION", "2025-04-01-preview")
		}
		body := firstBody(t, ref, high, getenv)
		assert.NotContains(t, body, "temperature", ref)
	}
	assert.Equal(t, 0.5, firstBody(t, "openai:gpt-5.2", spec.ModelSettings{Temperature: ptr(0.5)}, key)["temperature"])
	assert.Equal(t, 1.0, firstBody(t, "openai:gpt-4o", spec.ModelSettings{}, key)["temperature"])
	assert.Equal(t, 1.0, firstBody(t, "openai:gpt-5-chat-latest", spec.ModelSettings{}, key)["temperature"])
	assert.Equal(t, 1.0, firstBody(t, "groq:openai/gpt-oss-120b", spec.ModelSettings{}, env("GROQ_API_KEY", "k"))["temperature"])
}

// A whole answer with no choice and no error is a failure, as a stream
// that ends without a finish_reason is, not an empty answer.
func TestChatAnswerWithoutChoiceFails(t *testing.T) {
	t.Parallel()
	empty := `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":0,"total_tokens":3}}`
	srv := providertest.NewRecordedServer(t, providertest.Recorded{Body: empty})
	m := chatModelAt(t, srv, "openai:gpt-4o", spec.ModelSettings{})
	resp, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("hi")})
	require.Error(t, err, "an empty answer came instead: %+v", resp)
	assert.Equal(t, "openai: request failed (200): the answer held no choice", Describe(err))
}

// A sampling setting an OpenAI model refuses while it reasons is refused
// before any request when the spec has it reason: always for the families
// that always do, by default for GPT-5.5 on, when asked for GPT-5.1 to 5.4;
// a model that does not reason then keeps it.
func TestOpenAIReasoningRefusesSampling(t *testing.T) {
	t.Parallel()
	off := &spec.Thinking{}
	high := &spec.Thinking{Enabled: true, Effort: "high"}
	for _, tt := range []struct {
		ref     string
		s       spec.ModelSettings
		refused []string
	}{
		{"openai:o3", spec.ModelSettings{Temperature: ptr(0.2), TopP: ptr(0.9)}, []string{"temperature", "top_p"}},
		{"openai:o3", spec.ModelSettings{Temperature: ptr(0.2), Thinking: off}, []string{"temperature"}},
		{"openai-chat:gpt-5-mini", spec.ModelSettings{PresencePenalty: ptr(0.5), LogitBias: map[string]int{"1": 1}}, []string{"presence_penalty", "logit_bias"}},
		{"openai:gpt-5.5", spec.ModelSettings{Temperature: ptr(0.2)}, []string{"temperature"}},
		{"openai:gpt-5.5", spec.ModelSettings{Temperature: ptr(0.2), Thinking: off}, nil},
		{"openai:gpt-5.2", spec.ModelSettings{Temperature: ptr(0.2)}, nil},
		{"openai:gpt-5.2", spec.ModelSettings{Temperature: ptr(0.2), Thinking: high}, []string{"temperature"}},
		{"openai:gpt-5.2", spec.ModelSettings{Temperature: ptr(0.2), Provider: map[string]any{"openai_reasoning_effort": "low"}}, []string{"temperature"}},
		{"openai:gpt-5.6", spec.ModelSettings{Temperature: ptr(0.2), Provider: map[string]any{"openai_reasoning_effort": "none"}}, nil},
		{"openai:gpt-5-chat-latest", spec.ModelSettings{Temperature: ptr(0.2)}, nil},
		{"openai:gpt-4o", spec.ModelSettings{Temperature: ptr(0.2), TopP: ptr(0.9)}, nil},
		{"openai-responses:o4-mini", spec.ModelSettings{TopP: ptr(0.9), PresencePenalty: ptr(0.5)}, []string{"top_p", "presence_penalty"}},
	} {
		var got []string
		for _, err := range unwrapJoined(Validate(tt.ref, tt.s)) {
			var u *UnsupportedSettingError
			require.ErrorAs(t, err, &u, "%s %+v", tt.ref, tt.s)
			got = append(got, u.Setting)
			if u.Setting != "presence_penalty" || !strings.HasPrefix(tt.ref, "openai-responses:") {
				assert.Contains(t, u.Reason, "this OpenAI model refuses it while it reasons", tt.ref)
			}
		}
		assert.ElementsMatch(t, tt.refused, got, "%s %+v", tt.ref, tt.s)
	}
}

// unwrapJoined is the errors errors.Join joined into err, or err alone.
func unwrapJoined(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
