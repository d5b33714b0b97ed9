package runtime

// The loop through the providers' SDK clients, against bodies in the shapes
// the APIs send: thinking kept across a tool round, refusals, truncation,
// tool_use_failed, cache usage, native tools, and streaming that changes
// nothing in the result.

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/runtime/providers"
	"github.com/agentspec/agentspec/runtime/providers/providertest"
	"github.com/agentspec/agentspec/spec"
)

const (
	claudeThinkingToolTurn = `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[
 {"type":"thinking","thinking":"I should read a.md.","signature":"sig-1"},
 {"type":"text","text":"Reading."},
 {"type":"tool_use","id":"toolu_1","name":"read_file","input":{"path":"a.md"}}],
"stop_reason":"tool_use","stop_sequence":null,
"usage":{"input_tokens":100,"output_tokens":30,"cache_creation_input_tokens":500,"cache_read_input_tokens":700}}`
	claudeAnswer = `{"id":"msg_2","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[
 {"type":"thinking","thinking":"It says notes.","signature":"sig-2"},
 {"type":"text","text":"a.md holds notes."}],
"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":150,"output_tokens":10,"cache_read_input_tokens":1200}}`
)

// claudeSSE renders a recorded non-streaming message as the event stream
// the API sends for it.
func claudeSSE(t *testing.T, message string) string {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(message), &m))
	content := m["content"].([]any)
	start := map[string]any{}
	for k, v := range m {
		start[k] = v
	}
	start["content"], start["stop_reason"] = []any{}, nil
	ev := func(name string, v any) string {
		b, err := json.Marshal(v)
		require.NoError(t, err)
		return "event: " + name + "\ndata: " + string(b)
	}
	events := []string{ev("message_start", map[string]any{"type": "message_start", "message": start})}
	for i, c := range content {
		b := c.(map[string]any)
		head := map[string]any{"type": b["type"]}
		var deltas []map[string]any
		switch b["type"] {
		case "thinking":
			head["thinking"], head["signature"] = "", ""
			deltas = []map[string]any{{"type": "thinking_delta", "thinking": b["thinking"]}, {"type": "signature_delta", "signature": b["signature"]}}
		case "text":
			head["text"] = ""
			deltas = []map[string]any{{"type": "text_delta", "text": b["text"]}}
		case "tool_use":
			head["id"], head["name"], head["input"] = b["id"], b["name"], map[string]any{}
			in, _ := json.Marshal(b["input"])
			deltas = []map[string]any{{"type": "input_json_delta", "partial_json": string(in)}}
		}
		events = append(events, ev("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": head}))
		for _, d := range deltas {
			events = append(events, ev("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": d}))
		}
		events = append(events, ev("content_block_stop", map[string]any{"type": "content_block_stop", "index": i}))
	}
	events = append(events, ev("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": m["stop_reason"], "stop_sequence": nil}, "usage": m["usage"]}),
		ev("message_stop", map[string]any{"type": "message_stop"}))
	return providertest.SSE(events...)
}

func runRecorded(t *testing.T, srv *providertest.RecordedServer, s *spec.Spec, keyEnv string, opts ...Option) (*Result, error) {
	t.Helper()
	if s.ModelSettings.BaseURL == "" {
		s.ModelSettings.BaseURL = srv.URL
	}
	all := []Option{WithWorkspace(t.TempDir()), WithProviderOptions(providers.Options{Getenv: func(k string) string {
		if k == keyEnv {
			return "k"
		}
		return ""
	}})}
	return Run(context.Background(), s, append(all, opts...)...)
}

// Extended thinking with tools: the thinking block that preceded a tool
// call goes back, signature and all, with the tool result; a failed tool
// result is marked is_error; cache tokens are counted; streaming gives the
// same result as not.
func TestRunAnthropicThinkingThroughToolRounds(t *testing.T) {
	t.Parallel()
	var results []*Result
	for _, streaming := range []bool{false, true} {
		first, second := claudeThinkingToolTurn, claudeAnswer
		if streaming {
			first, second = claudeSSE(t, first), claudeSSE(t, second)
		}
		srv := providertest.NewRecordedServer(t, providertest.Recorded{Body: first}, providertest.Recorded{Body: second})
		failing := funcTool{name: "read_file", fn: func(context.Context, json.RawMessage) (string, error) {
			return "", capabilities.Retry("no such file: a.md")
		}}
		var opts []Option
		var streamed []string
		if streaming {
			opts = append(opts, WithStreaming(func(_ context.Context, text string) error { streamed = append(streamed, text); return nil }))
		}
		s := newSpec(func(s *spec.Spec) {
			s.Model = "anthropic:claude-sonnet-4-5"
			s.ModelSettings.Thinking = &spec.Thinking{Enabled: true, Effort: "medium"}
		})
		res, err := runRecorded(t, srv, s, "ANTHROPIC_API_KEY", append(opts, WithCapabilities(toolCaps{failing}), WithInput("What is in a.md?"))...)
		require.NoError(t, err)
		assert.Equal(t, "a.md holds notes.", res.Output)
		assert.Equal(t, 500, res.Usage.CacheWriteTokens)
		assert.Equal(t, 700+1200, res.Usage.CacheReadTokens)
		assert.Equal(t, 250+500+700+1200, res.Usage.InputTokens, "the cache's tokens are input tokens")
		if streaming {
			assert.Equal(t, []string{"Reading.", "a.md holds notes."}, streamed, "text only, never thinking")
		}

		var second2 struct {
			Thinking map[string]any `json:"thinking"`
			Messages []struct {
				Role    string           `json:"role"`
				Content []map[string]any `json:"content"`
			} `json:"messages"`
		}
		reqs := srv.Requests()
		require.Len(t, reqs, 2)
		require.NoError(t, json.Unmarshal(reqs[1].Body, &second2))
		assert.Equal(t, map[string]any{"type": "enabled", "budget_tokens": 10000.0}, second2.Thinking)
		require.Len(t, second2.Messages, 3)
		assistant := second2.Messages[1].Content
		require.Len(t, assistant, 3)
		assert.Equal(t, map[string]any{"type": "thinking", "thinking": "I should read a.md.", "signature": "sig-1"}, assistant[0])
		result := second2.Messages[2].Content[0]
		assert.Equal(t, "tool_result", result["type"])
		assert.Equal(t, true, result["is_error"])
		results = append(results, res)
	}
	a, b := results[0], results[1]
	a.Usage.Elapsed, b.Usage.Elapsed = 0, 0
	assert.Equal(t, a.Output, b.Output)
	assert.Equal(t, a.Usage, b.Usage)
	assert.Equal(t, a.Transcript, b.Transcript, "both paths keep the same history")
}

func TestRunRefusalAndTruncation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, model, key, body string
		settings               spec.ModelSettings
		want                   error
		msg                    string
	}{
		{name: "anthropic refusal", model: "anthropic:claude-sonnet-4-5", key: "ANTHROPIC_API_KEY",
			body: `{"id":"m","type":"message","role":"assistant","model":"c","content":[],"stop_reason":"refusal","stop_sequence":null,"stop_details":{"type":"refusal","category":"cyber","explanation":"This asks for malware."},"usage":{"input_tokens":1,"output_tokens":0}}`,
			want: ErrRefused, msg: "the model refused: This asks for malware."},
		{name: "openai refusal", model: "openai:gpt-5", key: "OPENAI_API_KEY",
			body: `{"id":"c","object":"chat.completion","created":1,"model":"gpt-5","choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":"I can't help with that."},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":5,"total_tokens":10}}`,
			want: ErrRefused, msg: "the model refused: I can't help with that."},
		{name: "anthropic max_tokens", model: "anthropic:claude-sonnet-4-5", key: "ANTHROPIC_API_KEY", settings: spec.ModelSettings{MaxTokens: 50},
			body: `{"id":"m","type":"message","role":"assistant","model":"c","content":[{"type":"text","text":"The answer is"}],"stop_reason":"max_tokens","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":50}}`,
			want: ErrTruncated, msg: "the response was cut at model_settings.max_tokens (50 tokens) in the middle of an answer; raise model_settings.max_tokens"},
		{name: "anthropic context window", model: "anthropic:claude-sonnet-4-5", key: "ANTHROPIC_API_KEY",
			body: `{"id":"m","type":"message","role":"assistant","model":"c","content":[{"type":"text","text":"The answer is"}],"stop_reason":"model_context_window_exceeded","stop_sequence":null,"usage":{"input_tokens":199990,"output_tokens":10}}`,
			want: ErrContextFull, msg: "the response was cut: the conversation filled the model's context window, in the middle of an answer; " +
				"fewer or smaller tool results, or a model with a larger window, would leave it room"},
		{name: "openai length in a tool call", model: "openai:gpt-5", key: "OPENAI_API_KEY",
			body: `{"id":"c","object":"chat.completion","created":1,"model":"gpt-5","choices":[{"index":0,"message":{"role":"assistant","content":"","tool_calls":[{"id":"call_1","type":"function","function":{"name":"read_file","arguments":"{\"pa"}}]},"finish_reason":"length"}],"usage":{"prompt_tokens":5,"completion_tokens":5,"total_tokens":10}}`,
			want: ErrTruncated, msg: "the response was cut at model_settings.max_tokens (its default) in the middle of a tool call; raise model_settings.max_tokens"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := providertest.NewRecordedServer(t, providertest.Recorded{Body: tt.body})
			s := newSpec(func(s *spec.Spec) { s.Model, s.ModelSettings = tt.model, tt.settings })
			if tt.model == "openai:gpt-5" {
				s.ModelSettings.BaseURL = srv.URL + "/v1"
			}
			read := &echoTool{name: "read_file"}
			var rec recorder
			_, err := runRecorded(t, srv, s, tt.key, WithCapabilities(toolCaps{read}), WithListener(rec.listen))
			require.ErrorIs(t, err, tt.want)
			assert.Equal(t, tt.msg, err.Error())
			assert.Empty(t, read.Calls(), "nothing of a cut or refused response is run")
			if tt.want == ErrRefused {
				responses := eventsOf[ModelResponse](&rec)
				require.Len(t, responses, 1)
				assert.NotEmpty(t, responses[0].Refusal, "the refusal is in the event")
			}
		})
	}
}

// A provider's tool_use_failed 400 goes back to the model as a correctable
// error, counted against retries.
func TestRunToolUseFailedIsCorrectable(t *testing.T) {
	t.Parallel()
	failed := providertest.Recorded{Status: 400, Body: `{"error":{"message":"Failed to call a function. Please adjust your prompt.","type":"invalid_request_error","code":"tool_use_failed","failed_generation":"<function=read_file>{path: a.md}</function>"}}`}
	call := providertest.Recorded{Body: `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"a.md\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":5,"completion_tokens":5,"total_tokens":10}}`}
	done := providertest.Recorded{Body: `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"notes"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":5,"total_tokens":10}}`}

	t.Run("corrected", func(t *testing.T) {
		t.Parallel()
		srv := providertest.NewRecordedServer(t, failed, call, done)
		read := &echoTool{name: "read_file"}
		var rec recorder
		s := newSpec(func(s *spec.Spec) {
			s.Model, s.ModelSettings.BaseURL = "groq:llama-3.3-70b-versatile", srv.URL+"/openai/v1"
		})
		res, err := runRecorded(t, srv, s, "GROQ_API_KEY", WithCapabilities(toolCaps{read}), WithListener(rec.listen))
		require.NoError(t, err)
		assert.Equal(t, "notes", res.Output)
		assert.Equal(t, []string{`{"path":"a.md"}`}, read.Calls())
		retries := eventsOf[Retry](&rec)
		require.Len(t, retries, 1)
		assert.Equal(t, RetryTool, retries[0].Type)
		assert.Contains(t, retries[0].Message, "{path: a.md}")
		var body struct {
			Messages []map[string]any `json:"messages"`
		}
		require.NoError(t, json.Unmarshal(srv.Requests()[1].Body, &body))
		last := body.Messages[len(body.Messages)-1]
		assert.Equal(t, "user", last["role"])
		assert.Contains(t, last["content"], "could not be parsed")
	})
	t.Run("counted against retries", func(t *testing.T) {
		t.Parallel()
		srv := providertest.NewRecordedServer(t, failed, failed)
		s := newSpec(func(s *spec.Spec) {
			s.Model, s.ModelSettings.BaseURL, s.Retries = "groq:llama-3.3-70b-versatile", srv.URL+"/openai/v1", 1
		})
		_, err := runRecorded(t, srv, s, "GROQ_API_KEY", WithCapabilities(toolCaps{&echoTool{name: "read_file"}}))
		var exceeded *RetriesExceededError
		require.ErrorAs(t, err, &exceeded)
		assert.Equal(t, 1, exceeded.Retries)
	})
	t.Run("at the round limit", func(t *testing.T) {
		t.Parallel()
		// The model was told once that its rounds are used up: the call it
		// could not write then is answered without telling it again, and
		// without asking it to call the tool again.
		srv := providertest.NewRecordedServer(t, call, failed, done)
		var rec recorder
		s := newSpec(func(s *spec.Spec) {
			s.Model, s.ModelSettings.BaseURL, s.MaxToolRounds = "groq:llama-3.3-70b-versatile", srv.URL+"/openai/v1", 1
		})
		res, err := runRecorded(t, srv, s, "GROQ_API_KEY", WithCapabilities(toolCaps{&echoTool{name: "read_file"}}), WithListener(rec.listen))
		require.NoError(t, err)
		assert.Equal(t, "notes", res.Output)
		assert.Equal(t, []LimitReached{{Limit: "max_tool_rounds", Value: 1}}, eventsOf[LimitReached](&rec))
		var told []string
		for _, m := range res.Transcript {
			if m.Role != llms.ChatMessageTypeHuman {
				continue
			}
			for _, p := range m.Parts {
				if text, ok := p.(llms.TextContent); ok && strings.Contains(text.Text, "tool rounds") {
					told = append(told, text.Text)
				}
			}
		}
		require.Len(t, told, 2, "the limit, then the failed call")
		assert.Contains(t, told[1], "could not be parsed")
		assert.NotContains(t, told[1], "Call the tool again")
	})
}

// webSearch asks for a native web search, with or without a local fallback.
type webSearch struct {
	fallback bool
	local    capabilities.Tool
}

func (w webSearch) Tools(context.Context) ([]capabilities.Tool, error) {
	return []capabilities.Tool{w.local}, nil
}

func (w webSearch) NativeTools() []capabilities.NativeTool {
	return []capabilities.NativeTool{{Kind: "web_search", LocalFallback: w.fallback}}
}

func TestRunNativeTools(t *testing.T) {
	t.Parallel()
	anthropicDone := providertest.Recorded{Body: `{"id":"m","type":"message","role":"assistant","model":"c","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}`}
	chatDone := providertest.Recorded{Body: `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`}
	toolNames := func(t *testing.T, req providertest.Request) []string {
		var body struct {
			Tools []map[string]any `json:"tools"`
		}
		require.NoError(t, json.Unmarshal(req.Body, &body))
		var names []string
		for _, tool := range body.Tools {
			name, _ := tool["name"].(string)
			if fn, ok := tool["function"].(map[string]any); ok {
				name = fn["name"].(string)
			}
			names = append(names, name)
		}
		return names
	}
	local := &echoTool{name: "duckduckgo_search"}

	t.Run("native where the provider has it", func(t *testing.T) {
		t.Parallel()
		srv := providertest.NewRecordedServer(t, anthropicDone)
		s := newSpec(func(s *spec.Spec) { s.Model = "anthropic:claude-sonnet-4-5" })
		_, err := runRecorded(t, srv, s, "ANTHROPIC_API_KEY", WithCapabilities(webSearch{fallback: true, local: local}))
		require.NoError(t, err)
		assert.Equal(t, []string{"web_search"}, toolNames(t, srv.Requests()[0]), "the local fallback is not offered")
	})
	t.Run("the local fallback elsewhere", func(t *testing.T) {
		t.Parallel()
		srv := providertest.NewRecordedServer(t, chatDone)
		s := newSpec(func(s *spec.Spec) { s.Model, s.ModelSettings.BaseURL = "openai:gpt-5", srv.URL+"/v1" })
		_, err := runRecorded(t, srv, s, "OPENAI_API_KEY", WithCapabilities(webSearch{fallback: true, local: local}))
		require.NoError(t, err)
		assert.Equal(t, []string{"duckduckgo_search"}, toolNames(t, srv.Requests()[0]))
	})
	t.Run("refused without a fallback", func(t *testing.T) {
		t.Parallel()
		srv := providertest.NewRecordedServer(t)
		s := newSpec(func(s *spec.Spec) { s.Model, s.ModelSettings.BaseURL = "openai:gpt-5", srv.URL+"/v1" })
		_, err := runRecorded(t, srv, s, "OPENAI_API_KEY", WithCapabilities(webSearch{local: local}))
		require.Error(t, err)
		assert.False(t, errors.Is(err, ErrRefused))
		assert.Contains(t, err.Error(), "the model openai:gpt-5 has no native web_search tool and the capability asking for it has no local fallback; the providers that have it: anthropic, ")
		assert.Empty(t, srv.Requests(), "refused before any request")
	})
}

// After the round limit, a call the model makes anyway is dropped from the
// history with the answer taken from its text; its thinking stays.
func TestRunRoundLimitDropsUnansweredCallsFromTheTurn(t *testing.T) {
	t.Parallel()
	srv := providertest.NewRecordedServer(t, providertest.Recorded{Body: claudeThinkingToolTurn}, providertest.Recorded{Body: claudeThinkingToolTurn})
	s := newSpec(func(s *spec.Spec) { s.Model, s.MaxToolRounds = "anthropic:claude-sonnet-4-5", 1 })
	read := &echoTool{name: "read_file"}
	res, err := runRecorded(t, srv, s, "ANTHROPIC_API_KEY", WithCapabilities(toolCaps{read}))
	require.NoError(t, err)
	assert.Equal(t, "Reading.", res.Output)
	assert.Len(t, read.Calls(), 1, "the call after the limit is not run")
	last := res.Transcript[len(res.Transcript)-1]
	require.Len(t, last.Parts, 2)
	_, isBlock := providers.IsBlock(last.Parts[0])
	assert.True(t, isBlock, "the thinking block stays")
	assert.Equal(t, llms.TextContent{Text: "Reading."}, last.Parts[1])
	assert.Equal(t, map[string]any{"type": "none"}, srv.Requests()[1].JSON()["tool_choice"])
}

// A turn Anthropic paused while running server tools goes back unchanged for
// the model to continue; it is not the answer.
func TestRunAnthropicPauseTurnIsContinued(t *testing.T) {
	t.Parallel()
	paused := `{"id":"m1","type":"message","role":"assistant","model":"c","content":[
 {"type":"text","text":"Searching."},
 {"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"agentspec"}},
 {"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[{"type":"web_search_result","url":"https://example.com","title":"E","encrypted_content":"Eq1","page_age":null}]}],
"stop_reason":"pause_turn","stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":5}}`
	done := `{"id":"m2","type":"message","role":"assistant","model":"c","content":[{"type":"text","text":"Found it."}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":20,"output_tokens":3}}`
	srv := providertest.NewRecordedServer(t, providertest.Recorded{Body: paused}, providertest.Recorded{Body: done})
	s := newSpec(func(s *spec.Spec) { s.Model = "anthropic:claude-sonnet-4-5" })
	res, err := runRecorded(t, srv, s, "ANTHROPIC_API_KEY", WithCapabilities(webSearch{local: &echoTool{name: "unused"}}))
	require.NoError(t, err)
	assert.Equal(t, "Found it.", res.Output)
	var body struct {
		Messages []struct {
			Role    string           `json:"role"`
			Content []map[string]any `json:"content"`
		} `json:"messages"`
	}
	require.NoError(t, json.Unmarshal(srv.Requests()[1].Body, &body))
	last := body.Messages[len(body.Messages)-1]
	assert.Equal(t, "assistant", last.Role, "the paused turn is continued, not answered")
	require.Len(t, last.Content, 3)
	assert.Equal(t, "web_search_tool_result", last.Content[2]["type"])
}
