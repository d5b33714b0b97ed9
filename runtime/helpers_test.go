package runtime

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/runtime/script"
	"github.com/agentspec/agentspec/spec"
)

// funcTool is a tool whose behaviour is a function.
type funcTool struct {
	name string
	fn   func(ctx context.Context, args json.RawMessage) (string, error)
}

func (t funcTool) Name() string        { return t.name }
func (t funcTool) Description() string { return "test tool " + t.name }
func (t funcTool) Parameters() map[string]any {
	return map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}}
}
func (t funcTool) Call(ctx context.Context, args json.RawMessage) (string, error) {
	return t.fn(ctx, args)
}

// toolCaps is a capability offering fixed tools.
type toolCaps []capabilities.Tool

func (c toolCaps) Tools(context.Context) ([]capabilities.Tool, error) { return c, nil }

// echoTool returns "<name>(<args>)" and records its calls.
type echoTool struct {
	name  string
	mu    sync.Mutex
	calls []string
}

func (e *echoTool) Name() string               { return e.name }
func (e *echoTool) Description() string        { return "echoes its arguments" }
func (e *echoTool) Parameters() map[string]any { return nil }
func (e *echoTool) Call(_ context.Context, args json.RawMessage) (string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.calls = append(e.calls, string(args))
	return e.name + "(" + string(args) + ")", nil
}

func (e *echoTool) Calls() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.calls...)
}

func newSpec(edits ...func(*spec.Spec)) *spec.Spec {
	// As the loader fills it in.
	s := &spec.Spec{Version: 1, Instructions: []string{"You are a test agent."}, Retries: spec.DefaultRetries}
	for _, e := range edits {
		e(s)
	}
	return s
}

// runScript runs s with the scripted model m (in m's dialect) and tools.
func runScript(t *testing.T, s *spec.Spec, m *script.Model, tools []capabilities.Tool, opts ...Option) (*Result, error) {
	t.Helper()
	all := []Option{WithModel(m, Dialect(m.Dialect())), WithWorkspace(t.TempDir())}
	if len(tools) > 0 {
		all = append(all, WithCapabilities(toolCaps(tools)))
	}
	return Run(context.Background(), s, append(all, opts...)...)
}

// recorder collects events.
type recorder struct {
	mu     sync.Mutex
	events []capabilities.Event
}

func (r *recorder) listen(_ context.Context, ev capabilities.Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, ev)
	return nil
}

func (r *recorder) kinds() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, len(r.events))
	for i, ev := range r.events {
		out[i] = ev.Kind()
	}
	return out
}

func eventsOf[T capabilities.Event](r *recorder) []T {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []T
	for _, ev := range r.events {
		if e, ok := ev.(T); ok {
			out = append(out, e)
		}
	}
	return out
}

// roles returns the roles of messages, for comparing shapes.
func roles(msgs []llms.MessageContent) []llms.ChatMessageType {
	out := make([]llms.ChatMessageType, len(msgs))
	for i, m := range msgs {
		out[i] = m.Role
	}
	return out
}

// toolResults returns the contents of the tool results in msgs.
func toolResults(msgs []llms.MessageContent) []string {
	var out []string
	for _, m := range msgs {
		for _, p := range m.Parts {
			if r, ok := p.(llms.ToolCallResponse); ok {
				out = append(out, r.Content)
			}
		}
	}
	return out
}

// lastText returns the text of the last message in msgs.
func lastText(t *testing.T, msgs []llms.MessageContent) string {
	t.Helper()
	require.NotEmpty(t, msgs)
	last := msgs[len(msgs)-1]
	require.Len(t, last.Parts, 1)
	text, ok := last.Parts[0].(llms.TextContent)
	require.True(t, ok, "last message is %T", last.Parts[0])
	return text.Text
}
