// Package testmodel is the model `model: test` names: an offline stand-in
// for a provider, in the manner of pydantic-ai's TestModel, that turns
// `agentspec run` into a smoke test of a spec with no key and no network.
//
// On each request it answers from the conversation alone:
//
//  1. While the conversation holds no assistant turn and tools are offered,
//     it calls every offered tool once, all in one turn, in the order they
//     are offered, with arguments generated from each tool's parameter
//     schema (see Generate). Call ids are "pyd_ai_tool_call_id__<tool>", as
//     pydantic-ai names them.
//  2. Otherwise it gives its final answer. Without an output schema the
//     answer is a compact JSON object mapping each tool that returned a
//     result to that result, in the order of the calls (a tool whose call
//     failed is left out: failures are not retried); with no result at all
//     it is exactly "success (no tool calls)". With an output schema the
//     answer is JSON generated from the schema.
//
// It never reads the instructions or the settings, and makes up usage
// figures (one token per four characters sent and received).
package testmodel

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tmc/langchaingo/llms"
)

// NoToolCalls is the answer when no tool returned a result and there is no
// output schema.
const NoToolCalls = "success (no tool calls)"

// errorPrefix starts the tool results the runtime sends back for a call the
// model could correct.
const errorPrefix = "Error: "

// Model is the test model. The zero value answers in text.
type Model struct {
	outputSchema any // decoded; nil for text answers
}

// New returns a test model; outputSchema is the spec's output_schema (nil
// for text answers).
func New(outputSchema json.RawMessage) (*Model, error) {
	m := &Model{}
	if len(outputSchema) > 0 {
		sch, err := decodeOrdered(outputSchema)
		if err != nil {
			return nil, fmt.Errorf("test model: output schema: %w", err)
		}
		m.outputSchema = sch
	}
	return m, nil
}

// Call implements llms.Model.
func (m *Model) Call(ctx context.Context, prompt string, options ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, m, prompt, options...)
}

// GenerateContent implements llms.Model.
func (m *Model) GenerateContent(ctx context.Context, messages []llms.MessageContent, options ...llms.CallOption) (*llms.ContentResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var opts llms.CallOptions
	for _, o := range options {
		o(&opts)
	}
	in := 0
	for _, mc := range messages {
		for _, p := range mc.Parts {
			in += partSize(p)
		}
	}
	answered := false
	for _, mc := range messages {
		if mc.Role == llms.ChatMessageTypeAI {
			answered = true
		}
	}
	if !answered && len(opts.Tools) > 0 && opts.ToolChoice != "none" {
		calls, err := callEvery(opts.Tools)
		if err != nil {
			return nil, err
		}
		out := 0
		for _, c := range calls {
			out += len(c.FunctionCall.Name) + len(c.FunctionCall.Arguments)
		}
		return &llms.ContentResponse{Choices: []*llms.ContentChoice{{
			StopReason:     "tool_calls",
			ToolCalls:      calls,
			GenerationInfo: usage(in, out),
		}}}, nil
	}
	text, err := m.answer(messages)
	if err != nil {
		return nil, err
	}
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{{
		Content:        text,
		StopReason:     "stop",
		GenerationInfo: usage(in, len(text)),
	}}}, nil
}

// callEvery calls each tool once with generated arguments.
func callEvery(tools []llms.Tool) ([]llms.ToolCall, error) {
	calls := make([]llms.ToolCall, 0, len(tools))
	for _, t := range tools {
		if t.Function == nil {
			continue
		}
		params, err := roundTrip(t.Function.Parameters)
		if err != nil {
			return nil, fmt.Errorf("test model: tool %s: parameters: %w", t.Function.Name, err)
		}
		args, err := Generate(params)
		if err != nil {
			return nil, fmt.Errorf("test model: tool %s: cannot generate arguments: %w", t.Function.Name, err)
		}
		if _, isObject := args.(*object); !isObject { // a schema without type
			args = newObject()
		}
		b, err := marshal(args)
		if err != nil {
			return nil, fmt.Errorf("test model: tool %s: %w", t.Function.Name, err)
		}
		calls = append(calls, llms.ToolCall{
			ID:           "pyd_ai_tool_call_id__" + t.Function.Name,
			Type:         "function",
			FunctionCall: &llms.FunctionCall{Name: t.Function.Name, Arguments: string(b)},
		})
	}
	return calls, nil
}

// answer is the final answer: generated from the output schema, or the
// tools' results.
func (m *Model) answer(messages []llms.MessageContent) (string, error) {
	if m.outputSchema != nil {
		v, err := Generate(m.outputSchema)
		if err != nil {
			return "", fmt.Errorf("test model: cannot generate an answer from the output schema: %w", err)
		}
		b, err := marshal(v)
		return string(b), err
	}
	var (
		names   []string
		results = map[string]string{}
	)
	for _, mc := range messages {
		for _, p := range mc.Parts {
			r, ok := p.(llms.ToolCallResponse)
			if !ok || strings.HasPrefix(r.Content, errorPrefix) {
				continue
			}
			if _, seen := results[r.Name]; !seen {
				names = append(names, r.Name)
			}
			results[r.Name] = r.Content
		}
	}
	if len(names) == 0 {
		return NoToolCalls, nil
	}
	out := newObject() // in the order of the calls
	for _, n := range names {
		out.set(n, results[n])
	}
	b, err := marshal(out)
	return string(b), err
}

// roundTrip turns a tool's parameters (whatever Go value the tool gave)
// into a decoded JSON value, its properties in the order the JSON the
// value marshals to lists them.
func roundTrip(v any) (any, error) {
	if v == nil {
		return map[string]any{"type": "object"}, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return decodeOrdered(b)
}

func partSize(p llms.ContentPart) int {
	switch p := p.(type) {
	case llms.TextContent:
		return len(p.Text)
	case llms.ToolCallResponse:
		return len(p.Content)
	case llms.ToolCall:
		if p.FunctionCall != nil {
			return len(p.FunctionCall.Arguments)
		}
	}
	return 0
}

// usage reports made-up token counts in the keys the runtime reads.
func usage(inChars, outChars int) map[string]any {
	return map[string]any{
		"PromptTokens":     (inChars + 3) / 4,
		"CompletionTokens": (outChars + 3) / 4,
	}
}
