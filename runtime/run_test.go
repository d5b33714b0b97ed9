package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/runtime/providers"
	"github.com/agentspec/agentspec/runtime/script"
	"github.com/agentspec/agentspec/spec"
)

const (
	ai    = llms.ChatMessageTypeAI
	human = llms.ChatMessageTypeHuman
	sys   = llms.ChatMessageTypeSystem
	tool  = llms.ChatMessageTypeTool
)

func TestRunMultiRoundToolUse(t *testing.T) {
	t.Parallel()
	read := &echoTool{name: "read_file"}
	m := script.New(
		script.Turn{ToolCalls: []script.ToolCall{script.Call("read_file", map[string]any{"path": "a.md"})}, Usage: &script.Usage{InputTokens: 100, OutputTokens: 10}},
		script.Turn{ToolCalls: []script.ToolCall{script.Call("read_file", map[string]any{"path": "b.md"})}, Usage: &script.Usage{InputTokens: 150, OutputTokens: 12}},
		script.Turn{Text: "Both files read.", Usage: &script.Usage{InputTokens: 200, OutputTokens: 5}},
	)
	res, err := runScript(t, newSpec(), m, []capabilities.Tool{read}, WithInput("Read a.md then b.md."))
	require.NoError(t, err)

	assert.Equal(t, "Both files read.", res.Output)
	assert.Nil(t, res.JSON)
	assert.Equal(t, []string{`{"path":"a.md"}`, `{"path":"b.md"}`}, read.Calls())
	assert.Equal(t, Usage{Requests: 3, InputTokens: 450, OutputTokens: 27, ToolCalls: 2}, withoutElapsed(res.Usage))
	assert.Equal(t, []llms.ChatMessageType{sys, human, ai, tool, ai, tool, ai}, roles(res.Transcript))
	assert.Equal(t, []string{`read_file({"path":"a.md"})`, `read_file({"path":"b.md"})`}, toolResults(res.Transcript))

	reqs := m.Requests()
	require.Len(t, reqs, 3)
	assert.Len(t, reqs[0].Messages, 2, "the first request is the system and user messages")
	assert.Equal(t, "Read a.md then b.md.", reqs[0].Messages[1].Parts[0].(llms.TextContent).Text)
	assert.Equal(t, []string{`read_file({"path":"a.md"})`}, toolResults(reqs[1].Messages))
	for _, r := range reqs {
		require.Len(t, r.Options.Tools, 1)
		assert.Equal(t, "read_file", r.Options.Tools[0].Function.Name)
		assert.Equal(t, emptyParameters, r.Options.Tools[0].Function.Parameters, "a tool without parameters declares an empty object schema")
		assert.Nil(t, r.Options.ToolChoice)
	}
}

func withoutElapsed(u Usage) Usage {
	u.Elapsed = 0
	return u
}

func TestRunParallelCallsInOneTurn(t *testing.T) {
	t.Parallel()
	var order []string
	record := func(name string) capabilities.Tool {
		return funcTool{name: name, fn: func(_ context.Context, args json.RawMessage) (string, error) {
			order = append(order, name+string(args))
			return "done " + name, nil
		}}
	}
	m := script.New(
		script.Calls(
			script.ToolCall{ID: "c1", Name: "first", Arguments: map[string]any{"path": "1"}},
			script.ToolCall{ID: "c2", Name: "second", Arguments: map[string]any{"path": "2"}},
			script.ToolCall{ID: "c3", Name: "first", Arguments: map[string]any{"path": "3"}},
		),
		script.Say("ok"),
	)
	res, err := runScript(t, newSpec(), m, []capabilities.Tool{record("first"), record("second")})
	require.NoError(t, err)

	assert.Equal(t, []string{`first{"path":"1"}`, `second{"path":"2"}`, `first{"path":"3"}`}, order, "calls run in the order the model gave them")
	assert.Equal(t, []llms.ChatMessageType{sys, human, ai, tool, tool, tool, ai}, roles(res.Transcript))
	// openai shape: one assistant message with every call, one tool message per call.
	assistant := res.Transcript[2]
	require.Len(t, assistant.Parts, 3)
	for i, id := range []string{"c1", "c2", "c3"} {
		call := assistant.Parts[i].(llms.ToolCall)
		assert.Equal(t, id, call.ID)
		assert.Equal(t, "function", call.Type)
		resp := res.Transcript[3+i].Parts[0].(llms.ToolCallResponse)
		assert.Equal(t, id, resp.ToolCallID)
		assert.Equal(t, call.FunctionCall.Name, resp.Name)
	}
	assert.Equal(t, 3, res.Usage.ToolCalls)
}

func TestRunAnthropicShapedResponses(t *testing.T) {
	t.Parallel()
	read := &echoTool{name: "read_file"}
	m := script.New(
		script.Turn{
			Text: "Let me read both.",
			ToolCalls: []script.ToolCall{
				script.Call("read_file", map[string]any{"path": "a"}),
				script.Call("read_file", nil), // no arguments at all
			},
			Usage: &script.Usage{InputTokens: 40, OutputTokens: 7},
		},
		script.Turn{Text: "Done.", Usage: &script.Usage{InputTokens: 60, OutputTokens: 3}},
	).WithDialect(script.Anthropic)
	res, err := runScript(t, newSpec(), m, []capabilities.Tool{read})
	require.NoError(t, err)

	assert.Equal(t, "Done.", res.Output)
	assert.Equal(t, []string{`{"path":"a"}`, `{}`}, read.Calls(), "empty arguments are normalised to {}")
	// Usage is repeated on each of the three blocks of the first response; it counts once.
	assert.Equal(t, 100, res.Usage.InputTokens)
	assert.Equal(t, 10, res.Usage.OutputTokens)
	// anthropic shape: one assistant message per block, text first.
	assert.Equal(t, []llms.ChatMessageType{sys, human, ai, ai, ai, tool, tool, ai}, roles(res.Transcript))
	assert.Equal(t, llms.TextContent{Text: "Let me read both."}, res.Transcript[2].Parts[0])
	for _, msg := range res.Transcript[3:5] {
		require.Len(t, msg.Parts, 1)
		call := msg.Parts[0].(llms.ToolCall)
		assert.Equal(t, "function", call.Type, "the type is filled in for replay")
		assert.NotEmpty(t, call.ID)
		assert.True(t, json.Valid([]byte(call.FunctionCall.Arguments)))
	}
}

func TestRunLostToolCalls(t *testing.T) {
	t.Parallel()
	cases := map[string]script.Turn{
		"openai stop reason without calls":   {StopReason: "tool_calls"},
		"anthropic stop reason with text":    {Text: "I'll check.", StopReason: "tool_use"},
		"only nameless calls (stream noise)": {ToolCalls: []script.ToolCall{{Arguments: "{}"}}},
	}
	for name, turn := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			m := script.New(turn, script.Say("never reached"))
			_, err := runScript(t, newSpec(), m, []capabilities.Tool{&echoTool{name: "read_file"}})
			require.ErrorIs(t, err, ErrLostToolCalls)
			assert.Equal(t, 1, m.Remaining(), "no further request after a lost call")
		})
	}
}

// A call of a tool when none is offered says so, rather than list none.
func TestRunUnknownToolWhenNoneIsOffered(t *testing.T) {
	t.Parallel()
	m := script.New(
		script.Calls(script.Call("read_file", map[string]any{"path": "x.md"})),
		script.Say("done"),
	)
	res, err := runScript(t, newSpec(), m, nil)
	require.NoError(t, err)
	results := toolResults(res.Transcript)
	require.Len(t, results, 1)
	assert.Equal(t, `Error: unknown tool "read_file"; no tools are offered`, results[0])
}

func TestRunCorrectableErrorsGoBackToTheModel(t *testing.T) {
	t.Parallel()
	missing := funcTool{name: "read_file", fn: func(context.Context, json.RawMessage) (string, error) {
		return "", capabilities.Retry("File not found: %s", "x.md")
	}}
	m := script.New(
		script.Calls(script.Call("read_file", map[string]any{"path": "x.md"})),
		script.Calls(script.Call("no_such_tool", map[string]any{})),
		script.Calls(script.Call("read_file", `{"path": "x.md"`)),
		script.Calls(script.Call("read_file", `["x.md"]`)),
		script.Say("gave up"),
	)
	rec := &recorder{}
	res, err := runScript(t, newSpec(func(s *spec.Spec) { s.Retries = 5 }), m, []capabilities.Tool{missing}, WithListener(rec.listen))
	require.NoError(t, err)
	assert.Equal(t, "gave up", res.Output)

	results := toolResults(res.Transcript)
	require.Len(t, results, 4)
	assert.Equal(t, "Error: File not found: x.md", results[0])
	assert.Equal(t, `Error: unknown tool "no_such_tool"; the tools are: read_file`, results[1])
	assert.Contains(t, results[2], "Error: the arguments of read_file are not a JSON object: unexpected end of JSON input")
	assert.Equal(t, "Error: the arguments of read_file are not a JSON object: got an array", results[3])

	retries := eventsOf[Retry](rec)
	require.Len(t, retries, 4)
	assert.Equal(t, Retry{Type: RetryTool, Tool: "read_file", Attempt: 1, Limit: 5, Message: "File not found: x.md"}, retries[0])
	assert.Equal(t, "no_such_tool", retries[1].Tool)
	assert.Equal(t, 1, retries[1].Attempt, "the unknown tool failing does not reset read_file's count...")
	assert.Equal(t, 1, retries[2].Attempt, "...but a round without read_file failing does")
	assert.Equal(t, 2, retries[3].Attempt)
}

func TestRunRetriesBound(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	flaky := funcTool{name: "edit_file", fn: func(_ context.Context, args json.RawMessage) (string, error) {
		calls.Add(1)
		if strings.Contains(string(args), "good") {
			return "edited", nil
		}
		return "", capabilities.Retry("old_text not found (call %d)", calls.Load())
	}}
	bad := script.Calls(script.Call("edit_file", map[string]any{"path": "bad"}))
	good := script.Calls(script.Call("edit_file", map[string]any{"path": "good"}))

	t.Run("a success resets the count", func(t *testing.T) {
		m := script.New(bad, bad, good, bad, bad, good, script.Say("done"))
		res, err := runScript(t, newSpec(func(s *spec.Spec) { s.Retries = 2 }), m, []capabilities.Tool{flaky})
		require.NoError(t, err)
		assert.Equal(t, "done", res.Output)
	})
	t.Run("one failure too many ends the run", func(t *testing.T) {
		calls.Store(0)
		m := script.New(bad, bad, bad, script.Say("never"))
		res, err := runScript(t, newSpec(func(s *spec.Spec) { s.Retries = 2 }), m, []capabilities.Tool{flaky})
		var re *RetriesExceededError
		require.ErrorAs(t, err, &re)
		assert.Equal(t, &RetriesExceededError{Tool: "edit_file", Retries: 2, Last: "old_text not found (call 3)"}, re)
		assert.EqualError(t, err, "tool edit_file failed 3 times in a row (retries: 2); last error: old_text not found (call 3)")
		assert.Equal(t, 3, res.Usage.Requests)
		assert.Equal(t, 1, m.Remaining())
	})
	t.Run("failures in one turn count once", func(t *testing.T) {
		m := script.New(script.Calls(bad.ToolCalls[0], bad.ToolCalls[0], bad.ToolCalls[0]), script.Say("ok"))
		res, err := runScript(t, newSpec(func(s *spec.Spec) { s.Retries = 1 }), m, []capabilities.Tool{flaky})
		require.NoError(t, err)
		assert.Len(t, toolResults(res.Transcript), 3)
	})
	t.Run("retries 0 allows no correction", func(t *testing.T) {
		m := script.New(bad, script.Say("never"))
		_, err := runScript(t, newSpec(func(s *spec.Spec) { s.Retries = 0 }), m, []capabilities.Tool{flaky})
		var re *RetriesExceededError
		require.ErrorAs(t, err, &re)
		assert.Equal(t, 0, re.Retries)
		assert.Regexp(t, `^tool edit_file failed 1 time \(retries: 0\); last error: old_text not found`, err.Error())
	})
}

func TestRunFatalToolError(t *testing.T) {
	t.Parallel()
	diskFull := errors.New("write x: no space left on device")
	var afterRan atomic.Bool
	tools := []capabilities.Tool{
		funcTool{name: "write_file", fn: func(context.Context, json.RawMessage) (string, error) { return "", diskFull }},
		funcTool{name: "after", fn: func(context.Context, json.RawMessage) (string, error) { afterRan.Store(true); return "", nil }},
	}
	m := script.New(script.Calls(script.Call("write_file", map[string]any{}), script.Call("after", map[string]any{})), script.Say("never"))
	rec := &recorder{}
	res, err := runScript(t, newSpec(), m, tools, WithListener(rec.listen))
	require.ErrorIs(t, err, diskFull)
	assert.EqualError(t, err, "tool write_file: write x: no space left on device")
	assert.False(t, afterRan.Load(), "no call runs after a fatal error")
	assert.Equal(t, 1, m.Remaining())
	results := eventsOf[ToolResult](rec)
	require.Len(t, results, 1)
	assert.Equal(t, ToolFatal, results[0].Status)
	assert.Equal(t, diskFull.Error(), results[0].Message)
	assert.Equal(t, 1, res.Usage.ToolCalls)
}

func TestRunToolTimeoutIsCorrectable(t *testing.T) {
	t.Parallel()
	slow := funcTool{name: "grep", fn: func(ctx context.Context, _ json.RawMessage) (string, error) {
		<-ctx.Done()
		return "", ctx.Err()
	}}
	grep := script.Calls(script.Call("grep", map[string]any{}))
	s := newSpec(func(s *spec.Spec) { s.ToolTimeout = 5 * time.Millisecond; s.Retries = 1 })

	res, err := runScript(t, s, script.New(grep, script.Say("too slow")), []capabilities.Tool{slow})
	require.NoError(t, err)
	assert.Equal(t, []string{"Error: Timed out after 0.005 seconds."}, toolResults(res.Transcript))

	_, err = runScript(t, s, script.New(grep, grep, script.Say("never")), []capabilities.Tool{slow})
	var re *RetriesExceededError
	require.ErrorAs(t, err, &re, "timeouts count against the retries")
	assert.Equal(t, "Timed out after 0.005 seconds.", re.Last)
}

// A listener hears a tool's events under the run's context, not under the
// call's tool_timeout: a person asked to approve a change (--approve) is
// not the tool running late, and a question given up at the deadline took
// the answer meant for it as the next question's.
type askEvent struct{}

func (askEvent) Kind() string { return "test.ask" }

func TestRunToolTimeoutSparesListeners(t *testing.T) {
	t.Parallel()
	asking := funcTool{name: "write", fn: func(ctx context.Context, _ json.RawMessage) (string, error) {
		if err := capabilities.Emit(ctx, askEvent{}); err != nil {
			return "", err
		}
		return "written", nil
	}}
	var heard []error
	var ids []string
	slowPerson := func(ctx context.Context, ev capabilities.Event) error {
		if _, ok := ev.(askEvent); ok {
			time.Sleep(30 * time.Millisecond)
			heard = append(heard, ctx.Err())
			call, _ := capabilities.CallFrom(ctx)
			ids = append(ids, call.ID)
		}
		return nil
	}
	call := script.Calls(script.ToolCall{ID: "c1", Name: "write", Arguments: map[string]any{}})
	s := newSpec(func(s *spec.Spec) { s.ToolTimeout = 5 * time.Millisecond })
	_, err := runScript(t, s, script.New(call, script.Say("done")), []capabilities.Tool{asking}, WithListener(slowPerson))
	require.NoError(t, err)
	assert.Equal(t, []error{nil}, heard, "the listener's context did not end at the tool's deadline")
	assert.Equal(t, []string{"c1"}, ids, "it still names the call")
}

// The time a listener takes, a person answering --approve, does not count
// against tool_timeout: a change approved after the deadline is still made,
// and a tool that is slow itself still ends at tool_timeout, its clock going
// on after the answer with the time it had left.
func TestRunToolTimeoutStopsWhileListenersRun(t *testing.T) {
	t.Parallel()
	const timeout = 200 * time.Millisecond
	asked := make(chan context.Context, 2) // the tool's context, for the person
	var moved [2]bool                      // the call's deadline moved by the time the person took
	ask := func(i int, work func(context.Context) (string, error)) funcTool {
		return funcTool{name: "write" + strconv.Itoa(i), fn: func(ctx context.Context, _ json.RawMessage) (string, error) {
			before, _ := ctx.Deadline()
			asked <- ctx
			if err := capabilities.Emit(ctx, askEvent{}); err != nil {
				return "", err
			}
			after, _ := ctx.Deadline()
			moved[i] = after.After(before.Add(timeout / 2))
			return work(ctx)
		}}
	}
	writes := ask(0, func(ctx context.Context) (string, error) {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		return "written", nil
	})
	hangs := ask(1, func(ctx context.Context) (string, error) {
		<-ctx.Done()
		return "", ctx.Err()
	})
	slowPerson := func(_ context.Context, ev capabilities.Event) error {
		if _, ok := ev.(askEvent); !ok {
			return nil
		}
		// The answer comes after the call's deadline, had its clock gone on:
		// when the tool's context ends, or well past tool_timeout.
		select {
		case <-(<-asked).Done():
		case <-time.After(2 * timeout):
		}
		return nil
	}
	calls := script.Calls(script.Call("write0", map[string]any{}), script.Call("write1", map[string]any{}))
	s := newSpec(func(s *spec.Spec) { s.ToolTimeout = timeout })
	res, err := runScript(t, s, script.New(calls, script.Say("done")), []capabilities.Tool{writes, hangs}, WithListener(slowPerson))
	require.NoError(t, err)
	assert.Equal(t, []string{"written", "Error: Timed out after 0.2 seconds."}, toolResults(res.Transcript))
	assert.Equal(t, [2]bool{true, true}, moved, "the deadline the tool reads moves on by the listener's time")
}

// Listeners a tool keeps busy from several goroutines at once stop its
// clock until the last of them returns.
type holdEvent struct{ first bool }

func (holdEvent) Kind() string { return "test.hold" }

func TestRunToolTimeoutStopsUntilTheLastListenerReturns(t *testing.T) {
	t.Parallel()
	const timeout = 200 * time.Millisecond
	var toolCtx context.Context
	firstHeard, secondHeard, firstDone := make(chan struct{}), make(chan struct{}), make(chan struct{})
	both := funcTool{name: "write", fn: func(ctx context.Context, _ json.RawMessage) (string, error) {
		toolCtx = ctx
		var wg sync.WaitGroup
		errs := make([]error, 2)
		wg.Go(func() {
			errs[0] = capabilities.Emit(ctx, holdEvent{first: true})
			close(firstDone)
		})
		wg.Go(func() {
			<-firstHeard
			errs[1] = capabilities.Emit(ctx, holdEvent{})
		})
		wg.Wait()
		if err := errors.Join(append(errs, ctx.Err())...); err != nil {
			return "", err
		}
		return "written", nil
	}}
	listener := func(_ context.Context, ev capabilities.Event) error {
		h, ok := ev.(holdEvent)
		switch {
		case !ok:
		case h.first:
			close(firstHeard)
			<-secondHeard
		default:
			close(secondHeard)
			<-firstDone
			// The first listener has returned; this one answers after the
			// call's deadline, had its clock gone on then.
			select {
			case <-toolCtx.Done():
			case <-time.After(2 * timeout):
			}
		}
		return nil
	}
	call := script.Calls(script.Call("write", map[string]any{}))
	s := newSpec(func(s *spec.Spec) { s.ToolTimeout = timeout })
	res, err := runScript(t, s, script.New(call, script.Say("done")), []capabilities.Tool{both}, WithListener(listener))
	require.NoError(t, err)
	assert.Equal(t, []string{"written"}, toolResults(res.Transcript))
}

func TestRunRoundLimit(t *testing.T) {
	t.Parallel()
	call := script.Calls(script.Call("read_file", map[string]any{"path": "a"}))
	limited := func(s *spec.Spec) { s.MaxToolRounds = 2 }

	t.Run("final request forbids tools, openai", func(t *testing.T) {
		t.Parallel()
		read := &echoTool{name: "read_file"}
		rec := &recorder{}
		m := script.New(call, call, script.Say("final answer"))
		res, err := runScript(t, newSpec(limited), m, []capabilities.Tool{read}, WithListener(rec.listen))
		require.NoError(t, err)
		assert.Equal(t, "final answer", res.Output)
		reqs := m.Requests()
		require.Len(t, reqs, 3)
		assert.Nil(t, reqs[1].Options.ToolChoice)
		assert.Equal(t, "none", reqs[2].Options.ToolChoice)
		assert.Len(t, reqs[2].Options.Tools, 1, "the tools stay declared")
		assert.Contains(t, lastText(t, reqs[2].Messages), "You have used all 2 tool rounds")
		assert.Equal(t, []LimitReached{{Limit: "max_tool_rounds", Value: 2}}, eventsOf[LimitReached](rec))
		assert.True(t, eventsOf[ModelRequest](rec)[2].Final)
	})
	t.Run("final request forbids tools, anthropic", func(t *testing.T) {
		t.Parallel()
		m := script.New(call, call, script.Say("final answer")).WithDialect(script.Anthropic)
		res, err := runScript(t, newSpec(limited), m, []capabilities.Tool{&echoTool{name: "read_file"}})
		require.NoError(t, err)
		assert.Equal(t, "final answer", res.Output)
		reqs := m.Requests()
		require.Len(t, reqs, 3)
		assert.Equal(t, "none", reqs[2].Options.ToolChoice, "langchaingo drops it for anthropic; the request context carries it too (see TestWireRoundLimit)")
		assert.Len(t, reqs[2].Options.Tools, 1)
	})
	t.Run("a call after the limit is not run", func(t *testing.T) {
		t.Parallel()
		read := &echoTool{name: "read_file"}
		m := script.New(call, call, call)
		_, err := runScript(t, newSpec(limited), m, []capabilities.Tool{read})
		require.ErrorIs(t, err, ErrToolsAfterLimit)
		assert.EqualError(t, err, "the model kept calling tools after the round limit (2 rounds)")
		assert.Len(t, read.Calls(), 2)
	})
	t.Run("text that comes with a call after the limit is the answer", func(t *testing.T) {
		t.Parallel()
		read := &echoTool{name: "read_file"}
		last := call
		last.Text = "Here is what I found."
		m := script.New(call, call, last)
		res, err := runScript(t, newSpec(limited), m, []capabilities.Tool{read})
		require.NoError(t, err)
		assert.Equal(t, "Here is what I found.", res.Output)
		assert.Len(t, read.Calls(), 2)
		final := res.Transcript[len(res.Transcript)-1]
		assert.Equal(t, []llms.ContentPart{llms.TextContent{Text: "Here is what I found."}}, final.Parts, "the unrun call is not replayed")
	})
	t.Run("the default is spec.DefaultMaxToolRounds", func(t *testing.T) {
		t.Parallel()
		turns := make([]script.Turn, spec.DefaultMaxToolRounds+1)
		for i := range spec.DefaultMaxToolRounds {
			turns[i] = call
		}
		turns[spec.DefaultMaxToolRounds] = script.Say("done")
		m := script.New(turns...)
		_, err := runScript(t, newSpec(), m, []capabilities.Tool{&echoTool{name: "read_file"}})
		require.NoError(t, err)
		reqs := m.Requests()
		assert.Equal(t, "none", reqs[len(reqs)-1].Options.ToolChoice)
	})
}

const personSchema = `{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"}},"required":["name","age"],"additionalProperties":false}`

func TestRunOutputSchema(t *testing.T) {
	t.Parallel()
	withSchema := func(s *spec.Spec) { s.OutputSchema = json.RawMessage(personSchema) }

	t.Run("invalid then valid", func(t *testing.T) {
		t.Parallel()
		rec := &recorder{}
		m := script.New(
			script.Say(`{"name": "Ada"}`),
			script.Say("Sure:\n```json\n{\"name\": \"Ada\",\n \"age\": 36}\n```"),
		)
		res, err := runScript(t, newSpec(withSchema), m, nil, WithListener(rec.listen))
		require.NoError(t, err)
		assert.JSONEq(t, `{"name":"Ada","age":36}`, string(res.JSON))
		assert.Equal(t, `{"name":"Ada","age":36}`, string(res.JSON), "compacted")

		reqs := m.Requests()
		require.Len(t, reqs, 2)
		system := reqs[0].Messages[0].Parts[0].(llms.TextContent).Text
		assert.Contains(t, system, "You are a test agent.")
		assert.Contains(t, system, personSchema, "the model is told the schema")
		assert.Equal(t,
			"Try again. Your previous response was invalid and led to this error message: the response does not match the schema: at '': missing property 'age'",
			lastText(t, reqs[1].Messages))
		assert.Equal(t, []Retry{{Type: RetryOutput, Attempt: 1, Limit: MaxAttempts, Message: "the response does not match the schema: at '': missing property 'age'"}}, eventsOf[Retry](rec))
	})
	t.Run("three invalid answers", func(t *testing.T) {
		t.Parallel()
		m := script.New(script.Say("no json here"), script.Say(`{"name": 1, "age": 2}`), script.Say(`[1, 2]`), script.Say("never"))
		res, err := runScript(t, newSpec(withSchema), m, nil)
		require.ErrorIs(t, err, ErrInvalidAnswer)
		assert.Contains(t, err.Error(), "no valid final answer after 3 attempts: the response does not match the schema")
		assert.Equal(t, 1, m.Remaining())
		assert.Equal(t, "[1, 2]", res.Output, "the last answer is kept for reporting")
	})
	t.Run("JSON cut short is named as such", func(t *testing.T) {
		t.Parallel()
		rec := &recorder{}
		m := script.New(script.Say(`{"name": "Ada", "age": 36`), script.Say(`{"name": "Ada", "age": 36}`))
		_, err := runScript(t, newSpec(withSchema), m, nil, WithListener(rec.listen))
		require.NoError(t, err)
		assert.Equal(t, retryAnswerPrefix+"the response is not valid JSON: unexpected end of JSON input", lastText(t, m.Requests()[1].Messages))
		assert.Equal(t, []Retry{{Type: RetryOutput, Attempt: 1, Limit: MaxAttempts, Message: "the response is not valid JSON: unexpected end of JSON input"}}, eventsOf[Retry](rec))
	})
	t.Run("JSON in prose after a bracketed number", func(t *testing.T) {
		t.Parallel()
		// [1] parses as JSON too, but the object after it is the answer.
		m := script.New(script.Say(`From the notes [1], the person is {"name": "Ada", "age": 36}.`), script.Say("never"))
		res, err := runScript(t, newSpec(withSchema), m, nil)
		require.NoError(t, err)
		assert.Equal(t, `{"name":"Ada","age":36}`, string(res.JSON))
		assert.Equal(t, 1, m.Remaining())
	})
	t.Run("tool rounds are per attempt", func(t *testing.T) {
		t.Parallel()
		call := script.Calls(script.Call("read_file", map[string]any{"path": "a"}))
		m := script.New(call, script.Say(`{}`), call, script.Say(`{"name":"Ada","age":36}`))
		res, err := runScript(t, newSpec(withSchema, func(s *spec.Spec) { s.MaxToolRounds = 1 }), m, []capabilities.Tool{&echoTool{name: "read_file"}})
		require.NoError(t, err)
		reqs := m.Requests()
		require.Len(t, reqs, 4)
		assert.Nil(t, reqs[2].Options.ToolChoice, "the second attempt may use tools again")
		assert.Equal(t, 2, res.Usage.ToolCalls)
	})
	t.Run("an invalid schema fails before any request", func(t *testing.T) {
		t.Parallel()
		m := script.New(script.Say("x"))
		_, err := runScript(t, newSpec(func(s *spec.Spec) { s.OutputSchema = json.RawMessage(`{"type": 12}`) }), m, nil)
		require.ErrorContains(t, err, "output_schema is not a valid JSON Schema")
		assert.Empty(t, m.Requests())
	})
}

// An empty answer is no answer: the model is asked again, within its
// answer attempts, as pydantic-ai asks again after an empty response.
func TestRunEmptyAnswerIsAskedAgain(t *testing.T) {
	t.Parallel()
	t.Run("then answered", func(t *testing.T) {
		t.Parallel()
		rec := &recorder{}
		m := script.New(script.Say(""), script.Say("done"))
		res, err := runScript(t, newSpec(), m, nil, WithListener(rec.listen))
		require.NoError(t, err)
		assert.Equal(t, "done", res.Output)
		retries := eventsOf[Retry](rec)
		require.Len(t, retries, 1)
		assert.Equal(t, RetryOutput, retries[0].Type)
		assert.Contains(t, lastText(t, m.Requests()[1].Messages), "the response is empty")
	})
	t.Run("never answered", func(t *testing.T) {
		t.Parallel()
		m := script.New(script.Say(" "), script.Say(""), script.Say("\n"))
		_, err := runScript(t, newSpec(), m, nil)
		require.ErrorIs(t, err, ErrInvalidAnswer)
		assert.ErrorContains(t, err, "the response is empty")
	})
}

func TestRunValidators(t *testing.T) {
	t.Parallel()
	t.Run("feedback is retried", func(t *testing.T) {
		t.Parallel()
		var seen []string
		v := func(_ context.Context, r *Result) error {
			seen = append(seen, r.Output)
			if !strings.Contains(r.Output, "report.md") {
				return Feedback("the answer must name %s", "report.md")
			}
			return nil
		}
		m := script.New(script.Say("done"), script.Say("wrote report.md"))
		rec := &recorder{}
		res, err := runScript(t, newSpec(), m, nil, WithValidator(v), WithListener(rec.listen))
		require.NoError(t, err)
		assert.Equal(t, "wrote report.md", res.Output)
		assert.Equal(t, []string{"done", "wrote report.md"}, seen)
		assert.Equal(t, retryAnswerPrefix+"the answer must name report.md", lastText(t, m.Requests()[1].Messages))
		assert.Equal(t, RetryValidation, eventsOf[Retry](rec)[0].Type)
	})
	t.Run("a RetryError is feedback too", func(t *testing.T) {
		t.Parallel()
		calls := 0
		v := func(context.Context, *Result) error {
			calls++
			if calls == 1 {
				return capabilities.Retry("report.md is missing; call write_file")
			}
			return nil
		}
		m := script.New(script.Say("a"), script.Say("b"))
		_, err := runScript(t, newSpec(), m, nil, WithValidator(v))
		require.NoError(t, err)
		assert.Equal(t, retryAnswerPrefix+"report.md is missing; call write_file", lastText(t, m.Requests()[1].Messages))
	})
	t.Run("validators see the schema's JSON", func(t *testing.T) {
		t.Parallel()
		v := func(_ context.Context, r *Result) error {
			var p struct{ Age int }
			if err := json.Unmarshal(r.JSON, &p); err != nil {
				return err
			}
			if p.Age < 0 {
				return Feedback("age must not be negative")
			}
			return nil
		}
		m := script.New(script.Say(`{"name":"Ada","age":-1}`), script.Say(`{"name":"Ada","age":36}`))
		res, err := runScript(t, newSpec(func(s *spec.Spec) { s.OutputSchema = json.RawMessage(personSchema) }), m, nil, WithValidator(v))
		require.NoError(t, err)
		assert.Equal(t, `{"name":"Ada","age":36}`, string(res.JSON))
	})
	t.Run("other errors are fatal", func(t *testing.T) {
		t.Parallel()
		boom := errors.New("disk unreadable")
		m := script.New(script.Say("a"), script.Say("b"))
		_, err := runScript(t, newSpec(), m, nil, WithValidator(func(context.Context, *Result) error { return boom }))
		require.ErrorIs(t, err, boom)
		assert.Equal(t, 1, m.Remaining())
	})
	t.Run("a validator stopped by Ctrl-C interrupts the run", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		// A validator that asks a service (a judge model) fails with the
		// context's error when the run is stopped under it.
		v := func(ctx context.Context, _ *Result) error {
			cancel()
			return fmt.Errorf("asking the judge: %w", ctx.Err())
		}
		rec := &recorder{}
		m := script.New(script.Say("a"), script.Say("never"))
		_, err := Run(ctx, newSpec(), WithModel(m, DialectOpenAI), WithValidator(v), WithListener(rec.listen))
		require.ErrorIs(t, err, ErrInterrupted)
		assert.EqualError(t, err, "interrupted: context canceled")
		ends := eventsOf[RunEnd](rec)
		require.Len(t, ends, 1)
		assert.Equal(t, "interrupted: context canceled", ends[0].Error)
	})
}

func TestRunInstructionsAndVars(t *testing.T) {
	t.Parallel()
	t.Run("missing vars fail before any request", func(t *testing.T) {
		t.Parallel()
		m := script.New(script.Say("x"))
		s := newSpec(func(s *spec.Spec) { s.Instructions = []string{"Review {{repo}} for {{ team }}.", "Mind {{repo}}."} })
		_, err := runScript(t, s, m, nil, WithVars(map[string]string{"other": "x"}))
		var mv *MissingVarError
		require.ErrorAs(t, err, &mv)
		assert.Equal(t, []string{"repo", "team"}, mv.Names)
		assert.EqualError(t, err, `instructions use variables "repo", "team", but no value was given`)
		assert.Empty(t, m.Requests())
	})
	t.Run("system prompt and default input", func(t *testing.T) {
		t.Parallel()
		m := script.New(script.Say("x"))
		s := newSpec(func(s *spec.Spec) { s.Instructions = []string{"Review {{repo}}.", "Be {{ tone }}."} })
		_, err := runScript(t, s, m, nil,
			WithVars(map[string]string{"repo": "agentspec"}), WithVars(map[string]string{"tone": "brief"}),
			WithCapabilities(instructed{"Use the file tools."}))
		require.NoError(t, err)
		msgs := m.Requests()[0].Messages
		require.Len(t, msgs, 2)
		assert.Equal(t, textMessage(sys, "Review agentspec.\n\nBe brief.\n\nUse the file tools."), msgs[0])
		assert.Equal(t, textMessage(human, defaultUserMessage), msgs[1])
	})
	t.Run("no instructions, no system message", func(t *testing.T) {
		t.Parallel()
		m := script.New(script.Say("x"))
		_, err := runScript(t, newSpec(func(s *spec.Spec) { s.Instructions = nil }), m, nil, WithInput("hi"))
		require.NoError(t, err)
		assert.Equal(t, []llms.MessageContent{textMessage(human, "hi")}, m.Requests()[0].Messages)
		assert.Empty(t, m.Requests()[0].Options.Tools, "no tools, no tools option")
	})
}

// instructed is a capability that only adds instructions.
type instructed struct{ text string }

func (instructed) Tools(context.Context) ([]capabilities.Tool, error) { return nil, nil }
func (i instructed) Instructions() string                             { return i.text }

func TestRunModelSettings(t *testing.T) {
	t.Parallel()
	temp, topP, seed, pp, fp := 0.2, 0.9, 7, 0.5, 0.25
	cases := []struct {
		name     string
		settings spec.ModelSettings
		want     llms.CallOptions
	}{
		{"defaults", spec.ModelSettings{}, llms.CallOptions{Temperature: DefaultTemperature, MaxTokens: DefaultMaxTokens}},
		{"all", spec.ModelSettings{
			Temperature: &temp, MaxTokens: 100, TopP: &topP, Seed: &seed,
			PresencePenalty: &pp, FrequencyPenalty: &fp, StopSequences: []string{"END"},
		}, llms.CallOptions{Temperature: 0.2, MaxTokens: 100, TopP: 0.9, Seed: 7, PresencePenalty: 0.5, FrequencyPenalty: 0.25, StopWords: []string{"END"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := script.New(script.Say("x"))
			_, err := runScript(t, newSpec(func(s *spec.Spec) { s.ModelSettings = tc.settings }), m, nil)
			require.NoError(t, err)
			assert.Equal(t, tc.want, m.Requests()[0].Options)
		})
	}
}

func TestRunEvents(t *testing.T) {
	t.Parallel()
	reading := funcTool{name: "read_file", fn: func(ctx context.Context, _ json.RawMessage) (string, error) {
		call, ok := capabilities.CallFrom(ctx)
		if !ok || call.ID != "c1" || call.Tool != "read_file" {
			return "", errors.New("the call is not named in the context")
		}
		return "# Notes", capabilities.Emit(ctx, testEvent{"notes.md"})
	}}
	m := script.New(
		script.Turn{ToolCalls: []script.ToolCall{{ID: "c1", Name: "read_file", Arguments: map[string]any{"path": "notes.md"}}}, Usage: &script.Usage{InputTokens: 5, OutputTokens: 2}},
		script.Say("done"),
	)
	rec := &recorder{}
	res, err := runScript(t, newSpec(), m, []capabilities.Tool{reading}, WithListener(rec.listen))
	require.NoError(t, err)
	assert.Equal(t, []string{
		KindModelRequest, KindModelResponse,
		KindToolCall, "test.file_read", KindToolResult,
		KindModelRequest, KindModelResponse,
		KindRunEnd,
	}, rec.kinds())

	req := eventsOf[ModelRequest](rec)
	assert.Equal(t, ModelRequest{Request: 1, Attempt: 1, Round: 0, Messages: 2, Tools: 1}, req[0])
	assert.Equal(t, ModelRequest{Request: 2, Attempt: 1, Round: 1, Messages: 4, Tools: 1}, req[1])
	resp := eventsOf[ModelResponse](rec)
	assert.Equal(t, 5, resp[0].InputTokens)
	assert.Equal(t, 1, resp[0].ToolCalls)
	assert.Equal(t, "tool_calls", resp[0].StopReason)
	assert.Equal(t, "done", resp[1].Text)
	assert.Equal(t, ToolCall{ID: "c1", Name: "read_file", Args: json.RawMessage(`{"path":"notes.md"}`), Round: 1}, eventsOf[ToolCall](rec)[0])
	result := eventsOf[ToolResult](rec)[0]
	assert.Equal(t, ToolOK, result.Status)
	assert.Equal(t, len("# Notes"), result.Chars)
	assert.Equal(t, RunEnd{OK: true, Usage: res.Usage}, eventsOf[RunEnd](rec)[0])

	t.Run("a listener error ends the run", func(t *testing.T) {
		t.Parallel()
		m := script.New(script.Calls(script.Call("read_file", map[string]any{})), script.Say("never"))
		stop := errors.New("stop")
		listener := func(_ context.Context, ev capabilities.Event) error {
			if ev.Kind() == "test.file_read" {
				return stop
			}
			return nil
		}
		_, err := runScript(t, newSpec(), m, []capabilities.Tool{funcTool{name: "read_file", fn: func(ctx context.Context, _ json.RawMessage) (string, error) {
			return "", capabilities.Emit(ctx, testEvent{"x"})
		}}}, WithListener(listener))
		require.ErrorIs(t, err, stop)
		assert.Equal(t, 1, m.Remaining())
	})
}

type testEvent struct {
	Path string `json:"path"`
}

func (testEvent) Kind() string { return "test.file_read" }

func TestRunInterrupted(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var secondRan atomic.Bool
	tools := []capabilities.Tool{
		funcTool{name: "first", fn: func(context.Context, json.RawMessage) (string, error) { cancel(); return "ok", nil }},
		funcTool{name: "second", fn: func(context.Context, json.RawMessage) (string, error) { secondRan.Store(true); return "ok", nil }},
	}
	m := script.New(script.Calls(script.Call("first", map[string]any{}), script.Call("second", map[string]any{})), script.Say("never"))
	res, err := Run(ctx, newSpec(), WithModel(m, DialectOpenAI), WithCapabilities(toolCaps(tools)))
	require.ErrorIs(t, err, ErrInterrupted)
	require.ErrorIs(t, err, context.Canceled)
	assert.False(t, secondRan.Load(), "the run stops between calls")
	assert.Equal(t, 1, res.Usage.ToolCalls)
}

func TestRunModelErrors(t *testing.T) {
	t.Parallel()
	t.Run("provider error", func(t *testing.T) {
		t.Parallel()
		m := script.New(script.Turn{Error: "429 rate limited"})
		res, err := runScript(t, newSpec(), m, nil)
		assert.EqualError(t, err, "model request 1: 429 rate limited")
		assert.Equal(t, 1, res.Usage.Requests)
	})
	t.Run("no model", func(t *testing.T) {
		t.Parallel()
		_, err := Run(context.Background(), newSpec())
		assert.ErrorIs(t, err, errNoModel)
	})
	t.Run("duplicate tool names", func(t *testing.T) {
		t.Parallel()
		m := script.New(script.Say("x"))
		_, err := runScript(t, newSpec(), m, []capabilities.Tool{&echoTool{name: "a"}, &echoTool{name: "a"}})
		assert.EqualError(t, err, `two capabilities provide a tool named "a"`)
	})
}

// closingCap records that it was closed and may fail to close.
type closingCap struct {
	closed   *atomic.Bool
	closeErr error
}

func (closingCap) Tools(context.Context) ([]capabilities.Tool, error) { return nil, nil }
func (c closingCap) Close() error {
	c.closed.Store(true)
	return c.closeErr
}

func TestRunBuildsAndClosesSpecCapabilities(t *testing.T) {
	t.Parallel()
	var closed atomic.Bool
	var gotDir string
	reg := capabilities.NewRegistry()
	require.NoError(t, reg.Register(capabilities.Type{
		Name:   "Closing",
		Schema: json.RawMessage(`{"type":"object","properties":{"fail":{"type":"boolean"}},"additionalProperties":false}`),
		New: func(_ context.Context, args capabilities.Args) (capabilities.Capability, error) {
			var opts struct{ Fail bool }
			if err := args.Decode(&opts); err != nil {
				return nil, err
			}
			gotDir = args.Dir
			c := closingCap{closed: &closed}
			if opts.Fail {
				c.closeErr = errors.New("flush failed")
			}
			return c, nil
		},
	}))
	workspace := t.TempDir()
	withCap := func(options string) *spec.Spec {
		return newSpec(func(s *spec.Spec) {
			s.Capabilities = []spec.Capability{{Name: "Closing", Options: json.RawMessage(options)}}
		})
	}

	_, err := Run(context.Background(), withCap(`{}`), WithModel(script.New(script.Say("ok")), DialectOpenAI), WithRegistry(reg), WithWorkspace(workspace))
	require.NoError(t, err)
	assert.True(t, closed.Load())
	assert.Equal(t, workspace, gotDir, "relative options resolve against the workspace")

	closed.Store(false)
	res, err := Run(context.Background(), withCap(`{"fail":true}`), WithModel(script.New(script.Say("ok")), DialectOpenAI), WithRegistry(reg), WithWorkspace(workspace))
	assert.EqualError(t, err, "closing capabilities: flush failed")
	assert.Equal(t, "ok", res.Output, "the answer is still there")
	assert.True(t, closed.Load())

	closed.Store(false)
	_, err = Run(context.Background(), withCap(`{}`), WithModel(script.New(script.Turn{Error: "boom"}), DialectOpenAI), WithRegistry(reg), WithWorkspace(workspace))
	assert.EqualError(t, err, "model request 1: boom")
	assert.True(t, closed.Load(), "closed after a failed run too")

	_, err = Run(context.Background(), newSpec(func(s *spec.Spec) {
		s.Capabilities = []spec.Capability{{Name: "Nope", Options: json.RawMessage(`{}`)}}
	}), WithModel(script.New(script.Say("ok")), DialectOpenAI), WithRegistry(reg))
	var specErrs spec.Errors
	require.ErrorAs(t, err, &specErrs, "a capability that cannot be built is a spec problem")
	assert.Contains(t, err.Error(), `"Nope"`)
}

// A capability check judges the capabilities the run built from the spec,
// before the first model request: a refusal ends the run with its error,
// the capabilities closed.
func TestCapabilityCheck(t *testing.T) {
	t.Parallel()
	var closed atomic.Bool
	reg := capabilities.NewRegistry()
	require.NoError(t, reg.Register(capabilities.Type{Name: "Closing",
		New: func(context.Context, capabilities.Args) (capabilities.Capability, error) {
			return closingCap{closed: &closed}, nil
		}}))
	s := newSpec(func(s *spec.Spec) {
		s.Capabilities = []spec.Capability{{Name: "Closing", Options: json.RawMessage(`{}`)}}
	})
	var judged []capabilities.Capability
	refuse := errors.New("reaches too far")
	extra := &echoTool{name: "extra"}
	res, err := Run(context.Background(), s, WithModel(script.New(script.Turn{Error: "boom"}), DialectOpenAI), WithRegistry(reg),
		WithCapabilities(toolCaps{extra}),
		WithCapabilityCheck(func(_ context.Context, caps []capabilities.Capability) error {
			judged = caps
			return refuse
		}))
	assert.ErrorIs(t, err, refuse)
	assert.Nil(t, res)
	require.Len(t, judged, 1, "the spec's capabilities, not the caller's")
	assert.IsType(t, closingCap{}, judged[0])
	assert.True(t, closed.Load())

	_, err = Run(context.Background(), s, WithModel(script.New(script.Say("ok")), DialectOpenAI), WithRegistry(reg),
		WithCapabilityCheck(func(context.Context, []capabilities.Capability) error { return nil }))
	assert.NoError(t, err)
}

func TestRunScriptModelFromSpec(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "turns.yaml"), []byte("dialect: anthropic\nturns:\n  - text: scripted\n"), 0o600))
	s := newSpec(func(s *spec.Spec) {
		s.File = filepath.Join(dir, "agent.yaml")
		s.Model = "script:turns.yaml"
	})
	res, err := Run(context.Background(), s)
	require.NoError(t, err)
	assert.Equal(t, "scripted", res.Output)

	s.Model = "script:missing.yaml"
	_, err = Run(context.Background(), s)
	assert.EqualError(t, err, s.File+": cannot read the script file "+filepath.Join(dir, "missing.yaml")+": no such file",
		"a spec built in Go has a file but no positions")

	s.File = ""
	s.Model = "script:" + filepath.Join(dir, "turns.yaml")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "turns.yaml"), []byte("turns: [{txt: x}]\n"), 0o600))
	_, err = Run(context.Background(), s)
	assert.EqualError(t, err, "invalid script file "+filepath.Join(dir, "turns.yaml")+":\n"+
		filepath.Join(dir, "turns.yaml")+`:1:10: unknown key in turn 1 (did you mean "text"?); the keys are delay, error, expect, stop_reason, text, tool_calls, usage`,
		"a spec without a file reports the script's problems all the same")
}

// What is wrong with the model a spec names is the spec's problem, reported
// at its position before any run, as the loader reports its own.
func TestRunModelProblemsAreSpecErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		spec  string
		files map[string]string
		want  []string // the spec.Errors, one line each, "agent.yaml" and "turns.yaml" relative to the directory
	}{
		{name: "missing script", spec: "version: 1\nmodel: script:turns.yaml\n",
			want: []string{"agent.yaml:2:8: cannot read the script file turns.yaml: no such file"}},
		{name: "invalid script", spec: "version: 1\nmodel: script:turns.yaml\n",
			files: map[string]string{"turns.yaml": "turnz:\n  - text: hi\n"},
			want: []string{
				"agent.yaml:2:8: invalid script file turns.yaml:",
				`turns.yaml:1:1: unknown key in the script (did you mean "turns"?); the keys are dialect, turns`,
			}},
		{name: "anthropic has no logit bias", spec: "version: 1\nmodel: anthropic:claude-test\nmodel_settings:\n  seed: 1\n  logit_bias: {\"50256\": -100}\n",
			want: []string{
				"agent.yaml:4:9: anthropic does not support model_settings.seed",
				"agent.yaml:5:15: anthropic does not support model_settings.logit_bias",
			}},
		{name: "a native tool the provider lacks", spec: "version: 1\nmodel: openai:gpt-5\ncapabilities:\n  - WebSearch\n  - NativeTool: {kind: web_fetch, optional: true}\n",
			want: []string{"agent.yaml:4:5: WebSearch: openai does not run the native tool web_search; the providers that do: " +
				strings.Join(providers.NativeProviders("web_search"), ", ")}},
		{name: "Thinking meets the provider's rules", spec: "version: 1\nmodel: anthropic:claude-sonnet-4-5\nmodel_settings:\n  max_tokens: 2000\ncapabilities:\n  - Thinking: high\n",
			want: []string{"agent.yaml:6:5: Thinking: anthropic does not support model_settings.thinking: the thinking budget (16384 tokens) must be below model_settings.max_tokens (2000)"}},
		{name: "a provider agentspec cannot run", spec: "version: 1\nmodel: github:gpt-4o\n",
			want: []string{"agent.yaml:2:8: " + providers.Validate("github:gpt-4o", spec.ModelSettings{}).Error()}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			writeFiles(t, dir, map[string]string{"agent.yaml": tc.spec})
			writeFiles(t, dir, tc.files)
			// What the loader catches (the runtime's model check) never
			// reaches a run; the rest is refused by Run before any event.
			s, err := spec.LoadFile(filepath.Join(dir, "agent.yaml"))
			rec := &recorder{}
			if err == nil {
				_, err = Run(context.Background(), s, WithWorkspace(dir), WithListener(rec.listen),
					WithProviderOptions(providers.Options{Getenv: func(string) string { return "key" }}))
			}
			var errs spec.Errors
			require.ErrorAs(t, err, &errs)
			var lines []string
			for _, e := range errs {
				lines = append(lines, strings.ReplaceAll(e.Error(), dir+string(filepath.Separator), ""))
			}
			assert.Equal(t, tc.want, lines)
			assert.Empty(t, rec.kinds(), "nothing ran")
		})
	}
}

// A run's last events say how it ended, a failure included: the rejection
// that ended it, then run.end.
func TestRunEndEvents(t *testing.T) {
	t.Parallel()
	flaky := funcTool{name: "edit_file", fn: func(context.Context, json.RawMessage) (string, error) {
		return "", capabilities.Retry("old_text not found")
	}}
	edit := script.Calls(script.Call("edit_file", map[string]any{}))
	cases := []struct {
		name     string
		spec     *spec.Spec
		model    *script.Model
		tools    []capabilities.Tool
		last     []capabilities.Event // the events the run ends with
		wantErr  error
		requests int
	}{
		{name: "answers rejected", spec: newSpec(func(s *spec.Spec) { s.OutputSchema = json.RawMessage(personSchema) }),
			model: script.New(script.Say("a"), script.Say("b"), script.Say("c")), requests: 3, wantErr: ErrInvalidAnswer,
			last: []capabilities.Event{
				ModelResponse{}, Rejected{Type: RetryOutput, Attempt: 3, Limit: MaxAttempts, Message: "the response contains no JSON value; reply with JSON that conforms to the schema"},
			}},
		{name: "retries exceeded", spec: newSpec(func(s *spec.Spec) { s.Retries = 1 }),
			model: script.New(edit, edit), tools: []capabilities.Tool{flaky}, requests: 2,
			last: []capabilities.Event{
				ToolResult{}, Rejected{Type: RetryTool, Tool: "edit_file", Attempt: 2, Limit: 1, Message: "old_text not found"},
			}},
		{name: "model error", spec: newSpec(), model: script.New(script.Turn{Error: "overloaded"}), requests: 1,
			last: []capabilities.Event{ModelRequest{}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := &recorder{}
			res, err := runScript(t, tc.spec, tc.model, tc.tools, WithListener(rec.listen))
			require.Error(t, err)
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
			}
			rec.mu.Lock()
			events := rec.events
			rec.mu.Unlock()
			require.GreaterOrEqual(t, len(events), len(tc.last)+1)
			tail := events[len(events)-len(tc.last)-1:]
			for i, want := range tc.last {
				if _, ok := want.(Rejected); ok {
					assert.Equal(t, want, tail[i])
				} else {
					assert.Equal(t, want.Kind(), tail[i].Kind())
				}
			}
			end, ok := tail[len(tc.last)].(RunEnd)
			require.True(t, ok, "the last event is run.end, not %s", tail[len(tc.last)].Kind())
			assert.Equal(t, RunEnd{Error: err.Error(), Usage: res.Usage}, end)
			assert.Equal(t, tc.requests, end.Usage.Requests)
			assert.Len(t, eventsOf[RunEnd](rec), 1)
		})
	}

	t.Run("interrupted", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		rec := &recorder{}
		_, err := Run(ctx, newSpec(), WithModel(script.New(script.Say("never")), DialectOpenAI), WithListener(rec.listen))
		require.ErrorIs(t, err, ErrInterrupted)
		ends := eventsOf[RunEnd](rec)
		require.Len(t, ends, 1)
		assert.False(t, ends[0].OK)
		assert.Equal(t, "interrupted: context canceled", ends[0].Error)
	})
	t.Run("a failing listener fails the run at its end", func(t *testing.T) {
		t.Parallel()
		full := errors.New("disk full")
		_, err := runScript(t, newSpec(), script.New(script.Say("ok")), nil, WithListener(func(_ context.Context, ev capabilities.Event) error {
			if ev.Kind() == KindRunEnd {
				return full
			}
			return nil
		}))
		require.ErrorIs(t, err, full)
	})
}

// A tool result's length counts characters, not bytes.
func TestToolResultCharsAreCodePoints(t *testing.T) {
	t.Parallel()
	accents := funcTool{name: "read", fn: func(context.Context, json.RawMessage) (string, error) { return "héllo ✓", nil }}
	rec := &recorder{}
	_, err := runScript(t, newSpec(), script.New(script.Calls(script.Call("read", map[string]any{})), script.Say("ok")),
		[]capabilities.Tool{accents}, WithListener(rec.listen))
	require.NoError(t, err)
	assert.Equal(t, 7, eventsOf[ToolResult](rec)[0].Chars)
}
