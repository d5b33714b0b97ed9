package providers

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/agentspec/agentspec/runtime/providers/providertest"
	"github.com/agentspec/agentspec/spec"
)

var testAWS = providertest.AWSCredentials{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
	SessionToken: "session-token", Region: "eu-west-3"}

// bedrockEnv is an environment with SigV4 credentials for srv, and no
// shared AWS files.
func bedrockEnv(srv *providertest.Server, kv ...string) func(string) string {
	return env(append([]string{
		"AWS_ACCESS_KEY_ID", testAWS.AccessKeyID, "AWS_SECRET_ACCESS_KEY", testAWS.SecretAccessKey,
		"AWS_SESSION_TOKEN", testAWS.SessionToken, "AWS_REGION", testAWS.Region,
		"AWS_ENDPOINT_URL_BEDROCK_RUNTIME", srv.URL,
	}, kv...)...)
}

const claudeOnBedrock = "bedrock:us.anthropic.claude-sonnet-4-5-20250929-v1:0"

// A tool round through Converse, signed with SigV4 (the stand-in recomputes
// the signature), whole and streamed: the call is read, its failed result
// goes back with status error, usage and stop reasons are read.
func TestBedrockConverseSigV4(t *testing.T) {
	t.Parallel()
	for _, streaming := range []bool{false, true} {
		t.Run(map[bool]string{false: "converse", true: "converse-stream"}[streaming], func(t *testing.T) {
			t.Parallel()
			srv := providertest.NewBedrockSigV4Server(t, testAWS,
				providertest.Calls(providertest.ToolCall{Name: "read_file", Arguments: `{"path":"a.txt"}`}),
				providertest.Text("alpha"))
			m := newModel(t, claudeOnBedrock, spec.ModelSettings{MaxTokens: 500, StopSequences: []string{"END"},
				Provider: map[string]any{"bedrock_request_metadata": map[string]any{"team": "docs"}}}, bedrockEnv(srv))
			assert.Equal(t, "aws-sdk-go-v2", m.Client)
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
			assert.Equal(t, "tool_use", resp.Choices[0].StopReason)
			assert.Equal(t, 10, resp.Choices[0].GenerationInfo[InfoInputTokens])

			failed := result(calls[0].ID, "read_file", "no such file")
			failed.Parts = append(failed.Parts, ToolError)
			history := []llms.MessageContent{human("read a.txt"), {Role: llms.ChatMessageTypeAI, Parts: turnOf(t, resp)}, failed}
			resp, err = m.GenerateContent(t.Context(), history, opts...)
			require.NoError(t, err)
			assert.Equal(t, "alpha", text(resp))
			assert.Equal(t, "end_turn", resp.Choices[0].StopReason)
			if streaming {
				assert.Equal(t, "alpha", streamed.String())
			}

			reqs := srv.Requests()
			require.Len(t, reqs, 2)
			op := map[bool]string{false: "converse", true: "converse-stream"}[streaming]
			assert.Equal(t, "/model/us.anthropic.claude-sonnet-4-5-20250929-v1:0/"+op, reqs[0].Path)
			first := reqs[0].JSON()
			assert.Equal(t, "Be brief.", first["system"].([]any)[0].(map[string]any)["text"])
			assert.JSONEq(t, `{"maxTokens":500,"stopSequences":["END"],"temperature":1}`, jsonOf(t, first["inferenceConfig"]))
			assert.JSONEq(t, `{"team":"docs"}`, jsonOf(t, first["requestMetadata"]))
			second := reqs[1].JSON()
			msgs := second["messages"].([]any)
			require.Len(t, msgs, 3)
			res := msgs[2].(map[string]any)["content"].([]any)[0].(map[string]any)["toolResult"].(map[string]any)
			assert.Equal(t, "error", res["status"])
			assert.Equal(t, calls[0].ID, res["toolUseId"])
		})
	}
}

// A toolResult's status is a field Converse takes from Claude and Nova
// models only: another model (Llama, Mistral, ...) refuses a request that
// carries one, so its tool results, failed or not, go without, while Nova
// keeps status error on a failed one as Claude does.
func TestBedrockToolResultStatusOnlyWhereTaken(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		model, status string
	}{
		{"meta.llama3-1-70b-instruct-v1:0", ""},
		{"mistral.mistral-large-2407-v1:0", ""},
		{"us.amazon.nova-pro-v1:0", "error"},
	} {
		t.Run(tc.model, func(t *testing.T) {
			t.Parallel()
			srv := providertest.NewBedrockSigV4Server(t, testAWS,
				providertest.Calls(providertest.ToolCall{Name: "read_file", Arguments: `{"path":"a.txt"}`}, providertest.ToolCall{Name: "read_file", Arguments: `{"path":"b.txt"}`}),
				providertest.Text("alpha"))
			m := newModel(t, "bedrock:"+tc.model, spec.ModelSettings{}, bedrockEnv(srv))
			opts := []llms.CallOption{llms.WithTools([]llms.Tool{readFileTool})}
			resp, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("read a.txt and b.txt")}, opts...)
			require.NoError(t, err)
			calls := toolCalls(resp)
			require.Len(t, calls, 2)
			failed := result(calls[0].ID, "read_file", "no such file")
			failed.Parts = append(failed.Parts, ToolError)
			history := []llms.MessageContent{human("read a.txt and b.txt"), {Role: llms.ChatMessageTypeAI, Parts: turnOf(t, resp)},
				failed, result(calls[1].ID, "read_file", "beta")}
			resp, err = m.GenerateContent(t.Context(), history, opts...)
			require.NoError(t, err)
			assert.Equal(t, "alpha", text(resp))

			reqs := srv.Requests()
			require.Len(t, reqs, 2)
			content := reqs[1].JSON()["messages"].([]any)[2].(map[string]any)["content"].([]any)
			require.Len(t, content, 2)
			res := content[0].(map[string]any)["toolResult"].(map[string]any)
			assert.Equal(t, calls[0].ID, res["toolUseId"])
			assert.JSONEq(t, `[{"text":"no such file"}]`, jsonOf(t, res["content"]))
			if tc.status == "" {
				assert.NotContains(t, res, "status")
				assert.NotContains(t, content[1].(map[string]any)["toolResult"], "status")
			} else {
				assert.Equal(t, tc.status, res["status"])
			}
		})
	}
}

// A Bedrock API key is sent as a bearer token, and no SigV4 signature.
func TestBedrockBearerToken(t *testing.T) {
	t.Parallel()
	srv := providertest.NewBedrockBearerServer(t, "bedrock-api-key-1", providertest.Text("hi"))
	m := newModel(t, "bedrock:amazon.nova-pro-v1:0", spec.ModelSettings{TopK: ptr(5), BaseURL: srv.URL},
		env("AWS_BEARER_TOKEN_BEDROCK", "bedrock-api-key-1", "AWS_DEFAULT_REGION", "us-east-1"))
	resp, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("hello")})
	require.NoError(t, err)
	assert.Equal(t, "hi", text(resp))
	req := srv.Requests()[0]
	assert.Equal(t, "Bearer bedrock-api-key-1", req.Header.Get("Authorization"))
	assert.Empty(t, req.Header.Get("X-Amz-Security-Token"))
	assert.JSONEq(t, `{"inferenceConfig":{"topK":5}}`, jsonOf(t, req.JSON()["additionalModelRequestFields"]))
}

// A wrong secret is refused by the stand-in's own SigV4 check, and the
// failure names where the credentials come from.
func TestBedrockWrongSignatureRefused(t *testing.T) {
	t.Parallel()
	srv := providertest.NewBedrockSigV4Server(t, testAWS, providertest.Text("never"))
	m := newModel(t, claudeOnBedrock, spec.ModelSettings{}, bedrockEnv(srv, "AWS_SECRET_ACCESS_KEY", "wrong"))
	_, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("hello")})
	var perr *Error
	require.True(t, errors.As(err, &perr), "%v", err)
	assert.Equal(t, 403, perr.StatusCode)
	assert.Contains(t, perr.Message, "signature we calculated does not match")
	assert.Contains(t, Describe(err), "— check the AWS credentials (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE)")
	assert.Equal(t, 1, srv.Remaining())
}

// A Converse conversation recorded with SigV4 replays with no credentials,
// streamed (event-stream frames are binary) and not.
func TestBedrockRecordAndReplay(t *testing.T) {
	t.Parallel()
	srv := providertest.NewBedrockSigV4Server(t, testAWS, providertest.Text("whole"), providertest.Text("streamed"))
	path := t.TempDir() + "/bedrock.json"
	rec, err := NewRecorder(path, nil)
	require.NoError(t, err)
	m, err := New(claudeOnBedrock, spec.ModelSettings{}, Options{Getenv: bedrockEnv(srv), Transport: rec})
	require.NoError(t, err)
	stream := llms.WithStreamingFunc(func(context.Context, []byte) error { return nil })
	_, err = m.GenerateContent(t.Context(), []llms.MessageContent{human("hi")})
	require.NoError(t, err)
	_, err = m.GenerateContent(t.Context(), []llms.MessageContent{human("hi")}, stream)
	require.NoError(t, err)
	require.NoError(t, rec.Close())

	rp, err := NewReplayer(path)
	require.NoError(t, err)
	m, err = New(claudeOnBedrock, spec.ModelSettings{}, Options{Getenv: env(), Transport: rp})
	require.NoError(t, err)
	resp, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("hi")})
	require.NoError(t, err)
	assert.Equal(t, "whole", text(resp))
	resp, err = m.GenerateContent(t.Context(), []llms.MessageContent{human("hi")}, stream)
	require.NoError(t, err)
	assert.Equal(t, "streamed", text(resp))
}

// Claude's reasoning blocks on Bedrock are kept with their signatures and
// sent back in place; the unified thinking setting becomes Claude's
// thinking object with its budget added to max_tokens.
func TestBedrockReasoningRoundTrip(t *testing.T) {
	t.Parallel()
	first := `{"output":{"message":{"role":"assistant","content":[` +
		`{"reasoningContent":{"reasoningText":{"text":"I should read it.","signature":"sig-1"}}},` +
		`{"reasoningContent":{"redactedContent":"AQID"}},` +
		`{"toolUse":{"toolUseId":"tu1","name":"read_file","input":{"path":"a.txt"}}}]}},` +
		`"stopReason":"tool_use","usage":{"inputTokens":5,"outputTokens":7,"totalTokens":12,"cacheReadInputTokens":3}}`
	done := `{"output":{"message":{"role":"assistant","content":[{"text":"alpha"}]}},"stopReason":"end_turn","usage":{"inputTokens":1,"outputTokens":1,"totalTokens":2}}`
	srv := providertest.NewRecordedServer(t, providertest.Recorded{Body: first}, providertest.Recorded{Body: done})
	m := newModel(t, "bedrock:anthropic.claude-3-7-sonnet-20250219-v1:0", spec.ModelSettings{BaseURL: srv.URL,
		Thinking: &spec.Thinking{Enabled: true, Effort: "low"}}, env("AWS_BEARER_TOKEN_BEDROCK", "k", "AWS_REGION", "us-west-2"))
	resp, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("read")}, llms.WithTools([]llms.Tool{readFileTool}))
	require.NoError(t, err)
	assert.Equal(t, "I should read it.", resp.Choices[0].ReasoningContent)
	assert.Equal(t, 3, resp.Choices[0].GenerationInfo[InfoCacheReadTokens])
	history := []llms.MessageContent{human("read"), {Role: llms.ChatMessageTypeAI, Parts: turnOf(t, resp)}, result("tu1", "read_file", "alpha")}
	_, err = m.GenerateContent(t.Context(), history, llms.WithTools([]llms.Tool{readFileTool}))
	require.NoError(t, err)

	reqs := srv.Requests()
	body := reqs[0].JSON()
	assert.JSONEq(t, `{"thinking":{"type":"enabled","budget_tokens":2048}}`, jsonOf(t, body["additionalModelRequestFields"]))
	assert.JSONEq(t, `{"maxTokens":6144}`, jsonOf(t, body["inferenceConfig"]), "no temperature with thinking on")
	msgs := reqs[1].JSON()["messages"].([]any)
	assert.JSONEq(t, `[{"reasoningContent":{"reasoningText":{"text":"I should read it.","signature":"sig-1"}}},`+
		`{"reasoningContent":{"redactedContent":"AQID"}},{"toolUse":{"toolUseId":"tu1","name":"read_file","input":{"path":"a.txt"}}}]`,
		jsonOf(t, msgs[1].(map[string]any)["content"]))
}

// Reasoning blocks go back only to the models that take them: Claude's, in
// place, with their signatures, and a signed or redacted one (Claude's kind)
// to DeepSeek R1, as pydantic-ai sends them, and to a model whose id names no
// family (an application inference profile). Other models refuse a
// reasoningContent block in the history with a ValidationException (gpt-oss,
// Kimi and GLM are reported doing so), so their unsigned reasoning stays out
// of the request, and the rest of the turn goes.
func TestBedrockReasoningGoesBackOnlyWhereTaken(t *testing.T) {
	t.Parallel()
	signed := `{"reasoningContent":{"reasoningText":{"text":"I should read it.","signature":"sig-1"}}}`
	unsigned := `{"reasoningContent":{"reasoningText":{"text":"Let me read the file."}}}`
	redacted := `{"reasoningContent":{"redactedContent":"AQID"}}`
	call := `{"toolUse":{"toolUseId":"tu1","name":"read_file","input":{"path":"a.txt"}}}`
	for _, tc := range []struct {
		model    string
		answered []string // the blocks of the first answer
		sent     []string // what of them goes back
	}{
		{"openai.gpt-oss-120b-1:0", []string{unsigned, call}, []string{call}},
		{"us.deepseek.r1-v1:0", []string{unsigned, call}, []string{call}},
		{"us.deepseek.r1-v1:0", []string{signed, call}, []string{signed, call}},
		{"deepseek.v3-v1:0", []string{unsigned, call}, []string{call}},
		{"qwen.qwen3-32b-v1:0", []string{unsigned, call}, []string{call}},
		{"moonshotai.kimi-k2.5", []string{unsigned, call}, []string{call}},
		{"zai.glm-4.7", []string{unsigned, call}, []string{call}},
		{"us.amazon.nova-2-lite-v1:0", []string{unsigned, call}, []string{call}},
		{"us.anthropic.claude-sonnet-4-5-20250929-v1:0", []string{signed, redacted, call}, []string{signed, redacted, call}},
		{"arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-sonnet-4-5-20250929-v1:0",
			[]string{signed, redacted, call}, []string{signed, redacted, call}},
		{"arn:aws:bedrock:us-east-1::foundation-model/openai.gpt-oss-120b-1:0", []string{unsigned, call}, []string{call}},
		{"arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/a1b2c3d4e5f6", []string{signed, redacted, call}, []string{signed, redacted, call}},
		{"arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/a1b2c3d4e5f6", []string{unsigned, call}, []string{call}},
	} {
		t.Run(tc.model, func(t *testing.T) {
			t.Parallel()
			first := `{"output":{"message":{"role":"assistant","content":[` + strings.Join(tc.answered, ",") + `]}},` +
				`"stopReason":"tool_use","usage":{"inputTokens":5,"outputTokens":7,"totalTokens":12}}`
			done := `{"output":{"message":{"role":"assistant","content":[{"text":"alpha"}]}},"stopReason":"end_turn","usage":{"inputTokens":1,"outputTokens":1,"totalTokens":2}}`
			srv := providertest.NewRecordedServer(t, providertest.Recorded{Body: first}, providertest.Recorded{Body: done})
			m := newModel(t, "bedrock:"+tc.model, spec.ModelSettings{BaseURL: srv.URL}, env("AWS_BEARER_TOKEN_BEDROCK", "k", "AWS_REGION", "us-east-1"))
			resp, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("read")}, llms.WithTools([]llms.Tool{readFileTool}))
			require.NoError(t, err)
			history := []llms.MessageContent{human("read"), {Role: llms.ChatMessageTypeAI, Parts: turnOf(t, resp)}, result("tu1", "read_file", "alpha")}
			_, err = m.GenerateContent(t.Context(), history, llms.WithTools([]llms.Tool{readFileTool}))
			require.NoError(t, err)

			msgs := srv.Requests()[1].JSON()["messages"].([]any)
			require.Len(t, msgs, 3)
			assert.JSONEq(t, "["+strings.Join(tc.sent, ",")+"]", jsonOf(t, msgs[1].(map[string]any)["content"]))
		})
	}
}

// An exception event inside a Converse stream that means "try again" is
// retried; the stream after it is read.
func TestBedrockStreamExceptionRetried(t *testing.T) {
	t.Parallel()
	throttled := frames(t, eventstream.Headers{
		{Name: ":message-type", Value: eventstream.StringValue("exception")},
		{Name: ":exception-type", Value: eventstream.StringValue("throttlingException")},
		{Name: ":content-type", Value: eventstream.StringValue("application/json")},
	}, `{"message":"Too many tokens, please wait before trying again."}`)
	ok := eventFrames(t, [][2]string{
		{"messageStart", `{"role":"assistant"}`},
		{"contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"after the retry"}}`},
		{"contentBlockStop", `{"contentBlockIndex":0}`},
		{"messageStop", `{"stopReason":"end_turn"}`},
		{"metadata", `{"usage":{"inputTokens":1,"outputTokens":2,"totalTokens":3},"metrics":{"latencyMs":1}}`},
	})
	srv := providertest.NewRecordedServer(t, providertest.Recorded{Body: throttled}, providertest.Recorded{Body: ok})
	var retries []RetryInfo
	policy, _ := instant()
	m, err := New("bedrock:amazon.nova-lite-v1:0", spec.ModelSettings{}, Options{
		Getenv: env("AWS_BEARER_TOKEN_BEDROCK", "k", "AWS_REGION", "us-east-1", "AWS_ENDPOINT_URL", srv.URL),
		retry:  policy, OnRetry: func(r RetryInfo) { retries = append(retries, r) },
	})
	require.NoError(t, err)
	resp, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("hi")},
		llms.WithStreamingFunc(func(context.Context, []byte) error { return nil }))
	require.NoError(t, err)
	assert.Equal(t, "after the retry", text(resp))
	require.Len(t, retries, 1)
	assert.Contains(t, retries[0].Reason, "ThrottlingException: Too many tokens")
}

// A tool use the model wrote and Converse could not read ends the answer
// with stopReason malformed_tool_use, and an answer it could not read with
// malformed_model_output: the same correctable mistake as another
// provider's tool_use_failed, whole and streamed, not a final answer of
// whatever text came before it.
func TestBedrockMalformedToolUse(t *testing.T) {
	t.Parallel()
	for stop, message := range map[string]string{
		"malformed_tool_use":     "The model generated an invalid tool use",
		"malformed_model_output": "The model generated output that could not be read",
	} {
		t.Run(stop, func(t *testing.T) {
			t.Parallel()
			testBedrockMalformed(t, stop, message)
		})
	}
}

func testBedrockMalformed(t *testing.T, stop, message string) {
	whole := `{"output":{"message":{"role":"assistant","content":[{"text":"Reading it."}]}},"stopReason":"` + stop + `",` +
		`"usage":{"inputTokens":12,"outputTokens":9,"totalTokens":21},"metrics":{"latencyMs":1}}`
	streamed := eventFrames(t, [][2]string{
		{"messageStart", `{"role":"assistant"}`},
		{"contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"Reading it."}}`},
		{"contentBlockStop", `{"contentBlockIndex":0}`},
		{"messageStop", `{"stopReason":"` + stop + `"}`},
		{"metadata", `{"usage":{"inputTokens":12,"outputTokens":9,"totalTokens":21},"metrics":{"latencyMs":1}}`},
	})
	for _, streaming := range []bool{false, true} {
		t.Run(map[bool]string{false: "converse", true: "converse-stream"}[streaming], func(t *testing.T) {
			t.Parallel()
			body := whole
			opts := []llms.CallOption{llms.WithTools([]llms.Tool{readFileTool})}
			if streaming {
				body = streamed
				opts = append(opts, llms.WithStreamingFunc(func(context.Context, []byte) error { return nil }))
			}
			srv := providertest.NewRecordedServer(t, providertest.Recorded{Body: body})
			m := newModel(t, "bedrock:us.amazon.nova-pro-v1:0", spec.ModelSettings{BaseURL: srv.URL},
				env("AWS_BEARER_TOKEN_BEDROCK", "k", "AWS_REGION", "us-east-1"))
			resp, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("read a.txt")}, opts...)
			require.Error(t, err, "an answer came instead: %+v", resp)
			var perr *Error
			require.ErrorAs(t, err, &perr)
			got, ok := perr.ToolUseFailed()
			assert.True(t, ok, "%v", err)
			assert.Equal(t, "Reading it.", got)
			assert.Equal(t, message, perr.Message)
			assert.Len(t, srv.Requests(), 1, "the same request is not sent again")
		})
	}
}

// frames encodes one event-stream message.
// eventFrames encodes Converse stream events, each a type and its JSON
// payload, as the event-stream frames Bedrock sends.
func eventFrames(t *testing.T, events [][2]string) string {
	t.Helper()
	var b strings.Builder
	for _, ev := range events {
		b.WriteString(frames(t, eventstream.Headers{
			{Name: ":message-type", Value: eventstream.StringValue("event")},
			{Name: ":event-type", Value: eventstream.StringValue(ev[0])},
			{Name: ":content-type", Value: eventstream.StringValue("application/json")},
		}, ev[1]))
	}
	return b.String()
}

func frames(t *testing.T, headers eventstream.Headers, payload string) string {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, eventstream.NewEncoder().Encode(&buf, eventstream.Message{Headers: headers, Payload: []byte(payload)}))
	return buf.String()
}

// With no credential anywhere in the chain, New fails before any request,
// naming where credentials come from. (Not parallel: the chain reads the
// process's environment.)
func TestBedrockMissingCredentials(t *testing.T) {
	dir := t.TempDir()
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_BEARER_TOKEN_BEDROCK",
		"AWS_PROFILE", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI"} {
		t.Setenv(k, "")
	}
	t.Setenv("AWS_CONFIG_FILE", dir+"/config")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", dir+"/credentials")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	_, err := New(claudeOnBedrock, spec.ModelSettings{}, Options{Getenv: env("AWS_REGION", "us-east-1")})
	require.ErrorIs(t, err, ErrMissingKey)
	assert.Contains(t, err.Error(), "bedrock: no AWS credentials found: set the AWS credentials (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY")
	assert.Contains(t, err.Error(), "AWS_BEARER_TOKEN_BEDROCK")
}

// With a Bedrock API key the region still comes from the AWS profile when
// the environment names none, as when SigV4 signs, and picks the endpoint.
// (Not parallel: the profile is read from the process's environment.)
func TestBedrockBearerTokenTakesTheProfileRegion(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "config"), []byte("[default]\nregion = eu-west-1\n"), 0o600))
	for _, k := range []string{"AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"} {
		t.Setenv(k, "")
	}
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
	var host string
	stop := errors.New("stop here")
	seen := roundTripFunc(func(r *http.Request) (*http.Response, error) { host = r.URL.Host; return nil, stop })
	policy, _ := instant()
	m, err := New(claudeOnBedrock, spec.ModelSettings{}, Options{retry: policy, Transport: seen,
		Getenv: env("AWS_BEARER_TOKEN_BEDROCK", "bedrock-api-key-xyz")})
	require.NoError(t, err, "the profile's region is used")
	_, err = m.GenerateContent(t.Context(), []llms.MessageContent{human("hi")})
	require.Error(t, err)
	assert.Equal(t, "bedrock-runtime.eu-west-1.amazonaws.com", host)
}

// The bedrock_ settings reach Converse's fields of the same name: cache
// points after the system prompt, the tools and the last message, the
// guardrail, the tier, the inference profile as the model id.
func TestBedrockSettingsOnTheWire(t *testing.T) {
	t.Parallel()
	srv := providertest.NewRecordedServer(t, providertest.Recorded{Body: `{"output":{"message":{"role":"assistant","content":[{"text":"ok"}]}},"stopReason":"end_turn","usage":{"inputTokens":1,"outputTokens":1,"totalTokens":2}}`})
	m := newModel(t, "bedrock:us.anthropic.claude-opus-4-6-v1", spec.ModelSettings{BaseURL: srv.URL, ServiceTier: "flex",
		Thinking:   &spec.Thinking{Enabled: true, Effort: "high"},
		ToolChoice: &spec.ToolChoice{Mode: "auto"},
		Provider: map[string]any{
			"bedrock_cache_instructions": true, "bedrock_cache_tool_definitions": "1h", "bedrock_cache_messages": true,
			"bedrock_guardrail_config":                       map[string]any{"guardrailIdentifier": "gr-1", "guardrailVersion": "2", "trace": "enabled"},
			"bedrock_performance_configuration":              map[string]any{"latency": "optimized"},
			"bedrock_additional_model_response_fields_paths": []any{"/stop_sequence"},
			"bedrock_additional_model_requests_fields":       map[string]any{"anthropic_beta": []any{"context-1m-2025-08-07"}},
			"bedrock_inference_profile":                      "arn:aws:bedrock:us-east-1:123:application-inference-profile/abc",
		}}, env("AWS_BEARER_TOKEN_BEDROCK", "k", "AWS_REGION", "us-east-1"))
	_, err := m.GenerateContent(t.Context(), []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeSystem, "sys"), human("hi")},
		llms.WithTools([]llms.Tool{readFileTool}))
	require.NoError(t, err)
	req := srv.Requests()[0]
	assert.Equal(t, "/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123%3Aapplication-inference-profile%2Fabc/converse", req.Path)
	body := req.JSON()
	assert.JSONEq(t, `[{"text":"sys"},{"cachePoint":{"type":"default"}}]`, jsonOf(t, body["system"]))
	assert.JSONEq(t, `[{"role":"user","content":[{"text":"hi"},{"cachePoint":{"type":"default"}}]}]`, jsonOf(t, body["messages"]))
	tools := body["toolConfig"].(map[string]any)
	assert.JSONEq(t, `{"cachePoint":{"type":"default","ttl":"1h"}}`, jsonOf(t, tools["tools"].([]any)[1]))
	assert.JSONEq(t, `{"auto":{}}`, jsonOf(t, tools["toolChoice"]))
	assert.JSONEq(t, `{"guardrailIdentifier":"gr-1","guardrailVersion":"2","trace":"enabled"}`, jsonOf(t, body["guardrailConfig"]))
	assert.JSONEq(t, `{"latency":"optimized"}`, jsonOf(t, body["performanceConfig"]))
	assert.JSONEq(t, `{"type":"flex"}`, jsonOf(t, body["serviceTier"]))
	assert.JSONEq(t, `["/stop_sequence"]`, jsonOf(t, body["additionalModelResponseFieldPaths"]))
	assert.JSONEq(t, `{"thinking":{"type":"adaptive"},"anthropic_beta":["context-1m-2025-08-07"]}`, jsonOf(t, body["additionalModelRequestFields"]))
	assert.JSONEq(t, `{"effort":"high"}`, jsonOf(t, body["outputConfig"]))
}

// Without an endpoint given, the SDK's own resolution picks the region's
// host, in any partition.
func TestBedrockEndpointResolution(t *testing.T) {
	t.Parallel()
	var hosts []string
	capture := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		hosts = append(hosts, r.URL.Host)
		return nil, errors.New("stop here")
	})
	for _, region := range []string{"eu-central-1", "cn-north-1"} {
		m, err := New("bedrock:amazon.nova-lite-v1:0", spec.ModelSettings{}, Options{
			Getenv: env("AWS_BEARER_TOKEN_BEDROCK", "k", "AWS_REGION", region), Transport: capture, retry: &retryPolicy{}})
		require.NoError(t, err)
		_, _ = m.GenerateContent(t.Context(), []llms.MessageContent{human("hi")})
	}
	assert.Equal(t, []string{"bedrock-runtime.eu-central-1.amazonaws.com", "bedrock-runtime.cn-north-1.amazonaws.com.cn"}, hosts)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Without a Bedrock API key, bedrock-mantle's Responses requests are signed
// with SigV4 for the bedrock-mantle service, every attempt afresh.
func TestBedrockMantleSigV4(t *testing.T) {
	t.Parallel()
	creds := providertest.AWSCredentials{AccessKeyID: "AKIDMANTLE", SecretAccessKey: "mantle-secret", Region: "us-east-2"}
	var mu sync.Mutex
	var refusals []string
	attempts := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		attempts++
		first := attempts == 1
		if msg := providertest.VerifySigV4(r, body, creds, "bedrock-mantle"); msg != "" {
			refusals = append(refusals, msg)
		}
		mu.Unlock()
		if first {
			http.Error(w, `{"error":{"message":"try again","type":"server_error"}}`, http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, responsesDone)
	}))
	t.Cleanup(srv.Close)
	policy, _ := instant()
	m, err := New("bedrock-mantle:openai.gpt-5.4", spec.ModelSettings{BaseURL: srv.URL + "/openai/v1"}, Options{retry: policy,
		Getenv: env("AWS_ACCESS_KEY_ID", creds.AccessKeyID, "AWS_SECRET_ACCESS_KEY", creds.SecretAccessKey, "AWS_REGION", creds.Region)})
	require.NoError(t, err)
	resp, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("hi")})
	require.NoError(t, err)
	assert.Equal(t, "alpha", text(resp))
	assert.Equal(t, 2, attempts)
	assert.Empty(t, refusals)
}

// ConverseStream's request carries every field of Converse's, and the
// guardrail in its streaming form.
func TestConverseStreamCarriesConverseFields(t *testing.T) {
	t.Parallel()
	in := bedrockInput{
		modelID:       "m",
		system:        []types.SystemContentBlock{&types.SystemContentBlockMemberText{Value: "s"}},
		messages:      []types.Message{{Role: types.ConversationRoleUser}},
		inference:     &types.InferenceConfiguration{MaxTokens: aws.Int32(5)},
		tools:         &types.ToolConfiguration{},
		additional:    map[string]any{"k": 1},
		responsePaths: []string{"/p"},
		guardrail:     map[string]any{"guardrailIdentifier": "g", "guardrailVersion": "1", "trace": "enabled", "streamProcessingMode": "async"},
		performance:   &types.PerformanceConfiguration{Latency: types.PerformanceConfigLatencyOptimized},
		metadata:      map[string]string{"a": "b"},
		variables:     map[string]types.PromptVariableValues{"v": &types.PromptVariableValuesMemberText{Value: "x"}},
		tier:          &types.ServiceTier{},
		output:        &types.OutputConfig{},
	}
	plain, stream := reflect.ValueOf(in.converse()).Elem(), reflect.ValueOf(in.converseStream()).Elem()
	for i := range plain.NumField() {
		f := plain.Type().Field(i)
		if !f.IsExported() || f.Name == "GuardrailConfig" {
			continue
		}
		if plain.Field(i).IsZero() {
			t.Errorf("the test leaves %s unset", f.Name)
			continue
		}
		got := stream.FieldByName(f.Name)
		if !got.IsValid() || !reflect.DeepEqual(got.Interface(), plain.Field(i).Interface()) {
			t.Errorf("%s: ConverseStream has %v, Converse %v", f.Name, got, plain.Field(i))
		}
	}
	g := in.converseStream().GuardrailConfig
	if g == nil || aws.ToString(g.GuardrailIdentifier) != "g" || aws.ToString(g.GuardrailVersion) != "1" ||
		g.Trace != types.GuardrailTraceEnabled || g.StreamProcessingMode != types.GuardrailStreamProcessingModeAsync {
		t.Errorf("guardrail %+v", g)
	}
}

// A tool call's integer arguments beyond float64's precision are kept
// digit for digit, whole and streamed, in the arguments and in the call
// sent back.
func TestBedrockToolArgumentsKeepLargeIntegers(t *testing.T) {
	t.Parallel()
	const args = `{"id":12345678901234567890,"ratio":0.1,"tags":[9007199254740993]}`
	whole := `{"output":{"message":{"role":"assistant","content":[{"toolUse":{"toolUseId":"tooluse_1","name":"get_order","input":` + args + `}}]}},` +
		`"stopReason":"tool_use","usage":{"inputTokens":5,"outputTokens":7,"totalTokens":12},"metrics":{"latencyMs":310}}`
	streamed := eventFrames(t, [][2]string{
		{"messageStart", `{"role":"assistant"}`},
		{"contentBlockStart", `{"contentBlockIndex":0,"start":{"toolUse":{"toolUseId":"tooluse_1","name":"get_order"}}}`},
		{"contentBlockDelta", `{"contentBlockIndex":0,"delta":{"toolUse":{"input":"{\"id\": 12345678901"}}}`},
		{"contentBlockDelta", `{"contentBlockIndex":0,"delta":{"toolUse":{"input":"234567890, \"ratio\": 0.1, \"tags\": [9007199254740993]}"}}}`},
		{"contentBlockStop", `{"contentBlockIndex":0}`},
		{"messageStop", `{"stopReason":"tool_use"}`},
		{"metadata", `{"usage":{"inputTokens":5,"outputTokens":7,"totalTokens":12},"metrics":{"latencyMs":310}}`},
	})
	done := `{"output":{"message":{"role":"assistant","content":[{"text":"done"}]}},"stopReason":"end_turn","usage":{"inputTokens":1,"outputTokens":1,"totalTokens":2}}`
	for name, body := range map[string]string{"converse": whole, "converse-stream": streamed} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := providertest.NewRecordedServer(t, providertest.Recorded{Body: body}, providertest.Recorded{Body: done})
			m := newModel(t, "bedrock:amazon.nova-pro-v1:0", spec.ModelSettings{BaseURL: srv.URL},
				env("AWS_BEARER_TOKEN_BEDROCK", "k", "AWS_REGION", "us-east-1"))
			opts := []llms.CallOption{llms.WithTools([]llms.Tool{orderTool})}
			if name == "converse-stream" {
				opts = append(opts, llms.WithStreamingFunc(func(context.Context, []byte) error { return nil }))
			}
			resp, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("order 12345678901234567890")}, opts...)
			require.NoError(t, err)
			calls := toolCalls(resp)
			require.Len(t, calls, 1)
			assert.Equal(t, args, calls[0].FunctionCall.Arguments)

			history := []llms.MessageContent{human("order 12345678901234567890"), {Role: llms.ChatMessageTypeAI, Parts: turnOf(t, resp)},
				result(calls[0].ID, "get_order", "shipped")}
			_, err = m.GenerateContent(t.Context(), history, llms.WithTools([]llms.Tool{orderTool}))
			require.NoError(t, err)
			sent := srv.Requests()[1].Body
			assert.Contains(t, string(sent), `"input":`+args, "the call goes back with its numbers as written")
		})
	}
}

// orderTool takes an integer id.
var orderTool = llms.Tool{
	Type: "function",
	Function: &llms.FunctionDefinition{
		Name:        "get_order",
		Description: "Look an order up.",
		Parameters: map[string]any{
			"type":       "object",
			"properties": map[string]any{"id": map[string]any{"type": "integer"}},
			"required":   []string{"id"},
		},
	},
}

// A retried Converse request is signed again for its own attempt: the
// signature of the first one carries its X-Amz-Date, which AWS refuses once
// it is five minutes old ("Signature expired"), and the credentials it was
// made with may have been refreshed since.
func TestBedrockRetrySignsEachAttempt(t *testing.T) {
	t.Parallel()
	srv := providertest.NewBedrockSigV4Server(t, testAWS,
		providertest.Fail(http.StatusServiceUnavailable, "Bedrock is unable to process your request."),
		providertest.Text("signed again"))
	policy, _ := instant()
	// The wait lasts into the next second, the unit of X-Amz-Date, so a
	// signature made for the retry differs from the first one's.
	policy.sleep = func(ctx context.Context, _ time.Duration) error {
		now := time.Now()
		return sleep(ctx, now.Truncate(time.Second).Add(time.Second).Sub(now))
	}
	m, err := New(claudeOnBedrock, spec.ModelSettings{}, Options{Getenv: bedrockEnv(srv), retry: policy})
	require.NoError(t, err)
	resp, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("hello")})
	require.NoError(t, err)
	assert.Equal(t, "signed again", text(resp))
	reqs := srv.Requests()
	require.Len(t, reqs, 2)
	first, second := reqs[0].Header.Get("X-Amz-Date"), reqs[1].Header.Get("X-Amz-Date")
	assert.Less(t, first, second, "the retry must carry a signature of its own time")
	assert.NotEqual(t, reqs[0].Header.Get("Authorization"), reqs[1].Header.Get("Authorization"))
}

// A named tool in toolChoice is taken by Claude and Nova models only (the
// SDK's ToolChoiceMemberTool): tool_choice naming a tool is refused for
// another model (Llama, Mistral, ...), which would refuse the request, and
// still sent to Nova.
func TestBedrockNamedToolChoiceOnlyWhereTaken(t *testing.T) {
	t.Parallel()
	named := spec.ModelSettings{ToolChoice: &spec.ToolChoice{Tools: []string{"read_file"}}}
	for _, model := range []string{"meta.llama3-1-70b-instruct-v1:0", "mistral.mistral-large-2407-v1:0"} {
		assert.EqualError(t, Validate("bedrock:"+model, named),
			"bedrock does not support model_settings.tool_choice: the Converse API forces a named tool on Claude and Nova models only")
	}
	srv := providertest.NewBedrockSigV4Server(t, testAWS, providertest.Calls(providertest.ToolCall{Name: "read_file", Arguments: `{"path":"a.txt"}`}))
	m := newModel(t, "bedrock:us.amazon.nova-pro-v1:0", named, bedrockEnv(srv))
	_, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("read a.txt")}, llms.WithTools([]llms.Tool{readFileTool}))
	require.NoError(t, err)
	assert.JSONEq(t, `{"tool":{"name":"read_file"}}`, jsonOf(t, srv.Requests()[0].JSON()["toolConfig"].(map[string]any)["toolChoice"]))
}

// toolChoice any, which tool_choice: required sends, is taken by Claude,
// Nova and Mistral Large models only: it is refused for another model
// (Llama, a smaller Mistral, DeepSeek, OpenAI's, ...), which would refuse
// the request, and still sent to the others.
func TestBedrockRequiredToolChoiceOnlyWhereTaken(t *testing.T) {
	t.Parallel()
	required := spec.ModelSettings{ToolChoice: &spec.ToolChoice{Mode: "required"}}
	for _, model := range []string{"meta.llama3-1-70b-instruct-v1:0", "mistral.mistral-small-2402-v1:0", "us.deepseek.r1-v1:0",
		"openai.gpt-oss-120b-1:0", "cohere.command-r-plus-v1:0"} {
		assert.EqualError(t, Validate("bedrock:"+model, required),
			"bedrock does not support model_settings.tool_choice: the Converse API forces a tool call (required) on Claude, Nova and Mistral Large models only", model)
	}
	for _, model := range []string{"us.anthropic.claude-sonnet-4-5-20250929-v1:0", "us.amazon.nova-pro-v1:0", "mistral.mistral-large-2407-v1:0"} {
		srv := providertest.NewBedrockSigV4Server(t, testAWS, providertest.Calls(providertest.ToolCall{Name: "read_file", Arguments: `{"path":"a.txt"}`}))
		m := newModel(t, "bedrock:"+model, required, bedrockEnv(srv))
		_, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("read a.txt")}, llms.WithTools([]llms.Tool{readFileTool}))
		require.NoError(t, err, model)
		assert.JSONEq(t, `{"any":{}}`, jsonOf(t, srv.Requests()[0].JSON()["toolConfig"].(map[string]any)["toolChoice"]), model)
	}
}

// A model written as an ARN is judged by the model id the ARN holds: a
// system-defined inference profile's or a foundation model's is checked
// and sent to as its plain id is. An application inference profile's ARN
// names no model, so nothing is refused for a family it may not be of (its
// tool_choice goes to the API, which judges it), and it gets no Claude-only
// field; what needs the family says to name the model and give the ARN as
// bedrock_inference_profile, which is then judged as the model named.
func TestBedrockModelARNs(t *testing.T) {
	t.Parallel()
	const opaque = "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/a1b2c3d4e5f6"
	settings := map[string]spec.ModelSettings{
		"temperature": {Temperature: ptr(0.3)},
		"named":       {ToolChoice: &spec.ToolChoice{Tools: []string{"read_file"}}},
		"required":    {ToolChoice: &spec.ToolChoice{Mode: "required"}},
		"effort":      {Thinking: &spec.Thinking{Enabled: true, Effort: "low"}},
		"budget":      {Thinking: &spec.Thinking{Enabled: true, Budget: 4000}},
		"top_k":       {TopK: ptr(5)},
	}
	for arn, id := range map[string]string{
		"arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-sonnet-4-5-20250929-v1:0": "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
		"arn:aws:bedrock:us-east-1:123456789012:inference-profile/global.anthropic.claude-opus-4-7":             "global.anthropic.claude-opus-4-7",
		"arn:aws:bedrock:us-east-1::foundation-model/meta.llama3-1-70b-instruct-v1:0":                           "meta.llama3-1-70b-instruct-v1:0",
		"arn:aws:bedrock:us-east-1::foundation-model/openai.gpt-oss-120b-1:0":                                   "openai.gpt-oss-120b-1:0",
		"arn:aws:bedrock:us-east-1::foundation-model/amazon.titan-text-lite-v1":                                 "amazon.titan-text-lite-v1",
	} {
		for name, s := range settings {
			want := Validate("bedrock:"+id, s)
			got := Validate("bedrock:"+arn, s)
			if want == nil {
				assert.NoError(t, got, "%s %s", arn, name)
			} else {
				assert.EqualError(t, got, want.Error(), "%s %s", arn, name)
			}
		}
		assert.Equal(t, CheckTools("bedrock:"+id) == nil, CheckTools("bedrock:"+arn) == nil, arn)
	}

	for _, name := range []string{"temperature", "named", "required"} {
		assert.NoError(t, Validate("bedrock:"+opaque, settings[name]), name)
	}
	const hint = "; or give the model's id as the model and this ARN as bedrock_inference_profile"
	assert.EqualError(t, Validate("bedrock:"+opaque, settings["effort"]), "bedrock does not support model_settings.thinking: "+
		"agentspec knows the reasoning switch of Claude and OpenAI models on Bedrock only; send the model's own field through bedrock_additional_model_requests_fields"+hint)
	assert.EqualError(t, Validate("bedrock:"+opaque, settings["top_k"]), "bedrock does not support model_settings.top_k: "+
		"the Converse API sends top_k to Claude and Nova models only; another model can get it through bedrock_additional_model_requests_fields"+hint)
	assert.NoError(t, CheckTools("bedrock:"+opaque))

	// Recorded answers: what is behind the ARN, and so what the API takes,
	// is not known here.
	call := `{"output":{"message":{"role":"assistant","content":[{"toolUse":{"toolUseId":"tu1","name":"read_file","input":{"path":"a.txt"}}}]}},` +
		`"stopReason":"tool_use","usage":{"inputTokens":5,"outputTokens":7,"totalTokens":12}}`
	done := `{"output":{"message":{"role":"assistant","content":[{"text":"alpha"}]}},"stopReason":"end_turn","usage":{"inputTokens":1,"outputTokens":1,"totalTokens":2}}`
	for _, tc := range []struct {
		model    string
		settings spec.ModelSettings
		status   bool
	}{
		{opaque, settings["named"], false},
		{"us.anthropic.claude-sonnet-4-5-20250929-v1:0", spec.ModelSettings{ToolChoice: &spec.ToolChoice{Tools: []string{"read_file"}},
			Provider: map[string]any{"bedrock_inference_profile": opaque}}, true},
	} {
		srv := providertest.NewRecordedServer(t, providertest.Recorded{Body: call}, providertest.Recorded{Body: done})
		tc.settings.BaseURL = srv.URL
		m := newModel(t, "bedrock:"+tc.model, tc.settings, env("AWS_BEARER_TOKEN_BEDROCK", "k", "AWS_REGION", "us-east-1"))
		opts := []llms.CallOption{llms.WithTools([]llms.Tool{readFileTool})}
		resp, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("read a.txt")}, opts...)
		require.NoError(t, err)
		calls := toolCalls(resp)
		require.Len(t, calls, 1)
		failed := result(calls[0].ID, "read_file", "no such file")
		failed.Parts = append(failed.Parts, ToolError)
		_, err = m.GenerateContent(t.Context(), []llms.MessageContent{human("read a.txt"), {Role: llms.ChatMessageTypeAI, Parts: turnOf(t, resp)}, failed}, opts...)
		require.NoError(t, err)

		reqs := srv.Requests()
		require.Len(t, reqs, 2)
		assert.Contains(t, reqs[0].Path, "/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Aapplication-inference-profile%2Fa1b2c3d4e5f6/", tc.model)
		body := reqs[0].JSON()
		assert.JSONEq(t, `{"tool":{"name":"read_file"}}`, jsonOf(t, body["toolConfig"].(map[string]any)["toolChoice"]), tc.model)
		assert.NotContains(t, body, "additionalModelRequestFields", tc.model)
		res := reqs[1].JSON()["messages"].([]any)[2].(map[string]any)["content"].([]any)[0].(map[string]any)["toolResult"].(map[string]any)
		if tc.status {
			assert.Equal(t, "error", res["status"], "judged as the model named")
		} else {
			assert.NotContains(t, res, "status", "a status only Claude and Nova take")
		}
	}
}

// A Bedrock model the Converse API has no tool use for (AWS's table of the
// models and features it supports) cannot be given tools: CheckTools says
// so, naming the model and its family, and has nothing against a model
// that has tool use or a provider other than bedrock.
func TestBedrockModelsWithoutToolUse(t *testing.T) {
	t.Parallel()
	for model, family := range map[string]string{
		"amazon.titan-text-express-v1":                                          "Amazon Titan",
		"amazon.titan-text-premier-v1:0":                                        "Amazon Titan",
		"anthropic.claude-v2:1":                                                 "Anthropic Claude 2.x and earlier",
		"anthropic.claude-instant-v1":                                           "Anthropic Claude 2.x and earlier",
		"ai21.jamba-instruct-v1:0":                                              "AI21 Jamba-Instruct",
		"ai21.j2-ultra-v1":                                                      "AI21 Labs Jurassic-2",
		"cohere.command-text-v14":                                               "Cohere Command",
		"cohere.command-light-text-v14":                                         "Cohere Command Light",
		"meta.llama2-70b-chat-v1":                                               "Meta Llama 2 and Llama 3",
		"meta.llama3-8b-instruct-v1:0":                                          "Meta Llama 2 and Llama 3",
		"meta.llama3-70b-instruct-v1:0":                                         "Meta Llama 2 and Llama 3",
		"us.meta.llama3-2-1b-instruct-v1:0":                                     "Meta Llama 3.2 1B and 3B",
		"us.meta.llama3-2-3b-instruct-v1:0":                                     "Meta Llama 3.2 1B and 3B",
		"mistral.mistral-7b-instruct-v0:2":                                      "Mistral AI Instruct",
		"mistral.mixtral-8x7b-instruct-v0:1":                                    "Mistral AI Instruct",
		"arn:aws:bedrock:us-east-1::foundation-model/amazon.titan-text-lite-v1": "Amazon Titan",
	} {
		err := CheckTools("bedrock:" + model)
		var tu *ToolUseError
		if assert.ErrorAs(t, err, &tu, model) {
			assert.Equal(t, family, tu.Family, model)
			assert.EqualError(t, err, "bedrock:"+model+" cannot call tools: the Converse API has no tool use for "+family+
				" models; give the spec a model that has it (Claude 3 or later, Nova, Llama 3.1, Mistral Large, Command R, ...) or leave out the capabilities that offer tools", model)
		}
	}
	for _, ref := range []string{
		claudeOnBedrock, "bedrock:anthropic.claude-3-haiku-20240307-v1:0", "bedrock:us.amazon.nova-pro-v1:0",
		"bedrock:meta.llama3-1-70b-instruct-v1:0", "bedrock:us.meta.llama3-2-11b-instruct-v1:0", "bedrock:us.meta.llama3-3-70b-instruct-v1:0",
		"bedrock:mistral.mistral-large-2407-v1:0", "bedrock:mistral.mistral-small-2402-v1:0", "bedrock:cohere.command-r-plus-v1:0",
		"bedrock:ai21.jamba-1-5-large-v1:0", "bedrock:openai.gpt-oss-120b-1:0",
		"bedrock:arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/abc123",
		"openai:gpt-4o", "bedrock-mantle:openai.gpt-oss-120b", "test",
	} {
		assert.NoError(t, CheckTools(ref), ref)
	}
}

// An assistant turn that holds nothing Converse takes once its blank text
// and the reasoning that does not go back are left out (a model that
// answered only reasoning, or only white space) is left out whole, as
// pydantic-ai leaves it, and the user turns on either side of it go as one,
// since Converse refuses two user messages in a row.
func TestBedrockEmptyAssistantTurnLeavesOneUserTurn(t *testing.T) {
	t.Parallel()
	unsigned := `{"reasoningContent":{"reasoningText":{"text":"Nothing to say."}}}`
	call := `{"toolUse":{"toolUseId":"tu1","name":"read_file","input":{"path":"a.txt"}}}`
	done := `{"output":{"message":{"role":"assistant","content":[{"text":"alpha"}]}},"stopReason":"end_turn","usage":{"inputTokens":1,"outputTokens":1,"totalTokens":2}}`
	answer := func(blocks ...string) string {
		return `{"output":{"message":{"role":"assistant","content":[` + strings.Join(blocks, ",") + `]}},` +
			`"stopReason":"end_turn","usage":{"inputTokens":5,"outputTokens":7,"totalTokens":12}}`
	}
	for _, tc := range []struct {
		name    string
		empty   string // the answer that leaves an empty turn
		toolRun bool   // whether a tool's result comes before it
		want    string // the user messages sent, with the assistant's between
	}{
		{"reasoning only", answer(unsigned), false,
			`[{"role":"user","content":[{"text":"read"},{"text":"answer"}]}]`},
		{"white space only", answer(`{"text":" \n"}`), false,
			`[{"role":"user","content":[{"text":"read"},{"text":"answer"}]}]`},
		{"reasoning only after a tool result", answer(unsigned), true,
			`[{"role":"user","content":[{"text":"read"}]},{"role":"assistant","content":[` + call + `]},` +
				`{"role":"user","content":[{"toolResult":{"toolUseId":"tu1","content":[{"text":"alpha"}]}},{"text":"answer"}]}]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var recorded []providertest.Recorded
			if tc.toolRun {
				recorded = append(recorded, providertest.Recorded{Body: `{"output":{"message":{"role":"assistant","content":[` + call + `]}},` +
					`"stopReason":"tool_use","usage":{"inputTokens":5,"outputTokens":7,"totalTokens":12}}`})
			}
			recorded = append(recorded, providertest.Recorded{Body: tc.empty}, providertest.Recorded{Body: done})
			srv := providertest.NewRecordedServer(t, recorded...)
			m := newModel(t, "bedrock:openai.gpt-oss-120b-1:0", spec.ModelSettings{BaseURL: srv.URL}, env("AWS_BEARER_TOKEN_BEDROCK", "k", "AWS_REGION", "us-east-1"))
			history := []llms.MessageContent{human("read")}
			if tc.toolRun {
				resp, err := m.GenerateContent(t.Context(), history, llms.WithTools([]llms.Tool{readFileTool}))
				require.NoError(t, err)
				history = append(history, llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: turnOf(t, resp)}, result("tu1", "read_file", "alpha"))
			}
			resp, err := m.GenerateContent(t.Context(), history, llms.WithTools([]llms.Tool{readFileTool}))
			require.NoError(t, err)
			history = append(history, llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: turnOf(t, resp)}, human("answer"))
			_, err = m.GenerateContent(t.Context(), history, llms.WithTools([]llms.Tool{readFileTool}))
			require.NoError(t, err)

			reqs := srv.Requests()
			assert.JSONEq(t, tc.want, jsonOf(t, reqs[len(reqs)-1].JSON()["messages"]))
		})
	}
}
