package providertest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// post sends body to the server's endpoint with credentials and returns the
// status and the error message of the reply, if any.
func post(t *testing.T, s *Server, body string) (int, string) {
	t.Helper()
	endpoint := "/chat/completions"
	if _, ok := s.proto.(anthropic); ok {
		endpoint = "/messages"
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, s.BaseURL()+endpoint, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer k")
	req.Header.Set("X-Api-Key", "k")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.Unmarshal(raw, &e)
	return resp.StatusCode, e.Error.Message
}

func TestOpenAIValidation(t *testing.T) {
	t.Parallel()
	const call = `{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]}`
	tests := []struct {
		name, body string
		want       string // "" for a valid request
	}{
		{"plain", `{"messages":[{"role":"user","content":"hi"}]}`, ""},
		{"answered call", `{"messages":[{"role":"user","content":"hi"},` + call + `,{"role":"tool","tool_call_id":"c1","content":"x"}]}`, ""},
		{"no messages", `{"messages":[]}`, "Invalid 'messages': empty array."},
		{"tool without call", `{"messages":[{"role":"user","content":"hi"},{"role":"tool","tool_call_id":"c1","content":"x"}]}`,
			"Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'."},
		{"unanswered call", `{"messages":[{"role":"user","content":"hi"},` + call + `,{"role":"user","content":"?"}]}`,
			"The following tool_call_ids did not have response messages: c1"},
		{"call left last", `{"messages":[{"role":"user","content":"hi"},` + call + `]}`,
			"The following tool_call_ids did not have response messages: c1"},
		{"call without type", `{"messages":[{"role":"user","content":"hi"},` + strings.Replace(call, `"type":"function",`, `"type":"",`, 1) + `]}`,
			"Invalid value: ''. Supported values are: 'function'. (messages[1].tool_calls[0].type)"},
		{"tool without name", `{"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{}}]}`,
			"Missing required parameter: 'tools[0].function.name'."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := NewOpenAIServer(t, Text("ok"))
			status, msg := post(t, s, tt.body)
			if tt.want == "" {
				assert.Equal(t, http.StatusOK, status, msg)
				assert.Equal(t, 0, s.Remaining())
				return
			}
			assert.Equal(t, http.StatusBadRequest, status)
			assert.Contains(t, msg, tt.want)
			assert.Equal(t, 1, s.Remaining(), "a rejected request consumes no reply")
		})
	}
}

func TestAnthropicValidation(t *testing.T) {
	t.Parallel()
	const use = `{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":{}}]}`
	tests := []struct {
		name, body string
		want       string
	}{
		{"plain", `{"messages":[{"role":"user","content":"hi"}]}`, ""},
		{"split turns are merged as the API does", `{"messages":[{"role":"user","content":"hi"},` +
			`{"role":"assistant","content":[{"type":"text","text":"Let me see."}]},` + use + `,` +
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"x"}]}]}`, ""},
		{"no input schema", `{"messages":[{"role":"user","content":"hi"}],"tools":[{"name":"f"}]}`, "tools.0.input_schema: Field required"},
		{"assistant first", `{"messages":[` + use + `]}`, `messages: first message must use the "user" role`},
		{"empty text", `{"messages":[{"role":"user","content":[{"type":"text","text":""}]}]}`, "messages: text content blocks must be non-empty"},
		{"null input", `{"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":null}]}]}`,
			"messages.1.content.0.tool_use.input: Input should be a valid dictionary"},
		{"result without use", `{"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t9","content":"x"}]}]}`,
			"messages.0.content.0: unexpected `tool_use_id` found in `tool_result` blocks: t9."},
		{"use without result", `{"messages":[{"role":"user","content":"hi"},` + use + `,{"role":"user","content":"and?"}]}`,
			"messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: t1."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := NewAnthropicServer(t, Text("ok"))
			status, msg := post(t, s, tt.body)
			if tt.want == "" {
				assert.Equal(t, http.StatusOK, status, msg)
				return
			}
			assert.Equal(t, http.StatusBadRequest, status)
			assert.Contains(t, msg, tt.want)
		})
	}
}

func TestAuthAndRoutes(t *testing.T) {
	t.Parallel()
	for name, s := range map[string]*Server{"openai": NewOpenAIServer(t), "anthropic": NewAnthropicServer(t)} {
		resp, err := http.Post(s.BaseURL()+"/chat/completions", "application/json", strings.NewReader("{}"))
		require.NoError(t, err)
		resp.Body.Close()
		if name == "openai" {
			assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, name)
		} else {
			assert.Equal(t, http.StatusNotFound, resp.StatusCode, name)
		}
		assert.Len(t, s.Requests(), 1, "rejected requests are recorded too")
	}
}

func TestScriptedErrorsAndHeaders(t *testing.T) {
	t.Parallel()
	s := NewAnthropicServer(t, Fail(529, "Overloaded").WithHeader("Retry-After", "3"))
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, s.BaseURL()+"/messages",
		strings.NewReader(`{"messages":[{"role":"user","content":"hi"}]}`))
	require.NoError(t, err)
	req.Header.Set("X-Api-Key", "k")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Equal(t, 529, resp.StatusCode)
	assert.Equal(t, "3", resp.Header.Get("Retry-After"))
	assert.JSONEq(t, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, string(body))
}

// reporter catches the errors a server reports against its test.
type reporter struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (r *reporter) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func (r *reporter) reported() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.errs...)
}

func TestRunningOutOfRepliesFailsTheTest(t *testing.T) {
	t.Parallel()
	r := &reporter{TB: t}
	s := NewOpenAIServer(r)
	status, _ := post(t, s, `{"messages":[{"role":"user","content":"hi"}]}`)
	assert.Equal(t, http.StatusInternalServerError, status)
	assert.Equal(t, []string{"providertest: request 1 has no scripted reply left"}, r.reported())

	s.Push(Text("late"))
	status, _ = post(t, s, `{"messages":[{"role":"user","content":"hi"}]}`)
	assert.Equal(t, http.StatusOK, status)
}

// The Responses server holds a replayed conversation to the items it
// returned, as the API does: a reasoning item and the item after it go
// back together, by id, or neither does; a reasoning item of a response
// not stored comes back only with its encrypted_content.
func TestResponsesValidation(t *testing.T) {
	t.Parallel()
	const (
		rs      = `{"id":"rs_1","type":"reasoning","summary":[]}`
		fc      = `{"id":"fc_1","type":"function_call","call_id":"call_1","name":"f","arguments":"{}"}`
		bareFC  = `{"type":"function_call","call_id":"call_1","name":"f","arguments":"{}"}`
		output  = `{"type":"function_call_output","call_id":"call_1","output":"x"}`
		user    = `{"role":"user","content":"hi"}`
		rsSent  = `{"id":"rs_2","type":"reasoning","summary":[],"encrypted_content":"gAAAA-2"}`
		rsBare  = `{"id":"rs_2","type":"reasoning","summary":[]}`
		msgSent = `{"id":"msg_2","type":"message","role":"assistant","status":"completed","content":[{"type":"output_text","text":"ok","annotations":[]}]}`
	)
	api := &responsesAPI{items: map[string]outputItem{
		"rs_1":  {typ: "reasoning", stored: true, following: "fc_1"},
		"fc_1":  {typ: "function_call", stored: true, reasoning: "rs_1"},
		"rs_2":  {typ: "reasoning", following: "msg_2"},
		"msg_2": {typ: "message", reasoning: "rs_2"},
	}}
	tests := []struct {
		name, input, want string
	}{
		{"paired", user + "," + rs + "," + fc + "," + output, ""},
		{"neither", user + "," + bareFC + "," + output, ""},
		{"reasoning without its following item", user + "," + rs + "," + bareFC + "," + output,
			"Item 'rs_1' of type 'reasoning' was provided without its required following item."},
		{"call without its reasoning item", user + "," + fc + "," + output,
			"Item 'fc_1' of type 'function_call' was provided without its required 'reasoning' item: 'rs_1'."},
		{"output without its call", user + "," + output, "No tool call found for function call output with call_id call_1."},
		{"not stored, encrypted", user + "," + rsSent + "," + msgSent, ""},
		{"not stored, by id", user + "," + rsBare + "," + msgSent,
			"Item with id 'rs_2' not found. Items are not persisted when `store` is set to false. Try again with `store` set to true, or remove this item from your input."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var req map[string]any
			require.NoError(t, json.Unmarshal([]byte(`{"model":"m","input":[`+tt.input+`]}`), &req))
			assert.Equal(t, tt.want, api.validate(req))
		})
	}
}

// The Claude on Vertex AI stand-in refuses what Vertex AI refuses: a body
// naming its model or lacking anthropic_version vertex-2023-10-16, a
// request without the access token, a path of another publisher.
func TestVertexClaudeRefusals(t *testing.T) {
	t.Parallel()
	s := NewVertexClaudeServer(t, "proj", "us-east5", Text("ok"))
	models := s.URL + "/v1/projects/proj/locations/us-east5/publishers/"
	send := func(url, token, body string) (int, string) {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var e struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&e))
		return resp.StatusCode, e.Error.Message
	}
	const hi = `"messages":[{"role":"user","content":"hi"}]`
	claude := models + "anthropic/models/claude-sonnet-4-5@20250929:rawPredict"
	for _, tt := range []struct {
		url, token, body string
		status           int
		want             string
	}{
		{claude, s.AccessToken, `{"model":"claude-sonnet-4-5",` + hi + `,"anthropic_version":"vertex-2023-10-16"}`, 400, "model: Extra inputs are not permitted"},
		{claude, s.AccessToken, `{` + hi + `}`, 400, "anthropic_version: Input should be 'vertex-2023-10-16'"},
		{claude, "sk-ant", `{` + hi + `,"anthropic_version":"vertex-2023-10-16"}`, 401, "Expected OAuth 2 access token"},
		{models + "google/models/claude-sonnet-4-5:rawPredict", s.AccessToken, `{` + hi + `,"anthropic_version":"vertex-2023-10-16"}`, 404, "no route"},
	} {
		status, msg := send(tt.url, tt.token, tt.body)
		assert.Equal(t, tt.status, status, tt.want)
		assert.Contains(t, msg, tt.want)
	}
	status, _ := send(claude, s.AccessToken, `{`+hi+`,"anthropic_version":"vertex-2023-10-16"}`)
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, 0, s.Remaining())
}
