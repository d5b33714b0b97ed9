package providers

// Usage has one meaning whatever the provider, pydantic-ai's: Input is every
// input token, the cache's included (CacheRead and CacheWrite are parts of
// it), and Output every output token, reasoning included. Each wire family
// is read whole and streamed, from the usage shapes its API sends.

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/agentspec/agentspec/runtime/providers/providertest"
	"github.com/agentspec/agentspec/spec"
)

// usageOf is the usage a response carries.
func usageOf(t *testing.T, resp *llms.ContentResponse) Usage {
	t.Helper()
	require.Len(t, resp.Choices, 1)
	info, ok, _ := ReadInfo(resp.Choices[0])
	require.True(t, ok, "the response carries no usage")
	return info.Usage
}

// usageCase is one usage shape of a wire family, whole and streamed.
type usageCase struct {
	name            string
	whole, streamed string
	want            Usage
}

func runUsageCases(t *testing.T, cases []usageCase, model func(t *testing.T, srv *providertest.RecordedServer) *Model) {
	t.Helper()
	for _, tc := range cases {
		for _, stream := range []bool{false, true} {
			t.Run(tc.name+map[bool]string{false: "/whole", true: "/streamed"}[stream], func(t *testing.T) {
				t.Parallel()
				body := tc.whole
				var opts []llms.CallOption
				if stream {
					body = tc.streamed
					opts = append(opts, streamOn)
				}
				srv := providertest.NewRecordedServer(t, providertest.Recorded{Body: body})
				resp, err := model(t, srv).GenerateContent(t.Context(), []llms.MessageContent{human("hi")}, opts...)
				require.NoError(t, err)
				got := usageOf(t, resp)
				assert.Equal(t, tc.want, got)
				assert.LessOrEqual(t, got.CacheRead+got.CacheWrite, got.Input, "the cache's tokens are part of the input")
				assert.LessOrEqual(t, got.Reasoning, got.Output, "the reasoning is part of the output")
			})
		}
	}
}

// Anthropic's input_tokens leave out the tokens read from and written to
// the cache; a stream gives its totals in message_start and again, grown,
// in message_delta, which may or may not repeat the input counts.
func TestAnthropicUsage(t *testing.T) {
	t.Parallel()
	whole := func(usage string) string {
		return `{"id":"msg_u","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"ok"}],` +
			`"stop_reason":"end_turn","stop_sequence":null,"usage":` + usage + `}`
	}
	streamed := func(start, delta string) string {
		return providertest.SSE(
			`event: message_start
data: {"type":"message_start","message":{"id":"msg_u","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":`+start+`}}`,
			`event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
			`event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"ok"}}`,
			`event: content_block_stop
data: {"type":"content_block_stop","index":0}`,
			`event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":`+delta+`}`,
			`event: message_stop
data: {"type":"message_stop"}`)
	}
	cached := `{"input_tokens":120,"cache_creation_input_tokens":1000,"cache_read_input_tokens":2000,"output_tokens":80,` +
		`"output_tokens_details":{"thinking_tokens":50},"service_tier":"standard"}`
	runUsageCases(t, []usageCase{
		{name: "no cache", whole: whole(`{"input_tokens":10,"output_tokens":5}`),
			streamed: streamed(`{"input_tokens":10,"output_tokens":1}`, `{"output_tokens":5}`),
			want:     Usage{Input: 10, Output: 5}},
		{name: "cache read and written, thinking", whole: whole(cached),
			streamed: streamed(`{"input_tokens":120,"cache_creation_input_tokens":1000,"cache_read_input_tokens":2000,"output_tokens":1,"service_tier":"standard"}`,
				`{"input_tokens":120,"cache_creation_input_tokens":1000,"cache_read_input_tokens":2000,"output_tokens":80,"output_tokens_details":{"thinking_tokens":50}}`),
			want: Usage{Input: 3120, Output: 80, CacheWrite: 1000, CacheRead: 2000, Reasoning: 50}},
		{name: "cache read, delta with the output alone",
			whole:    whole(`{"input_tokens":4,"cache_creation_input_tokens":0,"cache_read_input_tokens":2048,"output_tokens":30}`),
			streamed: streamed(`{"input_tokens":4,"cache_creation_input_tokens":0,"cache_read_input_tokens":2048,"output_tokens":1}`, `{"output_tokens":30}`),
			want:     Usage{Input: 2052, Output: 30, CacheRead: 2048}},
	}, func(t *testing.T, srv *providertest.RecordedServer) *Model {
		return anthropicModelAt(t, srv, "anthropic:claude-sonnet-4-5", spec.ModelSettings{})
	})
}

// Converse's inputTokens leave out cacheReadInputTokens and
// cacheWriteInputTokens, as its totalTokens shows; a stream gives the usage
// once, in its metadata event.
func TestBedrockUsage(t *testing.T) {
	t.Parallel()
	whole := func(usage string) string {
		return `{"output":{"message":{"role":"assistant","content":[{"text":"ok"}]}},"stopReason":"end_turn","usage":` + usage + `,"metrics":{"latencyMs":420}}`
	}
	streamed := func(usage string) string {
		return eventFrames(t, [][2]string{
			{"messageStart", `{"role":"assistant"}`},
			{"contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"ok"}}`},
			{"contentBlockStop", `{"contentBlockIndex":0}`},
			{"messageStop", `{"stopReason":"end_turn"}`},
			{"metadata", `{"usage":` + usage + `,"metrics":{"latencyMs":420}}`},
		})
	}
	usageCases := []struct {
		name, usage string
		want        Usage
	}{
		{"no cache", `{"inputTokens":12,"outputTokens":9,"totalTokens":21}`, Usage{Input: 12, Output: 9}},
		{"cache read", `{"inputTokens":12,"outputTokens":85,"totalTokens":3197,"cacheReadInputTokens":3100,"cacheWriteInputTokens":0}`,
			Usage{Input: 3112, Output: 85, CacheRead: 3100}},
		{"cache written", `{"inputTokens":12,"outputTokens":85,"totalTokens":3197,"cacheReadInputTokens":0,"cacheWriteInputTokens":3100,` +
			`"cacheDetails":[{"ttl":"5m","inputTokens":3100}]}`,
			Usage{Input: 3112, Output: 85, CacheWrite: 3100}},
	}
	var cases []usageCase
	for _, c := range usageCases {
		cases = append(cases, usageCase{name: c.name, whole: whole(c.usage), streamed: streamed(c.usage), want: c.want})
	}
	runUsageCases(t, cases, func(t *testing.T, srv *providertest.RecordedServer) *Model {
		return newModel(t, claudeOnBedrock, spec.ModelSettings{BaseURL: srv.URL}, env("AWS_BEARER_TOKEN_BEDROCK", "k", "AWS_REGION", "us-east-1"))
	})
}

// Chat Completions' prompt_tokens hold the cached_tokens and its
// completion_tokens the reasoning_tokens, on OpenAI; xAI counts the
// reasoning beside completion_tokens (its total_tokens adds all three), and
// no count can hold a part larger than itself. A stream gives the usage in
// its last chunk.
func TestChatUsage(t *testing.T) {
	t.Parallel()
	whole := func(model, usage string) string {
		return `{"id":"c","object":"chat.completion","created":1,"model":"` + model + `","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":` + usage + `}`
	}
	streamed := func(model, usage string) string {
		return providertest.SSE(
			`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"`+model+`","choices":[{"index":0,"delta":{"role":"assistant","content":"ok"},"finish_reason":null}]}`,
			`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"`+model+`","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
			`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"`+model+`","choices":[],"usage":`+usage+`}`,
			`data: [DONE]`)
	}
	usageCases := []struct {
		name, ref, usage string
		want             Usage
	}{
		{"openai cached and reasoning", "openai:gpt-5",
			`{"prompt_tokens":2006,"completion_tokens":300,"total_tokens":2306,"prompt_tokens_details":{"cached_tokens":1920,"audio_tokens":0},` +
				`"completion_tokens_details":{"reasoning_tokens":192,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}`,
			Usage{Input: 2006, Output: 300, CacheRead: 1920, Reasoning: 192}},
		{"deepseek cache hit", "deepseek:deepseek-reasoner",
			`{"prompt_tokens":40,"completion_tokens":20,"total_tokens":60,"prompt_cache_hit_tokens":32,"prompt_cache_miss_tokens":8,"completion_tokens_details":{"reasoning_tokens":15}}`,
			Usage{Input: 40, Output: 20, CacheRead: 32, Reasoning: 15}},
		{"xai reasoning beside the completion", "xai:grok-3-mini",
			`{"prompt_tokens":32,"completion_tokens":9,"total_tokens":135,"prompt_tokens_details":{"text_tokens":32,"audio_tokens":0,"image_tokens":0,"cached_tokens":6},` +
				`"completion_tokens_details":{"reasoning_tokens":94,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}`,
			Usage{Input: 32, Output: 103, CacheRead: 6, Reasoning: 94}},
		{"xai reasoning model", "xai:grok-4-fast-reasoning",
			`{"prompt_tokens":279,"completion_tokens":6,"total_tokens":374,"prompt_tokens_details":{"text_tokens":279,"audio_tokens":0,"image_tokens":0,"cached_tokens":150},` +
				`"completion_tokens_details":{"reasoning_tokens":89,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0},"num_sources_used":0}`,
			Usage{Input: 279, Output: 95, CacheRead: 150, Reasoning: 89}},
		// OpenRouter's prompt_tokens hold what was read from the cache
		// (cached_tokens) and what was written to it (cache_write_tokens),
		// as its usage accounting and prompt caching pages show them.
		{"openrouter cache written", "openrouter:anthropic/claude-sonnet-4.5",
			`{"prompt_tokens":10339,"completion_tokens":60,"total_tokens":10399,"prompt_tokens_details":{"cached_tokens":0,"cache_write_tokens":10318,"audio_tokens":0},` +
				`"completion_tokens_details":{"reasoning_tokens":0},"cost":0.95,"cost_details":{"upstream_inference_cost":19},"is_byok":false}`,
			Usage{Input: 10339, Output: 60, CacheWrite: 10318}},
		{"openrouter cache read", "openrouter:anthropic/claude-sonnet-4.5",
			`{"prompt_tokens":10339,"completion_tokens":60,"total_tokens":10399,"prompt_tokens_details":{"cached_tokens":10318,"cache_write_tokens":0}}`,
			Usage{Input: 10339, Output: 60, CacheRead: 10318}},
		{"reasoning outnumbering the completion", "google:gemini-3-pro-preview",
			`{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15,"completion_tokens_details":{"reasoning_tokens":40}}`,
			Usage{Input: 10, Output: 45, Reasoning: 40}},
	}
	for _, c := range usageCases {
		model := c.ref[strings.Index(c.ref, ":")+1:]
		runUsageCases(t, []usageCase{{name: c.name, whole: whole(model, c.usage), streamed: streamed(model, c.usage), want: c.want}},
			func(t *testing.T, srv *providertest.RecordedServer) *Model {
				return chatModelAt(t, srv, c.ref, spec.ModelSettings{})
			})
	}
}

// Moonshot's Kimi API counts the tokens read from the cache in a
// cached_tokens of the usage itself (its API reference), which newer
// answers repeat in prompt_tokens_details; a stream gives the usage in the
// choice of its finishing chunk, and no usage chunk after it.
func TestMoonshotUsage(t *testing.T) {
	t.Parallel()
	const usage = `{"prompt_tokens":1336,"completion_tokens":31,"total_tokens":1367,"cached_tokens":1280}`
	chunk := func(choice string) string {
		return `data: {"id":"chatcmpl-69bb","object":"chat.completion.chunk","created":1773915177,"model":"kimi-k2-0905-preview","choices":[` + choice + `]}`
	}
	runUsageCases(t, []usageCase{
		{
			name: "cached_tokens",
			whole: `{"id":"chatcmpl-69bb","object":"chat.completion","created":1773915177,"model":"kimi-k2-0905-preview",` +
				`"choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":` + usage + `}`,
			streamed: providertest.SSE(
				chunk(`{"index":0,"delta":{"role":"assistant","content":"ok"},"finish_reason":null}`),
				chunk(`{"index":0,"delta":{},"finish_reason":"stop","usage":`+usage+`}`),
				`data: [DONE]`),
			want: Usage{Input: 1336, Output: 31, CacheRead: 1280},
		},
		{
			name: "repeated in prompt_tokens_details",
			whole: `{"id":"chatcmpl-69bb","object":"chat.completion","created":1773915177,"model":"kimi-k2-0905-preview",` +
				`"choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],` +
				`"usage":{"prompt_tokens":1336,"completion_tokens":31,"total_tokens":1367,"cached_tokens":1280,"prompt_tokens_details":{"cached_tokens":1280}}}`,
			streamed: providertest.SSE(
				chunk(`{"index":0,"delta":{"role":"assistant","content":"ok"},"finish_reason":null}`),
				chunk(`{"index":0,"delta":{},"finish_reason":"stop","usage":{"prompt_tokens":1336,"completion_tokens":31,"total_tokens":1367,"cached_tokens":1280,"prompt_tokens_details":{"cached_tokens":1280}}}`),
				`data: [DONE]`),
			want: Usage{Input: 1336, Output: 31, CacheRead: 1280},
		},
	}, func(t *testing.T, srv *providertest.RecordedServer) *Model {
		return chatModelAt(t, srv, "moonshotai:kimi-k2-0905-preview", spec.ModelSettings{})
	})
}

// The Responses API's input_tokens hold the cached_tokens and its
// output_tokens the reasoning_tokens; a stream gives them in
// response.completed.
func TestResponsesUsage(t *testing.T) {
	t.Parallel()
	whole := `{"id":"resp_u","object":"response","created_at":1,"status":"completed","model":"gpt-5","output":[
 {"id":"msg_u","type":"message","role":"assistant","status":"completed","content":[{"type":"output_text","text":"ok","annotations":[]}]}],
"usage":{"input_tokens":5200,"input_tokens_details":{"cached_tokens":4864},"output_tokens":640,"output_tokens_details":{"reasoning_tokens":512},"total_tokens":5840}}`
	// input_tokens_details also counts what was written to the cache (with
	// a 30-minute or 12-hour retention), a part of input_tokens too.
	written := `{"id":"resp_w","object":"response","created_at":1,"status":"completed","model":"gpt-5.5","output":[
 {"id":"msg_w","type":"message","role":"assistant","status":"completed","content":[{"type":"output_text","text":"ok","annotations":[]}]}],
"usage":{"input_tokens":5200,"input_tokens_details":{"cached_tokens":1024,"cache_write_tokens":4096,"cache_write_tokens_details":{"ttl_30m_tokens":4096,"ttl_12h_tokens":0}},` +
		`"output_tokens":64,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":5264}}`
	runUsageCases(t, []usageCase{
		{name: "cached and reasoning", whole: whole, streamed: responsesSSE(t, whole, "ok"),
			want: Usage{Input: 5200, Output: 640, CacheRead: 4864, Reasoning: 512}},
		{name: "cache written", whole: written, streamed: responsesSSE(t, written, "ok"),
			want: Usage{Input: 5200, Output: 64, CacheRead: 1024, CacheWrite: 4096}},
	},
		func(t *testing.T, srv *providertest.RecordedServer) *Model {
			return chatModelAt(t, srv, "openai-responses:gpt-5", spec.ModelSettings{})
		})
}

// generateContent's promptTokenCount holds the cachedContentTokenCount; the
// thoughtsTokenCount is beside candidatesTokenCount, and the
// toolUsePromptTokenCount of server tools beside promptTokenCount (its
// totalTokenCount adds all four). A stream gives totals so far in its
// chunks, the last one whole.
func TestGeminiUsage(t *testing.T) {
	t.Parallel()
	chunk := func(text, finish, usage string) string {
		c := `{"candidates":[{"content":{"role":"model","parts":[{"text":` + string(jsonValue(text)) + `}]}`
		if finish != "" {
			c += `,"finishReason":"` + finish + `"`
		}
		return c + `}],"usageMetadata":` + usage + `,"modelVersion":"gemini-2.5-pro"}`
	}
	toolUse := `{"promptTokenCount":1200,"candidatesTokenCount":50,"totalTokenCount":1630,"cachedContentTokenCount":1024,` +
		`"thoughtsTokenCount":300,"toolUsePromptTokenCount":80,"promptTokensDetails":[{"modality":"TEXT","tokenCount":1200}],` +
		`"toolUsePromptTokensDetails":[{"modality":"TEXT","tokenCount":80}]}`
	plain := `{"promptTokenCount":7,"candidatesTokenCount":3,"totalTokenCount":30,"thoughtsTokenCount":20}`
	cached := `{"promptTokenCount":1200,"candidatesTokenCount":50,"totalTokenCount":1550,"cachedContentTokenCount":1024,` +
		`"thoughtsTokenCount":300,"promptTokensDetails":[{"modality":"TEXT","tokenCount":1200}],"cacheTokensDetails":[{"modality":"TEXT","tokenCount":1024}]}`
	runUsageCases(t, []usageCase{
		{name: "thoughts", whole: chunk("ok", "STOP", plain),
			streamed: providertest.SSE("data: "+chunk("o", "", `{"promptTokenCount":7,"totalTokenCount":27,"thoughtsTokenCount":20}`),
				"data: "+chunk("k", "STOP", plain)),
			want: Usage{Input: 7, Output: 23, Reasoning: 20}},
		{name: "cached and thoughts", whole: chunk("ok", "STOP", cached),
			streamed: providertest.SSE("data: "+chunk("o", "", `{"promptTokenCount":1200,"candidatesTokenCount":1,"totalTokenCount":1501,"cachedContentTokenCount":1024,"thoughtsTokenCount":300}`),
				"data: "+chunk("k", "STOP", cached)),
			want: Usage{Input: 1200, Output: 350, CacheRead: 1024, Reasoning: 300}},
		{name: "server tool use", whole: chunk("ok", "STOP", toolUse),
			streamed: providertest.SSE("data: "+chunk("o", "", `{"promptTokenCount":1200,"candidatesTokenCount":1,"totalTokenCount":1581,"cachedContentTokenCount":1024,"thoughtsTokenCount":300,"toolUsePromptTokenCount":80}`),
				"data: "+chunk("k", "STOP", toolUse)),
			want: Usage{Input: 1280, Output: 350, CacheRead: 1024, Reasoning: 300}},
	}, func(t *testing.T, srv *providertest.RecordedServer) *Model {
		return newModel(t, "google-vertex:gemini-2.5-pro", spec.ModelSettings{BaseURL: srv.URL}, env("GOOGLE_API_KEY", "AIza-test"))
	})
}

// A stream whose finish came but whose usage never did (it ended after
// Chat Completions' finish_reason chunk, without the usage chunk
// stream_options.include_usage asks for, or after Converse's messageStop,
// without the metadata event) is a whole answer whose usage is unknown: it
// carries no counts, not counts of zero. The families whose finish carries
// the usage (Messages' message_delta, the Responses API's
// response.completed) cannot be cut between the two, though a message or a
// Response may count none (TestAnthropicAnswerWithoutUsage,
// TestResponsesAnswerWithoutUsage); generateContent's finish may come
// without it (TestGeminiAnswerWithoutUsage).
func TestUsageOfAStreamCutBeforeIt(t *testing.T) {
	t.Parallel()
	chatChunk := func(model, choices string) string {
		return `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"` + model + `","choices":` + choices + `}`
	}
	for _, tc := range []struct {
		name, ref, body string
		getenv          func(string) string
	}{
		{"chat completions", "openai:gpt-4.1", providertest.SSE(
			chatChunk("gpt-4.1", `[{"index":0,"delta":{"role":"assistant","content":"ok"},"finish_reason":null}]`),
			chatChunk("gpt-4.1", `[{"index":0,"delta":{},"finish_reason":"stop"}]`)), env("OPENAI_API_KEY", "sk-test")},
		{"ollama", "ollama:llama3.2", providertest.SSE(
			chatChunk("llama3.2", `[{"index":0,"delta":{"role":"assistant","content":"ok"},"finish_reason":null}]`),
			chatChunk("llama3.2", `[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":"stop"}]`)), env()},
		{"converse", claudeOnBedrock, eventFrames(t, [][2]string{
			{"messageStart", `{"role":"assistant"}`},
			{"contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"ok"}}`},
			{"contentBlockStop", `{"contentBlockIndex":0}`},
			{"messageStop", `{"stopReason":"end_turn"}`},
		}), env("AWS_BEARER_TOKEN_BEDROCK", "k", "AWS_REGION", "us-east-1")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := providertest.NewRecordedServer(t, providertest.Recorded{Body: tc.body})
			base := srv.URL
			if !strings.HasPrefix(tc.ref, "bedrock:") {
				base += "/v1"
			}
			m := newModel(t, tc.ref, spec.ModelSettings{BaseURL: base}, tc.getenv)
			resp, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("hi")}, streamOn)
			require.NoError(t, err, "the answer is whole")
			require.Len(t, resp.Choices, 1)
			assert.Equal(t, "ok", resp.Choices[0].Content)
			_, hasUsage, _ := ReadInfo(resp.Choices[0])
			assert.False(t, hasUsage, "no usage came: %v", resp.Choices[0].GenerationInfo)
		})
	}
	t.Run("a whole answer without one", func(t *testing.T) {
		t.Parallel()
		srv := providertest.NewRecordedServer(t, providertest.Recorded{Body: `{"id":"c","object":"chat.completion","created":1,"model":"llama3.2",` +
			`"choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`})
		resp, err := chatModelAt(t, srv, "ollama:llama3.2", spec.ModelSettings{}).GenerateContent(t.Context(), []llms.MessageContent{human("hi")})
		require.NoError(t, err)
		_, hasUsage, _ := ReadInfo(resp.Choices[0])
		assert.False(t, hasUsage)
	})
}

// A generateContent answer that counts no usage (no usageMetadata, whole or
// in any chunk of its stream) carries no counts rather than counts of zero,
// as Chat Completions' and Converse's do; nor does a stream whose last
// counts came in a chunk before its finish, since a chunk's counts are the
// totals so far, not the answer's. Counts that come with the finish, or
// after it, are the answer's.
func TestGeminiAnswerWithoutUsage(t *testing.T) {
	t.Parallel()
	for _, streaming := range []bool{false, true} {
		t.Run(map[bool]string{false: "generateContent", true: "streamGenerateContent"}[streaming], func(t *testing.T) {
			t.Parallel()
			srv := providertest.NewVertexServer(t, "proj-test", "us-central1", providertest.Reply{Text: "ok", NoUsage: true})
			m := newModel(t, "google-vertex:gemini-2.5-pro", spec.ModelSettings{BaseURL: srv.URL},
				env("GOOGLE_APPLICATION_CREDENTIALS", srv.KeyFile(t, t.TempDir()), "GOOGLE_CLOUD_PROJECT", "proj-test"))
			var opts []llms.CallOption
			if streaming {
				opts = append(opts, streamOn)
			}
			resp, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("hi")}, opts...)
			require.NoError(t, err)
			require.Len(t, resp.Choices, 1)
			assert.Equal(t, "ok", resp.Choices[0].Content)
			_, hasUsage, _ := ReadInfo(resp.Choices[0])
			assert.False(t, hasUsage, "no usage came: %v", resp.Choices[0].GenerationInfo)
		})
	}
	chunk := func(text, finish, usage string) string {
		c := `data: {"candidates":[{"content":{"role":"model","parts":[{"text":` + string(jsonValue(text)) + `}]}`
		if finish != "" {
			c += `,"finishReason":"` + finish + `"`
		}
		c += `}]`
		if usage != "" {
			c += `,"usageMetadata":` + usage
		}
		return c + `,"modelVersion":"gemini-2.5-pro"}`
	}
	for _, tc := range []struct {
		name, body string
		want       *Usage
	}{
		{"counts before the finish only", providertest.SSE(
			chunk("o", "", `{"promptTokenCount":7,"candidatesTokenCount":1,"totalTokenCount":8}`),
			chunk("k", "STOP", "")), nil},
		{"counts after the finish", providertest.SSE(
			chunk("o", "", `{"promptTokenCount":7,"candidatesTokenCount":1,"totalTokenCount":8}`),
			chunk("k", "STOP", ""),
			`data: {"candidates":[],"usageMetadata":{"promptTokenCount":7,"candidatesTokenCount":2,"totalTokenCount":9}}`), &Usage{Input: 7, Output: 2}},
		{"the prompt blocked without counts", providertest.SSE(
			`data: {"promptFeedback":{"blockReason":"SAFETY"}}`), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := providertest.NewRecordedServer(t, providertest.Recorded{Body: tc.body})
			m := newModel(t, "google-vertex:gemini-2.5-pro", spec.ModelSettings{BaseURL: srv.URL}, env("GOOGLE_API_KEY", "AIza-test"))
			resp, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("hi")}, streamOn)
			require.NoError(t, err)
			require.Len(t, resp.Choices, 1)
			info, hasUsage, _ := ReadInfo(resp.Choices[0])
			assert.Equal(t, tc.want != nil, hasUsage, "%v", resp.Choices[0].GenerationInfo)
			if tc.want != nil {
				assert.Equal(t, *tc.want, info.Usage)
			}
		})
	}
}

// A Response that counts no usage (usage null, as response.created has it,
// or absent), whole or in the response.completed that ends a stream,
// carries no counts rather than counts of zero, as a Chat Completions
// answer without its usage does.
func TestResponsesAnswerWithoutUsage(t *testing.T) {
	t.Parallel()
	for _, streaming := range []bool{false, true} {
		t.Run(map[bool]string{false: "whole", true: "streamed"}[streaming], func(t *testing.T) {
			t.Parallel()
			srv := providertest.NewResponsesServer(t, providertest.Reply{Text: "ok", NoUsage: true})
			m := newModel(t, "openai-responses:gpt-5", spec.ModelSettings{BaseURL: srv.BaseURL()}, env("OPENAI_API_KEY", "sk-test"))
			var opts []llms.CallOption
			if streaming {
				opts = append(opts, streamOn)
			}
			resp, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("hi")}, opts...)
			require.NoError(t, err)
			require.Len(t, resp.Choices, 1)
			assert.Equal(t, "ok", resp.Choices[0].Content)
			_, hasUsage, _ := ReadInfo(resp.Choices[0])
			assert.False(t, hasUsage, "no usage came: %v", resp.Choices[0].GenerationInfo)
		})
	}
	t.Run("absent", func(t *testing.T) {
		t.Parallel()
		srv := providertest.NewRecordedServer(t, providertest.Recorded{Body: `{"id":"resp_n","object":"response","created_at":1,"status":"completed","model":"gpt-5","output":[
 {"id":"msg_n","type":"message","role":"assistant","status":"completed","content":[{"type":"output_text","text":"ok","annotations":[]}]}]}`})
		resp, err := chatModelAt(t, srv, "openai-responses:gpt-5", spec.ModelSettings{}).GenerateContent(t.Context(), []llms.MessageContent{human("hi")})
		require.NoError(t, err)
		_, hasUsage, _ := ReadInfo(resp.Choices[0])
		assert.False(t, hasUsage)
	})
}

// A Messages answer that counts no usage, as a proxy or a local server
// speaking the Messages API may send it (no usage whole, none in
// message_start nor message_delta), carries no counts rather than counts of
// zero, as a Response without its usage does. Nor does a stream that never
// counted its output at the finish (message_start's output_tokens are the
// count so far, not the answer's), or never counted its input; one whose
// counts all come in message_delta is counted.
func TestAnthropicAnswerWithoutUsage(t *testing.T) {
	t.Parallel()
	for _, streaming := range []bool{false, true} {
		t.Run(map[bool]string{false: "whole", true: "streamed"}[streaming], func(t *testing.T) {
			t.Parallel()
			srv := providertest.NewAnthropicServer(t, providertest.Reply{Text: "ok", NoUsage: true})
			m := newModel(t, "anthropic:claude-sonnet-4-5", spec.ModelSettings{BaseURL: srv.URL}, env("ANTHROPIC_API_KEY", "sk-ant-test"))
			var opts []llms.CallOption
			if streaming {
				opts = append(opts, streamOn)
			}
			resp, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("hi")}, opts...)
			require.NoError(t, err)
			require.Len(t, resp.Choices, 1)
			assert.Equal(t, "ok", resp.Choices[0].Content)
			_, hasUsage, _ := ReadInfo(resp.Choices[0])
			assert.False(t, hasUsage, "no usage came: %v", resp.Choices[0].GenerationInfo)
		})
	}
	message := `"id":"msg_n","type":"message","role":"assistant","model":"claude-sonnet-4-5"`
	streamed := func(start, delta string) string {
		return providertest.SSE(
			`event: message_start
data: {"type":"message_start","message":{`+message+`,"content":[],"stop_reason":null,"stop_sequence":null`+start+`}}`,
			`event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
			`event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"ok"}}`,
			`event: content_block_stop
data: {"type":"content_block_stop","index":0}`,
			`event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null}`+delta+`}`,
			`event: message_stop
data: {"type":"message_stop"}`)
	}
	for _, tc := range []struct {
		name, body string
		stream     bool
		want       *Usage
	}{
		{"whole, usage null", `{` + message + `,"content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","stop_sequence":null,"usage":null}`, false, nil},
		{"counts at the start only", streamed(`,"usage":{"input_tokens":10,"output_tokens":1}`, ``), true, nil},
		{"the output counted, the input never", streamed(``, `,"usage":{"output_tokens":5}`), true, nil},
		{"every count at the finish", streamed(``, `,"usage":{"input_tokens":10,"output_tokens":5}`), true, &Usage{Input: 10, Output: 5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := providertest.NewRecordedServer(t, providertest.Recorded{Body: tc.body})
			var opts []llms.CallOption
			if tc.stream {
				opts = append(opts, streamOn)
			}
			resp, err := anthropicModelAt(t, srv, "anthropic:claude-sonnet-4-5", spec.ModelSettings{}).
				GenerateContent(t.Context(), []llms.MessageContent{human("hi")}, opts...)
			require.NoError(t, err)
			require.Len(t, resp.Choices, 1)
			assert.Equal(t, "ok", resp.Choices[0].Content)
			info, hasUsage, _ := ReadInfo(resp.Choices[0])
			assert.Equal(t, tc.want != nil, hasUsage, "%v", resp.Choices[0].GenerationInfo)
			if tc.want != nil {
				assert.Equal(t, *tc.want, info.Usage)
			}
		})
	}
}

// cutServer answers every request with body, then drops the connection
// before the response ends, as a network cut does.
func cutServer(t *testing.T, contentType, body string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType)
		_, _ = io.WriteString(w, body)
		w.(http.Flusher).Flush()
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			conn.Close() // the chunked body never ends
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// A stream the network cuts after its finish (Chat Completions'
// finish_reason chunk, Converse's messageStop, Messages' message_delta,
// generateContent's last chunk), while only its usage or its end marker
// was still to come, is the whole
// answer, as the same stream ending there cleanly is, not a failure: what
// was cut off is the usage, which is then unknown, as
// TestUsageOfAStreamCutBeforeIt has it. Cut before its finish, it still
// fails (TestChatStreamWithoutFinishReason's "cut by the network").
func TestStreamCutAfterItsFinish(t *testing.T) {
	t.Parallel()
	chatChunk := func(choices string) string {
		return `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"gpt-4.1","choices":` + choices + `}`
	}
	for _, tc := range []struct {
		name, ref, contentType, body string
		getenv                       func(string) string
		usage                        bool
	}{
		{"chat completions", "openai:gpt-4.1", "text/event-stream", providertest.SSE(
			chatChunk(`[{"index":0,"delta":{"role":"assistant","content":"ok"},"finish_reason":null}]`),
			chatChunk(`[{"index":0,"delta":{},"finish_reason":"stop"}]`)), env("OPENAI_API_KEY", "sk-test"), false},
		{"converse", claudeOnBedrock, "application/vnd.amazon.eventstream", eventFrames(t, [][2]string{
			{"messageStart", `{"role":"assistant"}`},
			{"contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"ok"}}`},
			{"contentBlockStop", `{"contentBlockIndex":0}`},
			{"messageStop", `{"stopReason":"end_turn"}`},
		}), env("AWS_BEARER_TOKEN_BEDROCK", "k", "AWS_REGION", "us-east-1"), false},
		{"generateContent", "google-vertex:gemini-2.5-pro", "text/event-stream", providertest.SSE(
			`data: {"candidates":[{"content":{"role":"model","parts":[{"text":"ok"}]},"finishReason":"STOP"}],` +
				`"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":5,"totalTokenCount":15},"modelVersion":"gemini-2.5-pro"}`),
			env("GOOGLE_API_KEY", "AIza-test"), true},
		{"generateContent, its finish without counts", "google-vertex:gemini-2.5-pro", "text/event-stream", providertest.SSE(
			`data: {"candidates":[{"content":{"role":"model","parts":[{"text":"ok"}]},"finishReason":"STOP"}],"modelVersion":"gemini-2.5-pro"}`),
			env("GOOGLE_API_KEY", "AIza-test"), false},
		{"messages", "anthropic:claude-sonnet-4-5", "text/event-stream",
			strings.TrimSuffix(anthropicTextSSE("ok", "end_turn"), "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"),
			env("ANTHROPIC_API_KEY", "sk-ant-test"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.NotContains(t, tc.body, "message_stop")
			base := cutServer(t, tc.contentType, tc.body)
			if strings.HasPrefix(tc.ref, "openai:") {
				base += "/v1"
			}
			policy, _ := instant()
			policy.max = 0
			m, err := New(tc.ref, spec.ModelSettings{BaseURL: base}, Options{Getenv: tc.getenv, retry: policy})
			require.NoError(t, err)
			resp, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("hi")}, streamOn)
			require.NoError(t, err, "the answer is whole")
			require.Len(t, resp.Choices, 1)
			assert.Equal(t, "ok", resp.Choices[0].Content)
			info, hasUsage, _ := ReadInfo(resp.Choices[0])
			assert.Equal(t, tc.usage, hasUsage)
			if tc.usage {
				assert.Equal(t, Usage{Input: 10, Output: 5}, info.Usage, "the finish gave it")
			}
		})
	}
}

// Some OpenAI-compatible servers and gateways (one-api, open-webui, proxies
// of Gemini) mark every chunk of a Chat Completions stream with a
// finish_reason, not only the chunk of its own that ends it as OpenAI
// sends: a stream of theirs the network cuts after such a chunk, with the
// rest of the text or of a call still to come, is not the whole answer and
// fails, as a stream cut before its finish does.
func TestStreamCutAfterAFinishThatWasNotTheLast(t *testing.T) {
	t.Parallel()
	chatChunk := func(choices string) string {
		return `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"gpt-4.1","choices":` + choices + `}`
	}
	for name, body := range map[string]string{
		"text": providertest.SSE(
			chatChunk(`[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":"stop"}]`),
			chatChunk(`[{"index":0,"delta":{"content":"The answer is"},"finish_reason":"stop"}]`)),
		"a call": providertest.SSE(
			chatChunk(`[{"index":0,"delta":{"content":"Reading."},"finish_reason":null}]`),
			chatChunk(`[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"read_file","arguments":""}}]},"finish_reason":"tool_calls"}]`)),
		"a call after the text's finish": providertest.SSE(
			chatChunk(`[{"index":0,"delta":{"content":"Reading."},"finish_reason":null}]`),
			chatChunk(`[{"index":0,"delta":{},"finish_reason":"stop"}]`),
			chatChunk(`[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"read_file","arguments":"{\"pa"}}]},"finish_reason":null}]`)),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			policy, _ := instant()
			policy.max = 0
			m, err := New("openai:gpt-4.1", spec.ModelSettings{BaseURL: cutServer(t, "text/event-stream", body) + "/v1"},
				Options{Getenv: env("OPENAI_API_KEY", "sk-test"), retry: policy})
			require.NoError(t, err)
			resp, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("read a.txt")}, llms.WithTools([]llms.Tool{readFileTool}), streamOn)
			require.ErrorIs(t, err, io.ErrUnexpectedEOF, "what came is not taken as the answer: %+v", resp)
		})
	}
}
