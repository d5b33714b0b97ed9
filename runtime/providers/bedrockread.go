package providers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/aws/smithy-go"
	"github.com/tmc/langchaingo/llms"
)

// Reading Converse answers, whole or streamed event by event.

// bedrockTurn is an answer being read, block by block in order.
type bedrockTurn struct {
	blocks                               []*bedrockPart
	stop                                 string
	input, output, cacheRead, cacheWrite int
	usageRead                            bool // a stream may end after messageStop without its metadata
}

// bedrockPart is one content block: text, a tool call, or reasoning.
type bedrockPart struct {
	kind      string // "text", "tool", "reasoning"
	text      strings.Builder
	id, name  string
	signature string
	redacted  []byte
}

// at returns the block at index, created as kind when it is new.
func (a *bedrockTurn) at(index int, kind string) *bedrockPart {
	for len(a.blocks) <= index {
		a.blocks = append(a.blocks, nil)
	}
	if a.blocks[index] == nil {
		a.blocks[index] = &bedrockPart{kind: kind}
	}
	return a.blocks[index]
}

// add reads a whole content block of a Converse answer.
func (a *bedrockTurn) add(b types.ContentBlock) {
	i := len(a.blocks)
	switch b := b.(type) {
	case *types.ContentBlockMemberText:
		a.at(i, "text").text.WriteString(b.Value)
	case *types.ContentBlockMemberToolUse:
		p := a.at(i, "tool")
		p.id, p.name = deref(b.Value.ToolUseId), deref(b.Value.Name)
		if b.Value.Input != nil {
			if raw, err := b.Value.Input.MarshalSmithyDocument(); err == nil {
				p.text.Write(raw)
			}
		}
	case *types.ContentBlockMemberReasoningContent:
		p := a.at(i, "reasoning")
		switch r := b.Value.(type) {
		case *types.ReasoningContentBlockMemberReasoningText:
			p.text.WriteString(deref(r.Value.Text))
			p.signature = deref(r.Value.Signature)
		case *types.ReasoningContentBlockMemberRedactedContent:
			p.redacted = r.Value
		}
	}
}

func (a *bedrockTurn) usage(u *types.TokenUsage) {
	if u == nil {
		return
	}
	// inputTokens leaves out the cache's tokens, counted beside it (as
	// totalTokens shows); Input counts them in.
	a.usageRead = true
	a.cacheRead, a.cacheWrite = int(deref(u.CacheReadInputTokens)), int(deref(u.CacheWriteInputTokens))
	a.input, a.output = int(deref(u.InputTokens))+a.cacheRead+a.cacheWrite, int(deref(u.OutputTokens))
}

// response normalises the turn into one choice, as the other models do.
func (a *bedrockTurn) response() *llms.ContentResponse {
	choice := &llms.ContentChoice{StopReason: a.stop}
	var text, reasoning strings.Builder
	var turn []llms.ContentPart
	for _, p := range a.blocks {
		if p == nil {
			continue
		}
		switch p.kind {
		case "text":
			text.WriteString(p.text.String())
			turn = append(turn, llms.TextContent{Text: p.text.String()})
		case "tool":
			args := objectArguments([]byte(p.text.String()))
			call := llms.ToolCall{ID: p.id, Type: "function", FunctionCall: &llms.FunctionCall{Name: p.name, Arguments: args}}
			choice.ToolCalls = append(choice.ToolCalls, call)
			turn = append(turn, call)
		case "reasoning":
			reasoning.WriteString(p.text.String())
			turn = append(turn, encodeBlock(bedrockBlock{Type: blockBedrockReasoning, Text: p.text.String(), Signature: p.signature, Redacted: p.redacted}))
		}
	}
	choice.Content = text.String()
	choice.ReasoningContent = reasoning.String()
	if len(choice.ToolCalls) > 0 {
		choice.FuncCall = choice.ToolCalls[0].FunctionCall
	}
	info := Info{Turn: turn, NoUsage: !a.usageRead, Usage: Usage{Input: a.input, Output: a.output, CacheRead: a.cacheRead, CacheWrite: a.cacheWrite}}
	switch a.stop {
	case string(types.StopReasonGuardrailIntervened), string(types.StopReasonContentFiltered):
		info.Refused = true
		info.Refusal = strings.TrimSpace(choice.Content)
		if info.Refusal == "" {
			info.Refusal = "the response was blocked (" + a.stop + ")"
		}
	}
	SetInfo(choice, info)
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{choice}}
}

// failedCall is the Error of an answer Converse ended with
// malformed_tool_use (the model wrote a tool use it could not read) or
// malformed_model_output (an answer it could not read): a mistake the model
// can correct, as ToolUseFailed tells, carrying what the model wrote, not
// an answer to take as it is. It is nil for any other answer.
func (a *bedrockTurn) failedCall(ep endpoint) *Error {
	what := map[string]string{
		string(types.StopReasonMalformedToolUse):     "The model generated an invalid tool use",
		string(types.StopReasonMalformedModelOutput): "The model generated output that could not be read",
	}[a.stop]
	if what == "" {
		return nil
	}
	var wrote []string
	for _, p := range a.blocks {
		switch {
		case p == nil:
		case p.kind == "text":
			wrote = append(wrote, strings.TrimSpace(p.text.String()))
		case p.kind == "tool":
			wrote = append(wrote, strings.TrimSpace(p.name+" "+p.text.String()))
		}
	}
	return &Error{Provider: ep.provider, Type: a.stop, Code: "tool_use_failed",
		Message: what, FailedGeneration: strings.Join(slices.DeleteFunc(wrote, func(s string) bool { return s == "" }), "; ")}
}

// stream sends a ConverseStream request, passes text deltas to fn and reads
// the events into one answer. An exception event fails it with a Stream
// *Error, retried when it means "try again".
func (m *bedrockModel) stream(ctx context.Context, in bedrockInput, fn func(context.Context, []byte) error, retries int) (*llms.ContentResponse, error) {
	out, err := m.client.ConverseStream(ctx, in.converseStream())
	if err != nil {
		return nil, err
	}
	s := out.GetStream()
	defer s.Close()
	var a bedrockTurn
	stopped := false
	for ev := range s.Events() {
		switch ev := ev.(type) {
		case *types.ConverseStreamOutputMemberContentBlockStart:
			i := int(deref(ev.Value.ContentBlockIndex))
			if tu, ok := ev.Value.Start.(*types.ContentBlockStartMemberToolUse); ok {
				p := a.at(i, "tool")
				p.id, p.name = deref(tu.Value.ToolUseId), deref(tu.Value.Name)
			}
		case *types.ConverseStreamOutputMemberContentBlockDelta:
			i := int(deref(ev.Value.ContentBlockIndex))
			switch d := ev.Value.Delta.(type) {
			case *types.ContentBlockDeltaMemberText:
				a.at(i, "text").text.WriteString(d.Value)
				if d.Value != "" {
					if err := fn(ctx, []byte(d.Value)); err != nil {
						return nil, err
					}
				}
			case *types.ContentBlockDeltaMemberToolUse:
				a.at(i, "tool").text.WriteString(deref(d.Value.Input))
			case *types.ContentBlockDeltaMemberReasoningContent:
				p := a.at(i, "reasoning")
				switch r := d.Value.(type) {
				case *types.ReasoningContentBlockDeltaMemberText:
					p.text.WriteString(r.Value)
				case *types.ReasoningContentBlockDeltaMemberSignature:
					p.signature += r.Value
				case *types.ReasoningContentBlockDeltaMemberRedactedContent:
					p.redacted = append(p.redacted, r.Value...)
				}
			}
		case *types.ConverseStreamOutputMemberMessageStop:
			a.stop, stopped = string(ev.Value.StopReason), true
		case *types.ConverseStreamOutputMemberMetadata:
			a.usage(ev.Value.Usage)
		}
	}
	if err := s.Err(); err != nil {
		var apiErr smithy.APIError
		if errors.As(err, &apiErr) {
			body, _ := json.Marshal(map[string]any{"error": map[string]any{"type": apiErr.ErrorCode(), "message": apiErr.ErrorMessage()}})
			return nil, streamError(m.ep, body, retries)
		}
		return nil, fmt.Errorf("reading the stream: %w", err)
	}
	if !stopped {
		return nil, streamError(m.ep, []byte(`{"error":{"type":"incomplete_stream","message":"the stream ended before messageStop"}}`), retries)
	}
	if e := a.failedCall(m.ep); e != nil {
		e.Stream, e.Retries = true, retries
		return nil, e
	}
	return a.response(), nil
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
