package runtime

// Runs against streams and bodies in the shapes real providers send when
// they stray from the common path: Groq's tool_use_failed inside a stream,
// Snowflake Cortex's streams without a finish_reason, DeepSeek's reasoning
// across several tool rounds, Claude's text that begins with newlines,
// server tool blocks and cited text.

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

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
			assert.Equal(t, 3, res.Usage.Requests)
			assert.Equal(t, 3, res.Usage.RequestsWithoutUsage, "the error reports no usage of what the model wrote, nor do the streams")
			assert.True(t, eventsOf[ModelResponse](&rec)[0].NoUsage)
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

// deepSeekTurn is a DeepSeek thinking-mode turn, as a completion or as its
// stream: reasoning_content, then one read_file call or the answer.
func deepSeekTurn(n int, stream bool, reasoning, callID, answer string) string {
	id := fmt.Sprintf("ds-%d", n)
	chunk := func(delta, finish string) string {
		f := "null"
		if finish != "" {
			f = `"` + finish + `"`
		}
		return `data: {"id":"` + id + `","object":"chat.completion.chunk","created":1764770000,"model":"deepseek-reasoner","system_fingerprint":"fp_ds","choices":[{"index":0,"delta":` + delta + `,"logprobs":null,"finish_reason":` + f + `}]}`
	}
	usage := `{"prompt_tokens":40,"completion_tokens":20,"total_tokens":60,"prompt_cache_hit_tokens":32,"prompt_cache_miss_tokens":8,"completion_tokens_details":{"reasoning_tokens":15}}`
	r, _ := json.Marshal(reasoning)
	args := `{"path":"` + callID + `.md"}`
	a, _ := json.Marshal(args)
	t, _ := json.Marshal(answer)
	if !stream {
		msg := `{"role":"assistant","content":` + string(t) + `,"reasoning_content":` + string(r)
		finish := "stop"
		if callID != "" {
			msg += `,"tool_calls":[{"index":0,"id":"` + callID + `","type":"function","function":{"name":"read_file","arguments":` + string(a) + `}}]`
			finish = "tool_calls"
		}
		return `{"id":"` + id + `","object":"chat.completion","created":1764770000,"model":"deepseek-reasoner","choices":[{"index":0,"message":` + msg +
			`},"logprobs":null,"finish_reason":"` + finish + `"}],"usage":` + usage + `}`
	}
	events := []string{chunk(`{"role":"assistant","content":null,"reasoning_content":""}`, ""),
		chunk(`{"content":null,"reasoning_content":`+string(r)+`}`, "")}
	finish := "stop"
	if callID != "" {
		finish = "tool_calls"
		events = append(events,
			chunk(`{"content":"","reasoning_content":null}`, ""),
			chunk(`{"tool_calls":[{"index":0,"id":"`+callID+`","type":"function","function":{"name":"read_file","arguments":""}}]}`, ""),
			chunk(`{"tool_calls":[{"index":0,"function":{"arguments":`+string(a)+`}}]}`, ""))
	} else {
		events = append(events, chunk(`{"content":`+string(t)+`,"reasoning_content":null}`, ""))
	}
	events = append(events, chunk(`{"content":"","reasoning_content":null}`, finish),
		`data: {"id":"`+id+`","object":"chat.completion.chunk","created":1764770000,"model":"deepseek-reasoner","system_fingerprint":"fp_ds","choices":[],"usage":`+usage+`}`,
		`data: [DONE]`)
	return providertest.SSE(events...)
}

// DeepSeek's thinking mode through a whole run of two tool rounds and an
// answer: every assistant message with tool calls carries its own
// reasoning_content in every later request, streamed or not.
func TestRunDeepSeekReasoningThroughToolRounds(t *testing.T) {
	t.Parallel()
	reasonings := []string{"I need a.md first.", "a.md names b.md; read it.", "Both read; answer."}
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprint("stream=", stream), func(t *testing.T) {
			t.Parallel()
			srv := providertest.NewRecordedServer(t,
				providertest.Recorded{Body: deepSeekTurn(0, stream, reasonings[0], "a", "")},
				providertest.Recorded{Body: deepSeekTurn(1, stream, reasonings[1], "b", "")},
				providertest.Recorded{Body: deepSeekTurn(2, stream, reasonings[2], "", "alpha, beta")})
			s := newSpec(func(s *spec.Spec) {
				s.Model, s.ModelSettings.BaseURL = "deepseek:deepseek-reasoner", srv.URL+"/v1"
				s.ModelSettings.Thinking = &spec.Thinking{Enabled: true}
			})
			opts := []Option{WithCapabilities(toolCaps{&echoTool{name: "read_file"}})}
			if stream {
				opts = append(opts, WithStreaming(func(context.Context, string) error { return nil }))
			}
			res, err := runRecorded(t, srv, s, "DEEPSEEK_API_KEY", opts...)
			require.NoError(t, err)
			assert.Equal(t, "alpha, beta", res.Output)
			reqs := srv.Requests()
			require.Len(t, reqs, 3)
			for n, req := range reqs {
				var body struct {
					Messages []map[string]any `json:"messages"`
				}
				require.NoError(t, json.Unmarshal(req.Body, &body))
				got := []any{}
				for _, msg := range body.Messages {
					if msg["role"] == "assistant" {
						require.Contains(t, msg, "tool_calls", "request %d", n)
						got = append(got, msg["reasoning_content"])
					}
				}
				want := []any{}
				for _, r := range reasonings[:n] {
					want = append(want, r)
				}
				assert.Equal(t, want, got, "request %d: each assistant message with calls carries its own reasoning", n)
			}
		})
	}
}

// With adaptive thinking, Claude's text often begins with newlines: the
// answer, the streamed text and the history keep every one of them.
func TestRunAnthropicTextKeepsLeadingNewlines(t *testing.T) {
	t.Parallel()
	const answer = "\n\n\n2 + 2 = 4"
	message := `{"id":"msg_01Nl","type":"message","role":"assistant","model":"claude-opus-4-6","content":[` +
		`{"type":"thinking","thinking":"Simple arithmetic.","signature":"EuYBCkQYAiJAk3Q0nl"},` +
		`{"type":"text","text":"\n\n\n2 + 2 = 4"}],` +
		`"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":18,"output_tokens":24}}`
	for _, streaming := range []bool{false, true} {
		t.Run(fmt.Sprint("stream=", streaming), func(t *testing.T) {
			t.Parallel()
			body := message
			if streaming {
				body = claudeSSE(t, message)
			}
			srv := providertest.NewRecordedServer(t, providertest.Recorded{Body: body})
			s := newSpec(func(s *spec.Spec) {
				s.Model = "anthropic:claude-opus-4-6"
				s.ModelSettings.Thinking = &spec.Thinking{Enabled: true}
			})
			var streamed strings.Builder
			var opts []Option
			if streaming {
				opts = append(opts, WithStreaming(func(_ context.Context, text string) error { streamed.WriteString(text); return nil }))
			}
			res, err := runRecorded(t, srv, s, "ANTHROPIC_API_KEY", append(opts, WithInput("2+2?"))...)
			require.NoError(t, err)
			assert.Equal(t, answer, res.Output)
			if streaming {
				assert.Equal(t, answer, streamed.String())
			}
			last := res.Transcript[len(res.Transcript)-1]
			var texts []string
			for _, p := range last.Parts {
				if tc, ok := p.(llms.TextContent); ok {
					texts = append(texts, tc.Text)
				}
			}
			assert.Equal(t, []string{answer}, texts, "the history keeps the text as sent")
		})
	}
}

// Server tool blocks and a cited text block go back through the loop
// exactly as the API sent them, in order; the text the user sees is the
// text blocks joined as the SDKs' final-text helpers join them.
func TestRunAnthropicServerBlocksGoBackVerbatim(t *testing.T) {
	t.Parallel()
	blocks := []string{
		`{"type":"text","text":"I'll search for that."}`,
		`{"type":"server_tool_use","id":"srvtoolu_01WYG3","name":"web_search","input":{"query":"agentspec release"}}`,
		`{"type":"web_search_tool_result","tool_use_id":"srvtoolu_01WYG3","content":[{"type":"web_search_result","url":"https://example.com/r","title":"Release","encrypted_content":"EqgfCioIARgBIiQ3","page_age":"April 30, 2026"}]}`,
		`{"type":"text","text":"It shipped; let me check the notes.","citations":[{"type":"web_search_result_location","url":"https://example.com/r","title":"Release","encrypted_index":"Eo8BCioI","cited_text":"Released today."}]}`,
		`{"type":"tool_use","id":"toolu_01","name":"read_file","input":{"path":"notes.md"}}`,
	}
	first := `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[` + strings.Join(blocks, ",") +
		`],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":100,"output_tokens":40,"server_tool_use":{"web_search_requests":1}}}`
	answer := `{"id":"msg_2","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"Released; "},{"type":"text","text":"notes read."}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":150,"output_tokens":10}}`
	srv := providertest.NewRecordedServer(t, providertest.Recorded{Body: first}, providertest.Recorded{Body: answer})
	var rec recorder
	s := newSpec(func(s *spec.Spec) { s.Model = "anthropic:claude-sonnet-4-5" })
	res, err := runRecorded(t, srv, s, "ANTHROPIC_API_KEY", WithCapabilities(toolCaps{&echoTool{name: "read_file"}}), WithListener(rec.listen))
	require.NoError(t, err)
	assert.Equal(t, "Released; notes read.", res.Output)
	responses := eventsOf[ModelResponse](&rec)
	require.Len(t, responses, 2)
	assert.Equal(t, "I'll search for that.It shipped; let me check the notes.", responses[0].Text)

	var sent struct {
		Messages []struct {
			Role    string            `json:"role"`
			Content []json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	reqs := srv.Requests()
	require.Len(t, reqs, 2)
	require.NoError(t, json.Unmarshal(reqs[1].Body, &sent))
	require.Len(t, sent.Messages, 3)
	got := sent.Messages[1].Content
	require.Len(t, got, len(blocks))
	for i, b := range blocks {
		assert.JSONEq(t, b, string(got[i]), "block %d", i)
	}
}

// A streamed run on Snowflake Cortex, whose streams name no finish_reason:
// the tool round and the answer both end where the stream ends.
func TestRunSnowflakeStreamsWithoutFinishReason(t *testing.T) {
	t.Parallel()
	chunk := func(delta string) string {
		return `data: {"id":"c9a1","created":1764770000,"model":"claude-sonnet-4-5","choices":[{"delta":` + delta + `}],"usage":{"prompt_tokens":12,"completion_tokens":4,"total_tokens":16}}`
	}
	call := providertest.SSE(
		chunk(`{"tool_calls":[{"index":0,"id":"tooluse_abc","type":"function","function":{"name":"read_file","arguments":""}}]}`),
		chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"path\":\"a.md\"}"}}]}`))
	answer := providertest.SSE(chunk(`{"content":"a.md holds "}`), chunk(`{"content":"notes."}`), `data: [DONE]`)
	srv := providertest.NewRecordedServer(t, providertest.Recorded{Body: call}, providertest.Recorded{Body: answer})
	read := &echoTool{name: "read_file"}
	s := newSpec(func(s *spec.Spec) { s.Model, s.ModelSettings.BaseURL = "snowflake:claude-sonnet-4-5", srv.URL+"/v1" })
	var streamed strings.Builder
	res, err := runRecorded(t, srv, s, "SNOWFLAKE_TOKEN", WithCapabilities(toolCaps{read}),
		WithStreaming(func(_ context.Context, text string) error { streamed.WriteString(text); return nil }))
	require.NoError(t, err)
	assert.Equal(t, "a.md holds notes.", res.Output)
	assert.Equal(t, "a.md holds notes.", streamed.String())
	assert.Equal(t, []string{`{"path":"a.md"}`}, read.Calls())
}

// A response whose usage never came (a stream that ended after its finish
// but before its usage chunk) is counted apart: the run's token counts
// hold only what was reported, and say how many requests they leave out,
// rather than count that response's tokens as none.
func TestRunCountsResponsesWithoutUsage(t *testing.T) {
	t.Parallel()
	chunk := func(choice, usage string) string {
		return `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1764770000,"model":"gpt-4.1","choices":[` + choice + `]` + usage + `}`
	}
	// The stream's usage chunk is cut off: its finish came, its usage did not.
	call := providertest.SSE(
		chunk(`{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"a.md\"}"}}]},"finish_reason":null}`, ""),
		chunk(`{"index":0,"delta":{},"finish_reason":"tool_calls"}`, ""))
	answer := providertest.SSE(
		chunk(`{"index":0,"delta":{"role":"assistant","content":"notes"},"finish_reason":null}`, ""),
		chunk(`{"index":0,"delta":{},"finish_reason":"stop"}`, ""),
		chunk(``, `,"usage":{"prompt_tokens":40,"completion_tokens":3,"total_tokens":43}`),
		`data: [DONE]`)
	srv := providertest.NewRecordedServer(t, providertest.Recorded{Body: call}, providertest.Recorded{Body: answer})
	var rec recorder
	s := newSpec(func(s *spec.Spec) { s.Model, s.ModelSettings.BaseURL = "openai:gpt-4.1", srv.URL+"/v1" })
	res, err := runRecorded(t, srv, s, "OPENAI_API_KEY", WithCapabilities(toolCaps{&echoTool{name: "read_file"}}), WithListener(rec.listen),
		WithStreaming(func(context.Context, string) error { return nil }))
	require.NoError(t, err)
	assert.Equal(t, "notes", res.Output)
	assert.Equal(t, Usage{Requests: 2, RequestsWithoutUsage: 1, InputTokens: 40, OutputTokens: 3, ToolCalls: 1}, withoutElapsed(res.Usage))

	responses := eventsOf[ModelResponse](&rec)
	require.Len(t, responses, 2)
	assert.True(t, responses[0].NoUsage, "the first response reported no usage")
	assert.False(t, responses[1].NoUsage)
	first, err := json.Marshal(responses[0])
	require.NoError(t, err)
	assert.Contains(t, string(first), `"no_usage":true`)
	second, err := json.Marshal(responses[1])
	require.NoError(t, err)
	assert.NotContains(t, string(second), `no_usage`)

	total, err := json.Marshal(res.Usage)
	require.NoError(t, err)
	assert.Contains(t, string(total), `"requests_without_usage":1`)
}
