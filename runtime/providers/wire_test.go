package providers

// Wire tests: the real langchaingo clients built by New, against fake servers
// speaking each protocol. They check what reaches the server and what the
// loop gets back.

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/agentspec/agentspec/runtime/providers/providertest"
	"github.com/agentspec/agentspec/spec"
)

// streamed collects what a StreamingFunc receives.
type streamed struct {
	mu     sync.Mutex
	chunks []string
}

func (s *streamed) option() llms.CallOption {
	return llms.WithStreamingFunc(func(_ context.Context, chunk []byte) error {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.chunks = append(s.chunks, string(chunk))
		return nil
	})
}

func (s *streamed) text() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.chunks, "")
}

func TestOpenAIToolRound(t *testing.T) {
	t.Parallel()
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "json", true: "sse"}[stream], func(t *testing.T) {
			t.Parallel()
			srv := providertest.NewOpenAIServer(t,
				providertest.Reply{
					ToolCalls: []providertest.ToolCall{
						{ID: "call_a", Name: "read_file", Arguments: `{"path":"a.txt"}`},
						{ID: "call_b", Name: "read_file", Arguments: `{"path":"b.txt"}`},
					},
					InputTokens: 12, OutputTokens: 7,
				},
				providertest.Text("done"),
			)
			model := newModel(t, "openai:gpt-4o", spec.ModelSettings{Temperature: ptr(0.3)},
				env("OPENAI_API_KEY", "sk-test", "OPENAI_BASE_URL", srv.BaseURL()))
			assert.Equal(t, DialectOpenAI, model.Dialect)

			var out streamed
			opts := []llms.CallOption{llms.WithTools([]llms.Tool{readFileTool, listTool})}
			if stream {
				opts = append(opts, out.option())
			}
			history := []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeSystem, "Be brief."), human("Read a.txt and b.txt.")}
			resp, err := model.GenerateContent(t.Context(), history, opts...)
			require.NoError(t, err)

			calls := toolCalls(resp)
			require.Len(t, calls, 2, "parallel calls in one choice")
			for i, want := range []string{"a.txt", "b.txt"} {
				assert.Equal(t, "function", calls[i].Type)
				assert.Equal(t, "read_file", calls[i].FunctionCall.Name)
				assert.JSONEq(t, `{"path":"`+want+`"}`, calls[i].FunctionCall.Arguments)
			}
			assert.Equal(t, []string{"call_a", "call_b"}, []string{calls[0].ID, calls[1].ID})
			assert.Equal(t, "tool_calls", resp.Choices[0].StopReason)
			assert.Equal(t, 12, resp.Choices[0].GenerationInfo[InfoInputTokens])
			assert.Equal(t, 7, resp.Choices[0].GenerationInfo[InfoOutputTokens])

			// The OpenAI replay shape: one assistant message with every call,
			// then one tool message per call. The server rejects anything else.
			history = append(history,
				llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{calls[0], calls[1]}},
				result("call_a", "read_file", "alpha"),
				result("call_b", "read_file", "beta"),
			)
			resp, err = model.GenerateContent(t.Context(), history, opts...)
			require.NoError(t, err)
			assert.Equal(t, "done", text(resp))
			if stream {
				assert.Contains(t, out.text(), "done", "text deltas reach the streaming func")
			}

			reqs := srv.Requests()
			require.Len(t, reqs, 2)
			assert.Equal(t, "/v1/chat/completions", reqs[0].Path)
			assert.Equal(t, "Bearer sk-test", reqs[0].Header.Get("Authorization"))
			first := reqs[0].JSON()
			assert.Equal(t, "gpt-4o", first["model"])
			assert.Equal(t, 0.3, first["temperature"])
			assert.Equal(t, stream, first["stream"] == true)
			assert.Len(t, first["tools"], 2)
			assert.Len(t, reqs[1].JSON()["messages"], 5)
		})
	}
}

func TestAnthropicToolRound(t *testing.T) {
	t.Parallel()
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "json", true: "sse"}[stream], func(t *testing.T) {
			t.Parallel()
			srv := providertest.NewAnthropicServer(t,
				providertest.Reply{
					Text: "Reading both.",
					ToolCalls: []providertest.ToolCall{
						{ID: "toolu_a", Name: "read_file", Arguments: `{"path":"a.txt"}`},
						{ID: "toolu_b", Name: "read_file", Arguments: `{"path":"b.txt"}`},
					},
					InputTokens: 20, OutputTokens: 9,
				},
				providertest.Text("done"),
			)
			model := newModel(t, "anthropic:claude-sonnet-4-5", spec.ModelSettings{Temperature: ptr(0.5)},
				env("ANTHROPIC_API_KEY", "sk-ant-test", "ANTHROPIC_BASE_URL", srv.URL))
			assert.Equal(t, DialectAnthropic, model.Dialect)

			var out streamed
			opts := []llms.CallOption{llms.WithTools([]llms.Tool{readFileTool, listTool})}
			if stream {
				opts = append(opts, out.option())
			}
			history := []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeSystem, "Be brief."), human("Read a.txt and b.txt.")}
			resp, err := model.GenerateContent(t.Context(), history, opts...)
			require.NoError(t, err)

			assert.Equal(t, "Reading both.", text(resp))
			calls := toolCalls(resp)
			require.Len(t, calls, 2)
			assert.Equal(t, "toolu_a", calls[0].ID)
			assert.Equal(t, "read_file", calls[1].FunctionCall.Name)
			assert.JSONEq(t, `{"path":"b.txt"}`, calls[1].FunctionCall.Arguments)
			assert.Equal(t, "tool_use", resp.Choices[0].StopReason)
			assert.Equal(t, 20, resp.Choices[0].GenerationInfo["InputTokens"])
			assert.Equal(t, 9, resp.Choices[0].GenerationInfo["OutputTokens"])
			if stream {
				assert.Equal(t, "Reading both.", out.text())
			}

			// The Anthropic replay shape langchaingo needs: one message per
			// block, one tool message per result. The Doer merges them.
			history = append(history,
				llms.TextParts(llms.ChatMessageTypeAI, "Reading both."),
				llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{calls[0]}},
				llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{calls[1]}},
				result("toolu_a", "read_file", "alpha"),
				result("toolu_b", "read_file", "beta"),
			)
			resp, err = model.GenerateContent(t.Context(), history, opts...)
			require.NoError(t, err)
			assert.Equal(t, "done", text(resp))

			reqs := srv.Requests()
			require.Len(t, reqs, 2)
			assert.Equal(t, "/v1/messages", reqs[0].Path)
			assert.Equal(t, "sk-ant-test", reqs[0].Header.Get("X-Api-Key"))
			first := reqs[0].JSON()
			assert.Equal(t, 0.5, first["temperature"])
			assert.Equal(t, []any{map[string]any{"type": "text", "text": "Be brief."}}, first["system"])
			assert.JSONEq(t, `{"type":"object","properties":{}}`, jsonOf(t, first["tools"].([]any)[1].(map[string]any)["input_schema"]),
				"a tool without parameters gets an empty object schema")
			assert.NotContains(t, first, "tool_choice")

			assert.Equal(t, []string{"user: text", "assistant: text tool_use tool_use", "user: tool_result tool_result"},
				turnShapes(reqs[1].JSON()), "consecutive same-role messages are merged")
		})
	}
}

// turnShapes summarises messages as "role: block types".
func turnShapes(body map[string]any) []string {
	var out []string
	for _, m := range body["messages"].([]any) {
		msg := m.(map[string]any)
		var types []string
		for _, b := range msg["content"].([]any) {
			types = append(types, b.(map[string]any)["type"].(string))
		}
		out = append(out, msg["role"].(string)+": "+strings.Join(types, " "))
	}
	return out
}

func TestAnthropicToolChoice(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		none     bool
		parallel *bool
		tools    []llms.Tool
		want     string // "" when the request must carry no tool_choice
	}{
		{name: "default", tools: []llms.Tool{readFileTool}},
		{name: "none keeps the tools and forbids them", none: true, tools: []llms.Tool{readFileTool}, want: `{"type":"none"}`},
		{name: "none without tools adds nothing", none: true},
		{name: "parallel tool use off", parallel: ptr(false), tools: []llms.Tool{readFileTool},
			want: `{"type":"auto","disable_parallel_tool_use":true}`},
		{name: "parallel tool use on is the default", parallel: ptr(true), tools: []llms.Tool{readFileTool}},
		{name: "none wins over parallel", none: true, parallel: ptr(false), tools: []llms.Tool{readFileTool}, want: `{"type":"none"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := providertest.NewAnthropicServer(t, providertest.Text("ok"))
			model := newModel(t, "anthropic:claude-sonnet-4-5", spec.ModelSettings{BaseURL: srv.URL, ParallelToolCalls: tt.parallel},
				env("ANTHROPIC_API_KEY", "sk-ant-test"))
			opts := []llms.CallOption{llms.WithTools(tt.tools)}
			if tt.none {
				opts = append(opts, llms.WithToolChoice("none"))
			}
			_, err := model.GenerateContent(t.Context(), []llms.MessageContent{human("hi")}, opts...)
			require.NoError(t, err)

			body := srv.Requests()[0].JSON()
			if tt.want == "" {
				assert.NotContains(t, body, "tool_choice")
				return
			}
			assert.JSONEq(t, tt.want, jsonOf(t, body["tool_choice"]))
			assert.Len(t, body["tools"], len(tt.tools))
		})
	}
}

func TestOpenAISettingsReachTheWire(t *testing.T) {
	t.Parallel()
	srv := providertest.NewOpenAIServer(t, providertest.Text("ok"))
	settings := spec.ModelSettings{
		Temperature:       ptr(0.2),
		TopP:              ptr(0.5),
		MaxTokens:         100,
		Seed:              ptr(7),
		StopSequences:     []string{"END"},
		ParallelToolCalls: ptr(false),
		BaseURL:           srv.BaseURL(),
		ExtraHeaders:      map[string]string{"X-Title": "agentspec"},
	}
	model := newModel(t, "openai:qwen3", settings, env())

	_, err := model.GenerateContent(t.Context(), []llms.MessageContent{human("hi")},
		llms.WithTools([]llms.Tool{readFileTool}), llms.WithTemperature(0.9), llms.WithToolChoice("none"))
	require.NoError(t, err)

	req := srv.Requests()[0]
	body := req.JSON()
	assert.Equal(t, 0.9, body["temperature"], "the caller's option overrides the spec's")
	assert.Equal(t, 0.5, body["top_p"])
	assert.Equal(t, 100.0, body["max_tokens"], "a server other than OpenAI gets max_tokens")
	assert.NotContains(t, body, "max_completion_tokens")
	assert.Equal(t, 7.0, body["seed"])
	assert.Equal(t, []any{"END"}, body["stop"])
	assert.Equal(t, false, body["parallel_tool_calls"])
	assert.Equal(t, "none", body["tool_choice"])
	assert.Equal(t, "agentspec", req.Header.Get("X-Title"))
	assert.Equal(t, "Bearer "+placeholderToken, req.Header.Get("Authorization"), "a local server needs no key")
}

func TestOpenAIOfficialHost(t *testing.T) {
	t.Parallel()
	srv := providertest.NewOpenAIServer(t, providertest.Text("ok"))
	policy, _ := instant()
	model, err := New("openai:gpt-4.1", spec.ModelSettings{MaxTokens: 64}, Options{
		Getenv:    env("OPENAI_API_KEY", "sk-test", "OPENAI_ORGANIZATION", "org-1"),
		Transport: redirect{srv.URL},
		retry:     policy,
	})
	require.NoError(t, err)
	_, err = model.GenerateContent(t.Context(), []llms.MessageContent{human("hi")})
	require.NoError(t, err)

	req := srv.Requests()[0]
	assert.Equal(t, "/v1/chat/completions", req.Path)
	assert.Equal(t, 64.0, req.JSON()["max_completion_tokens"])
	assert.NotContains(t, req.JSON(), "max_tokens")
	assert.Equal(t, "org-1", req.Header.Get("OpenAI-Organization"))
}

func TestCompatibleProviders(t *testing.T) {
	t.Parallel()
	tests := []struct {
		ref, keyEnv, key string
	}{
		{"groq:llama-3.3-70b-versatile", "GROQ_API_KEY", "gsk-test"},
		{"openrouter:anthropic/claude-sonnet-4.5", "OPENROUTER_API_KEY", "sk-or-test"},
		{"mistral:mistral-large-latest", "MISTRAL_API_KEY", "mistral-test"},
		{"deepseek:deepseek-chat", "DEEPSEEK_API_KEY", "ds-test"},
		{"together:meta-llama/Llama-3.3-70B-Instruct-Turbo", "TOGETHER_API_KEY", "tg-test"},
		{"ollama:qwen2.5-coder:7b", "", "ollama"},
	}
	for _, tt := range tests {
		t.Run(tt.ref, func(t *testing.T) {
			t.Parallel()
			srv := providertest.NewOpenAIServer(t, providertest.Calls(providertest.ToolCall{Name: "list_files"}))
			model := newModel(t, tt.ref, spec.ModelSettings{BaseURL: srv.BaseURL(), MaxTokens: 10},
				env(tt.keyEnv, tt.key, "OPENAI_ORGANIZATION", "org-1"))
			assert.Equal(t, DialectOpenAI, model.Dialect)
			assert.Equal(t, tt.ref, model.Provider+":"+model.Name)

			resp, err := model.GenerateContent(t.Context(), []llms.MessageContent{human("hi")}, llms.WithTools([]llms.Tool{listTool}))
			require.NoError(t, err)
			require.Len(t, toolCalls(resp), 1)

			req := srv.Requests()[0]
			assert.Equal(t, "Bearer "+tt.key, req.Header.Get("Authorization"))
			assert.Empty(t, req.Header.Get("OpenAI-Organization"), "OpenAI's organization is not sent elsewhere")
			assert.Equal(t, 10.0, req.JSON()["max_tokens"])
		})
	}
}

func TestOllamaHostReachesTheServer(t *testing.T) {
	t.Parallel()
	srv := providertest.NewOpenAIServer(t, providertest.Text("hello"))
	// OLLAMA_HOST without a scheme, as Ollama's own CLI accepts it.
	model := newModel(t, "ollama:llama3.2", spec.ModelSettings{}, env("OLLAMA_HOST", strings.TrimPrefix(srv.URL, "http://")))
	resp, err := model.GenerateContent(t.Context(), []llms.MessageContent{human("hi")})
	require.NoError(t, err)
	assert.Equal(t, "hello", text(resp))
	assert.Equal(t, "/v1/chat/completions", srv.Requests()[0].Path)
}
