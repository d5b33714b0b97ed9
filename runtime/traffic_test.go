package runtime

// Runs against streams and bodies in the shapes real providers send when
// they stray from the common path: Groq's tool_use_failed inside a stream.

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/runtime/providers/providertest"
	"github.com/agentspec/agentspec/spec"
)

// groqChunk is a Groq chat.completion.chunk event with the given choice.
func groqChunk(choice string) string {
	return `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1764770000,"model":"llama-3.3-70b-versatile","system_fingerprint":"fp_1","choices":[` + choice + `],"x_groq":{"id":"req_1"}}`
}

// A streamed run whose stream reports tool_use_failed (as an error event,
// or as a 400 before the stream) retries with the model told what it
// wrote, as the non-streamed 400 does.
func TestRunStreamedToolUseFailedIsCorrectable(t *testing.T) {
	t.Parallel()
	errorBody := `{"error":{"message":"Failed to call a function. Please adjust your prompt. See 'failed_generation' for more details.","type":"invalid_request_error","code":"tool_use_failed","failed_generation":"<function=read_file>{path: a.md}</function>","status_code":400}}`
	call := providertest.SSE(
		groqChunk(`{"index":0,"delta":{"role":"assistant","content":null},"logprobs":null,"finish_reason":null}`),
		groqChunk(`{"index":0,"delta":{"tool_calls":[{"id":"call_1","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"a.md\"}"},"index":0}]},"logprobs":null,"finish_reason":null}`),
		groqChunk(`{"index":0,"delta":{},"logprobs":null,"finish_reason":"tool_calls"}`),
		`data: [DONE]`)
	done := providertest.SSE(
		groqChunk(`{"index":0,"delta":{"role":"assistant","content":"notes"},"logprobs":null,"finish_reason":null}`),
		groqChunk(`{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}`),
		`data: [DONE]`)
	failures := map[string]providertest.Recorded{
		"error event": {Body: providertest.SSE(
			groqChunk(`{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}`),
			`data: `+errorBody)},
		"400 before the stream": {Status: 400, Body: errorBody},
	}
	for name, failed := range failures {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := providertest.NewRecordedServer(t, failed, providertest.Recorded{Body: call}, providertest.Recorded{Body: done})
			read := &echoTool{name: "read_file"}
			var rec recorder
			s := newSpec(func(s *spec.Spec) {
				s.Model, s.ModelSettings.BaseURL = "groq:llama-3.3-70b-versatile", srv.URL+"/openai/v1"
			})
			var streamed strings.Builder
			res, err := runRecorded(t, srv, s, "GROQ_API_KEY", WithCapabilities(toolCaps{read}), WithListener(rec.listen),
				WithStreaming(func(_ context.Context, text string) error { streamed.WriteString(text); return nil }))
			require.NoError(t, err)
			assert.Equal(t, "notes", res.Output)
			assert.Equal(t, []string{`{"path":"a.md"}`}, read.Calls())
			retries := eventsOf[Retry](&rec)
			require.Len(t, retries, 1)
			assert.Equal(t, RetryTool, retries[0].Type)
			assert.Contains(t, retries[0].Message, "{path: a.md}")
			var body struct {
				Messages []map[string]any `json:"messages"`
			}
			require.NoError(t, json.Unmarshal(srv.Requests()[1].Body, &body))
			last := body.Messages[len(body.Messages)-1]
			assert.Equal(t, "user", last["role"])
			assert.Contains(t, last["content"], "could not be parsed")
		})
	}
}
