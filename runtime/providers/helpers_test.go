package providers

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/agentspec/agentspec/spec"
)

// env is a Getenv over fixed pairs: env("K1", "v1", "K2", "v2").
func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

// sleeps stands in for the retry policy's sleep: it records each wait and
// returns at once, so retry tests neither sleep nor depend on the clock.
type sleeps struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.waits = append(s.waits, d)
	return ctx.Err()
}

func (s *sleeps) recorded() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.waits...)
}

// instant is a retry policy for tests; it returns the record of its waits.
func instant() (*retryPolicy, *sleeps) {
	s := &sleeps{}
	p := defaultRetry
	p.sleep = s.sleep
	return &p, s
}

// newModel builds ref with a policy that does not sleep.
func newModel(t *testing.T, ref string, settings spec.ModelSettings, getenv func(string) string) *Model {
	t.Helper()
	policy, _ := instant()
	m, err := New(ref, settings, Options{Getenv: getenv, retry: policy})
	require.NoError(t, err)
	return m
}

var readFileTool = llms.Tool{
	Type: "function",
	Function: &llms.FunctionDefinition{
		Name:        "read_file",
		Description: "Read a file of the workspace.",
		Parameters: map[string]any{
			"type":       "object",
			"properties": map[string]any{"path": map[string]any{"type": "string", "description": "workspace-relative path"}},
			"required":   []string{"path"},
		},
	},
}

// listTool has no parameters: langchaingo then sends no input_schema to
// Anthropic, which the API rejects.
var listTool = llms.Tool{
	Type:     "function",
	Function: &llms.FunctionDefinition{Name: "list_files", Description: "List the workspace."},
}

func human(text string) llms.MessageContent {
	return llms.TextParts(llms.ChatMessageTypeHuman, text)
}

func result(id, name, content string) llms.MessageContent {
	return llms.MessageContent{
		Role:  llms.ChatMessageTypeTool,
		Parts: []llms.ContentPart{llms.ToolCallResponse{ToolCallID: id, Name: name, Content: content}},
	}
}

// toolCalls collects the calls across every choice: Anthropic returns one
// choice per content block.
func toolCalls(resp *llms.ContentResponse) []llms.ToolCall {
	var calls []llms.ToolCall
	for _, c := range resp.Choices {
		calls = append(calls, c.ToolCalls...)
	}
	return calls
}

func text(resp *llms.ContentResponse) string {
	var s string
	for _, c := range resp.Choices {
		s += c.Content
	}
	return s
}

// jsonOf re-encodes a decoded value, for JSONEq against an expectation.
func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

func ptr[T any](v T) *T { return &v }

// redirect sends every request to target whatever its URL's host, so a model
// configured for a real API's host can be tested against a fake server.
type redirect struct{ target string }

func (r redirect) RoundTrip(req *http.Request) (*http.Response, error) {
	u, err := url.Parse(r.target)
	if err != nil {
		return nil, err
	}
	out := req.Clone(req.Context())
	out.URL.Scheme, out.URL.Host, out.Host = u.Scheme, u.Host, ""
	return http.DefaultTransport.RoundTrip(out)
}

// jsonValue marshals v, for bodies written by hand.
func jsonValue(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// firstBody builds ref against a server that records the body of the
// request it gets and refuses it, sends one request, and returns the body.
func firstBody(t *testing.T, ref string, settings spec.ModelSettings, getenv func(string) string) map[string]any {
	t.Helper()
	var body []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"error":{"type":"invalid_request_error","message":"seen"}}`)
	}))
	t.Cleanup(srv.Close)
	settings.BaseURL = srv.URL
	m := newModel(t, ref, settings, getenv)
	_, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("hi")})
	require.ErrorContains(t, err, "seen")
	var v map[string]any
	require.NoError(t, json.Unmarshal(body, &v))
	return v
}
