// Package script is a scripted llms.Model for offline runs, CI and tests. It
// answers each request with the next of a list of turns written in advance (a
// text answer, tool calls, or a provider error), records what it was sent, and
// can check that the conversation is the one the script expects, so a run that
// diverges from the script fails loudly instead of drifting on.
//
// A script file is YAML (or JSON):
//
//	dialect: openai            # or anthropic: the shape of the responses
//	turns:
//	  - tool_calls:
//	      - name: read_file
//	        arguments: {path: notes.md}
//	    usage: {input_tokens: 120, output_tokens: 14}
//	  - expect:
//	      tool_result_contains: "# Notes"
//	    delay: 250ms             # answer as a slow model would
//	    text: The notes are about testing.
//
// Specs name it as `model: script:FILE`. A file with problems (an unknown
// key, a mapping where a list belongs, a turn with nothing to say) is
// reported as Errors, one FILE:LINE:COL line each, unknown keys with the
// nearest known one. The messages say what was found by its kind (a string,
// a mapping), never by its text: a spec can name any file as its script,
// and whoever reads the messages need not be allowed to read the file.
package script

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/tmc/langchaingo/llms"
	"gopkg.in/yaml.v3"

	"github.com/agentspec/agentspec/internal/suggest"
)

// Response shapes. They are the dialects of the providers the runtime speaks.
const (
	// OpenAI answers with one choice holding the text and every tool call.
	OpenAI = "openai"
	// Anthropic answers with one choice per content block (text first, then one
	// per tool call), tool calls without a Type, and the usage on every choice.
	Anthropic = "anthropic"
)

var (
	// ErrExhausted is returned when the model is asked for more turns than the
	// script has.
	ErrExhausted = errors.New("the script has no turn left")
	// ErrDiverged is returned when a turn's expectations do not hold for the
	// conversation the model was sent.
	ErrDiverged = errors.New("the conversation diverged from the script")
)

// Turn is one scripted response.
type Turn struct {
	// Text is the assistant's text.
	Text string `yaml:"text"`
	// ToolCalls are the tools the assistant calls, in order.
	ToolCalls []ToolCall `yaml:"tool_calls"`
	// Usage is the token usage reported with the response; nil reports none.
	Usage *Usage `yaml:"usage"`
	// StopReason overrides the stop reason the response would otherwise carry
	// ("tool_calls"/"tool_use" with calls, "stop"/"end_turn" without).
	StopReason string `yaml:"stop_reason"`
	// Error, when set, makes the request fail with this message, as a provider
	// error would.
	Error string `yaml:"error"`
	// Expect checks the request this turn answers.
	Expect *Expect `yaml:"expect"`
	// Delay holds the response back this long, as a slow model would; the
	// request's context ending cuts it short.
	Delay time.Duration `yaml:"delay"`
}

// ToolCall is a scripted tool call.
type ToolCall struct {
	// ID is the call's id; empty gives a deterministic one.
	ID string `yaml:"id"`
	// Name is the tool's name.
	Name string `yaml:"name"`
	// Arguments are marshalled to JSON. A string is sent verbatim, so a script
	// can send arguments that are not valid JSON. Nil sends no arguments at all
	// (an empty string, as some providers do).
	Arguments any `yaml:"arguments"`
}

// Usage is a response's token usage.
type Usage struct {
	InputTokens  int `yaml:"input_tokens"`
	OutputTokens int `yaml:"output_tokens"`
}

// Expect describes what the request a turn answers must contain. Only the
// messages added since the model's previous answer are searched, except by
// SystemContains.
type Expect struct {
	// ToolResultContains must occur in one of the new tool results.
	ToolResultContains string `yaml:"tool_result_contains"`
	// MessageContains must occur in one of the new messages (any role).
	MessageContains string `yaml:"message_contains"`
	// SystemContains must occur in the system message.
	SystemContains string `yaml:"system_contains"`
	// Tools must all be offered to the model.
	Tools []string `yaml:"tools"`
	// ToolChoice is the tool choice the request must carry, e.g. "none".
	ToolChoice string `yaml:"tool_choice"`
}

// Request is what the model was sent.
type Request struct {
	Messages []llms.MessageContent
	Options  llms.CallOptions
}

// Model is the scripted llms.Model. It is safe for concurrent use; turns are
// handed out in order whichever goroutine asks.
type Model struct {
	mu       sync.Mutex
	name     string
	dialect  string
	turns    []Turn
	next     int
	requests []Request
}

var _ llms.Model = (*Model)(nil)

// New returns a model that answers with turns, in OpenAI's response shape.
func New(turns ...Turn) *Model {
	return &Model{name: "script", dialect: OpenAI, turns: turns}
}

// Say is a turn that answers with text.
func Say(text string) Turn { return Turn{Text: text} }

// Calls is a turn that calls tools.
func Calls(calls ...ToolCall) Turn { return Turn{ToolCalls: calls} }

// Call is a tool call; args is marshalled to JSON, or sent verbatim if it is a
// string.
func Call(name string, args any) ToolCall { return ToolCall{Name: name, Arguments: args} }

// WithDialect sets the shape of the responses (OpenAI or Anthropic) and
// returns m.
func (m *Model) WithDialect(dialect string) *Model {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.dialect = dialect
	return m
}

// Dialect returns the shape of the responses.
func (m *Model) Dialect() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.dialect
}

// file is the script file's layout.
type file struct {
	Dialect string `yaml:"dialect"`
	Turns   []Turn `yaml:"turns"`
}

// Load reads a script file.
func Load(path string) (*Model, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading script: %w", err)
	}
	return Parse(path, data)
}

// Parse reads a script from data; name is the file's name in error messages.
// An invalid script is reported as Errors, each at its line and column.
func Parse(name string, data []byte) (*Model, error) {
	c := &checker{file: name}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, Errors{syntaxError(name, err)}
	}
	if len(doc.Content) == 0 {
		return nil, Errors{{File: name, Msg: "the script is empty: it needs turns"}}
	}
	root := doc.Content[0]
	if e := checkSize(name, len(data), root); e != nil {
		return nil, Errors{e}
	}
	c.walk(root, "the script", scriptFile)
	if len(c.errs) > 0 {
		return nil, c.errs
	}
	var f file
	if err := root.Decode(&f); err != nil {
		// The walk accepts only what decodes; this is a safety net. The
		// decoder's message quotes the file, which messages do not.
		return nil, Errors{{File: name, Line: root.Line, Col: root.Column, Msg: "the script does not decode as a mapping with dialect and turns"}}
	}

	switch f.Dialect {
	case "":
		f.Dialect = OpenAI
	case OpenAI, Anthropic:
	default:
		msg := "unknown dialect"
		if near := suggest.Closest(f.Dialect, []string{OpenAI, Anthropic}); near != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", near)
		}
		c.add(mapValue(root, "dialect"), "%s; the dialects are %s and %s", msg, OpenAI, Anthropic)
	}
	turns := mapValue(root, "turns")
	if len(f.Turns) == 0 {
		at := turns
		if at == nil {
			at = root
		}
		c.add(at, "the script has no turns")
	}
	for i, t := range f.Turns {
		at := resolve(turns.Content[i])
		if t.Text == "" && len(t.ToolCalls) == 0 && t.Error == "" && t.StopReason == "" {
			c.add(at, "turn %d has no text, tool_calls, error or stop_reason", i+1)
		}
		for j, call := range t.ToolCalls {
			callAt := resolve(mapValue(at, "tool_calls").Content[j])
			if call.Name == "" {
				c.add(callAt, "tool call %d of turn %d has no name", j+1, i+1)
			}
			if args := mapValue(callAt, "arguments"); args != nil {
				f.Turns[i].ToolCalls[j].Arguments = asWritten(args)
			}
		}
	}
	if len(c.errs) > 0 {
		return nil, c.errs
	}
	return &Model{name: "script " + filepath.Base(name), dialect: f.Dialect, turns: f.Turns}, nil
}

// Fresh returns a model with m's script at its first turn, with nothing sent
// to it yet, so that a script parsed once serves every run of a batch: the
// turns are shared, never modified.
func (m *Model) Fresh() *Model {
	m.mu.Lock()
	defer m.mu.Unlock()
	return &Model{name: m.name, dialect: m.dialect, turns: m.turns}
}

// Requests returns what the model was sent so far, in order.
func (m *Model) Requests() []Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Request(nil), m.requests...)
}

// Remaining returns how many turns have not been used yet.
func (m *Model) Remaining() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.turns) - m.next
}

// Call implements llms.Model.
func (m *Model) Call(ctx context.Context, prompt string, options ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, m, prompt, options...)
}

// GenerateContent implements llms.Model: it records the request, checks the
// next turn's expectations and returns that turn.
func (m *Model) GenerateContent(ctx context.Context, messages []llms.MessageContent, options ...llms.CallOption) (*llms.ContentResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var opts llms.CallOptions
	for _, o := range options {
		o(&opts)
	}
	req := Request{Messages: copyMessages(messages), Options: opts}

	m.mu.Lock()
	m.requests = append(m.requests, req)
	n := m.next
	if n >= len(m.turns) {
		m.mu.Unlock()
		return nil, fmt.Errorf("%s: request %d: %w (it has %d)", m.name, n+1, ErrExhausted, len(m.turns))
	}
	m.next++
	t, dialect := m.turns[n], m.dialect
	m.mu.Unlock()

	if t.Delay > 0 {
		timer := time.NewTimer(t.Delay)
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return nil, ctx.Err()
		}
	}

	if t.Expect != nil {
		if msg := t.Expect.check(req); msg != "" {
			return nil, fmt.Errorf("%s: turn %d: %w: %s", m.name, n+1, ErrDiverged, msg)
		}
	}
	if t.Error != "" {
		return nil, errors.New(t.Error)
	}
	return t.response(n, dialect)
}

func copyMessages(messages []llms.MessageContent) []llms.MessageContent {
	out := make([]llms.MessageContent, len(messages))
	for i, mc := range messages {
		out[i] = llms.MessageContent{Role: mc.Role, Parts: append([]llms.ContentPart(nil), mc.Parts...)}
	}
	return out
}

// response builds the turn's ContentResponse in the dialect's shape; n is the
// turn's index, used for deterministic call ids.
func (t Turn) response(n int, dialect string) (*llms.ContentResponse, error) {
	calls := make([]llms.ToolCall, len(t.ToolCalls))
	for i, c := range t.ToolCalls {
		args, err := c.arguments()
		if err != nil {
			return nil, fmt.Errorf("turn %d: tool call %q: %w", n+1, c.Name, err)
		}
		id := c.ID
		if id == "" {
			id = fmt.Sprintf("call_%d_%d", n+1, i+1)
		}
		calls[i] = llms.ToolCall{ID: id, FunctionCall: &llms.FunctionCall{Name: c.Name, Arguments: args}}
	}

	if dialect == Anthropic {
		stop := t.stopReason("tool_use", "end_turn")
		var choices []*llms.ContentChoice
		if t.Text != "" || len(calls) == 0 {
			choices = append(choices, &llms.ContentChoice{Content: t.Text, StopReason: stop, GenerationInfo: t.usageInfo(dialect)})
		}
		for _, c := range calls {
			choices = append(choices, &llms.ContentChoice{
				ToolCalls:      []llms.ToolCall{c},
				StopReason:     stop,
				GenerationInfo: t.usageInfo(dialect),
			})
		}
		return &llms.ContentResponse{Choices: choices}, nil
	}

	for i := range calls {
		calls[i].Type = "function"
	}
	if len(calls) == 0 {
		calls = nil
	}
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{{
		Content:        t.Text,
		ToolCalls:      calls,
		StopReason:     t.stopReason("tool_calls", "stop"),
		GenerationInfo: t.usageInfo(dialect),
	}}}, nil
}

func (t Turn) stopReason(withCalls, without string) string {
	switch {
	case t.StopReason != "":
		return t.StopReason
	case len(t.ToolCalls) > 0:
		return withCalls
	default:
		return without
	}
}

// usageInfo reports the usage under the keys the dialect's langchaingo client
// uses.
func (t Turn) usageInfo(dialect string) map[string]any {
	if t.Usage == nil {
		return map[string]any{}
	}
	if dialect == Anthropic {
		return map[string]any{"InputTokens": t.Usage.InputTokens, "OutputTokens": t.Usage.OutputTokens}
	}
	return map[string]any{
		"PromptTokens":     t.Usage.InputTokens,
		"CompletionTokens": t.Usage.OutputTokens,
		"TotalTokens":      t.Usage.InputTokens + t.Usage.OutputTokens,
	}
}

func (c ToolCall) arguments() (string, error) {
	switch a := c.Arguments.(type) {
	case nil:
		return "", nil
	case string:
		return a, nil
	case json.RawMessage:
		return string(a), nil
	default:
		b, err := json.Marshal(a)
		if err != nil {
			return "", fmt.Errorf("arguments: %w", err)
		}
		return string(b), nil
	}
}

// check returns what does not hold, or "".
func (e *Expect) check(req Request) string {
	fresh := req.Messages
	for i := len(fresh) - 1; i >= 0; i-- {
		if fresh[i].Role == llms.ChatMessageTypeAI {
			fresh = fresh[i+1:]
			break
		}
	}
	var problems []string
	if e.ToolResultContains != "" && !contains(fresh, e.ToolResultContains, true) {
		problems = append(problems, fmt.Sprintf("no new tool result contains %q (new messages: %s)", e.ToolResultContains, summarize(fresh)))
	}
	if e.MessageContains != "" && !contains(fresh, e.MessageContains, false) {
		problems = append(problems, fmt.Sprintf("no new message contains %q (new messages: %s)", e.MessageContains, summarize(fresh)))
	}
	if e.SystemContains != "" {
		var system []llms.MessageContent
		for _, mc := range req.Messages {
			if mc.Role == llms.ChatMessageTypeSystem {
				system = append(system, mc)
			}
		}
		if !contains(system, e.SystemContains, false) {
			problems = append(problems, fmt.Sprintf("the system message does not contain %q", e.SystemContains))
		}
	}
	offered := map[string]bool{}
	for _, t := range req.Options.Tools {
		if t.Function != nil {
			offered[t.Function.Name] = true
		}
	}
	for _, name := range e.Tools {
		if !offered[name] {
			problems = append(problems, fmt.Sprintf("tool %q is not offered", name))
		}
	}
	if e.ToolChoice != "" {
		if got := fmt.Sprint(req.Options.ToolChoice); req.Options.ToolChoice == nil || got != e.ToolChoice {
			problems = append(problems, fmt.Sprintf("tool choice is %v, want %q", req.Options.ToolChoice, e.ToolChoice))
		}
	}
	return strings.Join(problems, "; ")
}

func contains(messages []llms.MessageContent, s string, toolResultsOnly bool) bool {
	for _, mc := range messages {
		for _, p := range mc.Parts {
			switch p := p.(type) {
			case llms.ToolCallResponse:
				if strings.Contains(p.Content, s) {
					return true
				}
			case llms.TextContent:
				if !toolResultsOnly && strings.Contains(p.Text, s) {
					return true
				}
			}
		}
	}
	return false
}

// summarize shortens messages for an error message.
func summarize(messages []llms.MessageContent) string {
	const max = 200
	var parts []string
	for _, mc := range messages {
		for _, p := range mc.Parts {
			var s string
			switch p := p.(type) {
			case llms.ToolCallResponse:
				s = p.Content
			case llms.TextContent:
				s = p.Text
			default:
				continue
			}
			if len(s) > max {
				// Cut before the character the limit falls in, not
				// through it; text that is not UTF-8, at the limit.
				cut := max
				for i := max; i > max-utf8.UTFMax; i-- {
					if utf8.RuneStart(s[i]) {
						cut = i
						break
					}
				}
				s = s[:cut] + "…"
			}
			parts = append(parts, fmt.Sprintf("%s: %q", mc.Role, s))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
