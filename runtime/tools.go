package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
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
}

// emptyParameters is what a tool without parameters declares: the anthropic
// API rejects a tool without an input schema.
var emptyParameters = map[string]any{"type": "object", "properties": map[string]any{}}

// newToolset lists the tools of caps (nil entries are skipped). Two
// capabilities offering the same tool name are a *toolCollision naming every
// name the first such pair shares.
func newToolset(ctx context.Context, caps []capabilities.Capability) (*toolset, error) {
	ts := &toolset{byName: map[string]capabilities.Tool{}}
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
		// under tool_timeout, and the call's clock stops while they do: a
		// person asked to approve a change is not the tool running late, a
		// question given up at the deadline would leave the answer meant
		// for it to the next one, and a change approved after the deadline
		// would then fail. An event the tool sends under a context that
		// cannot end (context.WithoutCancel) is heard so too.
		heard := callCtx
		var clock *callDeadline
		listen := func(evCtx context.Context, ev capabilities.Event) error {
			release := clock.hold()
			defer release()
			if evCtx.Done() == nil {
				return r.emit(context.WithoutCancel(heard), ev)
			}
			return r.emit(heard, ev)
		}
		var stop context.CancelFunc
		clock, stop = withCallDeadline(capabilities.WithListener(callCtx, listen), r.toolTimeout)
		defer stop()
		callCtx = clock
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

// callDeadline is the context of a tool call under tool_timeout. It ends
// when the call's time runs out (Err is context.DeadlineExceeded), when its
// parent ends (the parent's Err), or when its stop function is called
// (context.Canceled), as context.WithTimeout's does, but its clock stops
// while a listener hears one of the call's events: pydantic-ai asks for
// approvals outside the tool call, so a person's time to answer never counts
// against its tool_timeout either. Events a tool sends from several
// goroutines at once stop the clock until the last listener returns.
//
// Deadline reports when the call ends if no listener holds it from then on,
// and never later than the parent's deadline: while a listener runs, that is
// now plus the time left; after one returns, it is later than it was before
// the event by the time the listener took. A tool that turns it into a
// deadline of its own (a socket's, a subprocess's) before emitting an event
// keeps the earlier one.
type callDeadline struct {
	// inner is the parent with a cancellation of its own, ended with the
	// same cause as this context: it carries the values, and the cause
	// context.Cause finds through them.
	inner       context.Context
	cancelInner context.CancelCauseFunc
	done        chan struct{}

	mu    sync.Mutex
	err   error
	end   time.Time     // when the time runs out, while no listener holds the clock
	left  time.Duration // the time left, while one does
	holds int           // listeners running
	timer *time.Timer
	gen   int // the running timer's; a stopped timer that fires anyway has an older one
}

// withCallDeadline returns a context for one call that ends after d of the
// call's own time, and a function to stop it that must be called.
func withCallDeadline(parent context.Context, d time.Duration) (*callDeadline, context.CancelFunc) {
	inner, cancelInner := context.WithCancelCause(parent)
	c := &callDeadline{inner: inner, cancelInner: cancelInner, done: make(chan struct{}), left: d}
	c.mu.Lock()
	c.run()
	c.mu.Unlock()
	// Watched here rather than through inner: this context's Err must be
	// set before its Done channel closes.
	unwatch := context.AfterFunc(parent, func() { c.finish(parent.Err(), context.Cause(parent)) })
	if err := parent.Err(); err != nil {
		c.finish(err, context.Cause(parent))
	}
	return c, func() {
		unwatch()
		c.finish(context.Canceled, context.Canceled)
	}
}

// run starts the clock with the time left. c.mu is held.
func (c *callDeadline) run() {
	c.end = time.Now().Add(c.left)
	c.gen++
	gen := c.gen
	c.timer = time.AfterFunc(c.left, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if gen == c.gen && c.holds == 0 {
			c.finishLocked(context.DeadlineExceeded, context.DeadlineExceeded)
		}
	})
}

// hold stops the clock until the function it returns is called; a clock
// already stopped stays so until every hold is released. A call whose time
// ran out before is left ended.
func (c *callDeadline) hold() (release func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return func() {}
	}
	if c.holds == 0 {
		c.gen++
		c.timer.Stop()
		c.left = time.Until(c.end)
		if c.left <= 0 {
			// The timer was due and had not yet said so.
			c.finishLocked(context.DeadlineExceeded, context.DeadlineExceeded)
			return func() {}
		}
	}
	c.holds++
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.holds--
			if c.holds == 0 && c.err == nil {
				c.run()
			}
		})
	}
}

func (c *callDeadline) finish(err, cause error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.finishLocked(err, cause)
}

// finishLocked ends the context, unless it has ended. c.mu is held; inner
// is ended before Done closes, so that whoever sees it closed finds the
// cause too.
func (c *callDeadline) finishLocked(err, cause error) {
	if c.err != nil {
		return
	}
	c.err = err
	c.gen++
	c.timer.Stop()
	c.cancelInner(cause)
	close(c.done)
}

func (c *callDeadline) Deadline() (time.Time, bool) {
	c.mu.Lock()
	dl := c.end
	if c.holds > 0 {
		dl = time.Now().Add(c.left)
	}
	c.mu.Unlock()
	if p, ok := c.inner.Deadline(); ok && p.Before(dl) {
		dl = p
	}
	return dl, true
}

func (c *callDeadline) Done() <-chan struct{} { return c.done }

func (c *callDeadline) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func (c *callDeadline) Value(key any) any { return c.inner.Value(key) }

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
