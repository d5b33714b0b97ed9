package providers

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/agentspec/agentspec/runtime/providers/providertest"
	"github.com/agentspec/agentspec/spec"
)

const responsesToolTurn = `{"id":"resp_1","object":"response","created_at":1,"status":"completed","model":"gpt-5","output":[
 {"id":"rs_1","type":"reasoning","summary":[{"type":"summary_text","text":"Search, then read."}],"encrypted_content":"gAAAAB"},
 {"id":"ws_1","type":"web_search_call","status":"completed","action":{"type":"search","query":"agentspec"}},
 {"id":"msg_1","type":"message","role":"assistant","status":"completed","content":[{"type":"output_text","text":"Reading the notes.","annotations":[]}]},
 {"id":"fc_1","type":"function_call","status":"completed","call_id":"call_1","name":"read_file","arguments":"{\"path\":\"a.txt\"}"}],
"usage":{"input_tokens":40,"input_tokens_details":{"cached_tokens":16},"output_tokens":30,"output_tokens_details":{"reasoning_tokens":20},"total_tokens":70}}`

const responsesDone = `{"id":"resp_2","object":"response","created_at":1,"status":"completed","model":"gpt-5","output":[
 {"id":"msg_2","type":"message","role":"assistant","status":"completed","content":[{"type":"output_text","text":"alpha","annotations":[]}]}],
"usage":{"input_tokens":60,"output_tokens":2,"total_tokens":62}}`

func responsesSSE(t *testing.T, response, text string) string {
	t.Helper()
	var r map[string]any
	require.NoError(t, json.Unmarshal([]byte(response), &r))
	ev := func(v map[string]any) string {
		b, err := json.Marshal(v)
		require.NoError(t, err)
		return "event: " + v["type"].(string) + "\ndata: " + string(b)
	}
	return providertest.SSE(
		ev(map[string]any{"type": "response.created", "sequence_number": 0, "response": map[string]any{"id": r["id"], "status": "in_progress", "output": []any{}}}),
		ev(map[string]any{"type": "response.output_text.delta", "sequence_number": 1, "item_id": "msg", "output_index": 0, "content_index": 0, "delta": text}),
		ev(map[string]any{"type": "response.completed", "sequence_number": 2, "response": r}))
}

func TestResponsesToolRound(t *testing.T) {
	t.Parallel()
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "json", true: "sse"}[stream], func(t *testing.T) {
			t.Parallel()
			first, second := responsesToolTurn, responsesDone
			var opts []llms.CallOption
			if stream {
				first, second = responsesSSE(t, first, "Reading the notes."), responsesSSE(t, second, "alpha")
				opts = append(opts, llms.WithStreamingFunc(func(context.Context, []byte) error { return nil }))
			}
			srv := providertest.NewRecordedServer(t, providertest.Recorded{Body: first}, providertest.Recorded{Body: second})
			policy, _ := instant()
			m, err := New("openai-responses:gpt-5", spec.ModelSettings{BaseURL: srv.URL + "/v1", Thinking: &spec.Thinking{Enabled: true, Effort: "high"}},
				Options{Getenv: env("OPENAI_API_KEY", "k"), retry: policy, NativeTools: []NativeTool{{Kind: "web_search", Options: map[string]any{"search_context_size": "low"}}}})
			require.NoError(t, err)
			opts = append(opts, llms.WithTools([]llms.Tool{readFileTool}))
			history := []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeSystem, "Be brief."), human("What is in a.txt?")}
			resp, err := m.GenerateContent(t.Context(), history, opts...)
			require.NoError(t, err)
			c := resp.Choices[0]
			assert.Equal(t, "Reading the notes.", c.Content)
			assert.Equal(t, "Search, then read.", c.ReasoningContent)
			require.Len(t, c.ToolCalls, 1)
			assert.Equal(t, "call_1", c.ToolCalls[0].ID)
			assert.Equal(t, 16, c.GenerationInfo[InfoCacheReadTokens])
			assert.Equal(t, 20, c.GenerationInfo[InfoReasoningTokens])

			history = append(history, llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: turnOf(t, resp)}, result("call_1", "read_file", "alpha"))
			resp, err = m.GenerateContent(t.Context(), history, opts...)
			require.NoError(t, err)
			assert.Equal(t, "alpha", resp.Choices[0].Content)

			reqs := srv.Requests()
			require.Len(t, reqs, 2)
			assert.Equal(t, "/v1/responses", reqs[0].Path)
			body := reqs[0].JSON()
			assert.Equal(t, "Be brief.", body["instructions"])
			assert.Equal(t, map[string]any{"effort": "high"}, body["reasoning"])
			assert.Equal(t, normalise(t, []any{
				map[string]any{"type": "function", "name": "read_file", "strict": false, "description": "Read a file of the workspace.",
					"parameters": readFileTool.Function.Parameters},
				map[string]any{"type": "web_search", "search_context_size": "low"},
			}), body["tools"])
			var input []map[string]any
			b, _ := json.Marshal(reqs[1].JSON()["input"])
			require.NoError(t, json.Unmarshal(b, &input))
			require.Len(t, input, 6, "%s", b)
			assert.Equal(t, "reasoning", input[1]["type"])
			assert.Equal(t, "gAAAAB", input[1]["encrypted_content"], "the reasoning item goes back unchanged")
			assert.Equal(t, "web_search_call", input[2]["type"])
			// The message and the call went out after the reasoning item, so
			// they go back with their ids, which pair them with it.
			assert.JSONEq(t, `{"type":"message","role":"assistant","id":"msg_1","status":"completed",
				"content":[{"type":"output_text","text":"Reading the notes.","annotations":[]}]}`, jsonOf(t, input[3]))
			assert.JSONEq(t, `{"type":"function_call","id":"fc_1","call_id":"call_1","name":"read_file","arguments":"{\"path\":\"a.txt\"}"}`, jsonOf(t, input[4]))
			assert.Equal(t, map[string]any{"type": "function_call_output", "call_id": "call_1", "output": "alpha"}, input[5])
		})
	}
}

// normalise re-decodes v so that typed values compare as decoded JSON.
func normalise(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	var out any
	require.NoError(t, json.Unmarshal(b, &out))
	return out
}

func TestResponsesIncompleteAndErrors(t *testing.T) {
	t.Parallel()
	incomplete := `{"id":"resp_3","object":"response","created_at":1,"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"model":"gpt-5","output":[],"usage":{"input_tokens":1,"output_tokens":100,"total_tokens":101}}`
	failed := providertest.SSE(`event: error
data: {"type":"error","sequence_number":1,"code":"server_error","message":"The server had an error.","param":null}`)
	srv := providertest.NewRecordedServer(t, providertest.Recorded{Body: incomplete}, providertest.Recorded{Body: failed},
		providertest.Recorded{Body: responsesSSE(t, responsesDone, "alpha")})
	policy, _ := instant()
	m, err := New("openai-responses:gpt-5", spec.ModelSettings{BaseURL: srv.URL + "/v1"}, Options{Getenv: env("OPENAI_API_KEY", "k"), retry: policy})
	require.NoError(t, err)
	resp, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("hi")})
	require.NoError(t, err)
	assert.Equal(t, StopMaxTokens, resp.Choices[0].StopReason)
	resp, err = m.GenerateContent(t.Context(), []llms.MessageContent{human("hi")}, llms.WithStreamingFunc(func(context.Context, []byte) error { return nil }))
	require.NoError(t, err, "a server_error event is retried")
	assert.Equal(t, "alpha", resp.Choices[0].Content)

	assert.EqualError(t, Validate("openai-responses:gpt-5", spec.ModelSettings{Seed: ptr(1)}),
		"openai-responses does not support model_settings.seed: the Responses API has no such field; use openai-chat:")
	_, err = New("openai-responses:gpt-5", spec.ModelSettings{}, Options{Getenv: env("OPENAI_API_KEY", "k"),
		NativeTools: []NativeTool{{Kind: "web_search", Options: map[string]any{"max_uses": json.Number("2")}}}})
	assert.EqualError(t, err, "openai-responses: the Responses API's web_search takes no max_uses")
}

// A response the content filter stopped (status incomplete, reason
// content_filter) is a blocked response, not a finished answer.
func TestResponsesContentFilterIsBlocked(t *testing.T) {
	t.Parallel()
	filtered := `{"id":"resp_4","object":"response","created_at":1,"status":"incomplete","incomplete_details":{"reason":"content_filter"},"model":"gpt-5","output":[` +
		`{"id":"msg_4","type":"message","role":"assistant","status":"incomplete","content":[{"type":"output_text","text":"Here is how to","annotations":[]}]}],` +
		`"usage":{"input_tokens":1,"output_tokens":4,"total_tokens":5}}`
	srv := providertest.NewRecordedServer(t, providertest.Recorded{Body: filtered})
	policy, _ := instant()
	m, err := New("openai-responses:gpt-5", spec.ModelSettings{BaseURL: srv.URL + "/v1"}, Options{Getenv: env("OPENAI_API_KEY", "k"), retry: policy})
	require.NoError(t, err)
	resp, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("hi")})
	require.NoError(t, err)
	info, _, _ := ReadInfo(resp.Choices[0])
	assert.True(t, info.Refused, "a filtered answer is not a finished one")
	assert.Equal(t, "the response was blocked (content_filter)", info.Refusal)
}

// Every provider served through the Responses API does one tool round at its
// documented base URL with its own key.
func TestEveryResponsesProviderToolRound(t *testing.T) {
	t.Parallel()
	for _, p := range table {
		if p.api != apiResponses || p.unavailable != "" {
			continue
		}
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			srv := providertest.NewRecordedServer(t, providertest.Recorded{Body: responsesToolTurn}, providertest.Recorded{Body: responsesDone})
			policy, _ := instant()
			m, err := New(p.name+":some-model", spec.ModelSettings{}, Options{retry: policy, Transport: redirect{srv.URL},
				Getenv: env(p.keyEnvs[0], "key-"+p.name, "AZURE_OPENAI_ENDPOINT", "https://example.openai.azure.com", "AWS_REGION", "us-west-2")})
			require.NoError(t, err)
			history := []llms.MessageContent{human("What is in a.txt?")}
			resp, err := m.GenerateContent(t.Context(), history, llms.WithTools([]llms.Tool{readFileTool}))
			require.NoError(t, err)
			history = append(history, llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: turnOf(t, resp)}, result("call_1", "read_file", "alpha"))
			resp, err = m.GenerateContent(t.Context(), history, llms.WithTools([]llms.Tool{readFileTool}))
			require.NoError(t, err)
			assert.Equal(t, "alpha", resp.Choices[0].Content)
			want := map[string]string{
				"openai-responses": "/v1/responses", "azure-responses": "/openai/v1/responses", "bedrock-mantle": "/openai/v1/responses",
				"gateway/openai": "/proxy/openai/responses", "gateway/openai-responses": "/proxy/openai/responses", "gateway/responses": "/proxy/openai/responses",
			}[p.name]
			req := srv.Requests()[0]
			assert.Equal(t, want, req.Path)
			assert.Equal(t, "Bearer key-"+p.name, req.Header.Get("Authorization"))
		})
	}
}

// A tool_choice of several tools is an allowed_tools choice on both OpenAI
// APIs, each in its own shape: Chat Completions nests the mode and the
// tools under allowed_tools and each name under function; the Responses API
// puts them at the top, a tool named by name alone.
func TestAllowedToolsShapes(t *testing.T) {
	t.Parallel()
	writeFile := llms.Tool{Type: "function", Function: &llms.FunctionDefinition{Name: "write_file", Description: "Write a file.",
		Parameters: map[string]any{"type": "object", "properties": map[string]any{}}}}
	tools := []llms.Tool{readFileTool, writeFile}
	choice := &spec.ToolChoice{Mode: "required", Tools: []string{"read_file", "write_file"}}
	chatDone := `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`
	tests := []struct {
		ref, body, want string
	}{
		{"openai:gpt-5", chatDone,
			`{"type":"allowed_tools","allowed_tools":{"mode":"required","tools":[{"type":"function","function":{"name":"read_file"}},{"type":"function","function":{"name":"write_file"}}]}}`},
		{"openai-responses:gpt-5", responsesDone,
			`{"type":"allowed_tools","mode":"required","tools":[{"type":"function","name":"read_file"},{"type":"function","name":"write_file"}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.ref, func(t *testing.T) {
			t.Parallel()
			srv := providertest.NewRecordedServer(t, providertest.Recorded{Body: tt.body})
			m := chatModelAt(t, srv, tt.ref, spec.ModelSettings{ToolChoice: choice})
			_, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("hi")}, llms.WithTools(tools))
			require.NoError(t, err)
			assert.JSONEq(t, tt.want, jsonOf(t, srv.Requests()[0].JSON()["tool_choice"]))
		})
	}
}

// A Response that failed (status "failed" and its error), or a 200 whose
// body is an error, is a failed request naming the provider's message, not
// an empty answer; a failure that means "try again" is retried.
func TestResponsesErrorInSuccessfulAnswer(t *testing.T) {
	t.Parallel()
	failed := `{"id":"resp_f","object":"response","created_at":1,"status":"failed","model":"gpt-5","output":[],` +
		`"error":{"code":"server_error","message":"The model failed to generate a response."},"incomplete_details":null,"usage":null}`
	rateLimited := `{"id":"resp_r","object":"response","created_at":1,"status":"failed","model":"gpt-5","output":[],` +
		`"error":{"code":"rate_limit_exceeded","message":"Rate limit reached for gpt-5 on tokens per min (TPM)."},"usage":null}`
	refused := `{"error":{"message":"Invalid prompt: your prompt was flagged as potentially violating our usage policy.","type":"invalid_request_error","param":null,"code":"invalid_prompt"}}`
	for _, tc := range []struct {
		name      string
		first     string
		wantError string
	}{
		{name: "failed, server_error", first: failed},
		{name: "failed, rate_limit_exceeded", first: rateLimited},
		{name: "an error body", first: refused,
			wantError: "openai-responses: HTTP 200: Invalid prompt: your prompt was flagged as potentially violating our usage policy."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			bodies := []providertest.Recorded{{Body: tc.first}}
			if tc.wantError == "" {
				bodies = append(bodies, providertest.Recorded{Body: responsesDone})
			}
			srv := providertest.NewRecordedServer(t, bodies...)
			var told []RetryInfo
			policy, _ := instant()
			m, err := New("openai-responses:gpt-5", spec.ModelSettings{BaseURL: srv.URL + "/v1"}, Options{
				Getenv: env("OPENAI_API_KEY", "k"), retry: policy, OnRetry: func(r RetryInfo) { told = append(told, r) }})
			require.NoError(t, err)
			resp, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("hi")})
			if tc.wantError != "" {
				require.Error(t, err, "an answer came instead: %+v", resp)
				assert.Equal(t, tc.wantError, err.Error())
				assert.Len(t, srv.Requests(), 1)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, "alpha", text(resp))
			assert.Len(t, told, 1)
			assert.Len(t, srv.Requests(), 2)
		})
	}
}

// openai_previous_response_id: auto continues from the latest response of
// the conversation: the request names its id and sends only what came after
// it (the instructions still go, as the API does not carry them over); with
// no response yet, no id is sent. "auto" itself is never an id to send.
func TestResponsesPreviousResponseIDAuto(t *testing.T) {
	t.Parallel()
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "json", true: "sse"}[stream], func(t *testing.T) {
			t.Parallel()
			first, second := responsesToolTurn, responsesDone
			opts := []llms.CallOption{llms.WithTools([]llms.Tool{readFileTool})}
			if stream {
				first, second = responsesSSE(t, first, "Reading the notes."), responsesSSE(t, second, "alpha")
				opts = append(opts, streamOn)
			}
			srv := providertest.NewRecordedServer(t, providertest.Recorded{Body: first}, providertest.Recorded{Body: second})
			m := chatModelAt(t, srv, "openai-responses:gpt-5", spec.ModelSettings{Provider: map[string]any{"openai_previous_response_id": "auto"}})
			history := []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeSystem, "Be brief."), human("What is in a.txt?")}
			resp, err := m.GenerateContent(t.Context(), history, opts...)
			require.NoError(t, err)
			history = append(history, llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: turnOf(t, resp)}, result("call_1", "read_file", "alpha"))
			_, err = m.GenerateContent(t.Context(), history, opts...)
			require.NoError(t, err)

			reqs := srv.Requests()
			require.Len(t, reqs, 2)
			body := reqs[0].JSON()
			assert.NotContains(t, body, "previous_response_id")
			assert.Len(t, body["input"], 1)
			body = reqs[1].JSON()
			assert.Equal(t, "resp_1", body["previous_response_id"])
			assert.Equal(t, "Be brief.", body["instructions"])
			assert.JSONEq(t, `[{"type":"function_call_output","call_id":"call_1","output":"alpha"}]`, jsonOf(t, body["input"]))
		})
	}
}

// With openai_background the API answers at once with a queued response:
// it is fetched again until it is done, and its answer read, rather than
// the queued one's empty output taken as the answer.
func TestResponsesBackgroundPolled(t *testing.T) {
	t.Parallel()
	queued := `{"id":"resp_bg","object":"response","created_at":1,"status":"queued","background":true,"model":"o3-pro","output":[],"usage":null}`
	inProgress := `{"id":"resp_bg","object":"response","created_at":1,"status":"in_progress","background":true,"model":"o3-pro","output":[],"usage":null}`
	done := `{"id":"resp_bg","object":"response","created_at":1,"status":"completed","background":true,"model":"o3-pro","output":[
 {"id":"msg_bg","type":"message","role":"assistant","status":"completed","content":[{"type":"output_text","text":"a long story","annotations":[]}]}],
"usage":{"input_tokens":5,"output_tokens":3,"total_tokens":8}}`
	srv := providertest.NewRecordedServer(t, providertest.Recorded{Body: queued}, providertest.Recorded{Body: inProgress}, providertest.Recorded{Body: done})
	policy, waits := instant()
	m := backgroundModel(t, srv.URL, "k", policy)
	resp, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("Write me a very long story")})
	require.NoError(t, err)
	assert.Equal(t, "a long story", text(resp))
	assert.Equal(t, 3, resp.Choices[0].GenerationInfo[InfoOutputTokens])
	reqs := srv.Requests()
	require.Len(t, reqs, 3)
	assert.Equal(t, "POST /v1/responses", reqs[0].Method+" "+reqs[0].Path)
	assert.Equal(t, true, reqs[0].JSON()["background"])
	assert.Equal(t, "GET /v1/responses/resp_bg", reqs[1].Method+" "+reqs[1].Path)
	assert.Equal(t, "GET /v1/responses/resp_bg", reqs[2].Method+" "+reqs[2].Path)
	assert.Len(t, waits.recorded(), 2, "a wait before each fetch")
}

// A run that ends while its background response is queued or in progress
// asks OpenAI to cancel the response, which would otherwise run on (and be
// billed) with no one to read it, under a context of its own, and still
// fails with the interruption, whatever the cancel's answer.
func TestResponsesBackgroundCancelledWhenTheRunEnds(t *testing.T) {
	t.Parallel()
	const (
		queued    = `{"id":"resp_bg","object":"response","created_at":1,"status":"queued","background":true,"model":"o3-pro","output":[],"usage":null}`
		running   = `{"id":"resp_bg","object":"response","created_at":1,"status":"in_progress","background":true,"model":"o3-pro","output":[],"usage":null}`
		cancelled = `{"id":"resp_bg","object":"response","created_at":1,"status":"cancelled","background":true,"model":"o3-pro","output":[],"usage":null}`
		failed    = `{"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}`
	)
	tests := []struct {
		name string
		// endWhile is where the run ends: "wait" before a fetch, or "fetch"
		// while one is in flight.
		endWhile     string
		cancelStatus int
		cancelBody   string
		requests     []string
	}{
		{"waiting", "wait", http.StatusOK, cancelled,
			[]string{"POST /v1/responses", "POST /v1/responses/resp_bg/cancel"}},
		{"fetching", "fetch", http.StatusOK, cancelled,
			[]string{"POST /v1/responses", "GET /v1/responses/resp_bg", "POST /v1/responses/resp_bg/cancel"}},
		{"cancel fails", "wait", http.StatusInternalServerError, failed,
			[]string{"POST /v1/responses", "POST /v1/responses/resp_bg/cancel"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, interrupt := context.WithCancel(t.Context())
			defer interrupt()
			srv, requests := recordingServer(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				switch r.Method + " " + r.URL.Path {
				case "POST /v1/responses":
					_, _ = io.WriteString(w, queued)
				case "GET /v1/responses/resp_bg":
					if tt.endWhile == "fetch" {
						interrupt()
					}
					_, _ = io.WriteString(w, running)
				case "POST /v1/responses/resp_bg/cancel":
					w.WriteHeader(tt.cancelStatus)
					_, _ = io.WriteString(w, tt.cancelBody)
				default:
					http.NotFound(w, r)
				}
			})
			policy, _ := instant()
			policy.sleep = func(ctx context.Context, d time.Duration) error {
				if d == backgroundPoll && tt.endWhile == "wait" {
					interrupt()
				}
				return ctx.Err()
			}
			m := backgroundModel(t, srv.URL, "sk-test-key", policy)
			_, err := m.GenerateContent(ctx, []llms.MessageContent{human("Write me a very long story")})
			require.ErrorIs(t, err, context.Canceled)
			assert.Equal(t, "openai-responses: context canceled", err.Error(), "the interruption, as before")

			got, last := requests()
			assert.Equal(t, tt.requests, got, "one cancel, not retried")
			assert.Equal(t, "Bearer sk-test-key", last.Header.Get("Authorization"))
		})
	}
}

// A background response whose fetch fails for good is given up on: it is
// cancelled at OpenAI too, and the fetch's error is the request's.
func TestResponsesBackgroundCancelledWhenItsFetchFails(t *testing.T) {
	t.Parallel()
	srv, requests := recordingServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.Method + " " + r.URL.Path {
		case "POST /v1/responses":
			_, _ = io.WriteString(w, `{"id":"resp_bg","object":"response","created_at":1,"status":"queued","background":true,"model":"o3-pro","output":[],"usage":null}`)
		case "GET /v1/responses/resp_bg":
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"error":{"message":"Invalid response id.","type":"invalid_request_error","param":null,"code":null}}`)
		default:
			_, _ = io.WriteString(w, bgCancelled)
		}
	})
	policy, _ := instant()
	m := backgroundModel(t, srv.URL, "sk-test-key", policy)
	_, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("Write me a very long story")})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Invalid response id.")
	got, _ := requests()
	assert.Equal(t, []string{"POST /v1/responses", "GET /v1/responses/resp_bg", "POST /v1/responses/resp_bg/cancel"}, got)
}

// A streamed background response whose stream breaks before it ends is
// given up on: it is cancelled, and the break is the request's error.
func TestResponsesBackgroundStreamCancelledWhenItBreaks(t *testing.T) {
	t.Parallel()
	srv, requests := recordingServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.Method + " " + r.URL.Path {
		case "POST /v1/responses":
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, providertest.SSE(
				bgCreatedEvent))
		default:
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, bgCancelled)
		}
	})
	policy, _ := instant()
	policy.max = 0
	m := backgroundModel(t, srv.URL, "sk-test-key", policy)
	_, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("Write me a very long story")},
		llms.WithStreamingFunc(func(context.Context, []byte) error { return nil }))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the stream ended before response.completed")
	got, _ := requests()
	assert.Equal(t, []string{"POST /v1/responses", "POST /v1/responses/resp_bg/cancel"}, got)
}

// A streamed background response runs on at OpenAI when the stream is cut:
// a run that ends while reading it asks OpenAI to cancel it too.
func TestResponsesBackgroundStreamCancelledWhenTheRunEnds(t *testing.T) {
	t.Parallel()
	ctx, interrupt := context.WithCancel(t.Context())
	defer interrupt()
	srv, requests := recordingServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.Method + " " + r.URL.Path {
		case "POST /v1/responses":
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, providertest.SSE(
				bgCreatedEvent,
				`event: response.in_progress
data: {"type":"response.in_progress","sequence_number":1,"response":{"id":"resp_bg","object":"response","created_at":1,"status":"in_progress","background":true,"model":"o3-pro","output":[],"usage":null}}`,
				`event: response.output_text.delta
data: {"type":"response.output_text.delta","sequence_number":2,"item_id":"msg_bg","output_index":0,"content_index":0,"delta":"Once upon"}`))
			w.(http.Flusher).Flush()
			<-r.Context().Done() // the rest of a long story
		case "POST /v1/responses/resp_bg/cancel":
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, bgCancelled)
		default:
			http.NotFound(w, r)
		}
	})
	policy, _ := instant()
	m := backgroundModel(t, srv.URL, "sk-test-key", policy)
	_, err := m.GenerateContent(ctx, []llms.MessageContent{human("Write me a very long story")},
		llms.WithStreamingFunc(func(context.Context, []byte) error { interrupt(); return nil }))
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, "openai-responses: context canceled", err.Error())

	got, last := requests()
	assert.Equal(t, []string{"POST /v1/responses", "POST /v1/responses/resp_bg/cancel"}, got)
	assert.Equal(t, "Bearer sk-test-key", last.Header.Get("Authorization"))
}

// recordingServer serves handle and notes each request: requests returns
// their methods and paths, in order, and the last one.
func recordingServer(t *testing.T, handle http.HandlerFunc) (*httptest.Server, func() ([]string, *http.Request)) {
	t.Helper()
	var (
		mu   sync.Mutex
		seen []*http.Request
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Clone(context.Background()))
		mu.Unlock()
		handle(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, func() ([]string, *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		var got []string
		for _, r := range seen {
			got = append(got, r.Method+" "+r.URL.Path)
		}
		require.NotEmpty(t, seen)
		return got, seen[len(seen)-1]
	}
}

// backgroundModel is an openai-responses model with openai_background on,
// served at url, with the API key key and the retry policy policy.
func backgroundModel(t *testing.T, url, key string, policy *retryPolicy) *Model {
	t.Helper()
	m, err := New("openai-responses:o3-pro", spec.ModelSettings{BaseURL: url + "/v1", Provider: map[string]any{"openai_background": true}},
		Options{Getenv: env("OPENAI_API_KEY", key), retry: policy})
	require.NoError(t, err)
	return m
}

// bgCreatedEvent opens the stream of a background response; bgCancelled is
// the response a cancel returns.
const (
	bgCreatedEvent = `event: response.created
data: {"type":"response.created","sequence_number":0,"response":{"id":"resp_bg","object":"response","created_at":1,"status":"queued","background":true,"model":"o3-pro","output":[],"usage":null}}`
	bgCancelled = `{"id":"resp_bg","object":"response","created_at":1,"status":"cancelled","background":true,"model":"o3-pro","output":[],"usage":null}`
)
