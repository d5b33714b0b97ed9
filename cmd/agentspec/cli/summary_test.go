package cli

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

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

func TestStreamShowsTheAnswerArriving(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	p := &progress{w: &out, live: true}
	assert.NoError(t, p.stream(t.Context(), "Hello, "))
	assert.NoError(t, p.stream(t.Context(), "wörld"))
	assert.Equal(t, "  receiving the answer… 7 characters\r\x1b[K  receiving the answer… 12 characters", out.String())
}
