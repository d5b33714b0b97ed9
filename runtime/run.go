// Package runtime runs agent specs: it resolves the spec's model, builds its
// capabilities, and drives the conversation (the agent loop) until the model
// gives a final answer that satisfies the output schema and the validators.
//
// The loop is built on llms.Model.GenerateContent and keeps its own message
// history, normalising every response so that it can be replayed to the
// provider it came from (see Dialect). Everything that happens is reported as
// events to the listeners given with WithListener, the capabilities' events
// included.
//
// How the loop treats the model's mistakes:
//
//   - A tool error the model can correct (a capabilities.RetryError, an
//     unknown tool, arguments that are not a JSON object, a call that outlived
//     the spec's tool_timeout) goes back to it as the tool result, prefixed
//     "Error: ". The spec's retries bounds how many rounds in a row one tool
//     may fail; one more ends the run with a *RetriesExceededError. Any other
//     tool error ends the run at once.
//   - A call that times out is awaited all the same: tools must honour their
//     context, and none is left running behind the model's back.
//   - After max_tool_rounds rounds the model is asked for its final answer
//     with tools forbidden (tool_choice none). If it calls a tool anyway, no
//     tool runs: text that came with the calls is taken as the answer, and
//     without text the run fails with ErrToolsAfterLimit.
//   - A final answer the output schema or a validator rejects is sent back
//     with the reason; the model has MaxAttempts answers in all, each attempt
//     with its own tool rounds.
//   - A response that stopped for tool use but carries no readable call fails
//     the run with ErrLostToolCalls rather than passing for a final answer.
package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/runtime/providers"
	"github.com/agentspec/agentspec/spec"
)

// Defaults for the model settings a spec leaves out.
const (
	DefaultTemperature = 1.0
	DefaultMaxTokens   = 4096
	// MaxAttempts bounds the final answers the model may give: an answer the
	// output schema or a validator rejects is sent back with the reason, and
	// the model tries again, up to this many answers in all.
	MaxAttempts = 3
)

// Messages the loop adds to the conversation.
const (
	// defaultUserMessage starts a run that has no input: providers want a
	// user message.
	defaultUserMessage = "Begin."
	retryAnswerPrefix  = "Try again. Your previous response was invalid and led to this error message: "
)

var (
	// ErrInterrupted is returned when the run's context is cancelled. The run
	// stops between tool calls, so no change is left half made.
	ErrInterrupted = errors.New("interrupted")
	// ErrToolsAfterLimit is returned when the model still calls tools, with no
	// text, after the round limit forbade them.
	ErrToolsAfterLimit = errors.New("the model kept calling tools after the round limit")
	// ErrInvalidAnswer is returned when every answer attempt was rejected.
	ErrInvalidAnswer = errors.New("no valid final answer")
)

// Result is what a run produced.
type Result struct {
	// Output is the model's final answer as it wrote it.
	Output string
	// JSON is the answer's JSON value, compacted, when the spec has an
	// output_schema; nil otherwise.
	JSON json.RawMessage
	// Usage counts what the run consumed.
	Usage Usage
	// Transcript is the conversation: system message, user message, the
	// assistant turns, tool results and feedback, and the final answer.
	Transcript []llms.MessageContent
}

// Usage counts what a run consumed.
type Usage struct {
	Requests     int           `json:"requests"`
	InputTokens  int           `json:"input_tokens"`
	OutputTokens int           `json:"output_tokens"`
	ToolCalls    int           `json:"tool_calls"`
	Elapsed      time.Duration `json:"-"`
}

// MarshalJSON writes Elapsed in milliseconds.
func (u Usage) MarshalJSON() ([]byte, error) {
	type plain Usage
	return json.Marshal(struct {
		plain
		ElapsedMS float64 `json:"elapsed_ms"`
	}{plain(u), millis(u.Elapsed)})
}

// Run runs the spec to its final answer. The Result is returned even when the
// run fails once the model was reached, so that its usage and transcript can
// be reported.
func Run(ctx context.Context, s *spec.Spec, opts ...Option) (res *Result, err error) {
	if s == nil {
		return nil, errors.New("runtime: nil spec")
	}
	start := time.Now()
	cfg := config{registry: capabilities.Default()}
	for _, o := range opts {
		o(&cfg)
	}

	instructions, err := RenderInstructions(s.Instructions, cfg.vars)
	if err != nil {
		return nil, err
	}
	schema, err := compileOutputSchema(s.OutputSchema)
	if err != nil {
		return nil, err
	}
	model, dialect := cfg.model, cfg.dialect
	if model == nil {
		if model, dialect, err = resolveModel(s, cfg.providers); err != nil {
			return nil, err
		}
	}
	if dialect == "" {
		dialect = DialectOpenAI
	}

	// Capabilities get an absolute directory: "." would mean something else
	// to a tool that later changes its working directory.
	workspace, err := filepath.Abs(cfg.workspace)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	owned, err := spec.Instantiate(ctx, s, cfg.registry, workspace)
	if err != nil {
		return nil, err
	}
	defer func() {
		// Closing happens whatever the outcome; a close error only surfaces
		// when nothing else went wrong.
		if cerr := closeAll(owned); cerr != nil && err == nil {
			err = cerr
		}
	}()
	caps := slices.Concat(owned, cfg.extra)
	tools, err := newToolset(ctx, caps)
	if err != nil {
		return nil, err
	}

	r := &runner{
		model:       model,
		dialect:     dialect,
		tools:       tools,
		schema:      schema,
		validators:  cfg.validators,
		listeners:   cfg.listeners,
		callOpts:    callOptions(s.ModelSettings, cfg.stream),
		maxRounds:   orDefault(s.MaxToolRounds, spec.DefaultMaxToolRounds),
		retries:     max(s.Retries, 0),
		toolTimeout: s.ToolTimeout,
		failures:    map[string]int{},
		res:         &Result{},
	}
	r.emitter = r.emit
	if sys := systemPrompt(instructions, caps, schema); sys != "" {
		r.messages = append(r.messages, textMessage(llms.ChatMessageTypeSystem, sys))
	}
	input := cfg.input
	if input == "" {
		input = defaultUserMessage
	}
	r.messages = append(r.messages, textMessage(llms.ChatMessageTypeHuman, input))

	err = r.loop(ctx)
	r.res.Transcript = r.messages
	r.res.Usage.Elapsed = time.Since(start)
	return r.res, err
}

// orDefault treats zero as "not set", for keys whose schema forbids zero: the
// loader fills in the defaults, and a Spec built in Go gets them too. Retries
// is read as given, since `retries: 0` (no second chance) is a valid spec.
func orDefault(v, def int) int {
	if v <= 0 {
		return def
	}
	return v
}

func callOptions(ms spec.ModelSettings, stream func(context.Context, string) error) []llms.CallOption {
	temperature := DefaultTemperature
	if ms.Temperature != nil {
		temperature = *ms.Temperature
	}
	maxTokens := ms.MaxTokens
	if maxTokens <= 0 {
		maxTokens = DefaultMaxTokens
	}
	// langchaingo sends temperature 0 when none is given (no omitempty), so it
	// is always set explicitly.
	opts := []llms.CallOption{llms.WithTemperature(temperature), llms.WithMaxTokens(maxTokens)}
	if ms.TopP != nil {
		opts = append(opts, llms.WithTopP(*ms.TopP))
	}
	if ms.Seed != nil {
		opts = append(opts, llms.WithSeed(*ms.Seed))
	}
	if ms.PresencePenalty != nil {
		opts = append(opts, llms.WithPresencePenalty(*ms.PresencePenalty))
	}
	if ms.FrequencyPenalty != nil {
		opts = append(opts, llms.WithFrequencyPenalty(*ms.FrequencyPenalty))
	}
	if len(ms.StopSequences) > 0 {
		opts = append(opts, llms.WithStopWords(ms.StopSequences))
	}
	if stream != nil {
		opts = append(opts, llms.WithStreamingFunc(func(ctx context.Context, chunk []byte) error {
			if len(chunk) == 0 || isToolDelta(chunk) {
				return nil
			}
			return stream(ctx, string(chunk))
		}))
	}
	return opts
}

// isToolDelta reports whether a streamed chunk is a tool-call delta: the
// openai client passes them to the streaming function as JSON arrays
// ([{"id":..,"type":"function","function":{..}}]), through the same callback
// as the text.
func isToolDelta(chunk []byte) bool {
	if len(chunk) < 2 || chunk[0] != '[' {
		return false
	}
	var deltas []struct {
		Function *json.RawMessage `json:"function"`
	}
	if json.Unmarshal(chunk, &deltas) != nil || len(deltas) == 0 {
		return false
	}
	for _, d := range deltas {
		if d.Function == nil {
			return false
		}
	}
	return true
}

func closeAll(caps []capabilities.Capability) error {
	var errs []error
	for _, c := range caps {
		if cl, ok := c.(io.Closer); ok {
			if err := cl.Close(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("closing capabilities: %w", errors.Join(errs...))
	}
	return nil
}

func interrupted(ctx context.Context) error {
	return fmt.Errorf("%w: %w", ErrInterrupted, context.Cause(ctx))
}

// runner is one run's state.
type runner struct {
	model       llms.Model
	dialect     Dialect
	tools       *toolset
	schema      *outputSchema
	validators  []Validator
	listeners   []capabilities.Listener
	emitter     capabilities.Listener // r.emit, bound once for the tools' contexts
	callOpts    []llms.CallOption
	maxRounds   int
	retries     int
	toolTimeout time.Duration

	messages []llms.MessageContent
	failures map[string]int // tool -> consecutive rounds in which it failed
	ids      idSource
	res      *Result
}

func (r *runner) emit(ctx context.Context, ev capabilities.Event) error {
	for _, l := range r.listeners {
		if err := l(ctx, ev); err != nil {
			return fmt.Errorf("event listener (%s): %w", ev.Kind(), err)
		}
	}
	return nil
}

// loop drives the conversation to a valid final answer.
func (r *runner) loop(ctx context.Context) error {
	attempt, round := 1, 0
	for {
		final := round >= r.maxRounds
		if final {
			if err := r.reachLimit(ctx); err != nil {
				return err
			}
		}
		t, err := r.request(ctx, attempt, round, final)
		if err != nil {
			return err
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
		}
		if t.text != "" {
			r.messages = append(r.messages, replay(r.dialect, t)...)
		}

		feedback, kind, err := r.check(ctx, t.text)
		if err != nil {
			return err
		}
		if feedback == "" {
			return nil
		}
		if attempt >= MaxAttempts {
			return fmt.Errorf("%w after %d attempts: %s", ErrInvalidAnswer, attempt, feedback)
		}
		if err := r.emit(ctx, Retry{Type: kind, Attempt: attempt, Limit: MaxAttempts, Message: feedback}); err != nil {
			return err
		}
		r.messages = append(r.messages, textMessage(llms.ChatMessageTypeHuman, retryAnswerPrefix+feedback))
		// Each attempt has its own tool rounds, as in the reference: the
		// feedback may well ask for more tool work (a file still to write).
		attempt, round = attempt+1, 0
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
	opts := r.callOpts
	if len(r.tools.defs) > 0 {
		opts = append(opts[:len(opts):len(opts)], llms.WithTools(r.tools.defs))
		if final {
			// The tools stay declared: the Anthropic API refuses a history
			// with tool_use blocks but no tools.
			opts = append(opts, llms.WithToolChoice("none"))
			if r.dialect == DialectAnthropic {
				// langchaingo's anthropic client drops the option; the
				// providers' transport adds tool_choice from the context.
				ctx = providers.WithToolChoiceNone(ctx)
			}
		}
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
	resp, err := r.model.GenerateContent(ctx, r.messages, opts...)
	elapsed := time.Since(start)
	if err != nil {
		if ctx.Err() != nil {
			return turn{}, interrupted(ctx)
		}
		return turn{}, fmt.Errorf("model request %d: %w", n, err)
	}
	t := collect(resp, r.ids.next)
	r.res.Usage.InputTokens += t.usage.input
	r.res.Usage.OutputTokens += t.usage.output
	err = r.emit(ctx, ModelResponse{
		Request: n, Duration: elapsed,
		InputTokens: t.usage.input, OutputTokens: t.usage.output,
		ToolCalls: len(t.calls), StopReason: t.stopReason, Text: t.text,
	})
	return t, err
}

// check runs the output schema and the validators on an answer. It returns
// the feedback for the model ("" when the answer is accepted) and what gave
// it, or a fatal error.
func (r *runner) check(ctx context.Context, answer string) (feedback string, kind RetryKind, err error) {
	r.res.Output, r.res.JSON = answer, nil
	if r.schema != nil {
		raw, err := r.schema.parse(answer)
		if err != nil {
			return err.Error(), RetryOutput, nil
		}
		r.res.JSON = raw
	}
	r.res.Transcript = r.messages
	for _, v := range r.validators {
		if err := v(ctx, r.res); err != nil {
			if msg, ok := asFeedback(err); ok {
				return msg, RetryValidation, nil
			}
			return "", "", fmt.Errorf("validating the answer: %w", err)
		}
	}
	return "", "", nil
}
