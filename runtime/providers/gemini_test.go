package providers

import (
	"context"
	"encoding/json"
	"errors"
	"os"
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

// A tool round with Gemini on Vertex AI, whole and streamed, authorized by a
// service-account key: the token comes from the key's token_uri (the
// stand-in checks the signed grant), once for both requests; the call goes
// back with its thought signature and its failed result as an error.
func TestVertexServiceAccount(t *testing.T) {
	t.Parallel()
	for _, streaming := range []bool{false, true} {
		t.Run(map[bool]string{false: "generateContent", true: "streamGenerateContent"}[streaming], func(t *testing.T) {
			t.Parallel()
			srv := providertest.NewVertexServer(t, "proj-test", "europe-west4",
				providertest.Calls(providertest.ToolCall{Name: "read_file", Arguments: `{"path":"a.txt"}`}),
				providertest.Text("alpha"))
			key := srv.KeyFile(t, t.TempDir())
			m := newModel(t, "google-cloud:gemini-2.5-pro", spec.ModelSettings{BaseURL: srv.URL, MaxTokens: 300, TopK: ptr(3),
				Thinking: &spec.Thinking{Enabled: true, Effort: "low"}},
				env("GOOGLE_APPLICATION_CREDENTIALS", key, "GOOGLE_CLOUD_LOCATION", "europe-west4", "GOOGLE_API_KEY", "ignored"))
			var streamed strings.Builder
			opts := []llms.CallOption{llms.WithTools([]llms.Tool{readFileTool})}
			if streaming {
				opts = append(opts, llms.WithStreamingFunc(func(_ context.Context, b []byte) error {
					streamed.Write(b)
					return nil
				}))
			}
			resp, err := m.GenerateContent(t.Context(), []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeSystem, "Be brief."), human("read a.txt")}, opts...)
			require.NoError(t, err)
			calls := toolCalls(resp)
			require.Len(t, calls, 1)
			assert.Equal(t, "read_file", calls[0].FunctionCall.Name)
			assert.JSONEq(t, `{"path":"a.txt"}`, calls[0].FunctionCall.Arguments)
			assert.Equal(t, 10, resp.Choices[0].GenerationInfo[InfoInputTokens])

			failed := result(calls[0].ID, "read_file", "no such file")
			failed.Parts = append(failed.Parts, ToolError)
			history := []llms.MessageContent{human("read a.txt"), {Role: llms.ChatMessageTypeAI, Parts: turnOf(t, resp)}, failed}
			resp, err = m.GenerateContent(t.Context(), history, opts...)
			require.NoError(t, err)
			assert.Equal(t, "alpha", text(resp))
			if streaming {
				assert.Equal(t, "alpha", streamed.String())
			}

			assert.Equal(t, 1, srv.Grants(), "one token serves both requests")
			reqs := srv.Requests()
			require.Len(t, reqs, 2)
			method := map[bool]string{false: "generateContent", true: "streamGenerateContent"}[streaming]
			assert.Equal(t, "/v1/projects/proj-test/locations/europe-west4/publishers/google/models/gemini-2.5-pro:"+method, reqs[0].Path)
			first := reqs[0].JSON()
			assert.JSONEq(t, `{"parts":[{"text":"Be brief."}]}`, jsonOf(t, first["systemInstruction"]))
			assert.JSONEq(t, `{"temperature":1,"maxOutputTokens":300,"topK":3,"thinkingConfig":{"thinkingBudget":2048,"includeThoughts":true}}`,
				jsonOf(t, first["generationConfig"]))
			second := reqs[1].JSON()
			contents := second["contents"].([]any)
			require.Len(t, contents, 3)
			call := contents[1].(map[string]any)["parts"].([]any)[0].(map[string]any)
			assert.Equal(t, "sig-1-0", call["thoughtSignature"])
			reply := contents[2].(map[string]any)["parts"].([]any)[0].(map[string]any)["functionResponse"]
			assert.JSONEq(t, `{"name":"read_file","response":{"error":"no such file"}}`, jsonOf(t, reply))
		})
	}
}

// Without an API key, a credentials file or gcloud's, New fails before any
// request, naming Application Default Credentials and the variable.
func TestVertexMissingCredentials(t *testing.T) {
	t.Parallel()
	_, err := New("google-cloud:gemini-2.5-pro", spec.ModelSettings{}, Options{Getenv: env("GOOGLE_CLOUD_PROJECT", "p", "GCE_METADATA_HOST", "")})
	if err == nil {
		t.Skip("this machine has Google Cloud credentials (the metadata server)")
	}
	require.ErrorIs(t, err, ErrMissingKey)
	assert.Contains(t, err.Error(), "Application Default Credentials")
	assert.Contains(t, err.Error(), "GOOGLE_APPLICATION_CREDENTIALS")

	_, err = New("google-cloud:gemini-2.5-pro", spec.ModelSettings{}, Options{Getenv: env("GOOGLE_APPLICATION_CREDENTIALS", "/nonexistent/key.json")})
	require.ErrorIs(t, err, ErrMissingKey)
	assert.Contains(t, err.Error(), "GOOGLE_APPLICATION_CREDENTIALS")
}

// Thought parts and the signatures of text and calls are kept in the turn
// and sent back in place; an API key (express mode) goes in x-goog-api-key
// on the publisher path.
func TestVertexThoughtsRoundTrip(t *testing.T) {
	t.Parallel()
	first := `{"candidates":[{"content":{"role":"model","parts":[{"text":"planning","thought":true,"thoughtSignature":"t-sig"},` +
		`{"text":"Reading."},{"functionCall":{"name":"read_file","args":{"path":"a.txt"}},"thoughtSignature":"c-sig"}]},"finishReason":"STOP"}],` +
		`"usageMetadata":{"promptTokenCount":7,"candidatesTokenCount":3,"thoughtsTokenCount":20}}`
	done := `{"candidates":[{"content":{"role":"model","parts":[{"text":"alpha"}]},"finishReason":"STOP"}]}`
	srv := providertest.NewRecordedServer(t, providertest.Recorded{Body: first}, providertest.Recorded{Body: done})
	m := newModel(t, "google-vertex:gemini-3-pro-preview", spec.ModelSettings{BaseURL: srv.URL}, env("GOOGLE_API_KEY", "AIza-test"))
	resp, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("read")}, llms.WithTools([]llms.Tool{readFileTool}))
	require.NoError(t, err)
	assert.Equal(t, "planning", resp.Choices[0].ReasoningContent)
	assert.Equal(t, 23, resp.Choices[0].GenerationInfo[InfoOutputTokens])
	assert.Equal(t, 20, resp.Choices[0].GenerationInfo[InfoReasoningTokens])
	calls := toolCalls(resp)
	require.Len(t, calls, 1)
	history := []llms.MessageContent{human("read"), {Role: llms.ChatMessageTypeAI, Parts: turnOf(t, resp)}, result(calls[0].ID, "", "alpha")}
	_, err = m.GenerateContent(t.Context(), history, llms.WithTools([]llms.Tool{readFileTool}))
	require.NoError(t, err)

	reqs := srv.Requests()
	assert.Equal(t, "/v1/publishers/google/models/gemini-3-pro-preview:generateContent", reqs[0].Path)
	assert.Equal(t, "AIza-test", reqs[0].Header.Get("X-Goog-Api-Key"))
	contents := reqs[1].JSON()["contents"].([]any)
	assert.JSONEq(t, `[{"text":"planning","thought":true,"thoughtSignature":"t-sig"},{"text":"Reading."},`+
		`{"functionCall":{"name":"read_file","args":{"path":"a.txt"}},"thoughtSignature":"c-sig"}]`, jsonOf(t, contents[1].(map[string]any)["parts"]))
	assert.JSONEq(t, `[{"functionResponse":{"name":"read_file","response":{"output":"alpha"}}}]`, jsonOf(t, contents[2].(map[string]any)["parts"]))
}

// A stream's error chunk fails the call as a stream error.
func TestVertexStreamError(t *testing.T) {
	t.Parallel()
	srv := providertest.NewRecordedServer(t, providertest.Recorded{Body: providertest.SSE(
		`data: {"candidates":[{"content":{"role":"model","parts":[{"text":"par"}]}}]}`,
		`data: {"error":{"code":400,"message":"the request is bad","status":"INVALID_ARGUMENT"}}`)})
	m := newModel(t, "google-cloud:gemini-2.5-flash", spec.ModelSettings{BaseURL: srv.URL}, env("GEMINI_API_KEY", "AIza-test"))
	_, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("hi")},
		llms.WithStreamingFunc(func(context.Context, []byte) error { return nil }))
	var perr *Error
	require.True(t, errors.As(err, &perr), "%v", err)
	assert.True(t, perr.Stream)
	assert.Equal(t, "google-cloud: error in the response stream: INVALID_ARGUMENT: the request is bad", perr.Error())
}

// A conversation recorded with Application Default Credentials replays with
// none: the token request stays out of the recording, and the recording
// keeps the project and location its paths name.
func TestVertexRecordAndReplay(t *testing.T) {
	t.Parallel()
	srv := providertest.NewVertexServer(t, "proj-rec", "us-central1", providertest.Text("recorded"))
	path := t.TempDir() + "/vertex.json"
	rec, err := NewRecorder(path, nil)
	require.NoError(t, err)
	m, err := New("google-cloud:gemini-2.5-flash", spec.ModelSettings{BaseURL: srv.URL},
		Options{Getenv: env("GOOGLE_APPLICATION_CREDENTIALS", srv.KeyFile(t, t.TempDir())), Transport: rec})
	require.NoError(t, err)
	_, err = m.GenerateContent(t.Context(), []llms.MessageContent{human("hi")})
	require.NoError(t, err)
	require.NoError(t, rec.Close())

	rp, err := NewReplayer(path)
	require.NoError(t, err)
	m, err = New("google-cloud:gemini-2.5-flash", spec.ModelSettings{}, Options{Getenv: env(), Transport: rp})
	require.NoError(t, err)
	resp, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("hi")})
	require.NoError(t, err)
	assert.Equal(t, "recorded", text(resp))
}

// The gateway's Vertex AI route takes its key as a bearer token (and as the
// API key of express mode) on the publisher path.
func TestVertexThroughGateway(t *testing.T) {
	t.Parallel()
	srv := providertest.NewRecordedServer(t, providertest.Recorded{Body: `{"candidates":[{"content":{"role":"model","parts":[{"text":"hi"}]},"finishReason":"STOP"}]}`})
	for _, name := range []string{"gateway/google", "gateway/google-cloud"} {
		m := newModel(t, name+":gemini-2.5-flash", spec.ModelSettings{}, env("PYDANTIC_AI_GATEWAY_API_KEY", "pylf_v1_us_k", "PYDANTIC_AI_GATEWAY_BASE_URL", srv.URL))
		if name == "gateway/google" {
			resp, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("hi")})
			require.NoError(t, err)
			assert.Equal(t, "hi", text(resp))
		}
	}
	req := srv.Requests()[0]
	assert.Equal(t, "/google-vertex/v1beta1/publishers/google/models/gemini-2.5-flash:generateContent", req.Path)
	assert.Equal(t, "Bearer pylf_v1_us_k", req.Header.Get("Authorization"))
}

// Vertex AI's error status reaches the error's type, and a refused token
// names Application Default Credentials in the hint.
func TestVertexErrorStatus(t *testing.T) {
	t.Parallel()
	srv := providertest.NewVertexServer(t, "proj-err", "us-central1",
		providertest.Fail(401, "Request had invalid authentication credentials. Expected OAuth 2 access token."))
	key := srv.KeyFile(t, t.TempDir())
	m := newModel(t, "google-cloud:gemini-2.5-flash", spec.ModelSettings{BaseURL: srv.URL}, env("GOOGLE_APPLICATION_CREDENTIALS", key))
	_, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("hi")})
	var perr *Error
	require.True(t, errors.As(err, &perr), "%v", err)
	assert.Equal(t, "UNAUTHENTICATED", perr.Type)
	assert.Equal(t, "google-cloud: authentication failed (401): Request had invalid authentication credentials. Expected OAuth 2 access token. — "+
		"check the Application Default Credentials (GOOGLE_APPLICATION_CREDENTIALS, gcloud's)", Describe(err))
}

// A call Gemini wrote but could not parse ends the answer with
// MALFORMED_FUNCTION_CALL and no parts: the same correctable mistake as
// another provider's tool_use_failed, whole and streamed, not an empty
// final answer.
func TestVertexMalformedFunctionCall(t *testing.T) {
	t.Parallel()
	const wrote = `call:default_api:read_file{path: a.txt}`
	malformed := `{"candidates":[{"content":{},"finishReason":"MALFORMED_FUNCTION_CALL","index":0,` +
		`"finishMessage":"Malformed function call: ` + wrote + `"}],` +
		`"usageMetadata":{"promptTokenCount":1426,"totalTokenCount":1426},"modelVersion":"gemini-2.5-flash","responseId":"m-1"}`
	for _, streaming := range []bool{false, true} {
		t.Run(map[bool]string{false: "generateContent", true: "streamGenerateContent"}[streaming], func(t *testing.T) {
			t.Parallel()
			body := malformed
			opts := []llms.CallOption{llms.WithTools([]llms.Tool{readFileTool})}
			if streaming {
				body = providertest.SSE(`data: ` + malformed)
				opts = append(opts, llms.WithStreamingFunc(func(context.Context, []byte) error { return nil }))
			}
			srv := providertest.NewRecordedServer(t, providertest.Recorded{Body: body})
			m := newModel(t, "google-vertex:gemini-2.5-flash", spec.ModelSettings{BaseURL: srv.URL}, env("GOOGLE_API_KEY", "AIza-test"))
			resp, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("read a.txt")}, opts...)
			require.Error(t, err, "an answer came instead: %+v", resp)
			var perr *Error
			require.ErrorAs(t, err, &perr)
			got, ok := perr.ToolUseFailed()
			assert.True(t, ok, "%v", err)
			assert.Equal(t, wrote, got)
			assert.Equal(t, "Malformed function call", perr.Message)
			assert.Len(t, srv.Requests(), 1, "the same request is not sent again")
		})
	}
}

// A call's integer arguments beyond float64's precision are kept digit for
// digit, whole and streamed, in the arguments and in the call sent back.
func TestVertexToolArgumentsKeepLargeIntegers(t *testing.T) {
	t.Parallel()
	const args = `{"id":12345678901234567890,"ratio":0.1,"tags":[9007199254740993]}`
	call := `{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"get_order","args":` + args + `}}]},"finishReason":"STOP","index":0}],` +
		`"usageMetadata":{"promptTokenCount":20,"candidatesTokenCount":9,"totalTokenCount":29},"modelVersion":"gemini-2.5-flash"}`
	done := `{"candidates":[{"content":{"role":"model","parts":[{"text":"shipped"}]},"finishReason":"STOP"}]}`
	for _, streaming := range []bool{false, true} {
		t.Run(map[bool]string{false: "generateContent", true: "streamGenerateContent"}[streaming], func(t *testing.T) {
			t.Parallel()
			body := call
			opts := []llms.CallOption{llms.WithTools([]llms.Tool{orderTool})}
			if streaming {
				body = providertest.SSE(`data: ` + call)
				opts = append(opts, llms.WithStreamingFunc(func(context.Context, []byte) error { return nil }))
			}
			srv := providertest.NewRecordedServer(t, providertest.Recorded{Body: body}, providertest.Recorded{Body: done})
			m := newModel(t, "google-vertex:gemini-2.5-flash", spec.ModelSettings{BaseURL: srv.URL}, env("GOOGLE_API_KEY", "AIza-test"))
			resp, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("order 12345678901234567890")}, opts...)
			require.NoError(t, err)
			calls := toolCalls(resp)
			require.Len(t, calls, 1)
			assert.Equal(t, args, calls[0].FunctionCall.Arguments)

			history := []llms.MessageContent{human("order 12345678901234567890"), {Role: llms.ChatMessageTypeAI, Parts: turnOf(t, resp)},
				result(calls[0].ID, "get_order", "shipped")}
			_, err = m.GenerateContent(t.Context(), history, llms.WithTools([]llms.Tool{orderTool}))
			require.NoError(t, err)
			assert.Contains(t, string(srv.Requests()[1].Body), `"args":`+args, "the call goes back with its numbers as written")
		})
	}
}

// A call to a function the request did not declare (or any call where the
// tool choice allowed none) ends the answer with UNEXPECTED_TOOL_CALL: a
// correctable failed call naming what the model tried, as
// MALFORMED_FUNCTION_CALL is, whole and streamed, not an empty final answer.
func TestVertexUnexpectedToolCall(t *testing.T) {
	t.Parallel()
	unexpected := `{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"delete_file","args":{"path":"a.txt"}}}]},` +
		`"finishReason":"UNEXPECTED_TOOL_CALL","index":0,"finishMessage":"Unexpected tool call: Model tried to call an undeclared function: delete_file"}],` +
		`"usageMetadata":{"promptTokenCount":1426,"totalTokenCount":1426},"modelVersion":"gemini-2.5-flash","responseId":"m-2"}`
	for _, streaming := range []bool{false, true} {
		t.Run(map[bool]string{false: "generateContent", true: "streamGenerateContent"}[streaming], func(t *testing.T) {
			t.Parallel()
			body := unexpected
			opts := []llms.CallOption{llms.WithTools([]llms.Tool{readFileTool})}
			if streaming {
				body = providertest.SSE(`data: ` + unexpected)
				opts = append(opts, llms.WithStreamingFunc(func(context.Context, []byte) error { return nil }))
			}
			srv := providertest.NewRecordedServer(t, providertest.Recorded{Body: body})
			m := newModel(t, "google-vertex:gemini-2.5-flash", spec.ModelSettings{BaseURL: srv.URL}, env("GOOGLE_API_KEY", "AIza-test"))
			resp, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("read a.txt")}, opts...)
			require.Error(t, err, "an answer came instead: %+v", resp)
			var perr *Error
			require.ErrorAs(t, err, &perr)
			got, ok := perr.ToolUseFailed()
			assert.True(t, ok, "%v", err)
			assert.Equal(t, `delete_file {"path":"a.txt"}`, got)
			assert.Equal(t, "Unexpected tool call: Model tried to call an undeclared function: delete_file", perr.Message)
			assert.Len(t, srv.Requests(), 1, "the same request is not sent again")
		})
	}
}

// Gemini's OpenAI-compatible endpoint passes its own finish reasons on: a
// MALFORMED_FUNCTION_CALL or UNEXPECTED_TOOL_CALL finish is a correctable
// failed call there too, whole and streamed.
func TestGoogleChatFailedCallFinish(t *testing.T) {
	t.Parallel()
	for _, finish := range []string{"MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL"} {
		for _, streaming := range []bool{false, true} {
			t.Run(finish+map[bool]string{false: "", true: "/stream"}[streaming], func(t *testing.T) {
				t.Parallel()
				body := `{"choices":[{"finish_reason":"` + finish + `","index":0,"message":{"role":"assistant"}}],"created":1765000000,"id":"gen-1","model":"gemini-2.5-flash","object":"chat.completion","usage":{"completion_tokens":0,"prompt_tokens":1426,"total_tokens":1426}}`
				var opts []llms.CallOption
				if streaming {
					body = providertest.SSE(
						`data: {"choices":[{"delta":{"role":"assistant"},"finish_reason":"`+finish+`","index":0}],"created":1765000000,"id":"gen-1","model":"gemini-2.5-flash","object":"chat.completion.chunk","usage":{"completion_tokens":0,"prompt_tokens":1426,"total_tokens":1426}}`,
						`data: [DONE]`)
					opts = append(opts, streamOn)
				}
				srv := providertest.NewRecordedServer(t, providertest.Recorded{Body: body})
				m := chatModelAt(t, srv, "google:gemini-2.5-flash", spec.ModelSettings{})
				resp, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("read a.txt")}, append(opts, llms.WithTools([]llms.Tool{readFileTool}))...)
				require.Error(t, err, "an answer came instead: %+v", resp)
				var perr *Error
				require.ErrorAs(t, err, &perr)
				_, ok := perr.ToolUseFailed()
				assert.True(t, ok, "%v", err)
				assert.Equal(t, finish, perr.Type)
				assert.Len(t, srv.Requests(), 1, "the same request is not sent again")
			})
		}
	}
}

// Models built with one CredentialCache from the same Application Default
// Credentials share their token source: a service account's token is
// fetched once for them all, not once per model. A key file that changed
// is credentials of its own; without a cache each model fetches its own.
func TestVertexModelsShareTheirTokenThroughTheCache(t *testing.T) {
	t.Parallel()
	const n = 4
	srv := providertest.NewVertexServer(t, "proj-share", "us-central1", slices.Repeat([]providertest.Reply{providertest.Text("ok")}, 2*n+2)...)
	dir := t.TempDir()
	key := srv.KeyFile(t, dir)
	getenv := env("GOOGLE_APPLICATION_CREDENTIALS", key)
	ask := func(cache *CredentialCache) { // from several goroutines: no require
		m, err := New("google-cloud:gemini-2.5-flash", spec.ModelSettings{BaseURL: srv.URL}, Options{Getenv: getenv, Credentials: cache})
		if !assert.NoError(t, err) {
			return
		}
		resp, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("hi")})
		if assert.NoError(t, err) {
			assert.Equal(t, "ok", text(resp))
		}
	}
	cache := NewCredentialCache()
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() { ask(cache) })
	}
	wg.Wait()
	assert.Equal(t, 1, srv.Grants(), "tokens fetched for %d models sharing a cache", n)

	// The same service account, written out again: another file's content.
	data, err := os.ReadFile(key)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(key, append(data, '\n'), 0o600))
	ask(cache)
	assert.Equal(t, 2, srv.Grants(), "a changed key file is not the one kept")

	for range n {
		ask(nil)
	}
	assert.Equal(t, 2+n, srv.Grants(), "without a cache, one token per model")
}

// Vertex AI's host is the location's: LOCATION-aiplatform.googleapis.com
// for a region, aiplatform.googleapis.com for global, and, as the genai SDK
// builds it (client.go's multiRegionalLocations), aiplatform.LOCATION.rep
// .googleapis.com for the multi-regions us and eu, which have no host of
// the regional form.
func TestVertexLocationHost(t *testing.T) {
	t.Parallel()
	for location, want := range map[string]string{
		"":             "https://us-central1-aiplatform.googleapis.com",
		"europe-west4": "https://europe-west4-aiplatform.googleapis.com",
		"global":       "https://aiplatform.googleapis.com",
		"us":           "https://aiplatform.us.rep.googleapis.com",
		"eu":           "https://aiplatform.eu.rep.googleapis.com",
	} {
		ep, err := resolve("google-vertex", "", env("GOOGLE_CLOUD_PROJECT", "proj", "GOOGLE_CLOUD_LOCATION", location))
		require.NoError(t, err, location)
		assert.Equal(t, want, ep.baseURL, location)
	}
}

// A Gemini answer its filters stopped is a refusal, whatever the filter:
// the text ones (SAFETY and its kin) and the image ones, IMAGE_SAFETY,
// IMAGE_PROHIBITED_CONTENT (which pydantic-ai maps to content_filter) and
// IMAGE_RECITATION (RECITATION's for an image), the last two of which left
// an empty answer taken as the model's.
func TestGeminiFilteredFinishIsARefusal(t *testing.T) {
	t.Parallel()
	for _, finish := range []string{"SAFETY", "IMAGE_SAFETY", "IMAGE_PROHIBITED_CONTENT", "IMAGE_RECITATION"} {
		srv := providertest.NewRecordedServer(t, providertest.Recorded{Body: `{"candidates":[{"content":{"role":"model","parts":[]},"finishReason":"` + finish + `"}],` +
			`"usageMetadata":{"promptTokenCount":7,"totalTokenCount":7},"modelVersion":"gemini-2.5-flash-image"}`})
		m := newModel(t, "google-vertex:gemini-2.5-flash-image", spec.ModelSettings{BaseURL: srv.URL}, env("GOOGLE_API_KEY", "AIza-test"))
		resp, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("draw")})
		require.NoError(t, err, finish)
		info, _, _ := ReadInfo(resp.Choices[0])
		assert.True(t, info.Refused, finish)
		assert.Equal(t, "the response was blocked ("+finish+")", info.Refusal)
	}
}

// keyFileWithQuotaProject writes srv's service-account key with a
// quota_project_id, the project its credentials name to be billed.
func keyFileWithQuotaProject(t *testing.T, srv *providertest.VertexServer, project string) string {
	t.Helper()
	path := srv.KeyFile(t, t.TempDir())
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var key map[string]any
	require.NoError(t, json.Unmarshal(b, &key))
	key["quota_project_id"] = project
	b, err = json.Marshal(key)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, b, 0o600))
	return path
}

// extra_headers on Google's endpoints. With Application Default Credentials
// (Gemini and Claude on Vertex AI) every attempt, a retry's too, is
// authorized by the credentials' token, set over an Authorization the spec
// gives, as Google's own clients do, while an X-Goog-User-Project the spec
// gives names the project billed over the credentials' quota project, which
// Google's clients leave too. With a key (Vertex AI express mode, the
// Gemini API) an Authorization the spec gives is sent as given: beside the
// key's X-Goog-Api-Key, or in place of the Gemini API's bearer key.
func TestGoogleExtraHeadersAuthorization(t *testing.T) {
	t.Parallel()
	given := map[string]string{"Authorization": "Bearer from-the-spec", "X-Goog-User-Project": "billed-project", "X-Trace": "t1"}
	for _, tc := range []struct {
		name  string
		start func(t *testing.T, replies ...providertest.Reply) *providertest.VertexServer
		ref   string
	}{
		{"gemini", func(t *testing.T, replies ...providertest.Reply) *providertest.VertexServer {
			return providertest.NewVertexServer(t, "proj-test", "us-east5", replies...)
		}, "google-vertex:gemini-2.5-pro"},
		{"claude", func(t *testing.T, replies ...providertest.Reply) *providertest.VertexServer {
			return providertest.NewVertexClaudeServer(t, "proj-test", "us-east5", replies...)
		}, "google-vertex:claude-sonnet-4-5@20250929"},
	} {
		t.Run(tc.name+" with credentials", func(t *testing.T) {
			t.Parallel()
			for _, headers := range []map[string]string{given, {"Authorization": "Bearer from-the-spec"}} {
				srv := tc.start(t, providertest.Fail(503, "overloaded"), providertest.Text("ok"))
				m := newModel(t, tc.ref, spec.ModelSettings{BaseURL: srv.URL, ExtraHeaders: headers},
					env("GOOGLE_APPLICATION_CREDENTIALS", keyFileWithQuotaProject(t, srv, "quota-of-the-key"),
						"GOOGLE_CLOUD_PROJECT", "proj-test", "GOOGLE_CLOUD_LOCATION", "us-east5"))
				resp, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("hi")})
				require.NoError(t, err)
				assert.Equal(t, "ok", text(resp))
				reqs := srv.Requests()
				require.Len(t, reqs, 2, "the 503 is retried")
				for _, r := range reqs {
					assert.Equal(t, "Bearer ya29.providertest", r.Header.Get("Authorization"), "the credentials' token authorizes each attempt")
					if p, ok := headers["X-Goog-User-Project"]; ok {
						assert.Equal(t, p, r.Header.Get("X-Goog-User-Project"), "the spec's project is billed")
						assert.Equal(t, "t1", r.Header.Get("X-Trace"))
					} else {
						assert.Equal(t, "quota-of-the-key", r.Header.Get("X-Goog-User-Project"), "the credentials' quota project is billed")
					}
				}
			}
		})
	}
	t.Run("express mode", func(t *testing.T) {
		t.Parallel()
		srv := providertest.NewRecordedServer(t, providertest.Recorded{Body: `{"candidates":[{"content":{"role":"model","parts":[{"text":"ok"}]},"finishReason":"STOP"}]}`})
		m := newModel(t, "google-vertex:gemini-2.5-pro", spec.ModelSettings{BaseURL: srv.URL, ExtraHeaders: given}, env("GOOGLE_API_KEY", "AIza-test"))
		_, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("hi")})
		require.NoError(t, err)
		r := srv.Requests()[0]
		assert.Equal(t, "Bearer from-the-spec", r.Header.Get("Authorization"))
		assert.Equal(t, "AIza-test", r.Header.Get("X-Goog-Api-Key"))
		assert.Equal(t, "billed-project", r.Header.Get("X-Goog-User-Project"))
	})
	t.Run("the Gemini API", func(t *testing.T) {
		t.Parallel()
		srv := providertest.NewRecordedServer(t, providertest.Recorded{Body: `{"id":"c","object":"chat.completion","created":1,"model":"gemini-2.5-pro",` +
			`"choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`})
		_, err := chatModelAt(t, srv, "google:gemini-2.5-pro", spec.ModelSettings{ExtraHeaders: given}).GenerateContent(t.Context(), []llms.MessageContent{human("hi")})
		require.NoError(t, err)
		assert.Equal(t, "Bearer from-the-spec", srv.Requests()[0].Header.Get("Authorization"))
	})
}
