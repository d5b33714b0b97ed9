package providers

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/agentspec/agentspec/runtime/providers/providertest"
	"github.com/agentspec/agentspec/spec"
)

// Requests the providers' APIs refuse, and streams read wrong, found against
// their documented behaviour; each test shows the request or the result.

// lastSent is the JSON body of the last request srv got.
func lastSent(srv *providertest.RecordedServer) map[string]any {
	reqs := srv.Requests()
	return reqs[len(reqs)-1].JSON()
}

const anthropicOK = `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5",
 "content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","stop_sequence":null,
 "usage":{"input_tokens":3,"output_tokens":1}}`

func toolRound(id, name, content string) []llms.MessageContent {
	return []llms.MessageContent{
		human("list the files"),
		{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{llms.ToolCall{ID: id, Type: "function",
			FunctionCall: &llms.FunctionCall{Name: name, Arguments: `{}`}}}},
		result(id, name, content),
	}
}

// A tool that returns "" (e.g. an MCP tool whose result has no content)
// becomes {"type":"tool_result","content":[{"type":"text","text":""}]}; the
// Messages API refuses empty text blocks ("text content blocks must be non-empty").
func TestAnthropicEmptyToolResultIsNotAnEmptyBlock(t *testing.T) {
	srv := providertest.NewRecordedServer(t, providertest.Recorded{Body: anthropicOK})
	m := newModel(t, "anthropic:claude-sonnet-4-5", spec.ModelSettings{BaseURL: srv.URL}, env("ANTHROPIC_API_KEY", "sk-ant-test"))
	_, err := m.GenerateContent(t.Context(), toolRound("toolu_1", "list_files", ""), llms.WithTools([]llms.Tool{listTool}))
	require.NoError(t, err)
	msgs := lastSent(srv)["messages"].([]any)
	res := msgs[2].(map[string]any)["content"].([]any)[0].(map[string]any)
	raw, _ := json.Marshal(res)
	assert.Contains(t, string(raw), `"(empty)"`)
	for _, b := range res["content"].([]any) {
		blk := b.(map[string]any)
		if blk["type"] == "text" {
			assert.NotEmpty(t, blk["text"], "empty text block inside tool_result: the API answers 400 'text content blocks must be non-empty'")
		}
	}
}

// Only top_p is set; agentspec adds temperature (DefaultTemperature 1).
// Claude Opus 4.1+, Sonnet 4.5+ and Haiku 4.5 answer 400 "`temperature` and
// `top_p` cannot both be specified for this model. Please use only one.":
// the default is left out, and a temperature the spec sets is kept.
func TestAnthropicTopPAloneSendsNoDefaultTemperature(t *testing.T) {
	srv := providertest.NewRecordedServer(t, providertest.Recorded{Body: anthropicOK}, providertest.Recorded{Body: anthropicOK})
	m := newModel(t, "anthropic:claude-sonnet-4-5", spec.ModelSettings{BaseURL: srv.URL, TopP: ptr(0.9)}, env("ANTHROPIC_API_KEY", "sk-ant-test"))
	_, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("hi")})
	require.NoError(t, err)
	body := lastSent(srv)
	_, hasT := body["temperature"]
	_, hasP := body["top_p"]
	assert.False(t, hasT && hasP, "both temperature and top_p sent although the spec set only top_p")

	m = newModel(t, "anthropic:claude-sonnet-4-5", spec.ModelSettings{BaseURL: srv.URL, TopP: ptr(0.9), Temperature: ptr(0.2)}, env("ANTHROPIC_API_KEY", "sk-ant-test"))
	_, err = m.GenerateContent(t.Context(), []llms.MessageContent{human("hi")})
	require.NoError(t, err)
	assert.Equal(t, 0.2, lastSent(srv)["temperature"], "the spec's own temperature is sent as given")
}

func TestBedrockTopPAloneSendsNoDefaultTemperature(t *testing.T) {
	srv := providertest.NewRecordedServer(t, providertest.Recorded{Body: `{"output":{"message":{"role":"assistant","content":[{"text":"ok"}]}},
		"stopReason":"end_turn","usage":{"inputTokens":1,"outputTokens":1,"totalTokens":2},"metrics":{"latencyMs":1}}`})
	m := newModel(t, "bedrock:us.anthropic.claude-sonnet-4-5-20250929-v1:0", spec.ModelSettings{TopP: ptr(0.9)},
		env("AWS_BEARER_TOKEN_BEDROCK", "bedrock-api-key-xyz", "AWS_REGION", "us-east-1", "AWS_ENDPOINT_URL_BEDROCK_RUNTIME", srv.URL))
	_, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("hi")})
	require.NoError(t, err)
	inf := lastSent(srv)["inferenceConfig"].(map[string]any)
	_, hasT := inf["temperature"]
	_, hasP := inf["topP"]
	assert.False(t, hasT && hasP, "both temperature and topP sent to Claude although the spec set only top_p")
}

// Gemini's OpenAI-compatible endpoint streams parallel calls each whole,
// each with index 0 (and its own id). They are merged into one call with
// arguments `{"city":"Paris"}{"city":"Rome"}` and the second call is lost.
func TestStreamedParallelCallsAtOneIndex(t *testing.T) {
	sse := strings.Join([]string{
		`data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"gemini-2.5-flash","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]}}]}`,
		`data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"gemini-2.5-flash","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_b","type":"function","function":{"name":"get_time","arguments":"{\"tz\":\"CET\"}"}}]}}]}`,
		`data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"gemini-2.5-flash","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
		`data: [DONE]`, ``, ``}, "\n\n")
	srv := providertest.NewRecordedServer(t, providertest.Recorded{Body: sse})
	m := newModel(t, "google:gemini-2.5-flash", spec.ModelSettings{BaseURL: srv.URL}, env("GOOGLE_API_KEY", "AIza-test-key"))
	var out streamed
	resp, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("weather in Paris and time in CET")}, out.option(),
		llms.WithTools([]llms.Tool{readFileTool}))
	require.NoError(t, err)
	calls := resp.Choices[0].ToolCalls
	require.Len(t, calls, 2, "two calls were streamed")
	assert.Equal(t, "call_a", calls[0].ID)
	assert.Equal(t, `{"city":"Paris"}`, calls[0].FunctionCall.Arguments)
	assert.Equal(t, "call_b", calls[1].ID)
	assert.Equal(t, "get_time", calls[1].FunctionCall.Name)
	assert.Equal(t, `{"tz":"CET"}`, calls[1].FunctionCall.Arguments)
}

// Azure's reasoning deployments (o1, o3-mini, o4-mini) refuse max_tokens
// ("Use 'max_completion_tokens' instead"): from the api-version that takes
// max_completion_tokens on, and on the /v1 endpoint, that is what is sent;
// an older version gets max_tokens, which it knows.
func TestAzureMaxCompletionTokens(t *testing.T) {
	ok := providertest.Recorded{Body: `{"id":"x","object":"chat.completion","created":1,"model":"o3-mini",
		"choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`}
	srv := providertest.NewRecordedServer(t, ok, ok, ok)
	policy, _ := instant()
	for _, tc := range []struct{ endpoint, version, field string }{
		{"https://acme.openai.azure.com", "2024-12-01-preview", "max_completion_tokens"},
		{"https://acme.openai.azure.com/openai/v1", "", "max_completion_tokens"},
		{"https://acme.openai.azure.com", "2024-06-01", "max_tokens"},
	} {
		m, err := New("azure:o3-mini", spec.ModelSettings{MaxTokens: 2000}, Options{retry: policy, Transport: redirect{srv.URL},
			Getenv: env("AZURE_OPENAI_API_KEY", "azkey-123456", "AZURE_OPENAI_ENDPOINT", tc.endpoint, "OPENAI_API_VERSION", tc.version)})
		require.NoError(t, err)
		_, err = m.GenerateContent(t.Context(), []llms.MessageContent{human("hi")})
		require.NoError(t, err)
		body := lastSent(srv)
		assert.EqualValues(t, 2000, body[tc.field], "%+v", tc)
		other := map[string]string{"max_tokens": "max_completion_tokens", "max_completion_tokens": "max_tokens"}[tc.field]
		assert.Nil(t, body[other], "%+v", tc)
	}
}
