package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tmc/langchaingo/llms"

	"github.com/agentspec/agentspec/capabilities"
)

// toolset is the tools offered to the model, by name.
type toolset struct {
	byName map[string]capabilities.Tool
	defs   []llms.Tool
	names  []string       // sorted, for messages
	limits map[string]int // tools whose capability has its own retry budget
	first  int            // the index of the first capability that offers a tool, -1 for none
}

// emptyParameters is what a tool without parameters declares: the anthropic
// API rejects a tool without an input schema.
var emptyParameters = map[string]any{"type": "object", "properties": map[string]any{}}

// newToolset lists the tools of caps (nil entries are skipped). Two
// capabilities offering the same tool name are a *toolCollision naming every
// name the first such pair shares.
func newToolset(ctx context.Context, caps []capabilities.Capability) (*toolset, error) {
	ts := &toolset{byName: map[string]capabilities.Tool{}, first: -1}
	owner := map[string]int{} // tool name -> index of the capability offering it
	var collision *toolCollision
	for i, c := range caps {
		if c == nil {
			continue
		}
		tools, err := c.Tools(ctx)
		if err != nil {
			return nil, fmt.Errorf("listing tools: %w", err)
		}
		if ts.first < 0 && len(tools) > 0 {
			ts.first = i
		}
		budget, hasBudget := -1, false
		if b, ok := capabilities.As[capabilities.RetryBudget](c); ok {
			budget, hasBudget = b.MaxRetries()
		}
		for _, t := range tools {
			name := t.Name()
			if first, dup := owner[name]; dup {
				switch {
				case collision == nil:
					collision = &toolCollision{first: first, second: i, names: []string{name}}
				case collision.first == first && collision.second == i:
					collision.names = append(collision.names, name)
				}
				continue
			}
			owner[name] = i
			params := t.Parameters()
			if params == nil {
				params = emptyParameters
			}
			ts.byName[name] = t
			ts.names = append(ts.names, name)
			if hasBudget {
				if ts.limits == nil {
					ts.limits = map[string]int{}
				}
				ts.limits[name] = max(budget, 0)
			}
			ts.defs = append(ts.defs, llms.Tool{
				Type: "function",
				Function: &llms.FunctionDefinition{
					Name:        name,
					Description: t.Description(),
					Parameters:  params,
				},
			})
		}
	}
	if collision != nil {
		return nil, collision
	}
	slices.Sort(ts.names)
	return ts, nil
}

// retryPrefix starts every correctable error the model gets back as a tool
// result: providers have no portable error flag for tool results.
const retryPrefix = "Error: "

// outcome is how one tool call ended.
type outcome struct {
	content string // what the model sees
	status  ToolStatus
	message string // the error, unless status is ToolOK
	refusal capabilities.Refusal
	fatal   error // set when status is ToolFatal
}

// callTool runs one call. Problems the model can fix (an unknown tool,
// arguments that are not a JSON object, a RetryError, a timeout) become a
// ToolRetry outcome; anything else is ToolFatal.
func (r *runner) callTool(ctx context.Context, call llms.ToolCall) outcome {
	name, args := call.FunctionCall.Name, call.FunctionCall.Arguments
	tool, ok := r.tools.byName[name]
	if !ok {
		if len(r.tools.names) == 0 {
			return retry(fmt.Sprintf("unknown tool %q; no tools are offered", name))
		}
		return retry(fmt.Sprintf("unknown tool %q; the tools are: %s", name, strings.Join(r.tools.names, ", ")))
	}
	if !isJSONObject(args) {
		return retry(fmt.Sprintf("the arguments of %s are not a JSON object: %s", name, describeJSONError(args)))
	}

	callCtx := capabilities.WithCall(ctx, capabilities.CallInfo{ID: call.ID, Tool: name})
	if r.toolTimeout <= 0 {
		callCtx = capabilities.WithListener(callCtx, r.emitter)
	} else {
		// The listeners hear the call's events under the run's context, not
		// under tool_timeout, and the call's clock stops while they do
		// (capabilities.WithCallTimeout holds it around this listener): a
		// person asked to approve a change is not the tool running late, a
		// question given up at the deadline would leave the answer meant
		// for it to the next one, and a change approved after the deadline
		// would then fail. An event the tool sends under a context that
		// cannot end (context.WithoutCancel) is heard so too.
		heard := callCtx
		listen := func(evCtx context.Context, ev capabilities.Event) error {
			if evCtx.Done() == nil {
				return r.emit(context.WithoutCancel(heard), ev)
			}
			return r.emit(heard, ev)
		}
		var stop context.CancelFunc
		callCtx, stop = capabilities.WithCallTimeout(capabilities.WithListener(callCtx, listen), r.toolTimeout, nil)
		defer stop()
	}
	// The call is awaited even past its deadline: a tool that is still
	// writing must not be left running behind the model's back. Tools are
	// expected to honour their context.
	out, err := tool.Call(callCtx, json.RawMessage(args))
	switch {
	case err == nil:
		return outcome{content: out, status: ToolOK}
	case ctx.Err() != nil:
		return outcome{status: ToolFatal, message: "interrupted", fatal: interrupted(ctx)}
	case errors.Is(callCtx.Err(), context.DeadlineExceeded):
		// The reference's words: pydantic-ai's retry prompt for a tool past
		// tool_timeout, in the spec's seconds.
		return retry("Timed out after " + strconv.FormatFloat(r.toolTimeout.Seconds(), 'f', -1, 64) + " seconds.")
	}
	if msg, ok := capabilities.AsRetry(err); ok {
		o := retry(msg)
		o.refusal = capabilities.RefusalOf(err)
		return o
	}
	return outcome{status: ToolFatal, message: err.Error(), fatal: fmt.Errorf("tool %s: %w", name, err)}
}

// capText cuts s after n code points.
func capText(s string, n int) (string, bool) {
	if len(s) <= n || utf8.RuneCountInString(s) <= n {
		return s, false
	}
	i := 0
	for range n {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return s[:i], true
}

func retry(msg string) outcome {
	return outcome{content: retryPrefix + msg, status: ToolRetry, message: msg}
}

func describeJSONError(args string) string {
	if strings.TrimSpace(args) == "" {
		return "they are empty"
	}
	var v any
	if err := json.Unmarshal([]byte(args), &v); err != nil {
		return err.Error()
	}
	return fmt.Sprintf("got %s", jsonKind(v))
}

func jsonKind(v any) string {
	switch v.(type) {
	case []any:
		return "an array"
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return "a value of another kind"
}

// runCalls executes one turn's tool calls in order, appending one result
// message per call. It returns a fatal error, or nil when the run goes on.
func (r *runner) runCalls(ctx context.Context, calls []llms.ToolCall, round int) error {
	failed := map[string]string{} // tool -> last correctable error this round
	for _, call := range calls {
		if err := ctx.Err(); err != nil {
			return interrupted(ctx)
		}
		name := call.FunctionCall.Name
		if err := r.emit(ctx, ToolCall{ID: call.ID, Name: name, Args: json.RawMessage(call.FunctionCall.Arguments), Round: round}); err != nil {
			return err
		}
		start := time.Now()
		o := r.callTool(ctx, call)
		elapsed := time.Since(start)
		r.res.Usage.ToolCalls++
		text, truncated := EventText(o.content)
		if err := r.emit(ctx, ToolResult{
			ID: call.ID, Name: name, Status: o.status, Duration: elapsed,
			Chars: utf8.RuneCountInString(o.content), Message: o.message, Refusal: o.refusal,
			Text: text, Truncated: truncated,
		}); err != nil {
			return err
		}
		if o.status == ToolFatal {
			return o.fatal
		}
		if o.status == ToolRetry {
			// Failures count once per round: several bad calls to one tool in a
			// single turn are one mistake, corrected together.
			failures := r.failures[name] + 1
			limit := r.retries
			if l, ok := r.tools.limits[name]; ok {
				limit = l
			}
			if failures > limit {
				if err := r.emit(ctx, Rejected{Type: RetryTool, Tool: name, Attempt: failures, Limit: limit, Message: o.message}); err != nil {
					return err
				}
				return &RetriesExceededError{Tool: name, Retries: limit, Last: o.message}
			}
			if _, seen := failed[name]; !seen {
				if err := r.emit(ctx, Retry{Type: RetryTool, Tool: name, Attempt: failures, Limit: limit, Message: o.message}); err != nil {
					return err
				}
			}
			failed[name] = o.message
		}
		r.messages = append(r.messages, toolResult(call, o.content, o.status == ToolRetry, r.marksErrors))
	}
	// A tool's count is of consecutive rounds in which it failed: a round
	// without failure starts it again.
	for name := range r.failures {
		if _, ok := failed[name]; !ok {
			delete(r.failures, name)
		}
	}
	for name := range failed {
		r.failures[name]++
	}
	return nil
}

// RetriesExceededError ends a run whose model kept making a correctable
// mistake with one tool.
type RetriesExceededError struct {
	Tool    string
	Retries int
	Last    string // the last error the tool returned
}

func (e *RetriesExceededError) Error() string {
	times := "times in a row"
	if e.Retries == 0 {
		times = "time"
	}
	return fmt.Sprintf("tool %s failed %d %s (retries: %d); last error: %s", e.Tool, e.Retries+1, times, e.Retries, e.Last)
}
