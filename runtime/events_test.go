package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/capabilities"
)

type bareEvent struct {
	Path string `json:"path"`
}

func (bareEvent) Kind() string { return "x.bare" }

type emptyEvent struct{}

func (emptyEvent) Kind() string { return "x.empty" }

type scalarEvent string

func (scalarEvent) Kind() string { return "x.scalar" }

type kindedEvent struct {
	K string `json:"kind"`
}

func (kindedEvent) Kind() string { return "x.kinded" }

func TestJSONLines(t *testing.T) {
	t.Parallel()
	events := []capabilities.Event{
		ModelRequest{Request: 1, Attempt: 1, Messages: 2, Tools: 3},
		ModelResponse{Request: 1, Duration: 1500 * time.Microsecond, InputTokens: 10, OutputTokens: 2, ToolCalls: 1, StopReason: "tool_calls"},
		ToolCall{ID: "c1", Name: "read_file", Args: json.RawMessage(`{"path":"a"}`), Round: 1},
		ToolCall{ID: "c2", Name: "read_file", Args: json.RawMessage(`{"path":`), Round: 1},
		ToolResult{ID: "c1", Name: "read_file", Status: ToolRetry, Duration: 250 * time.Microsecond, Chars: 20, Message: "File not found: a", Text: "Error: File not found: a"},
		ToolResult{ID: "c2", Name: "read_file", Status: ToolOK, Chars: 9000, Text: "abc", Truncated: true},
		ModelRetry{Request: 2, Provider: "openai", Status: 503, Attempt: 1, MaxAttempts: 5, Wait: 1500 * time.Millisecond, Reason: "overloaded"},
		Retry{Type: RetryTool, Tool: "read_file", Attempt: 1, Limit: 3, Message: "File not found: a"},
		Rejected{Type: RetryOutput, Attempt: 3, Limit: 3, Message: "the response is empty"},
		LimitReached{Limit: "max_tool_rounds", Value: 40},
		RunEnd{Error: "no valid final answer", Usage: Usage{Requests: 3, Elapsed: 2 * time.Millisecond}},
		RunEnd{OK: true, Cached: true},
		CacheHit{Key: "ab12", Created: time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)},
		CacheWarning{Message: "cache entry ab12: corrupt cache entry: unexpected EOF"},
		bareEvent{Path: "a"},
		emptyEvent{},
		scalarEvent("s"),
		kindedEvent{K: "x.kinded"},
	}
	want := []string{
		`{"kind":"run.model_request","request":1,"attempt":1,"round":0,"messages":2,"tools":3}`,
		`{"kind":"run.model_response","request":1,"duration_ms":1.5,"input_tokens":10,"output_tokens":2,"tool_calls":1,"stop_reason":"tool_calls"}`,
		`{"kind":"run.tool_call","id":"c1","name":"read_file","args":{"path":"a"},"round":1}`,
		`{"kind":"run.tool_call","id":"c2","name":"read_file","args":"{\"path\":","round":1}`,
		`{"kind":"run.tool_result","id":"c1","name":"read_file","status":"retry","duration_ms":0.25,"chars":20,"message":"File not found: a","text":"Error: File not found: a"}`,
		`{"kind":"run.tool_result","id":"c2","name":"read_file","status":"ok","duration_ms":0,"chars":9000,"text":"abc","text_truncated":true}`,
		`{"kind":"model.retry","request":2,"provider":"openai","status":503,"attempt":1,"max_attempts":5,"wait_ms":1500,"reason":"overloaded"}`,
		`{"kind":"run.retry","type":"tool","tool":"read_file","attempt":1,"limit":3,"message":"File not found: a"}`,
		`{"kind":"run.rejected","type":"output","attempt":3,"limit":3,"message":"the response is empty"}`,
		`{"kind":"run.limit_reached","limit":"max_tool_rounds","value":40}`,
		`{"kind":"run.end","ok":false,"error":"no valid final answer","usage":{"requests":3,"input_tokens":0,"output_tokens":0,"tool_calls":0,"elapsed_ms":2},"cached":false}`,
		`{"kind":"run.end","ok":true,"error":null,"usage":{"requests":0,"input_tokens":0,"output_tokens":0,"tool_calls":0,"elapsed_ms":0},"cached":true}`,
		`{"kind":"run.cache_hit","key":"ab12","created":"2026-03-04T05:06:07Z"}`,
		`{"kind":"run.cache_warning","message":"cache entry ab12: corrupt cache entry: unexpected EOF"}`,
		`{"kind":"x.bare","path":"a"}`,
		`{"kind":"x.empty"}`,
		`{"kind":"x.scalar","value":"s"}`,
		`{"kind":"x.kinded"}`,
	}
	var buf bytes.Buffer
	l := JSONLines(&buf)
	ctx := withRunID(context.Background())
	id, ok := RunIDFrom(ctx)
	require.True(t, ok)
	before := time.Now()
	for _, ev := range events {
		require.NoError(t, l(ctx, ev))
	}
	after := time.Now()
	// Every line carries its time, with nine digits of nanoseconds, and the
	// run's id, as its last fields.
	stamped := regexp.MustCompile(`,?"time":"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z)","run_id":"` + id + `"\}$`)
	lines := bytes.Split(bytes.TrimSuffix(buf.Bytes(), []byte("\n")), []byte("\n"))
	require.Len(t, lines, len(want))
	for i, line := range lines {
		m := stamped.FindSubmatch(line)
		require.NotNil(t, m, "no time and run_id in %s", line)
		at, err := time.Parse(time.RFC3339Nano, string(m[1]))
		require.NoError(t, err)
		assert.False(t, at.Before(before.Truncate(time.Microsecond)) || at.After(after), "time %s", at)
		assert.Equal(t, want[i], string(stamped.ReplaceAll(line, []byte("}"))))
	}
	// Outside a run there is no run id, only the time.
	buf.Reset()
	require.NoError(t, l(context.Background(), LimitReached{Limit: "x"}))
	assert.Regexp(t, `^\{"kind":"run.limit_reached","limit":"x","value":0,"time":"[^"]+"\}\n$`, buf.String())
}

// Under an outer run (a pipeline's), every line carries the outer id as
// run_id, and a run's own id as job_id.
func TestJSONLinesOuterRunID(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	l := JSONLines(&buf)
	outer, outerID := WithOuterRunID(context.Background())
	job := withRunID(outer)
	jobID, _ := RunIDFrom(job)
	require.NoError(t, l(outer, LimitReached{Limit: "x"}))
	require.NoError(t, l(job, LimitReached{Limit: "y"}))
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Len(t, lines, 2)
	assert.Regexp(t, `,"time":"[^"]+","run_id":"`+outerID+`"\}$`, lines[0])
	assert.Regexp(t, `,"time":"[^"]+","run_id":"`+outerID+`","job_id":"`+jobID+`"\}$`, lines[1])
	assert.NotEqual(t, outerID, jobID)
}

// A client session's events carry its id as session_id, last, after the
// run's; an empty id is none.
func TestJSONLinesSessionID(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	l := JSONLines(&buf)
	require.NoError(t, l(WithSessionID(context.Background(), "S1"), LimitReached{Limit: "x"}))
	run := withRunID(WithSessionID(context.Background(), "S2"))
	runID, _ := RunIDFrom(run)
	require.NoError(t, l(run, LimitReached{Limit: "y"}))
	require.NoError(t, l(WithSessionID(context.Background(), ""), LimitReached{Limit: "z"}))
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Len(t, lines, 3)
	assert.Regexp(t, `"limit":"x","value":0,"time":"[^"]+","session_id":"S1"\}$`, lines[0])
	assert.Regexp(t, `,"time":"[^"]+","run_id":"`+runID+`","session_id":"S2"\}$`, lines[1])
	assert.Regexp(t, `"limit":"z","value":0,"time":"[^"]+"\}$`, lines[2])
}

func TestCapText(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, want string
		n        int
		cut      bool
	}{
		{"abc", "abc", 3, false},
		{"abcd", "abc", 3, true},
		{"héllo", "hé", 2, true},
		{"日本語", "日本語", 3, false},
		{"日本語テキスト", "日本語", 3, true},
	} {
		got, cut := capText(tc.in, tc.n)
		assert.Equal(t, tc.want, got, tc.in)
		assert.Equal(t, tc.cut, cut, tc.in)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestJSONLinesWriteError(t *testing.T) {
	t.Parallel()
	err := JSONLines(failingWriter{})(context.Background(), LimitReached{})
	assert.EqualError(t, err, "writing events: disk full")
}

func TestUsageJSON(t *testing.T) {
	t.Parallel()
	b, err := json.Marshal(Usage{Requests: 2, InputTokens: 30, OutputTokens: 4, ToolCalls: 1, Elapsed: 1234567 * time.Microsecond})
	require.NoError(t, err)
	assert.JSONEq(t, `{"requests":2,"input_tokens":30,"output_tokens":4,"tool_calls":1,"elapsed_ms":1234.567}`, string(b))
}

func TestModelResponseJSONCarriesCacheReasoningAndRefusal(t *testing.T) {
	t.Parallel()
	b, err := json.Marshal(ModelResponse{Request: 2, InputTokens: 10, OutputTokens: 0, CacheWriteTokens: 5, CacheReadTokens: 7,
		ReasoningTokens: 3, StopReason: "refusal", Refusal: "I can't help with that."})
	require.NoError(t, err)
	assert.JSONEq(t, `{"kind":"run.model_response","request":2,"duration_ms":0,"input_tokens":10,"output_tokens":0,
		"cache_write_tokens":5,"cache_read_tokens":7,"reasoning_tokens":3,"tool_calls":0,"stop_reason":"refusal","refusal":"I can't help with that."}`, string(b))
	u, err := json.Marshal(Usage{Requests: 1, InputTokens: 1, CacheReadTokens: 9})
	require.NoError(t, err)
	assert.JSONEq(t, `{"requests":1,"input_tokens":1,"output_tokens":0,"cache_read_tokens":9,"tool_calls":0,"elapsed_ms":0}`, string(u))
}
