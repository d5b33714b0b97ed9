package runtime

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/tmc/langchaingo/llms"

	"github.com/agentspec/agentspec/runtime/providers"
	"github.com/agentspec/agentspec/spec"
)

// Dialect is spec.Dialect, how a conversation is replayed to a provider: the
// openai and anthropic shapes of an assistant turn are mutually incompatible.
type Dialect = spec.Dialect

const (
	// DialectOpenAI replays an assistant turn as one message holding its text
	// and every tool call. OpenAI-compatible endpoints and unknown providers
	// use it.
	DialectOpenAI = spec.DialectOpenAI
	// DialectAnthropic replays an assistant turn as one message per content
	// block, because langchaingo's anthropic client reads only the first part
	// of each message.
	DialectAnthropic = spec.DialectAnthropic
)

// ErrLostToolCalls is returned when the model stopped to call tools but no
// call could be read from its response (some OpenAI-compatible streams lose
// them). Taking the text as the final answer would silently end the run.
var ErrLostToolCalls = errors.New("the model stopped to call tools but no tool call could be read from its response")

// turn is one model response, normalised across providers.
type turn struct {
	blocks     []llms.ContentPart // text and tool calls, in the order the model produced them
	text       string             // the text blocks joined
	calls      []llms.ToolCall
	stopReason string
	usage      tokens
	lost       bool // the stop reason says tool use but there are no calls
	// whole is the turn as the provider's model returned it for replay
	// (providers.Info.Turn): text, calls and the blocks the loop does not
	// interpret, such as thinking, in order. nil for other models.
	whole   []llms.ContentPart
	refusal *string // the model refused, with this reason
	// failedCall is set, with the provider's message, when the provider
	// refused the response because the model wrote an unparsable call.
	failedCall string
}

// tokens is a response's usage; none is set when the response reported
// none, and the counts are then zeros that mean nothing.
type tokens struct {
	input, output, cacheWrite, cacheRead, reasoning int
	none                                            bool
}

// truncated reports whether the response was cut at max_tokens.
func (t turn) truncated() bool {
	return providers.Truncated(t.stopReason)
}

// collect normalises a response: it gathers text and tool calls across all
// choices (anthropic returns one choice per content block), repairs the calls
// so they can be replayed to any provider, and reads the usage once (anthropic
// repeats it on every choice). callID makes up ids for calls that have none.
func collect(resp *llms.ContentResponse, callID func() string) turn {
	var t turn
	if resp == nil {
		return t
	}
	var texts []string
	usageRead := false
	for _, c := range resp.Choices {
		if c == nil {
			continue
		}
		if c.StopReason != "" && t.stopReason == "" {
			t.stopReason = c.StopReason
		}
		info, hasUsage, hasTurn := providers.ReadInfo(c)
		if !usageRead {
			u := info.Usage
			t.usage = tokens{input: u.Input, output: u.Output, cacheWrite: u.CacheWrite, cacheRead: u.CacheRead, reasoning: u.Reasoning}
			usageRead = hasUsage
		}
		if hasTurn && t.whole == nil {
			t.whole = info.Turn
		}
		if info.Refused && t.refusal == nil {
			r := info.Refusal
			t.refusal = &r
		}
		if c.Content != "" {
			texts = append(texts, c.Content)
			t.blocks = append(t.blocks, llms.TextContent{Text: c.Content})
		}
		for _, call := range c.ToolCalls {
			if call.FunctionCall == nil || call.FunctionCall.Name == "" {
				continue // stream-accumulation garbage; nothing could run it
			}
			fc := *call.FunctionCall
			if a := strings.TrimSpace(fc.Arguments); a == "" || a == "null" {
				fc.Arguments = "{}"
			}
			call.FunctionCall = &fc
			if call.Type == "" {
				call.Type = "function"
			}
			if call.ID == "" {
				call.ID = callID()
			}
			t.calls = append(t.calls, call)
			t.blocks = append(t.blocks, call)
		}
	}
	t.usage.none = !usageRead
	t.text = strings.Join(texts, "\n")
	t.lost = len(t.calls) == 0 && providers.ToolStop(t.stopReason)
	if t.refusal == nil && t.stopReason == providers.StopRefusal {
		r := t.text
		t.refusal = &r
	}
	if t.whole != nil {
		// The ids made up above replace the empty ones in the whole turn.
		whole, n := make([]llms.ContentPart, 0, len(t.whole)), 0
		for _, p := range t.whole {
			if _, ok := p.(llms.ToolCall); ok {
				if n < len(t.calls) {
					whole = append(whole, t.calls[n])
				}
				n++
				continue
			}
			whole = append(whole, p)
		}
		t.whole = whole
	}
	return t
}

// replay returns the messages that put the assistant turn t back into the
// conversation, in the dialect's shape.
func replay(d Dialect, t turn) []llms.MessageContent {
	if t.whole != nil {
		// The provider's model takes its own turn back whole, blocks and all.
		return []llms.MessageContent{{Role: llms.ChatMessageTypeAI, Parts: t.whole}}
	}
	if d == DialectAnthropic {
		msgs := make([]llms.MessageContent, 0, len(t.blocks))
		for _, b := range t.blocks {
			if call, ok := b.(llms.ToolCall); ok {
				b = anthropicSafe(call)
			}
			msgs = append(msgs, llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{b}})
		}
		return msgs
	}
	parts := make([]llms.ContentPart, 0, len(t.calls)+1)
	if t.text != "" {
		parts = append(parts, llms.TextContent{Text: t.text})
	}
	for _, c := range t.calls {
		parts = append(parts, c)
	}
	return []llms.MessageContent{{Role: llms.ChatMessageTypeAI, Parts: parts}}
}

// anthropicSafe replaces arguments that are not a JSON object by {}: the
// anthropic client decodes them into a map when replaying and fails the whole
// request otherwise. The model still learns from the tool result that its
// arguments were refused.
func anthropicSafe(call llms.ToolCall) llms.ToolCall {
	if isJSONObject(call.FunctionCall.Arguments) {
		return call
	}
	fc := *call.FunctionCall
	fc.Arguments = "{}"
	call.FunctionCall = &fc
	return call
}

func isJSONObject(s string) bool {
	s = strings.TrimSpace(s)
	return strings.HasPrefix(s, "{") && json.Valid([]byte(s))
}

// toolResult is the message answering one tool call. Providers want exactly
// one response per tool message. A failed call is marked for the provider's
// models (Anthropic's is_error) when marked is set.
func toolResult(call llms.ToolCall, content string, failed, marked bool) llms.MessageContent {
	parts := []llms.ContentPart{llms.ToolCallResponse{
		ToolCallID: call.ID,
		Name:       call.FunctionCall.Name,
		Content:    content,
	}}
	if failed && marked {
		parts = append(parts, providers.ToolError)
	}
	return llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: parts}
}

func textMessage(role llms.ChatMessageType, text string) llms.MessageContent {
	return llms.MessageContent{Role: role, Parts: []llms.ContentPart{llms.TextContent{Text: text}}}
}

// idSource makes up tool call ids for providers that return none.
type idSource struct{ n int }

func (s *idSource) next() string {
	s.n++
	return fmt.Sprintf("call_agentspec_%d", s.n)
}
