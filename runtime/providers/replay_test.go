package providers

import (
	"context"
	"flag"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/agentspec/agentspec/runtime/providers/providertest"
	"github.com/agentspec/agentspec/spec"
)

var update = flag.Bool("update", false, "rewrite the golden recordings under testdata/")

// script is a two-round tool conversation for one dialect.
type script struct {
	ref    string
	key    string // the key variable and its value
	stream bool
	golden string // testdata file holding its recording
	start  func(testing.TB, ...providertest.Reply) *providertest.Server
	base   func(*providertest.Server) string
	// replayBase is a base URL of the same shape that no server answers.
	replayBase string
}

var scripts = []script{
	{ref: "openai:gpt-4o", key: "OPENAI_API_KEY", stream: true, golden: "testdata/openai-stream.replay.json",
		start: providertest.NewOpenAIServer, base: (*providertest.Server).BaseURL, replayBase: "http://replay.invalid/v1"},
	{ref: "anthropic:claude-sonnet-4-5", key: "ANTHROPIC_API_KEY", golden: "testdata/anthropic.replay.json",
		start: providertest.NewAnthropicServer, base: func(s *providertest.Server) string { return s.URL },
		replayBase: "http://replay.invalid"},
}

const secret = "sk-secret-0123456789"

// recordedHost stands for the fake server in the golden recordings.
const recordedHost = "http://recorded.invalid"

func (s script) model(t *testing.T, base string, transport http.RoundTripper) *Model {
	t.Helper()
	policy, _ := instant()
	m, err := New(s.ref, spec.ModelSettings{BaseURL: base, Temperature: ptr(0.0)}, Options{
		Getenv:    env(s.key, secret),
		Transport: transport,
		retry:     policy,
		OnRetry:   func(info RetryInfo) { t.Errorf("unexpected retry: %s", info) },
	})
	require.NoError(t, err)
	return m
}

// run plays the conversation, replaying the assistant turn in the dialect's
// shape, and returns both responses.
func (s script) run(t *testing.T, m *Model, tools []llms.Tool) []*llms.ContentResponse {
	t.Helper()
	opts := []llms.CallOption{llms.WithTools(tools)}
	if s.stream {
		opts = append(opts, llms.WithStreamingFunc(func(ctx context.Context, chunk []byte) error { return nil }))
	}
	history := []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeSystem, "You edit files."), human("What is in a.txt?")}
	first, err := m.GenerateContent(t.Context(), history, opts...)
	require.NoError(t, err)
	calls := toolCalls(first)
	require.Len(t, calls, 1)
	if m.Dialect == DialectAnthropic {
		history = append(history, llms.TextParts(llms.ChatMessageTypeAI, text(first)))
	}
	history = append(history,
		llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{calls[0]}},
		result(calls[0].ID, "read_file", "alpha"))
	second, err := m.GenerateContent(t.Context(), history, opts...)
	require.NoError(t, err)
	return []*llms.ContentResponse{first, second}
}

func (s script) server(t *testing.T) *providertest.Server {
	return s.start(t,
		providertest.Reply{Text: "Let me look.", ToolCalls: []providertest.ToolCall{{ID: "call_1", Name: "read_file", Arguments: `{"path":"a.txt"}`}},
			InputTokens: 30, OutputTokens: 12},
		providertest.Text("It says alpha."),
	)
}

func TestRecordThenReplay(t *testing.T) {
	t.Parallel()
	for _, s := range scripts {
		t.Run(s.ref, func(t *testing.T) {
			t.Parallel()
			srv := s.server(t)
			path := filepath.Join(t.TempDir(), "nested", "conversation.json")
			rec, err := NewRecorder(path, nil)
			require.NoError(t, err)
			recorded := s.run(t, s.model(t, s.base(srv), rec), []llms.Tool{readFileTool})
			require.NoError(t, rec.Close())
			if goruntime.GOOS != "windows" {
				// Prompts and what the model was shown: the owner's alone.
				st, err := os.Stat(path)
				require.NoError(t, err)
				assert.Equal(t, fs.FileMode(0o600), st.Mode().Perm())
			}

			file, err := os.ReadFile(path)
			require.NoError(t, err)
			// The fake server's port changes from run to run.
			file = []byte(strings.ReplaceAll(string(file), srv.URL, recordedHost))
			assert.NotContains(t, string(file), secret, "keys are never written")
			assert.NotContains(t, string(file), "Authorization")
			assert.NotContains(t, string(file), "x-api-key")
			if *update {
				require.NoError(t, os.WriteFile(s.golden, file, 0o644))
			}
			golden, err := os.ReadFile(s.golden)
			require.NoError(t, err)
			assert.Equal(t, string(golden), string(file), "run with -update to accept a changed recording")

			rp, err := NewReplayer(path)
			require.NoError(t, err)
			replayed := s.run(t, s.model(t, s.replayBase, rp), []llms.Tool{readFileTool})
			assert.Equal(t, recorded, replayed)
			assert.NoError(t, rp.Close(), "every exchange was used")
			assert.Len(t, srv.Requests(), 2, "the replay reached no server")
		})
	}
}

func TestReplayMismatchNamesThePath(t *testing.T) {
	t.Parallel()
	s := scripts[0]
	rp, err := NewReplayer(s.golden)
	require.NoError(t, err)
	m := s.model(t, s.replayBase, rp)

	changed := readFileTool
	changed.Function = &llms.FunctionDefinition{
		Name:        readFileTool.Function.Name,
		Description: readFileTool.Function.Description,
		Parameters: map[string]any{
			"type":       "object",
			"properties": map[string]any{"path": map[string]any{"type": "string", "description": "a path"}},
			"required":   []string{"path"},
		},
	}
	_, err = m.GenerateContent(t.Context(), []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeSystem, "You edit files."), human("What is in a.txt?")},
		llms.WithTools([]llms.Tool{changed}), llms.WithStreamingFunc(func(context.Context, []byte) error { return nil }))
	require.ErrorIs(t, err, ErrReplay)
	assert.Equal(t, `openai: replay: request 1 differs from the recording at $.tools[0].function.parameters.properties.path.description: `+
		`recorded "workspace-relative path", got "a path"`, err.Error())
}

func TestReplayEndpointMismatch(t *testing.T) {
	t.Parallel()
	rp, err := NewReplayer(scripts[0].golden)
	require.NoError(t, err)
	_, err = New(scripts[1].ref, spec.ModelSettings{}, Options{Getenv: env(scripts[1].key, secret), Transport: rp})
	require.ErrorIs(t, err, ErrReplay)
	assert.EqualError(t, err, "replay: testdata/openai-stream.replay.json records a conversation with openai, not anthropic")
}

// A recording keeps its endpoint: the replay needs neither the key nor the
// base URL, and an OpenAI-compatible server's max_tokens is sent again
// although nothing says the endpoint is not OpenAI's own.
func TestReplayNeedsNoKeyOrBaseURL(t *testing.T) {
	t.Parallel()
	for _, s := range scripts {
		t.Run(s.ref, func(t *testing.T) {
			t.Parallel()
			srv := s.server(t)
			path := filepath.Join(t.TempDir(), "conversation.json")
			rec, err := NewRecorder(path, nil)
			require.NoError(t, err)
			recorded := s.run(t, s.model(t, s.base(srv), rec), []llms.Tool{readFileTool})
			require.NoError(t, rec.Close())

			rp, err := NewReplayer(path)
			require.NoError(t, err)
			policy, _ := instant()
			m, err := New(s.ref, spec.ModelSettings{Temperature: ptr(0.0)}, Options{Getenv: env(), Transport: rp, retry: policy})
			require.NoError(t, err, "no key, no base URL")
			assert.Equal(t, recorded, s.run(t, m, []llms.Tool{readFileTool}))
			assert.NoError(t, rp.Close())
			assert.Len(t, srv.Requests(), 2, "the replay reached no server")
		})
	}
}

// Recordings made before the endpoint was stored replay with the endpoint
// the environment gives, as they always did.
func TestReplayVersion1(t *testing.T) {
	t.Parallel()
	s := scripts[0]
	const old = "testdata/v1/openai-stream.replay.json"
	rp, err := NewReplayer(old)
	require.NoError(t, err)
	s.run(t, s.model(t, s.replayBase, rp), []llms.Tool{readFileTool})
	assert.NoError(t, rp.Close())

	rp, err = NewReplayer(old)
	require.NoError(t, err)
	_, err = New(s.ref, spec.ModelSettings{}, Options{Getenv: env(), Transport: rp})
	assert.ErrorIs(t, err, ErrMissingKey, "a version 1 recording does not know its endpoint")
}

func TestRecorderHoldsOneEndpoint(t *testing.T) {
	t.Parallel()
	rec, err := NewRecorder(filepath.Join(t.TempDir(), "r.json"), nil)
	require.NoError(t, err)
	getenv := env("OPENAI_API_KEY", secret, "ANTHROPIC_API_KEY", secret)
	_, err = New("openai:a", spec.ModelSettings{BaseURL: "http://localhost:1/v1"}, Options{Getenv: getenv, Transport: rec})
	require.NoError(t, err)
	_, err = New("openai:b", spec.ModelSettings{BaseURL: "http://localhost:1/v1"}, Options{Getenv: getenv, Transport: rec})
	require.NoError(t, err, "another model at the same endpoint")
	_, err = New("anthropic:c", spec.ModelSettings{}, Options{Getenv: getenv, Transport: rec})
	require.ErrorContains(t, err, "already records openai at http://localhost:1/v1; record anthropic at https://api.anthropic.com/v1 in another file")
}

func TestReplayExhausted(t *testing.T) {
	t.Parallel()
	s := scripts[1]
	rp, err := NewReplayer(s.golden)
	require.NoError(t, err)
	m := s.model(t, s.replayBase, rp)
	s.run(t, m, []llms.Tool{readFileTool})

	_, err = m.GenerateContent(t.Context(), []llms.MessageContent{human("one more")})
	require.ErrorIs(t, err, ErrReplay)
	assert.Contains(t, err.Error(), "replay: request 3 (POST /v1/messages) has no recorded exchange: testdata/anthropic.replay.json holds 2")
}

func TestReplayReportsUnusedExchanges(t *testing.T) {
	t.Parallel()
	rp, err := NewReplayer(scripts[1].golden)
	require.NoError(t, err)
	assert.EqualError(t, rp.Close(), "replay: 2 of 2 recorded exchanges were never requested, from request 1 (POST /v1/messages)")
}

func TestNewReplayerRejects(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
		return p
	}
	tests := []struct{ name, path, want string }{
		{"missing file", filepath.Join(dir, "none.json"), "no such file"},
		{"unknown field", write("typo.json", `{"version":1,"exchange":[]}`), `unknown field "exchange"`},
		{"newer version", write("v3.json", `{"version":3,"exchanges":[]}`), "version 3, but this agentspec reads versions 1 to 2; record it again"},
		{"no version", write("v0.json", `{"exchanges":[]}`), "version 0, but this agentspec reads versions 1 to 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := NewReplayer(tt.path)
			require.ErrorIs(t, err, ErrReplay)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestFirstDiff(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, want, got string
		diff            string // "" when equal
	}{
		{"equal, key order aside", `{"a":1,"b":[true,null]}`, `{"b":[true,null],"a":1}`, ""},
		{"changed string", `{"m":[{"c":"x"}]}`, `{"m":[{"c":"y"}]}`, `at $.m[0].c: recorded "x", got "y"`},
		{"missing member", `{"a":1,"b":2}`, `{"b":2}`, `at $.a: recorded 1, got nothing`},
		{"extra member", `{"b":2}`, `{"a":0.5,"b":2}`, `at $.a: recorded nothing, got 0.5`},
		{"longer array", `{"m":[1]}`, `{"m":[1,{"x":"<b>"}]}`, `at $.m[1]: recorded nothing, got {"x":"<b>"}`},
		{"shorter array", `[1,2]`, `[1]`, `at $[1]: recorded 2, got nothing`},
		{"type change", `{"a":{"x":1}}`, `{"a":[1]}`, `at $.a: recorded {"x":1}, got [1]`},
		{"scalar against object", `{"a":"s"}`, `{"a":{"k":1}}`, `at $.a: recorded "s", got {"k":1}`},
		{"key that needs quoting", `{"content-type":"a"}`, `{"content-type":"b"}`, `at $["content-type"]: recorded "a", got "b"`},
		{"first difference in key order", `{"z":1,"a":1}`, `{"z":2,"a":2}`, `at $.a: recorded 1, got 2`},
		{"long values are cut", `{"s":""}`, `{"s":"` + strings.Repeat("x", 100) + `"}`,
			`at $.s: recorded "", got "` + strings.Repeat("x", 79) + `…`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			where, differs := diffPayload(payload{Body: []byte(tt.want)}, payload{Body: []byte(tt.got)})
			assert.Equal(t, tt.diff != "", differs)
			if differs {
				assert.Equal(t, tt.diff, where)
			}
		})
	}
}

func TestDiffText(t *testing.T) {
	t.Parallel()
	where, differs := diffPayload(newPayload([]byte("a\nb\n")), newPayload([]byte("a\nc\n")))
	assert.True(t, differs)
	assert.Equal(t, `at body line 2: recorded "b", got "c"`, where)

	_, differs = diffPayload(newPayload([]byte("a\n")), newPayload([]byte("a\n")))
	assert.False(t, differs)
}

func TestPayloadRoundTrip(t *testing.T) {
	t.Parallel()
	for _, body := range []string{"", "x", "data: {}\n\ndata: [DONE]\n\n", `{"a":1}`} {
		assert.Equal(t, body, string(newPayload([]byte(body)).bytes()))
	}
}

// A base URL that carries a user and password (a proxy's basic auth) is
// recorded without them: a recording holds no credential, and replays
// without one.
func TestRecordingDropsBaseURLUserinfo(t *testing.T) {
	t.Parallel()
	s := scripts[0]
	srv := s.server(t)
	withUser := strings.Replace(s.base(srv), "http://", "http://proxyuser:proxy-pass-0123@", 1)
	path := filepath.Join(t.TempDir(), "conversation.json")
	rec, err := NewRecorder(path, nil)
	require.NoError(t, err)
	recorded := s.run(t, s.model(t, withUser, rec), []llms.Tool{readFileTool})
	require.NoError(t, rec.Close())
	file, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.NotContains(t, string(file), "proxy-pass-0123")
	assert.NotContains(t, string(file), "proxyuser")
	assert.Contains(t, string(file), `"base_url": "`+s.base(srv)+`"`)

	rp, err := NewReplayer(path)
	require.NoError(t, err)
	policy, _ := instant()
	m, err := New(s.ref, spec.ModelSettings{Temperature: ptr(0.0)}, Options{Getenv: env(), Transport: rp, retry: policy})
	require.NoError(t, err)
	assert.Equal(t, recorded, s.run(t, m, []llms.Tool{readFileTool}))
	assert.NoError(t, rp.Close())
}
