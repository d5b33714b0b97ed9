package providers

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/agentspec/agentspec/runtime/providers/providertest"
	"github.com/agentspec/agentspec/spec"
)

// vertexClaudeModel is Claude on Vertex AI at baseURL, authorized by the
// service-account key of tokens (a Vertex AI stand-in's token endpoint),
// for project proj-test in us-east5.
func vertexClaudeModel(t *testing.T, tokens *providertest.VertexServer, ref, baseURL string, settings spec.ModelSettings) *Model {
	t.Helper()
	settings.BaseURL = baseURL
	return newModel(t, ref, settings, env("GOOGLE_APPLICATION_CREDENTIALS", tokens.KeyFile(t, t.TempDir()),
		"GOOGLE_CLOUD_PROJECT", "proj-test", "GOOGLE_CLOUD_LOCATION", "us-east5", "GOOGLE_API_KEY", "ignored"))
}

// A tool round with Claude on Vertex AI, whole and streamed, against a
// stand-in that refuses what Vertex AI refuses (a body naming its model, one
// without anthropic_version vertex-2023-10-16, a request without the
// service account's OAuth token): the call and its failed result go back as
// on Anthropic's API, on the publisher model's rawPredict or
// streamRawPredict, with no key of Anthropic's.
func TestVertexClaudeToolRound(t *testing.T) {
	t.Parallel()
	for _, streaming := range []bool{false, true} {
		method := map[bool]string{false: "rawPredict", true: "streamRawPredict"}[streaming]
		t.Run(method, func(t *testing.T) {
			t.Parallel()
			srv := providertest.NewVertexClaudeServer(t, "proj-test", "us-east5",
				providertest.Calls(providertest.ToolCall{Name: "read_file", Arguments: `{"path":"a.txt"}`}),
				providertest.Text("alpha"))
			m := vertexClaudeModel(t, srv, "google-cloud:claude-sonnet-4-5@20250929", srv.URL, spec.ModelSettings{
				Provider: map[string]any{"anthropic_cache_instructions": true}})
			assert.Equal(t, DialectAnthropic, m.Dialect)
			assert.Equal(t, "google-cloud", m.Provider)
			var streamed []string
			opts := []llms.CallOption{llms.WithTools([]llms.Tool{readFileTool})}
			if streaming {
				opts = append(opts, llms.WithStreamingFunc(func(_ context.Context, b []byte) error {
					streamed = append(streamed, string(b))
					return nil
				}))
			}
			system := llms.TextParts(llms.ChatMessageTypeSystem, "Be brief.")
			resp, err := m.GenerateContent(t.Context(), []llms.MessageContent{system, human("read a.txt")}, opts...)
			require.NoError(t, err)
			calls := toolCalls(resp)
			require.Len(t, calls, 1)
			assert.Equal(t, "read_file", calls[0].FunctionCall.Name)
			assert.JSONEq(t, `{"path":"a.txt"}`, calls[0].FunctionCall.Arguments)
			assert.Equal(t, 10, resp.Choices[0].GenerationInfo[InfoInputTokens])

			failed := result(calls[0].ID, "read_file", "no such file")
			failed.Parts = append(failed.Parts, ToolError)
			history := []llms.MessageContent{system, human("read a.txt"), {Role: llms.ChatMessageTypeAI, Parts: turnOf(t, resp)}, failed}
			resp, err = m.GenerateContent(t.Context(), history, opts...)
			require.NoError(t, err)
			assert.Equal(t, "alpha", text(resp))
			if streaming {
				assert.Equal(t, []string{"al", "pha"}, streamed)
			}

			assert.Equal(t, 1, srv.Grants(), "one token serves both requests")
			reqs := srv.Requests()
			require.Len(t, reqs, 2)
			for _, r := range reqs {
				assert.Equal(t, "/v1/projects/proj-test/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:"+method, r.Path)
				assert.Equal(t, "Bearer ya29.providertest", r.Header.Get("Authorization"))
				assert.Empty(t, r.Header.Get("X-Api-Key"))
				assert.Empty(t, r.Header.Get("Anthropic-Version"), "Vertex AI takes the version in the body")
				body := r.JSON()
				assert.NotContains(t, body, "model")
				assert.Equal(t, "vertex-2023-10-16", body["anthropic_version"])
				assert.Equal(t, streaming, body["stream"] == true)
			}
			first := reqs[0].JSON()
			assert.JSONEq(t, `[{"type":"text","text":"Be brief.","cache_control":{"type":"ephemeral"}}]`, jsonOf(t, first["system"]))
			assert.Equal(t, "read_file", first["tools"].([]any)[0].(map[string]any)["name"])
			messages := reqs[1].JSON()["messages"].([]any)
			require.Len(t, messages, 3)
			reply := messages[2].(map[string]any)["content"].([]any)[0].(map[string]any)
			assert.Equal(t, "tool_result", reply["type"])
			assert.Equal(t, true, reply["is_error"], "a failed tool result says so")
		})
	}
}

// Thinking blocks with their signatures, and the cache's tokens in the
// usage, come from Claude on Vertex AI as from Anthropic's API, whole and
// streamed, and the thinking goes back as it came; a refusal and a
// truncated answer are read as there.
func TestVertexClaudeThinkingUsageAndStops(t *testing.T) {
	t.Parallel()
	tokens := providertest.NewVertexServer(t, "proj-test", "us-east5")
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "json", true: "sse"}[stream], func(t *testing.T) {
			t.Parallel()
			first, second := thinkingTurnJSON, anthropicText("It says alpha.", "end_turn")
			if stream {
				first, second = thinkingTurnSSE, anthropicTextSSE("It says alpha.", "end_turn")
			}
			refusal := `{"id":"msg_r","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],
"stop_reason":"refusal","stop_sequence":null,"stop_details":{"type":"refusal","category":"cyber","explanation":"This request asks for malware."},
"usage":{"input_tokens":10,"output_tokens":0}}`
			srv := providertest.NewRecordedServer(t, providertest.Recorded{Body: first}, providertest.Recorded{Body: second},
				providertest.Recorded{Body: refusal}, providertest.Recorded{Body: anthropicText("The answer is", "max_tokens")})
			m := vertexClaudeModel(t, tokens, "google-vertex:claude-sonnet-4-5@20250929", srv.URL,
				spec.ModelSettings{Thinking: &spec.Thinking{Enabled: true, Effort: "low"}})
			opts := []llms.CallOption{llms.WithTools([]llms.Tool{readFileTool})}
			if stream {
				opts = append(opts, llms.WithStreamingFunc(func(context.Context, []byte) error { return nil }))
			}
			history := []llms.MessageContent{human("What is in a.txt?")}
			resp, err := m.GenerateContent(t.Context(), history, opts...)
			require.NoError(t, err)
			c := resp.Choices[0]
			assert.Equal(t, "The user wants a.txt. I should read it.", c.ReasoningContent)
			assert.Equal(t, 1000, c.GenerationInfo[InfoCacheWriteTokens])
			assert.Equal(t, 2000, c.GenerationInfo[InfoCacheReadTokens])
			assert.Equal(t, 120+1000+2000, c.GenerationInfo[InfoInputTokens], "the cache's tokens are input tokens")
			assert.Equal(t, 80, c.GenerationInfo[InfoOutputTokens])
			req := srv.Requests()[0].JSON()
			assert.Equal(t, map[string]any{"type": "enabled", "budget_tokens": 2048.0}, req["thinking"])

			history = append(history, llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: turnOf(t, resp)}, result("toolu_01", "read_file", "alpha"))
			resp, err = m.GenerateContent(t.Context(), history, opts...)
			require.NoError(t, err)
			assert.Equal(t, "It says alpha.", text(resp))
			assistant := blocksOf(t, srv.Requests()[1], 1)
			require.Len(t, assistant, 4)
			assert.Equal(t, "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds", assistant[0]["signature"], "thinking goes back with its signature")

			resp, err = m.GenerateContent(t.Context(), []llms.MessageContent{human("hi")})
			require.NoError(t, err)
			assert.Equal(t, StopRefusal, resp.Choices[0].StopReason)
			assert.Equal(t, "This request asks for malware.", resp.Choices[0].GenerationInfo[InfoRefusal])
			resp, err = m.GenerateContent(t.Context(), []llms.MessageContent{human("hi")})
			require.NoError(t, err)
			assert.Equal(t, StopMaxTokens, resp.Choices[0].StopReason)

			for i, r := range srv.Requests() {
				method := "rawPredict"
				if stream && i < 2 {
					method = "streamRawPredict"
				}
				assert.Equal(t, "/v1/projects/proj-test/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:"+method, r.Path)
				assert.Equal(t, "Bearer ya29.providertest", r.Header.Get("Authorization"))
			}
		})
	}
}

// Vertex AI's own refusals (Google's error shape) and the model's
// (Anthropic's) fail as on the other providers, a refused token naming
// Application Default Credentials; an overloaded model is retried, as a
// stream's overloaded error event is.
func TestVertexClaudeErrors(t *testing.T) {
	t.Parallel()
	const ref = "google-cloud:claude-haiku-4-5@20251001"
	t.Run("a refused token", func(t *testing.T) {
		t.Parallel()
		srv := providertest.NewVertexClaudeServer(t, "proj-test", "us-east5",
			providertest.Fail(401, "Request had invalid authentication credentials. Expected OAuth 2 access token."))
		m := vertexClaudeModel(t, srv, ref, srv.URL, spec.ModelSettings{})
		_, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("hi")})
		var perr *Error
		require.True(t, errors.As(err, &perr), "%v", err)
		assert.Equal(t, 401, perr.StatusCode)
		assert.Equal(t, "UNAUTHENTICATED", perr.Type)
		assert.Equal(t, "google-cloud: authentication failed (401): Request had invalid authentication credentials. Expected OAuth 2 access token. — "+
			"check the Application Default Credentials (GOOGLE_APPLICATION_CREDENTIALS, gcloud's)", Describe(err))
	})
	t.Run("a request the model refuses", func(t *testing.T) {
		t.Parallel()
		srv := providertest.NewVertexClaudeServer(t, "proj-test", "us-east5", providertest.Fail(400, "prompt is too long"))
		m := vertexClaudeModel(t, srv, ref, srv.URL, spec.ModelSettings{})
		_, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("hi")})
		var perr *Error
		require.True(t, errors.As(err, &perr), "%v", err)
		assert.Equal(t, "invalid_request_error", perr.Type)
		assert.Equal(t, "google-cloud: HTTP 400: prompt is too long", perr.Error())
	})
	t.Run("an overloaded model", func(t *testing.T) {
		t.Parallel()
		srv := providertest.NewVertexClaudeServer(t, "proj-test", "us-east5", providertest.Fail(529, "Overloaded"), providertest.Text("alpha"))
		m := vertexClaudeModel(t, srv, ref, srv.URL, spec.ModelSettings{})
		resp, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("hi")})
		require.NoError(t, err)
		assert.Equal(t, "alpha", text(resp))
		assert.Len(t, srv.Requests(), 2)
	})
	t.Run("an overloaded stream", func(t *testing.T) {
		t.Parallel()
		tokens := providertest.NewVertexServer(t, "proj-test", "us-east5")
		overloaded := providertest.SSE(`event: error
data: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
		invalid := providertest.SSE(`event: error
data: {"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long"}}`)
		srv := providertest.NewRecordedServer(t, providertest.Recorded{Body: overloaded}, providertest.Recorded{Body: anthropicTextSSE("alpha", "end_turn")},
			providertest.Recorded{Body: invalid})
		m := vertexClaudeModel(t, tokens, ref, srv.URL, spec.ModelSettings{})
		noop := llms.WithStreamingFunc(func(context.Context, []byte) error { return nil })
		resp, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("hi")}, noop)
		require.NoError(t, err)
		assert.Equal(t, "alpha", text(resp))
		_, err = m.GenerateContent(t.Context(), []llms.MessageContent{human("hi")}, noop)
		assert.EqualError(t, err, "google-cloud: error in the response stream: invalid_request_error: prompt is too long")
	})
}

// Claude's checks hold for its Vertex AI ids (claude-opus-4-6@..., with
// the date after an @) before any request, under the name the spec wrote;
// the settings of Gemini are refused for it, and its own for Gemini, as
// before.
func TestVertexClaudeValidate(t *testing.T) {
	t.Parallel()
	budget := spec.ModelSettings{Thinking: &spec.Thinking{Enabled: true, Budget: 4000}}
	for _, tt := range []struct {
		ref      string
		settings spec.ModelSettings
		key      string
		reason   string
	}{
		{"google-cloud:claude-opus-4-7@20260416", spec.ModelSettings{Temperature: ptr(0.2)}, "temperature", "takes no sampling settings"},
		{"google-vertex:claude-sonnet-5@20260801", budget, "thinking", "adaptive thinking only"},
		{"google-cloud:claude-fable-5-1@20261001", spec.ModelSettings{ToolChoice: &spec.ToolChoice{Mode: "required"}}, "tool_choice", "takes no forced tool call"},
		{"google-cloud:claude-sonnet-4-5@20250929", spec.ModelSettings{Seed: ptr(1)}, "seed", ""},
		{"google-cloud:claude-sonnet-4-5@20250929", spec.ModelSettings{ServiceTier: "flex"}, "service_tier", "Anthropic's tiers"},
		{"google-cloud:claude-sonnet-4-5@20250929", spec.ModelSettings{Provider: map[string]any{"google_labels": map[string]any{"a": "b"}}},
			"google_labels", "read by google models only"},
		{"google-cloud:gemini-2.5-pro", spec.ModelSettings{Provider: map[string]any{"anthropic_cache": true}}, "anthropic_cache", "read by anthropic models only"},
	} {
		var unsupported *UnsupportedSettingError
		require.ErrorAs(t, Validate(tt.ref, tt.settings), &unsupported, tt.ref)
		assert.Equal(t, tt.key, unsupported.Setting, tt.ref)
		name, _, _ := strings.Cut(tt.ref, ":")
		assert.Equal(t, name, unsupported.Provider)
		assert.Contains(t, unsupported.Reason, tt.reason, tt.ref)
	}
	for _, ref := range []string{"google-cloud:claude-opus-4-6@20260205", "google-cloud:publishers/anthropic/models/claude-opus-4-6@20260205"} {
		require.NoError(t, Validate(ref, budget), ref)
		require.NoError(t, Validate(ref, spec.ModelSettings{Temperature: ptr(0.2), TopK: ptr(5),
			Provider: map[string]any{"anthropic_cache_messages": "1h", "anthropic_betas": []any{"context-1m-2025-08-07"}}}), ref)
	}

	assert.True(t, HasNative("google-cloud:claude-sonnet-4-5@20250929", "web_search"))
	assert.False(t, HasNative("google-cloud:claude-sonnet-4-5@20250929", "code_execution"))
	assert.False(t, HasNative("google-cloud:gemini-2.5-pro", "web_search"))
	var native *NativeUnsupportedError
	require.ErrorAs(t, CheckNative("google-cloud:claude-sonnet-4-5@20250929", []NativeTool{{Kind: "web_fetch"}}), &native)
	assert.Equal(t, "google-cloud", native.Provider)
	require.NoError(t, CheckNative("google-cloud:claude-sonnet-4-5@20250929", []NativeTool{{Kind: "web_search", Options: map[string]any{"max_uses": json.Number("3")}}}))
}

// The unified thinking is adaptive thinking with an effort on Claude 4.6
// and later on Vertex AI too, where the id carries its date after an @.
func TestVertexClaudeAdaptiveThinking(t *testing.T) {
	t.Parallel()
	srv := providertest.NewVertexClaudeServer(t, "proj-test", "us-east5", providertest.Text("ok"))
	m := vertexClaudeModel(t, srv, "google-cloud:publishers/anthropic/models/claude-opus-4-6@20260205", srv.URL,
		spec.ModelSettings{Thinking: &spec.Thinking{Enabled: true, Effort: "high"}})
	_, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("hi")})
	require.NoError(t, err)
	req := srv.Requests()[0]
	assert.Equal(t, "/v1/projects/proj-test/locations/us-east5/publishers/anthropic/models/claude-opus-4-6@20260205:rawPredict", req.Path)
	body := req.JSON()
	assert.Equal(t, map[string]any{"type": "adaptive"}, body["thinking"])
	assert.Equal(t, map[string]any{"effort": "high"}, body["output_config"])
}

// Claude on Vertex AI is reached at Vertex AI's hosts with Application
// Default Credentials only: an API key, which express mode would send to
// Gemini, is not taken, and without credentials New fails before any
// request, saying so.
func TestVertexClaudeEndpoint(t *testing.T) {
	t.Parallel()
	for location, want := range map[string]string{
		"us-east5": "https://us-east5-aiplatform.googleapis.com",
		"global":   "https://aiplatform.googleapis.com",
		"eu":       "https://aiplatform.eu.rep.googleapis.com",
	} {
		ep, err := resolveModel("google-cloud", "claude-sonnet-4-5@20250929", "",
			env("GOOGLE_CLOUD_PROJECT", "proj", "GOOGLE_CLOUD_LOCATION", location, "GOOGLE_API_KEY", "AIza-test"))
		require.NoError(t, err)
		assert.Equal(t, want, ep.baseURL, location)
		assert.Empty(t, ep.token, "no API key reaches Claude")
		assert.Equal(t, "proj", ep.project)
		assert.Equal(t, DialectAnthropic, ep.dialect)
	}
	ep, err := resolveModel("google-cloud", "gemini-2.5-pro", "", env("GOOGLE_API_KEY", "AIza-test"))
	require.NoError(t, err)
	assert.Equal(t, "AIza-test", ep.token, "Gemini keeps express mode")
	assert.Equal(t, DialectOpenAI, ep.dialect)

	_, err = New("google-cloud:claude-sonnet-4-5@20250929", spec.ModelSettings{},
		Options{Getenv: env("GOOGLE_CLOUD_PROJECT", "p", "GOOGLE_API_KEY", "AIza-test", "GCE_METADATA_HOST", "")})
	if err == nil {
		t.Skip("this machine has Google Cloud credentials (the metadata server)")
	}
	require.ErrorIs(t, err, ErrMissingKey)
	assert.Contains(t, err.Error(), "google-cloud: no Application Default Credentials found")
	assert.Contains(t, err.Error(), "an API key (Vertex AI express mode) does not reach Claude")
}

// The gateway's Vertex AI route stays Gemini's whatever the model: what a
// claude- name meant there is unchanged.
func TestVertexClaudeNotThroughGateway(t *testing.T) {
	t.Parallel()
	p, ok := providerFor("gateway/google-cloud", "claude-sonnet-4-5@20250929")
	require.True(t, ok)
	assert.Equal(t, apiGemini, p.api)
	assert.False(t, p.vertex)
	p, _ = providerFor("google-cloud", "gemini-2.5-pro")
	assert.Equal(t, apiGemini, p.api)
}

// A conversation with Claude on Vertex AI recorded with Application Default
// Credentials replays with none, on the same path.
func TestVertexClaudeRecordAndReplay(t *testing.T) {
	t.Parallel()
	srv := providertest.NewVertexClaudeServer(t, "proj-rec", "us-east5", providertest.Text("recorded"))
	path := t.TempDir() + "/vertex-claude.json"
	rec, err := NewRecorder(path, nil)
	require.NoError(t, err)
	m, err := New("google-cloud:claude-sonnet-4-5@20250929", spec.ModelSettings{BaseURL: srv.URL},
		Options{Getenv: env("GOOGLE_APPLICATION_CREDENTIALS", srv.KeyFile(t, t.TempDir()), "GOOGLE_CLOUD_LOCATION", "us-east5"), Transport: rec})
	require.NoError(t, err)
	_, err = m.GenerateContent(t.Context(), []llms.MessageContent{human("hi")})
	require.NoError(t, err)
	require.NoError(t, rec.Close())

	rp, err := NewReplayer(path)
	require.NoError(t, err)
	m, err = New("google-cloud:claude-sonnet-4-5@20250929", spec.ModelSettings{}, Options{Getenv: env(), Transport: rp})
	require.NoError(t, err)
	assert.Equal(t, DialectAnthropic, m.Dialect)
	resp, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("hi")})
	require.NoError(t, err)
	assert.Equal(t, "recorded", text(resp))
}

// Claude models on Vertex AI built with one CredentialCache share the
// Application Default Credentials and their token, as Gemini's do: a
// service account's token is fetched once for them all.
func TestVertexClaudeModelsShareTheirToken(t *testing.T) {
	t.Parallel()
	const n = 3
	srv := providertest.NewVertexClaudeServer(t, "proj-share", "us-central1", slices.Repeat([]providertest.Reply{providertest.Text("ok")}, n)...)
	getenv := env("GOOGLE_APPLICATION_CREDENTIALS", srv.KeyFile(t, t.TempDir()))
	cache := NewCredentialCache()
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() { // from several goroutines: no require
			m, err := New("google-cloud:claude-haiku-4-5@20251001", spec.ModelSettings{BaseURL: srv.URL}, Options{Getenv: getenv, Credentials: cache})
			if !assert.NoError(t, err) {
				return
			}
			resp, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("hi")})
			if assert.NoError(t, err) {
				assert.Equal(t, "ok", text(resp))
			}
		})
	}
	wg.Wait()
	assert.Equal(t, 1, srv.Grants(), "tokens fetched for %d models sharing a cache", n)
}

// extra_body is set last in the body on Vertex AI too, so an
// anthropic_version written there wins over vertex-2023-10-16; the spec's
// extra headers and Anthropic's beta header go with the request.
func TestVertexClaudeExtraBodyAndHeaders(t *testing.T) {
	t.Parallel()
	tokens := providertest.NewVertexServer(t, "proj-test", "us-east5")
	srv := providertest.NewRecordedServer(t, providertest.Recorded{Body: anthropicText("ok", "end_turn")})
	m := vertexClaudeModel(t, tokens, "google-cloud:claude-sonnet-4-5@20250929", srv.URL, spec.ModelSettings{
		ExtraBody:    map[string]any{"anthropic_version": "vertex-2099-01-01"},
		ExtraHeaders: map[string]string{"X-Trace": "t1"},
		Provider:     map[string]any{"anthropic_betas": []any{"context-1m-2025-08-07"}},
	})
	_, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("hi")})
	require.NoError(t, err)
	req := srv.Requests()[0]
	assert.Equal(t, "vertex-2099-01-01", req.JSON()["anthropic_version"])
	assert.NotContains(t, req.JSON(), "model")
	assert.Equal(t, "t1", req.Header.Get("X-Trace"))
	assert.Equal(t, "context-1m-2025-08-07", req.Header.Get("Anthropic-Beta"))
}

// The providers a refusal of a native tool names as running it name
// google-cloud's (google-vertex's) Claude models where they run the kind,
// since a Gemini model's spec is told where the kind runs.
func TestVertexClaudeNamedAmongNativeProviders(t *testing.T) {
	t.Parallel()
	assert.Contains(t, NativeProviders("web_search"), "google-cloud (Claude models)")
	assert.Contains(t, NativeProviders("web_search"), "google-vertex (Claude models)")
	assert.NotContains(t, NativeProviders("web_search"), "google-cloud")
	assert.NotContains(t, NativeProviders("web_fetch"), "google-cloud (Claude models)")
	var native *NativeUnsupportedError
	require.ErrorAs(t, CheckNative("google-cloud:gemini-2.5-pro", []NativeTool{{Kind: "web_search"}}), &native)
	assert.Contains(t, native.Error(), "google-cloud (Claude models)")
}
