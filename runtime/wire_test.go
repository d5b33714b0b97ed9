package runtime

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

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
