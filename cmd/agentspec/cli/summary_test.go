package cli

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/pipeline"
	"github.com/agentspec/agentspec/runtime"
)

func TestSummaryCountsCacheAndReasoningTokens(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	p := newProgress(&out)
	p.summary(&runtime.Result{Usage: runtime.Usage{Requests: 2, InputTokens: 250, OutputTokens: 40,
		CacheReadTokens: 1900, CacheWriteTokens: 500, ReasoningTokens: 12, ToolCalls: 1, Elapsed: 1500 * time.Millisecond}})
	assert.Equal(t, "2 model requests, 250 input + 40 output tokens (1900 read from the cache, 500 written to the cache, 12 reasoning), 1 tool call, 1.5s\n", out.String())

	out.Reset()
	p.summary(&runtime.Result{Usage: runtime.Usage{Requests: 1, InputTokens: 5, OutputTokens: 2, Elapsed: time.Second}})
	assert.Equal(t, "1 model request, 5 input + 2 output tokens, 0 tool calls, 1.0s\n", out.String(), "nothing said of what the provider did not report")
}

// A total that leaves out responses which came with no usage says it is a
// lower bound, and how many it leaves out, rather than pass for the whole.
func TestSummaryNamesRequestsWithoutUsage(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	p := newProgress(&out)
	p.summary(&runtime.Result{Usage: runtime.Usage{Requests: 3, RequestsWithoutUsage: 1, InputTokens: 250, OutputTokens: 40,
		CacheReadTokens: 1900, ToolCalls: 2, Elapsed: 1500 * time.Millisecond}})
	assert.Equal(t, "3 model requests, at least 250 input + 40 output tokens (1900 read from the cache; 1 request reported no usage), 2 tool calls, 1.5s\n", out.String())

	out.Reset()
	p.summary(&runtime.Result{Usage: runtime.Usage{Requests: 2, RequestsWithoutUsage: 2, Elapsed: time.Second}})
	assert.Equal(t, "2 model requests, at least 0 input + 0 output tokens (2 requests reported no usage), 0 tool calls, 1.0s\n", out.String())

	out.Reset()
	pipelineSummary(&out, &pipeline.Pipeline{}, &pipeline.Result{Usage: runtime.Usage{Requests: 4, RequestsWithoutUsage: 1, InputTokens: 30, OutputTokens: 9, ToolCalls: 1, Elapsed: time.Second}})
	assert.Equal(t, "0 steps: 0 ok, 0 failed, 0 skipped, 0 not run; 4 requests, at least 30 input + 9 output tokens (1 request reported no usage), 1 tool call, 1.0s\n", out.String())

	out.Reset()
	pipelineSummary(&out, &pipeline.Pipeline{}, &pipeline.Result{Usage: runtime.Usage{Requests: 1, InputTokens: 3, OutputTokens: 1, ToolCalls: 2, Elapsed: time.Second}})
	assert.Equal(t, "0 steps: 0 ok, 0 failed, 0 skipped, 0 not run; 1 request, 3 input + 1 output tokens, 2 tool calls, 1.0s\n", out.String())
}

func TestStreamShowsTheAnswerArriving(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	p := &progress{w: &out, live: true}
	assert.NoError(t, p.stream(t.Context(), "Hello, "))
	assert.NoError(t, p.stream(t.Context(), "wörld"))
	assert.Equal(t, "  receiving the answer… 7 characters\r\x1b[K  receiving the answer… 12 characters", out.String())
}

// A run one of whose responses came with no usage says so in its summary
// and in its -o json envelope.
func TestRunReportsRequestsWithoutUsage(t *testing.T) {
	t.Parallel()
	f := newRunFixture(t)
	f.write(t, "script.yaml", "turns:\n  - tool_calls: [{name: read_file, arguments: {path: notes.md}}]\n"+
		"  - text: done\n    usage: {input_tokens: 20, output_tokens: 4}\n")
	specPath := f.write(t, "agent.yaml", "version: 1\nmodel: script:script.yaml\ninstructions: Read notes.md.\ncapabilities: [FileSystem]\n")

	out := invokeRun(t, "", specPath, "--workspace", f.workspace, "-o", "json")
	require.Equal(t, 0, out.code, out.stderr)
	assert.Contains(t, out.stderr, "2 model requests, at least 20 input + 4 output tokens (1 request reported no usage), 1 tool call, ")
	var env struct {
		Usage map[string]any `json:"usage"`
	}
	require.NoError(t, json.Unmarshal([]byte(out.stdout), &env), out.stdout)
	assert.Equal(t, float64(2), env.Usage["requests"])
	assert.Equal(t, float64(1), env.Usage["requests_without_usage"])
	assert.Equal(t, float64(20), env.Usage["input_tokens"])
}
