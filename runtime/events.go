package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/spec"
)

// Kinds of the runtime's events, as serialized in their "kind" field.
const (
	KindModelRequest  = "run.model_request"
	KindModelResponse = "run.model_response"
	KindToolCall      = "run.tool_call"
	KindToolResult    = "run.tool_result"
	KindRetry         = "run.retry"
	KindRejected      = "run.rejected"
	KindLimitReached  = "run.limit_reached"
	KindCacheHit      = "run.cache_hit"
	KindCacheWarning  = "run.cache_warning"
	KindCapWarning    = "run.capability_warning"
	KindRunEnd        = "run.end"
	KindModelRetry    = "model.retry"
)

// MaxEventText caps the text a ToolResult event carries, in Unicode code
// points; a longer result is cut there and marked truncated. The model gets
// the whole result all the same.
const MaxEventText = 4096

// EventText is the Text and Truncated of a ToolResult event for a tool's
// result: its first MaxEventText code points, and whether it was cut. Other
// emitters of ToolResult (agentspec mcp) use it, so every events file holds
// the same.
func EventText(result string) (string, bool) { return capText(result, MaxEventText) }

// ModelRequest is emitted before each request to the model.
type ModelRequest struct {
	Request  int  `json:"request"`         // 1-based count of requests in the run
	Attempt  int  `json:"attempt"`         // 1-based answer attempt (see Retry)
	Round    int  `json:"round"`           // tool rounds already done in this attempt
	Messages int  `json:"messages"`        // length of the conversation sent
	Tools    int  `json:"tools"`           // tools offered
	Final    bool `json:"final,omitempty"` // tools are forbidden: the round limit was reached
}

// ModelResponse is emitted when the model has answered.
type ModelResponse struct {
	Request      int
	Duration     time.Duration
	InputTokens  int
	OutputTokens int
	// Cache and reasoning tokens, where the provider reports them: parts
	// of InputTokens and OutputTokens, as in providers.Usage.
	CacheWriteTokens int
	CacheReadTokens  int
	ReasoningTokens  int
	ToolCalls        int
	StopReason       string
	Text             string
	Refusal          string // the model's refusal, when it refused
	// NoUsage is set when the response came with no usage: its token
	// counts are zeros that mean nothing (Usage.RequestsWithoutUsage).
	NoUsage bool
}

// ToolCall is emitted before a tool runs.
type ToolCall struct {
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Args  json.RawMessage `json:"args"`
	Round int             `json:"round"` // 1-based tool round within the attempt
}

// ToolStatus is how a tool call ended.
type ToolStatus string

const (
	ToolOK    ToolStatus = "ok"    // the tool returned a result
	ToolRetry ToolStatus = "retry" // an error the model can correct; it goes back to the model
	ToolFatal ToolStatus = "fatal" // an error that ends the run
	// ToolCancelled: the call's client cancelled it before it ended, or
	// the server did as it shut down once the call's grace had passed,
	// which is no failure of the tool or the server. Only `agentspec mcp`
	// (runtime/mcpserve) records it; a run's own interrupted call is
	// ToolFatal.
	ToolCancelled ToolStatus = "cancelled"
)

// ToolResult is emitted after a tool ran (or was refused before running: an
// unknown tool or arguments that are not a JSON object).
type ToolResult struct {
	ID       string
	Name     string
	Status   ToolStatus
	Duration time.Duration
	Chars    int    // length of the result sent to the model, in Unicode code points
	Message  string // the error, unless Status is ToolOK
	// Refusal is the kind of a refused change (a conflict, a protected
	// path), from the tool's capabilities.RetryError; "" otherwise.
	Refusal capabilities.Refusal
	// Text is the result sent to the model, its first MaxEventText code
	// points; Truncated says it was cut.
	Text      string
	Truncated bool
}

// ModelRetry is emitted when the provider's request failed in a way worth
// another attempt (a rate limit, a server error, a refused or cut
// connection), before the wait.
type ModelRetry struct {
	Request     int           // the run's model request, as in ModelRequest
	Provider    string        // "openai", "anthropic", ...
	Status      int           // the HTTP status of the failed attempt; 0 when no response came
	Attempt     int           // the attempt that failed, 1-based
	MaxAttempts int           // attempts allowed in all
	Wait        time.Duration // the wait before the next attempt
	Reason      string        // the provider's message or the network error, on one line
}

// RetryKind says what the model is asked to correct.
type RetryKind string

const (
	RetryTool       RetryKind = "tool"       // a tool call failed in a way the model can correct
	RetryOutput     RetryKind = "output"     // the final answer did not match the output schema, or was empty
	RetryValidation RetryKind = "validation" // a validator rejected the final answer
	RetryCheck      RetryKind = "check"      // an expected output file is missing or a workspace check failed
)

// Retry is emitted when the model is asked to correct itself.
type Retry struct {
	Type    RetryKind `json:"type"`
	Tool    string    `json:"tool,omitempty"` // for RetryTool
	Attempt int       `json:"attempt"`        // failures so far: of this tool in a row, or of the answer
	// Limit is, for an answer, how many answers the run takes in all (its
	// output retries and one); for a tool, how many of its failures in a
	// row the run allows (its retries).
	Limit   int    `json:"limit"`
	Message string `json:"message"`
}

// Rejected is emitted when a rejection ends the run, where a Retry would
// otherwise follow: the last answer attempt was rejected (Attempt is
// Limit), or a tool failed in more rounds in a row than the spec's
// retries allow (Type RetryTool; Attempt is Limit+1).
type Rejected struct {
	Type    RetryKind `json:"type"`
	Tool    string    `json:"tool,omitempty"` // for RetryTool
	Attempt int       `json:"attempt"`
	Limit   int       `json:"limit"`
	Message string    `json:"message"`
}

// RunEnd is the last event of every run that started (Run, or a job of
// Batch), whatever its outcome: success, failure, a cache hit or an
// interruption. A run whose options or spec were refused before it started
// has none.
type RunEnd struct {
	OK     bool
	Error  string // the run's error; "" when OK
	Usage  Usage
	Cached bool
}

// LimitReached is emitted when the tool round limit is reached and the model
// is asked for its final answer with tools forbidden.
type LimitReached struct {
	Limit string `json:"limit"` // "max_tool_rounds"
	Value int    `json:"value"`
}

// CacheHit is emitted when a run's result is replayed from the cache; the
// model is not called.
type CacheHit struct {
	Key     string    `json:"key"`
	Created time.Time `json:"created"` // when the entry was stored
}

// CacheWarning is emitted when the cache could not do its part: an entry
// that could not be read (it is removed), a hit whose expected output files
// are missing, a lookup or store that failed. The run goes on without the
// cache; a warning never fails it.
type CacheWarning struct {
	Message string `json:"message"`
}

func (ModelRequest) Kind() string  { return KindModelRequest }
func (ModelResponse) Kind() string { return KindModelResponse }
func (ToolCall) Kind() string      { return KindToolCall }
func (ToolResult) Kind() string    { return KindToolResult }
func (Retry) Kind() string         { return KindRetry }
func (Rejected) Kind() string      { return KindRejected }
func (RunEnd) Kind() string        { return KindRunEnd }
func (LimitReached) Kind() string  { return KindLimitReached }
func (CacheHit) Kind() string      { return KindCacheHit }
func (CacheWarning) Kind() string  { return KindCacheWarning }
func (CapabilityWarning) Kind() string {
	return KindCapWarning
}
func (ModelRetry) Kind() string { return KindModelRetry }

func (e ModelRetry) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Kind        string  `json:"kind"`
		Request     int     `json:"request"`
		Provider    string  `json:"provider"`
		Status      int     `json:"status"`
		Attempt     int     `json:"attempt"`
		MaxAttempts int     `json:"max_attempts"`
		WaitMS      float64 `json:"wait_ms"`
		Reason      string  `json:"reason"`
	}{e.Kind(), e.Request, e.Provider, e.Status, e.Attempt, e.MaxAttempts, millis(e.Wait), e.Reason})
}

// The MarshalJSON methods add the "kind" field; durations are written in
// milliseconds.

func (e ModelRequest) MarshalJSON() ([]byte, error) {
	type plain ModelRequest
	return json.Marshal(struct {
		Kind string `json:"kind"`
		plain
	}{e.Kind(), plain(e)})
}

func (e ModelResponse) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Kind         string  `json:"kind"`
		Request      int     `json:"request"`
		DurationMS   float64 `json:"duration_ms"`
		InputTokens  int     `json:"input_tokens"`
		OutputTokens int     `json:"output_tokens"`
		CacheWrite   int     `json:"cache_write_tokens,omitempty"`
		CacheRead    int     `json:"cache_read_tokens,omitempty"`
		Reasoning    int     `json:"reasoning_tokens,omitempty"`
		ToolCalls    int     `json:"tool_calls"`
		StopReason   string  `json:"stop_reason,omitempty"`
		Text         string  `json:"text,omitempty"`
		Refusal      string  `json:"refusal,omitempty"`
		NoUsage      bool    `json:"no_usage,omitempty"`
	}{e.Kind(), e.Request, millis(e.Duration), e.InputTokens, e.OutputTokens, e.CacheWriteTokens, e.CacheReadTokens,
		e.ReasoningTokens, e.ToolCalls, e.StopReason, e.Text, e.Refusal, e.NoUsage})
}

func (e ToolCall) MarshalJSON() ([]byte, error) {
	type plain ToolCall
	p := plain(e)
	if !json.Valid(p.Args) {
		// The model's arguments are not always JSON; keep them as a string so
		// the event itself stays valid JSON.
		s, _ := json.Marshal(string(e.Args))
		p.Args = s
	}
	return json.Marshal(struct {
		Kind string `json:"kind"`
		plain
	}{e.Kind(), p})
}

func (e ToolResult) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Kind       string     `json:"kind"`
		ID         string     `json:"id"`
		Name       string     `json:"name"`
		Status     ToolStatus `json:"status"`
		DurationMS float64    `json:"duration_ms"`
		Chars      int        `json:"chars"`
		Message    string     `json:"message,omitempty"`
		Refusal    string     `json:"refusal,omitempty"`
		Text       string     `json:"text,omitempty"`
		Truncated  bool       `json:"text_truncated,omitempty"`
	}{e.Kind(), e.ID, e.Name, e.Status, millis(e.Duration), e.Chars, e.Message, string(e.Refusal), e.Text, e.Truncated})
}

func (e Retry) MarshalJSON() ([]byte, error) {
	type plain Retry
	return json.Marshal(struct {
		Kind string `json:"kind"`
		plain
	}{e.Kind(), plain(e)})
}

func (e Rejected) MarshalJSON() ([]byte, error) {
	type plain Rejected
	return json.Marshal(struct {
		Kind string `json:"kind"`
		plain
	}{e.Kind(), plain(e)})
}

// MarshalJSON writes the error as null when the run succeeded.
func (e RunEnd) MarshalJSON() ([]byte, error) {
	var msg *string
	if e.Error != "" {
		msg = &e.Error
	}
	return json.Marshal(struct {
		Kind   string  `json:"kind"`
		OK     bool    `json:"ok"`
		Error  *string `json:"error"`
		Usage  Usage   `json:"usage"`
		Cached bool    `json:"cached"`
	}{e.Kind(), e.OK, msg, e.Usage, e.Cached})
}

func (e LimitReached) MarshalJSON() ([]byte, error) {
	type plain LimitReached
	return json.Marshal(struct {
		Kind string `json:"kind"`
		plain
	}{e.Kind(), plain(e)})
}

func (e CacheHit) MarshalJSON() ([]byte, error) {
	type plain CacheHit
	return json.Marshal(struct {
		Kind string `json:"kind"`
		plain
	}{e.Kind(), plain(e)})
}

// CapabilityWarning is emitted when a capability built for the run, or for
// Check, warns of its options (capabilities.Warner), at the capability's
// position in the spec.
type CapabilityWarning struct {
	File    string `json:"file"`
	Line    int    `json:"line"`
	Column  int    `json:"column"`
	Message string `json:"message"`
}

// String is the warning as spec warnings are printed: FILE:LINE:COL: message.
func (e CapabilityWarning) String() string {
	return spec.Position{File: e.File, Line: e.Line, Col: e.Column}.String() + ": " + e.Message
}

func (e CapabilityWarning) MarshalJSON() ([]byte, error) {
	type plain CapabilityWarning
	return json.Marshal(struct {
		Kind string `json:"kind"`
		plain
	}{e.Kind(), plain(e)})
}

func (e CacheWarning) MarshalJSON() ([]byte, error) {
	type plain CacheWarning
	return json.Marshal(struct {
		Kind string `json:"kind"`
		plain
	}{e.Kind(), plain(e)})
}

func millis(d time.Duration) float64 {
	// Microsecond precision is plenty and keeps the numbers short.
	return float64(d.Microseconds()) / 1000
}

// eventTime is how JSONLines writes an event's time: RFC 3339 with all nine
// digits of the nanoseconds, so the lines sort as text.
const eventTime = "2006-01-02T15:04:05.000000000Z07:00"

// EventsFileMode is the mode an events file is created with: readable and
// writable by its owner alone, since events carry tool arguments and
// results, the contents of the files a run read among them.
const EventsFileMode os.FileMode = 0o600

// CreateEventsFile creates the file at path, or truncates it if it exists,
// for JSONLines to write to. A file it creates has EventsFileMode; an
// existing file keeps its mode.
func CreateEventsFile(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, EventsFileMode)
}

// JSONLines returns a listener that writes every event to w as one JSON object
// per line, in one Write each, so a file written unbuffered holds every event
// as soon as it happened. Events that do not marshal a "kind" field
// themselves get one; each line also gets "time", when it was written (UTC,
// RFC 3339 with nanoseconds), "run_id", the run's id (RunIDFrom) when
// the event came from a run, and "session_id" when it came from a client
// session's call (SessionIDFrom). It is safe for concurrent use; a write
// error aborts the run.
func JSONLines(w io.Writer) capabilities.Listener {
	var mu sync.Mutex
	return func(ctx context.Context, ev capabilities.Event) error {
		line, err := marshalEvent(ev)
		if err != nil {
			return err
		}
		line = stamp(ctx, line, time.Now())
		mu.Lock()
		defer mu.Unlock()
		if _, err := w.Write(append(line, '\n')); err != nil {
			return fmt.Errorf("writing events: %w", err)
		}
		return nil
	}
}

// stamp adds "time" and "run_id" (and "job_id", see WithOuterRunID, and
// "session_id", see WithSessionID) to line, an event's JSON object, as its
// last fields, so that a line still starts with its kind and the event's own
// fields.
func stamp(ctx context.Context, line []byte, now time.Time) []byte {
	extra := `"time":"` + now.UTC().Format(eventTime) + `"`
	id, ok := RunIDFrom(ctx)
	if outer, isJob := outerRunIDFrom(ctx); isJob {
		// One run of many (a pipeline's job): the whole's id is the run_id,
		// the job's its own field.
		b, _ := json.Marshal(outer)
		extra += `,"run_id":` + string(b)
		if ok {
			b, _ := json.Marshal(id)
			extra += `,"job_id":` + string(b)
		}
	} else if ok {
		b, _ := json.Marshal(id)
		extra += `,"run_id":` + string(b)
	}
	if session, ok := SessionIDFrom(ctx); ok {
		b, _ := json.Marshal(session)
		extra += `,"session_id":` + string(b)
	}
	body := bytes.TrimRight(line, " \t\r\n")
	body = body[:len(body)-1] // the closing brace
	out := make([]byte, 0, len(body)+len(extra)+2)
	out = append(out, body...)
	if len(bytes.TrimSpace(body)) > 1 {
		out = append(out, ',')
	}
	out = append(out, extra...)
	return append(out, '}')
}

func marshalEvent(ev capabilities.Event) ([]byte, error) {
	b, err := json.Marshal(ev)
	if err != nil {
		return nil, fmt.Errorf("event %s: %w", ev.Kind(), err)
	}
	if len(b) == 0 || b[0] != '{' {
		return json.Marshal(struct {
			Kind  string          `json:"kind"`
			Value json.RawMessage `json:"value"`
		}{ev.Kind(), b})
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return nil, fmt.Errorf("event %s: %w", ev.Kind(), err)
	}
	if _, ok := fields["kind"]; ok {
		return b, nil
	}
	kind, _ := json.Marshal(ev.Kind())
	out := make([]byte, 0, len(b)+len(kind)+10)
	out = append(out, `{"kind":`...)
	out = append(out, kind...)
	if rest := bytes.TrimSpace(b[1:]); len(rest) > 0 && rest[0] != '}' {
		out = append(out, ',')
	}
	return append(out, b[1:]...), nil
}
