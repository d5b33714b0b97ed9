package runtime

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/runtime/providers"
)

// The agent loop: requests, tool rounds, and the checks of a final answer.

// runner is one run's state.
type runner struct {
	retryLog *retryLog // the provider's retries of the request under way
	model    llms.Model
	dialect  Dialect
	tools    *toolset
	caps     []capabilities.Capability // the tools' capabilities
	// versions are the caps' ToolsVersion when their tools were last
	// listed, nil when none has one (their tools never change); listTools
	// lists them again, as the run's start did.
	versions  []uint64
	listTools func(context.Context) (*toolset, error)
	// declared are the tools the last request declared, which stay
	// declared, none callable, once every tool is withdrawn (see request).
	declared    []llms.Tool
	schema      *outputSchema
	checks      *checkSet // nil when the spec has none
	workspace   string    // absolute
	validators  []Validator
	listeners   []capabilities.Listener
	emitter     capabilities.Listener // r.emit, bound once for the tools' contexts
	callOpts    []llms.CallOption
	marksErrors bool // failed tool results carry providers.ToolError
	maxTokens   int  // the spec's max_tokens, for messages; 0 when unset
	maxRounds   int
	retries     int
	attempts    int // final answers the model may give
	toolTimeout time.Duration

	messages []llms.MessageContent
	failures map[string]int // tool -> consecutive rounds in which it failed
	ids      idSource
	res      *Result
}

func (r *runner) emit(ctx context.Context, ev capabilities.Event) error {
	return emitTo(ctx, r.listeners, ev)
}

// emitTo sends ev to the listeners in order; the first error ends the run.
func emitTo(ctx context.Context, listeners []capabilities.Listener, ev capabilities.Event) error {
	for _, l := range listeners {
		if err := l(ctx, ev); err != nil {
			return fmt.Errorf("event listener (%s): %w", ev.Kind(), err)
		}
	}
	return nil
}

// loop drives the conversation to a valid final answer.
func (r *runner) loop(ctx context.Context) error {
	attempt, round := 1, 0
	told := false // the model was told, in this attempt, that its rounds are used up
	for {
		final := round >= r.maxRounds
		if final && !told {
			if err := r.reachLimit(ctx); err != nil {
				return err
			}
			told = true
		}
		t, err := r.request(ctx, attempt, round, final)
		if err != nil {
			return err
		}
		if t.refusal != nil {
			reason := strings.TrimSpace(*t.refusal)
			if reason == "" {
				reason = "no reason given"
			}
			return fmt.Errorf("%w: %s", ErrRefused, reason)
		}
		what := "an answer"
		if len(t.calls) > 0 {
			what = "a tool call"
		}
		if t.stopReason == providers.StopContextWindow {
			return fmt.Errorf("%w, in the middle of %s; fewer or smaller tool results, or a model with a larger window, would leave it room", ErrContextFull, what)
		}
		if t.truncated() {
			limit := "its default"
			if r.maxTokens > 0 {
				limit = fmt.Sprintf("%d tokens", r.maxTokens)
			}
			return fmt.Errorf("%w (%s) in the middle of %s; raise model_settings.max_tokens", ErrTruncated, limit, what)
		}
		if t.stopReason == providers.StopPauseTurn && len(t.calls) == 0 {
			// A long server-side tool turn (web search) was paused: it goes
			// back as it is for the model to continue, as a tool round.
			if final {
				return fmt.Errorf("%w (%d rounds): the model paused its turn to keep running server tools", ErrToolsAfterLimit, r.maxRounds)
			}
			round++
			r.messages = append(r.messages, replay(r.dialect, t)...)
			continue
		}
		if t.failedCall != "" {
			if err := r.toolUseFailed(ctx, t.failedCall, final); err != nil {
				return err
			}
			continue
		}
		if t.lost {
			return fmt.Errorf("%w (stop reason %q)", ErrLostToolCalls, t.stopReason)
		}
		if len(t.calls) > 0 && !final {
			round++
			r.messages = append(r.messages, replay(r.dialect, t)...)
			if err := r.runCalls(ctx, t.calls, round); err != nil {
				return err
			}
			continue
		}
		if len(t.calls) > 0 {
			// Tools were forbidden: no call is run. Text that came with the
			// calls is taken as the answer; without text there is none.
			if t.text == "" {
				return fmt.Errorf("%w (%d rounds)", ErrToolsAfterLimit, r.maxRounds)
			}
			t.calls, t.blocks = nil, []llms.ContentPart{llms.TextContent{Text: t.text}}
			if t.whole != nil {
				// The calls go unanswered, so they leave the history; the
				// blocks around them (thinking) stay.
				t.whole = slices.DeleteFunc(slices.Clone(t.whole), func(p llms.ContentPart) bool {
					_, call := p.(llms.ToolCall)
					return call
				})
			}
		}
		if t.text != "" {
			r.messages = append(r.messages, replay(r.dialect, t)...)
		}

		rej, err := r.check(ctx, t.text)
		if err != nil {
			return err
		}
		if rej == nil {
			return nil
		}
		if attempt >= r.attempts {
			if err := r.emit(ctx, Rejected{Type: rej.kind, Attempt: attempt, Limit: r.attempts, Message: rej.feedback}); err != nil {
				return err
			}
			return rej.exhausted(attempt)
		}
		if err := r.emit(ctx, Retry{Type: rej.kind, Attempt: attempt, Limit: r.attempts, Message: rej.feedback}); err != nil {
			return err
		}
		r.messages = append(r.messages, textMessage(llms.ChatMessageTypeHuman, retryAnswerPrefix+rej.feedback))
		// Each attempt has its own tool rounds, as in the reference: the
		// feedback may well ask for more tool work (a file still to write).
		attempt, round, told = attempt+1, 0, false
	}
}

// reachLimit tells the model the tool rounds are used up.
func (r *runner) reachLimit(ctx context.Context) error {
	if err := r.emit(ctx, LimitReached{Limit: "max_tool_rounds", Value: r.maxRounds}); err != nil {
		return err
	}
	r.messages = append(r.messages, textMessage(llms.ChatMessageTypeHuman, fmt.Sprintf(
		"You have used all %d tool rounds. Do not call any more tools: give your final answer now.", r.maxRounds)))
	return nil
}

// request sends the conversation to the model and normalises its answer.
// final forbids tools, in the way the dialect's provider understands.
func (r *runner) request(ctx context.Context, attempt, round int, final bool) (turn, error) {
	if err := ctx.Err(); err != nil {
		return turn{}, interrupted(ctx)
	}
	if err := r.refreshTools(ctx); err != nil {
		return turn{}, err
	}
	opts := r.callOpts
	defs, none := r.tools.defs, final
	if len(defs) == 0 && len(r.declared) > 0 {
		// Every tool was withdrawn since a request declared some (an MCP
		// server removed its own): the history may hold calls of them, so
		// the last ones stay declared, as after the round limit, and none
		// may be called; a call of one is answered as of an unknown tool.
		defs, none = r.declared, true
	}
	if len(defs) > 0 {
		opts = append(opts[:len(opts):len(opts)], llms.WithTools(defs))
		if none {
			// The tools stay declared: the Anthropic API refuses a history
			// with tool_use blocks but no tools.
			opts = append(opts, llms.WithToolChoice("none"))
		}
		r.declared = defs
	}
	r.res.Usage.Requests++
	n := r.res.Usage.Requests
	if err := r.emit(ctx, ModelRequest{
		Request: n, Attempt: attempt, Round: round,
		Messages: len(r.messages), Tools: len(r.tools.defs), Final: final,
	}); err != nil {
		return turn{}, err
	}
	start := time.Now()
	r.retryLog.begin(n)
	resp, err := r.model.GenerateContent(ctx, r.messages, opts...)
	elapsed := time.Since(start)
	if err != nil {
		if ctx.Err() != nil {
			return turn{}, interrupted(ctx)
		}
		var perr *providers.Error
		if errors.As(err, &perr) {
			if wrote, ok := perr.ToolUseFailed(); ok {
				// The model wrote a call the provider could not parse: a
				// mistake it can correct, like a bad tool argument.
				msg := perr.Message
				if wrote != "" {
					msg += "; you wrote: " + wrote
				}
				// The model wrote, but the error carries no usage.
				r.res.Usage.RequestsWithoutUsage++
				err := r.emit(ctx, ModelResponse{Request: n, Duration: elapsed, StopReason: "tool_use_failed", Text: msg, NoUsage: true})
				return turn{failedCall: msg}, err
			}
		}
		return turn{}, fmt.Errorf("model request %d: %w", n, r.retryLog.explain(err))
	}
	t := collect(resp, r.ids.next)
	u := &r.res.Usage
	if t.usage.none {
		u.RequestsWithoutUsage++
	}
	u.InputTokens += t.usage.input
	u.OutputTokens += t.usage.output
	u.CacheWriteTokens += t.usage.cacheWrite
	u.CacheReadTokens += t.usage.cacheRead
	u.ReasoningTokens += t.usage.reasoning
	ev := ModelResponse{
		Request: n, Duration: elapsed,
		InputTokens: t.usage.input, OutputTokens: t.usage.output,
		CacheWriteTokens: t.usage.cacheWrite, CacheReadTokens: t.usage.cacheRead, ReasoningTokens: t.usage.reasoning,
		NoUsage: t.usage.none, ToolCalls: len(t.calls), StopReason: t.stopReason, Text: t.text,
	}
	if t.refusal != nil {
		ev.Refusal = *t.refusal
		if ev.Refusal == "" {
			ev.Refusal = "no reason given"
		}
	}
	return t, r.emit(ctx, ev)
}

// refreshTools lists the tools again when a capability says they have
// changed since they were listed (capabilities.ToolsChanger): an MCP server
// that announced tools it added or removed. The model is offered the
// current ones from this request on.
func (r *runner) refreshTools(ctx context.Context) error {
	if r.versions == nil {
		return nil
	}
	now := toolVersions(r.caps)
	if slices.Equal(now, r.versions) {
		return nil
	}
	tools, err := r.listTools(ctx)
	if err != nil {
		return err
	}
	r.tools, r.versions = tools, now
	return nil
}

// toolVersions is the ToolsVersion of each of caps (0 for one without it,
// whose tools never change), or nil when none has one.
func toolVersions(caps []capabilities.Capability) []uint64 {
	var versions []uint64
	for i, c := range caps {
		if ch, ok := capabilities.As[capabilities.ToolsChanger](c); ok {
			if versions == nil {
				versions = make([]uint64, len(caps))
			}
			versions[i] = ch.ToolsVersion()
		}
	}
	return versions
}

// toolUseFailedKey counts, in the failures of runCalls, the calls a
// provider could not parse: they have no tool to count against.
const toolUseFailedKey = "(unparsable tool call)"

// toolUseFailed sends a provider's "tool_use_failed" back to the model as a
// correctable error, counted against retries like a failed tool. After the
// round limit (final), the model is told to answer rather than to call the
// tool again.
func (r *runner) toolUseFailed(ctx context.Context, msg string, final bool) error {
	failures := r.failures[toolUseFailedKey] + 1
	if failures > r.retries {
		if err := r.emit(ctx, Rejected{Type: RetryTool, Tool: toolUseFailedKey, Attempt: failures, Limit: r.retries, Message: msg}); err != nil {
			return err
		}
		return &RetriesExceededError{Tool: toolUseFailedKey, Retries: r.retries, Last: msg}
	}
	if err := r.emit(ctx, Retry{Type: RetryTool, Tool: toolUseFailedKey, Attempt: failures, Limit: r.retries, Message: msg}); err != nil {
		return err
	}
	r.failures[toolUseFailedKey] = failures
	next := "Call the tool again with arguments that are one JSON object."
	if final {
		next = fmt.Sprintf("You have used all %d tool rounds: do not call any more tools, give your final answer now.", r.maxRounds)
	}
	r.messages = append(r.messages, textMessage(llms.ChatMessageTypeHuman, retryPrefix+
		"your last tool call could not be parsed ("+msg+"). "+next))
	return nil
}

// rejection is why an answer was sent back to the model.
type rejection struct {
	kind     RetryKind
	feedback string // for the model
	checks   []*CheckFailure
}

// exhausted is the run's error when the last attempt was rejected too. It
// names the failed check, when a check failed.
func (rej *rejection) exhausted(attempts int) error {
	if len(rej.checks) == 0 {
		return fmt.Errorf("%w after %d attempts: %s", ErrInvalidAnswer, attempts, rej.feedback)
	}
	if more := len(rej.checks) - 1; more > 0 {
		return fmt.Errorf("%w after %d attempts: %w (and %d more failed %s)",
			ErrInvalidAnswer, attempts, rej.checks[0], more, pluralWord(more, "check", "checks"))
	}
	return fmt.Errorf("%w after %d attempts: %w", ErrInvalidAnswer, attempts, rej.checks[0])
}

func pluralWord(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// emptyAnswer is the feedback for an answer without text: no answer at
// all, which a run without an output_schema would otherwise take. (The
// output_schema says so in its own words.)
const emptyAnswer = "the response is empty; reply with your final answer"

// check judges a final answer (see judge).
func (r *runner) check(ctx context.Context, answer string) (*rejection, error) {
	if r.schema == nil && strings.TrimSpace(answer) == "" {
		r.res.Output, r.res.JSON = answer, nil
		return &rejection{kind: RetryOutput, feedback: emptyAnswer}, nil
	}
	j := judge{schema: r.schema, checks: r.checks, validators: r.validators, workspace: r.workspace}
	return j.answer(ctx, r.res, answer, r.messages)
}

// judge is what a final answer must pass, whether the model gave it now or
// the cache replays it.
type judge struct {
	schema     *outputSchema
	checks     *checkSet // nil when the spec has none
	validators []Validator
	workspace  string // absolute
}

// answer judges a final answer into res: the output schema first (which
// sets res.JSON), then the workspace (expected output files and checks),
// then the validators, which see transcript as res.Transcript; the first to
// object decides. It returns nil when the answer is accepted, or a fatal
// error.
func (j judge) answer(ctx context.Context, res *Result, answer string, transcript []llms.MessageContent) (*rejection, error) {
	res.Output, res.JSON = answer, nil
	if j.schema != nil {
		raw, err := j.schema.parse(answer)
		if err != nil {
			return &rejection{kind: RetryOutput, feedback: err.Error()}, nil
		}
		res.JSON = raw
	}
	if j.checks != nil {
		failures, err := j.checks.run(j.workspace)
		if err != nil {
			return nil, err
		}
		if len(failures) > 0 {
			return &rejection{kind: RetryCheck, feedback: checkFeedback(failures), checks: failures}, nil
		}
	}
	res.Transcript = transcript
	for _, v := range j.validators {
		if err := v(ctx, res); err != nil {
			if msg, ok := asFeedback(err); ok {
				return &rejection{kind: RetryValidation, feedback: msg}, nil
			}
			if ctx.Err() != nil {
				// The run was stopped under the validator (Ctrl-C): its
				// error, whatever it wraps, is that interruption.
				return nil, interrupted(ctx)
			}
			return nil, fmt.Errorf("validating the answer: %w", err)
		}
	}
	return nil, nil
}
