package runtime

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/runtime/providers"
	"github.com/agentspec/agentspec/runtime/providers/providertest"
	"github.com/agentspec/agentspec/spec"
)

// These tests drive the loop through langchaingo's real clients against fake
// servers that reject conversations the real APIs would reject: they are what
// proves the replay shapes.

type wireCase struct {
	model  string
	server func(testing.TB, ...providertest.Reply) *providertest.Server
	env    func(s *providertest.Server) map[string]string
}

var wireProviders = map[string]wireCase{
	"openai": {
		model:  "openai:gpt-test",
		server: providertest.NewOpenAIServer,
		env: func(s *providertest.Server) map[string]string {
			return map[string]string{"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": s.BaseURL()}
		},
	},
	"anthropic": {
		model:  "anthropic:claude-test",
		server: providertest.NewAnthropicServer,
		env: func(s *providertest.Server) map[string]string {
			return map[string]string{"ANTHROPIC_API_KEY": "sk-ant-test", "ANTHROPIC_BASE_URL": s.URL}
		},
	},
}

func runWire(t *testing.T, wc wireCase, srv *providertest.Server, s *spec.Spec, opts ...Option) (*Result, error) {
	t.Helper()
	env := wc.env(srv)
	s.Model = wc.model
	all := []Option{
		WithWorkspace(t.TempDir()),
		WithProviderOptions(providers.Options{Getenv: func(k string) string { return env[k] }}),
	}
	return Run(context.Background(), s, append(all, opts...)...)
}

func readTool() *echoTool { return &echoTool{name: "read_file"} }

func TestWireToolRounds(t *testing.T) {
	t.Parallel()
	for name, wc := range wireProviders {
		for _, streaming := range []bool{false, true} {
			t.Run(name+map[bool]string{false: "", true: "/streaming"}[streaming], func(t *testing.T) {
				t.Parallel()
				srv := wc.server(t,
					providertest.Reply{
						Text: "Reading both.",
						ToolCalls: []providertest.ToolCall{
							{Name: "read_file", Arguments: `{"path":"a.md"}`},
							{Name: "read_file", Arguments: `{"path":"b.md"}`},
						},
						InputTokens: 30, OutputTokens: 8,
					},
					providertest.Calls(providertest.ToolCall{Name: "read_file"}),
					providertest.Reply{Text: "Both files are notes.", InputTokens: 50, OutputTokens: 6},
				)
				read := readTool()
				var mu sync.Mutex
				var streamed strings.Builder
				opts := []Option{WithCapabilities(toolCaps{read}), WithInput("Summarise a.md and b.md.")}
				if streaming {
					opts = append(opts, WithStreaming(func(_ context.Context, text string) error {
						mu.Lock()
						defer mu.Unlock()
						streamed.WriteString(text)
						return nil
					}))
				}
				res, err := runWire(t, wc, srv, newSpec(), opts...)
				require.NoError(t, err)

				assert.Equal(t, "Both files are notes.", res.Output)
				assert.Equal(t, []string{`{"path":"a.md"}`, `{"path":"b.md"}`, `{}`}, read.Calls())
				assert.Equal(t, 3, res.Usage.Requests)
				assert.Equal(t, 30+10+50, res.Usage.InputTokens, "usage is counted once per response")
				assert.Equal(t, 0, srv.Remaining())
				if streaming {
					assert.Equal(t, "Reading both.Both files are notes.", streamed.String(), "text only, no tool-call deltas")
				}

				reqs := srv.Requests()
				require.Len(t, reqs, 3)
				for _, r := range reqs {
					body := r.JSON()
					assert.Equal(t, 1.0, body["temperature"])
					assert.Equal(t, streaming, body["stream"] == true)
					assert.Nil(t, body["tool_choice"])
				}
			})
		}
	}
}

func TestWireRoundLimit(t *testing.T) {
	t.Parallel()
	for name, wc := range wireProviders {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			call := providertest.Calls(providertest.ToolCall{Name: "read_file", Arguments: `{"path":"a.md"}`})
			srv := wc.server(t, call, call, providertest.Text("Final answer."))
			read := readTool()
			res, err := runWire(t, wc, srv, newSpec(func(s *spec.Spec) { s.MaxToolRounds = 2 }), WithCapabilities(toolCaps{read}))
			require.NoError(t, err)
			assert.Equal(t, "Final answer.", res.Output)
			assert.Len(t, read.Calls(), 2)

			reqs := srv.Requests()
			require.Len(t, reqs, 3)
			final := reqs[2].JSON()
			assert.NotEmpty(t, final["tools"], "the tools stay declared")
			switch name {
			case "openai":
				assert.Equal(t, "none", final["tool_choice"])
			case "anthropic":
				assert.Equal(t, map[string]any{"type": "none"}, final["tool_choice"])
			}
			assert.Contains(t, string(reqs[2].Body), "You have used all 2 tool rounds")
		})
	}
}

func TestWireLostToolCalls(t *testing.T) {
	t.Parallel()
	wc := wireProviders["openai"]
	srv := wc.server(t, providertest.Reply{Text: "Let me check.", StopReason: "tool_calls"})
	_, err := runWire(t, wc, srv, newSpec(), WithCapabilities(toolCaps{readTool()}))
	require.ErrorIs(t, err, ErrLostToolCalls)
}

func TestWireOutputSchemaRetry(t *testing.T) {
	t.Parallel()
	for name, wc := range wireProviders {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := wc.server(t, providertest.Text(`{"name": "Ada"}`), providertest.Text("```json\n{\"name\":\"Ada\",\"age\":36}\n```"))
			res, err := runWire(t, wc, srv, newSpec(func(s *spec.Spec) { s.OutputSchema = json.RawMessage(personSchema) }))
			require.NoError(t, err)
			assert.Equal(t, `{"name":"Ada","age":36}`, string(res.JSON))
			assert.Contains(t, string(srv.Requests()[1].Body), "Try again. Your previous response was invalid")
		})
	}
}

func TestWireProviderError(t *testing.T) {
	t.Parallel()
	wc := wireProviders["anthropic"]
	srv := wc.server(t, providertest.Fail(400, "messages: prompt is too long"))
	res, err := runWire(t, wc, srv, newSpec())
	require.Error(t, err)
	assert.Contains(t, providers.Describe(err), "prompt is too long")
	assert.Equal(t, 1, res.Usage.Requests)
}

var _ capabilities.Tool = (*echoTool)(nil)

// Every model_settings key docs/providers.md lists, as it reaches each fake server,
// or is refused before any request where the API has no such field.
func TestWireModelSettings(t *testing.T) {
	t.Parallel()
	// body asserts on the request; a dialect without one must refuse the setting.
	type body func(t *testing.T, req providertest.Request, srv *providertest.Server)
	member := func(key string, want any) body {
		return func(t *testing.T, req providertest.Request, _ *providertest.Server) {
			t.Helper()
			got, ok := req.JSON()[key]
			require.True(t, ok, "%s is in the body: %s", key, req.Body)
			assert.Equal(t, want, got)
		}
	}
	cases := []struct {
		key       string
		settings  spec.ModelSettings
		openai    body
		anthropic body // nil: the setting is refused
	}{
		{key: "temperature", settings: spec.ModelSettings{Temperature: ptr(0.2)},
			openai: member("temperature", 0.2), anthropic: member("temperature", 0.2)},
		{key: "max_tokens", settings: spec.ModelSettings{MaxTokens: 123},
			openai: member("max_tokens", 123.0), anthropic: member("max_tokens", 123.0)},
		{key: "top_p", settings: spec.ModelSettings{TopP: ptr(0.5)},
			openai: member("top_p", 0.5), anthropic: member("top_p", 0.5)},
		{key: "seed", settings: spec.ModelSettings{Seed: ptr(0)}, openai: member("seed", 0.0)},
		{key: "presence_penalty", settings: spec.ModelSettings{PresencePenalty: ptr(0.0)}, openai: member("presence_penalty", 0.0)},
		{key: "frequency_penalty", settings: spec.ModelSettings{FrequencyPenalty: ptr(0.5)}, openai: member("frequency_penalty", 0.5)},
		{key: "stop_sequences", settings: spec.ModelSettings{StopSequences: []string{"END"}},
			openai: member("stop", []any{"END"}), anthropic: member("stop_sequences", []any{"END"})},
		{key: "parallel_tool_calls", settings: spec.ModelSettings{ParallelToolCalls: ptr(false)},
			openai:    member("parallel_tool_calls", false),
			anthropic: member("tool_choice", map[string]any{"type": "auto", "disable_parallel_tool_use": true})},
		{key: "base_url", settings: spec.ModelSettings{BaseURL: "{server}/proxy"},
			openai: func(t *testing.T, req providertest.Request, _ *providertest.Server) {
				assert.Equal(t, "/proxy/chat/completions", req.Path, "the spec's base URL wins over OPENAI_BASE_URL")
			},
			anthropic: func(t *testing.T, req providertest.Request, _ *providertest.Server) {
				assert.Equal(t, "/proxy/v1/messages", req.Path, "the spec's base URL wins over ANTHROPIC_BASE_URL")
			}},
		{key: "extra_headers", settings: spec.ModelSettings{ExtraHeaders: map[string]string{"X-Title": "agentspec"}},
			openai: func(t *testing.T, req providertest.Request, _ *providertest.Server) {
				assert.Equal(t, "agentspec", req.Header.Get("X-Title"))
			},
			anthropic: func(t *testing.T, req providertest.Request, _ *providertest.Server) {
				assert.Equal(t, "agentspec", req.Header.Get("X-Title"))
			}},
		{key: "extra_body", settings: spec.ModelSettings{Temperature: ptr(0.2), ExtraBody: map[string]any{
			"reasoning_effort": "low", "custom_field": json.Number("42"), "temperature": json.Number("0.7"),
		}},
			openai: func(t *testing.T, req providertest.Request, srv *providertest.Server) {
				body := req.JSON()
				assert.Equal(t, "low", body["reasoning_effort"])
				assert.Equal(t, 42.0, body["custom_field"])
				assert.Equal(t, 0.7, body["temperature"], "extra_body wins over a generated member")
			},
			anthropic: func(t *testing.T, req providertest.Request, srv *providertest.Server) {
				body := req.JSON()
				assert.Equal(t, "low", body["reasoning_effort"])
				assert.Equal(t, 42.0, body["custom_field"])
				assert.Equal(t, 0.7, body["temperature"], "extra_body wins over a generated member")
			}},
		{key: "logit_bias", settings: spec.ModelSettings{LogitBias: map[string]int{"50256": -100}},
			openai: member("logit_bias", map[string]any{"50256": -100.0})},
	}
	for _, tc := range cases {
		for name, wc := range wireProviders {
			check := map[string]body{"openai": tc.openai, "anthropic": tc.anthropic}[name]
			t.Run(tc.key+"/"+name, func(t *testing.T) {
				t.Parallel()
				srv := wc.server(t, providertest.Text("ok"))
				settings := tc.settings
				settings.BaseURL = strings.ReplaceAll(settings.BaseURL, "{server}", srv.URL)
				res, err := runWire(t, wc, srv, newSpec(func(s *spec.Spec) { s.ModelSettings = settings }),
					WithCapabilities(toolCaps{readTool()}))
				if check == nil {
					require.EqualError(t, err, name+" does not support model_settings."+tc.key)
					assert.Nil(t, res)
					assert.Empty(t, srv.Requests(), "refused before any request")
					return
				}
				require.NoError(t, err)
				reqs := srv.Requests()
				require.Len(t, reqs, 1)
				check(t, reqs[0], srv)
			})
		}
	}
}

// model_settings.timeout bounds each attempt: a server that never answers
// fails the run with the reason.
func TestWireTimeout(t *testing.T) {
	t.Parallel()
	for name, wc := range wireProviders {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			release := make(chan struct{})
			hang := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body) // so the server notices the client leaving
				select {
				case <-r.Context().Done():
				case <-release:
				}
			}))
			t.Cleanup(hang.Close)
			t.Cleanup(func() { close(release) }) // runs first
			env := map[string]string{"OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "k"}
			s := newSpec(func(s *spec.Spec) {
				s.Model = wc.model
				s.ModelSettings = spec.ModelSettings{Timeout: 50 * time.Millisecond, BaseURL: hang.URL + "/v1"}
			})
			_, err := Run(context.Background(), s, WithWorkspace(t.TempDir()),
				WithProviderOptions(providers.Options{Getenv: func(k string) string { return env[k] }}))
			require.Error(t, err)
			assert.Contains(t, providers.Describe(err), name+": no complete response within 50ms — raise model_settings.timeout")
		})
	}
}
