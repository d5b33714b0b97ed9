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
//   - A final answer the output schema, a workspace check (an expected
//     output file that is missing, a check of a file's length, content or
//     JSON) or a validator rejects is sent back with the reason; the model
//     has MaxAttempts answers in all, each attempt with its own tool rounds.
//     An empty answer is rejected as one the output schema refuses.
//   - A response that stopped for tool use but carries no readable call fails
//     the run with ErrLostToolCalls rather than passing for a final answer.
//   - A refusal ends the run with ErrRefused ("the model refused: ..."); a
//     response cut at max_tokens is never taken as an answer or run as a tool
//     call: the run fails with ErrTruncated, naming model_settings.max_tokens.
//   - A provider's "tool_use_failed" (the model wrote a call the server could
//     not parse) goes back to the model as a correctable error, counted
//     against retries like a failing tool.
//
// Each run works in one workspace (WithWorkspace), so a program may run many
// jobs at once, none reaching outside its own directory; Batch does so for a
// list of workspaces. With the result cache on (the spec's cache key, or
// WithCache), a run over unchanged inputs is replayed without calling the
// model.
package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
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
	// ErrRefused is returned when the model refused to answer (Anthropic's
	// stop_reason refusal, OpenAI's refusal).
	ErrRefused = errors.New("the model refused")
	// ErrTruncated is returned when a response was cut at max_tokens: a
	// partial answer or tool call is never taken as a finished one.
	ErrTruncated = errors.New("the response was cut at model_settings.max_tokens")
	// ErrContextFull is returned when a response was cut because the
	// conversation filled the model's context window (Anthropic's and
	// Bedrock's model_context_window_exceeded): as with ErrTruncated, the
	// partial answer or tool call is not taken.
	ErrContextFull = errors.New("the response was cut: the conversation filled the model's context window")
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
	// assistant turns, tool results and feedback, and the final answer. A
	// cached result has none.
	Transcript []llms.MessageContent
	// Cached is true when the result was replayed from the cache: the model
	// was not called, and Usage counts nothing but the lookup's time.
	Cached bool
	// CacheKey is the key the result was found or stored under; "" when
	// caching is off or the result could not be stored.
	CacheKey string
}

// Usage counts what a run consumed.
type Usage struct {
	Requests int `json:"requests"`
	// RequestsWithoutUsage counts the responses that came with no usage (a
	// stream that ended after its finish but before its usage, a provider
	// that reports none): the token counts hold nothing of theirs, so when
	// it is not 0 they are only what was reported, a lower bound.
	RequestsWithoutUsage int `json:"requests_without_usage,omitempty"`
	InputTokens          int `json:"input_tokens"`
	OutputTokens         int `json:"output_tokens"`
	// Cache and reasoning tokens, where the provider reports them: the
	// input tokens written to and read from its prompt cache, and the
	// output tokens spent on reasoning. They are parts of InputTokens and
	// OutputTokens, which count every input and output token whatever the
	// provider (providers.Usage).
	CacheWriteTokens int           `json:"cache_write_tokens,omitempty"`
	CacheReadTokens  int           `json:"cache_read_tokens,omitempty"`
	ReasoningTokens  int           `json:"reasoning_tokens,omitempty"`
	ToolCalls        int           `json:"tool_calls"`
	Elapsed          time.Duration `json:"-"`
}

// MarshalJSON writes Elapsed in milliseconds.
func (u Usage) MarshalJSON() ([]byte, error) {
	type plain Usage
	return json.Marshal(struct {
		plain
		ElapsedMS float64 `json:"elapsed_ms"`
	}{plain(u), millis(u.Elapsed)})
}

// Run runs the spec to its final answer in one workspace (WithWorkspace). The
// Result is returned even when the run fails once the model was reached, so
// that its usage and transcript can be reported.
//
// With a cache (the spec's cache key, or WithCache), a run over unchanged
// inputs returns the stored answer with Cached set and never reaches the
// model; see package cache for what the key covers. Only successful runs are
// stored.
func Run(ctx context.Context, s *spec.Spec, opts ...Option) (*Result, error) {
	p, err := prepare(s, newConfig(opts))
	if err != nil {
		return nil, err
	}
	return p.run(ctx, p.cfg.workspace)
}

// plan is what every run of one spec with one set of options shares: the
// rendered instructions, the compiled schemas and checks, the cache. Batch
// prepares it once for all its jobs.
type plan struct {
	spec         *spec.Spec
	cfg          config
	model        *modelSource
	instructions string
	schema       *outputSchema
	checks       *checkSet
	cache        *resultCache            // nil when caching is off
	protected    *capabilities.Protected // the spec's files and the cache's directory (see protectedFiles)
}

func newConfig(opts []Option) config {
	cfg := config{registry: capabilities.Default()}
	for _, o := range opts {
		o(&cfg)
	}
	return cfg
}

// prepare checks what does not depend on the workspace, before any run.
func prepare(s *spec.Spec, cfg config) (*plan, error) {
	if s == nil {
		return nil, errors.New("runtime: nil spec")
	}
	instructions, err := renderInstructions(s, cfg.vars)
	if err != nil {
		return nil, err
	}
	// The capabilities are built with their arguments' placeholders filled;
	// the spec's meaning, for the cache key, is the spec as written.
	if s, err = s.WithCapabilityVars(cfg.vars); err != nil {
		return nil, err
	}
	schema, err := compileOutputSchema(s.OutputSchema)
	if err != nil {
		return nil, err
	}
	checks, err := compileChecks(s)
	if err != nil {
		return nil, err
	}
	model, err := newModelSource(s, cfg)
	if err != nil {
		return nil, err
	}
	rc, err := newResultCache(s, cfg, model.cacheRef(), schema, checks)
	if err != nil {
		return nil, err
	}
	return &plan{spec: s, cfg: cfg, model: model, instructions: instructions, schema: schema, checks: checks, cache: rc,
		protected: protectedFiles(s, rc, slices.Concat(cfg.own, cfg.protect))}, nil
}

// protectedFiles are what no run of the plan may change: the spec itself,
// its script, the result cache's directory, whose entries a run would
// otherwise rewrite into answers it is later replayed, and the caller's
// files (WithOwnFiles, WithProtectedFiles), such as the events log that
// records what the run did. They are resolved once per plan, so a batch's
// jobs share the answer.
func protectedFiles(s *spec.Spec, rc *resultCache, own []string) *capabilities.Protected {
	files := append(slices.Clone(own), SpecFiles(s)...)
	if rc != nil {
		if dir := rc.cache.Dir(); dir != "" {
			if abs, err := filepath.Abs(dir); err == nil {
				files = append(files, abs)
			}
		}
	}
	return capabilities.NewProtected(files...)
}

// SpecFiles are the files that make up s, absolute: its own file and, for
// a script model, the script's. No run of s may change them, and a host
// that builds s's capabilities itself (agentspec tool) protects them the
// same way, with capabilities.NewProtected in their Setup.
func SpecFiles(s *spec.Spec) []string {
	var files []string
	if s.File != "" {
		if abs, err := filepath.Abs(s.File); err == nil {
			files = append(files, abs)
		}
	}
	if name, ok := strings.CutPrefix(strings.TrimSpace(s.Model), scriptPrefix); ok {
		if !filepath.IsAbs(name) && s.File != "" {
			name = filepath.Join(filepath.Dir(s.File), name) // as readScript finds it
		}
		if abs, err := filepath.Abs(name); err == nil {
			files = append(files, abs)
		}
	}
	return files
}

// setup is how the plan's capabilities are built in workspace, the one the
// run was given (a LocalWorkspace entry resolves against it).
func (p *plan) setup(workspace string) capabilities.Setup {
	return capabilities.Setup{Dir: workspace, Transport: p.cfg.transport, Protected: p.protected}
}

// run runs the plan in one workspace, through the cache when there is one,
// and tells the listeners how it ended.
func (p *plan) run(ctx context.Context, workspace string) (res *Result, err error) {
	start := time.Now()
	ctx = withRunID(ctx)
	defer func() { err = p.end(ctx, start, res, err) }()
	// Capabilities get an absolute directory: "." would mean something else
	// to a tool that later changes its working directory.
	workspace, err = filepath.Abs(workspace)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	if p.cache == nil {
		// The capabilities built for the run say its workspace (see
		// runWorkspace): a LocalWorkspace entry is not built once more
		// beforehand just to ask.
		return p.execute(ctx, workspace, "", start)
	}
	// A LocalWorkspace entry makes its directory the run's workspace, for
	// the cache, the checks and the capabilities alike.
	ws, err := spec.RunWorkspace(ctx, p.spec, p.cfg.registry, p.setup(workspace))
	if err != nil {
		return nil, err
	}
	lookup, err := p.cache.lookup(ctx, ws.Dir)
	if err != nil {
		return nil, err
	}
	if lookup.hit != nil {
		lookup.hit.Usage.Elapsed = time.Since(start)
		return lookup.hit, nil
	}
	res, err = p.execute(ctx, workspace, ws.Dir, start)
	if err == nil {
		res.CacheKey, err = p.cache.store(ctx, lookup, res)
	}
	return res, err
}

// end emits the run's RunEnd event, and returns the run's error, or the
// listener's when the run had none.
func (p *plan) end(ctx context.Context, start time.Time, res *Result, err error) error {
	ev := RunEnd{OK: err == nil, Usage: Usage{Elapsed: time.Since(start)}}
	if res != nil {
		ev.Usage, ev.Cached = res.Usage, res.Cached
	}
	if err != nil {
		ev.Error = err.Error()
	}
	// An interrupted run is reported too: the listeners' context must not
	// look cancelled to them.
	if lerr := emitTo(context.WithoutCancel(ctx), p.cfg.listeners, ev); lerr != nil && err == nil {
		return lerr
	}
	return err
}

// execute runs the agent loop: it builds the model and the capabilities and
// drives the conversation to a final answer.
//
// given is the workspace the run was given, and workspace the one it works
// in: the same unless the spec has a LocalWorkspace; "" to take it from the
// capabilities built (runWorkspace).
func (p *plan) execute(ctx context.Context, given, workspace string, start time.Time) (res *Result, err error) {
	s, cfg := p.spec, p.cfg
	owned, err := spec.Instantiate(ctx, s, cfg.registry, p.setup(given))
	if err != nil {
		return nil, orInterrupted(ctx, err)
	}
	for _, check := range cfg.capChecks {
		if err := check(ctx, owned); err != nil {
			closeAll(owned)
			return nil, err
		}
	}
	if workspace == "" {
		workspace = p.runWorkspace(given, owned)
	}
	if err := emitCapabilityWarnings(ctx, cfg.listeners, s, owned); err != nil {
		closeAll(owned)
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
	popts := cfg.providers
	caps, popts.NativeTools, err = p.model.selectNative(caps)
	if err != nil {
		return nil, err
	}
	retries := &retryLog{}
	model, dialect, err := p.model.withCapabilities(caps).build(retries.options(ctx, popts, cfg.listeners))
	if err != nil {
		return nil, err
	}
	if dialect == "" {
		dialect = DialectOpenAI
	}
	listTools := func(ctx context.Context) (*toolset, error) {
		tools, err := newToolset(ctx, caps)
		if err != nil {
			return nil, orInterrupted(ctx, collisionErrors(s, len(owned), err))
		}
		if err := p.model.checkTools(s, len(owned), tools); err != nil {
			return nil, err
		}
		return tools, nil
	}
	versions := toolVersions(caps) // before the listing, so that a change during it is seen
	tools, err := listTools(ctx)
	if err != nil {
		return nil, err
	}
	_, ownModel := model.(*providers.Model)

	r := &runner{
		retryLog:    retries,
		model:       model,
		dialect:     dialect,
		tools:       tools,
		caps:        caps,
		versions:    versions,
		listTools:   listTools,
		schema:      p.schema,
		checks:      p.checks,
		workspace:   workspace,
		validators:  cfg.validators,
		listeners:   cfg.listeners,
		callOpts:    callOptions(s.ModelSettings, cfg.stream, ownModel),
		marksErrors: ownModel,
		maxTokens:   s.ModelSettings.MaxTokens,
		maxRounds:   orDefault(s.MaxToolRounds, spec.DefaultMaxToolRounds),
		retries:     max(s.Retries, 0),
		attempts:    answerAttempts(s),
		toolTimeout: s.ToolTimeout,
		failures:    map[string]int{},
		res:         &Result{},
	}
	r.emitter = r.emit
	if sys := systemPrompt(p.instructions, caps, p.schema); sys != "" {
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

// runWorkspace is the directory of the workspace the capabilities built for
// the plan's spec set, as spec.RunWorkspace says it: the first entry of a
// type that sets the workspace names it (spec.Instantiate has built that
// entry as RunWorkspace does, and failed if it names none), else it is the
// workspace the run was given.
func (p *plan) runWorkspace(given string, owned []capabilities.Capability) string {
	reg := p.cfg.registry
	if reg == nil {
		reg = capabilities.Default() // as spec.Instantiate takes a nil one
	}
	for i, c := range p.spec.Capabilities {
		if t, ok := reg.Lookup(c.Name); !ok || !t.SetsWorkspace || i >= len(owned) {
			continue
		}
		if setter, ok := capabilities.As[capabilities.WorkspaceSetter](owned[i]); ok {
			return setter.Workspace().Dir
		}
		break
	}
	return given
}

// answerAttempts is how many final answers the model may give: one more
// than the spec's output retry budget, MaxAttempts when it sets none.
func answerAttempts(s *spec.Spec) int {
	if s.OutputRetries == nil {
		return MaxAttempts
	}
	// math.MaxInt - 1 bounds a spec built in Go: one more must not overflow.
	return min(max(*s.OutputRetries, 0), math.MaxInt-1) + 1
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

// callOptions are the settings as call options, for a model given with
// WithModel or a script; a provider's model has the settings already (own),
// and gets only the streaming function.
func callOptions(ms spec.ModelSettings, stream func(context.Context, string) error, own bool) []llms.CallOption {
	var opts []llms.CallOption
	if !own {
		opts = settingOptions(ms)
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

func settingOptions(ms spec.ModelSettings) []llms.CallOption {
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
	if err := capabilities.CloseAll(caps); err != nil {
		return fmt.Errorf("closing capabilities: %w", err)
	}
	return nil
}

func interrupted(ctx context.Context) error {
	return fmt.Errorf("%w: %w", ErrInterrupted, context.Cause(ctx))
}

// orInterrupted reports an error that the run's context ending caused as
// ErrInterrupted, like every other way a run stops on it.
func orInterrupted(ctx context.Context, err error) error {
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return interrupted(ctx)
	}
	return err
}

// emitCapabilityWarnings tells the listeners what the capabilities built
// for s warn of.
func emitCapabilityWarnings(ctx context.Context, listeners []capabilities.Listener, s *spec.Spec, caps []capabilities.Capability) error {
	for _, w := range spec.CapabilityWarnings(s, caps) {
		ev := CapabilityWarning{File: w.Pos.File, Line: w.Pos.Line, Column: w.Pos.Col, Message: w.Msg}
		if err := emitTo(ctx, listeners, ev); err != nil {
			return err
		}
	}
	return nil
}
