package providers

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"cloud.google.com/go/auth"
	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"
	"github.com/tmc/langchaingo/llms"
)

// anthropicModel is the Messages API on anthropic-sdk-go. It keeps every
// content block of a turn (thinking and redacted_thinking with their
// signatures, server tool blocks) and sends them back unchanged, marks failed
// tool results is_error, and reads refusals, truncation, cache usage and
// stream error events.
type anthropicModel struct {
	common
	client   anthropic.Client
	thinking thinkingPlan
}

// newAnthropic builds the Messages API client of c. With creds, or as the
// replay of a conversation with it, c is Claude on Vertex AI (the vertex
// provider row): the requests are rewritten for Anthropic's publisher models
// there (vertexMiddleware) and authorized by creds.
func newAnthropic(c common, creds *auth.Credentials) *anthropicModel {
	plan, _ := anthropicThinking(c.provider, c.model, c.settings) // Validate has checked it
	opts := []option.RequestOption{
		option.WithoutEnvironmentDefaults(),
		option.WithHTTPClient(c.doer),
		option.WithMaxRetries(0), // the doer retries
	}
	if c.provider.vertex {
		if creds != nil {
			c.doer.sign = googleAuthorization(creds)
		}
		opts = append(opts,
			// Vertex AI's paths start at the root it is given, as Gemini's
			// do, so the base is kept whole.
			option.WithBaseURL(strings.TrimRight(c.ep.baseURL, "/")+"/"),
			option.WithMiddleware(vertexMiddleware(c.model, c.ep)))
	} else {
		opts = append(opts,
			option.WithAPIKey(c.ep.token),
			// x-api-key is the header the Messages API documents, and the one
			// proxies and compatible servers read.
			option.WithHeaderDel("authorization"),
			option.WithHeader("x-api-key", c.ep.token),
			// The SDK's base is the API root; recordings of version 2 and older
			// configurations name the versioned base.
			option.WithBaseURL(strings.TrimSuffix(strings.TrimRight(c.ep.baseURL, "/"), "/v1")+"/"))
	}
	betas, _ := stringList(c.settings.Provider["anthropic_betas"])
	for _, nt := range c.native {
		// Web fetch and code execution are still beta tools.
		if b := nativeBetas[nt.Kind]; b != "" && !slices.Contains(betas, b) {
			betas = append(betas, b)
		}
	}
	if len(betas) > 0 {
		opts = append(opts, option.WithHeader("anthropic-beta", strings.Join(betas, ",")))
	}
	return &anthropicModel{common: c, client: anthropic.NewClient(opts...), thinking: plan}
}

// nativeBetas are the beta headers the native tools need.
var nativeBetas = map[string]string{"web_fetch": "web-fetch-2025-09-10", "code_execution": "code-execution-2025-08-25"}

// extra sets the spec's extra_body on a request.
func (m *anthropicModel) extra() []option.RequestOption {
	return extraBody(m.settings.ExtraBody, option.WithJSONSet)
}

// send sends the request whole. The SDK bounds a non-streamed request that
// names no timeout by 10 minutes, whatever the spec's timeout, and refuses
// one whose max_tokens it guesses would take longer; the doer bounds each
// attempt by the spec's timeout, so the SDK is given the doer's bound over
// every attempt and wait, which never cuts an attempt short.
func (m *anthropicModel) send(ctx context.Context, req anthropic.MessageNewParams) (*llms.ContentResponse, error) {
	v, err := m.client.Messages.New(ctx, req, append(m.extra(), option.WithRequestTimeout(m.doer.bound()))...)
	return read(v, err, func(msg *anthropic.Message) (*llms.ContentResponse, error) {
		u := msg.Usage.JSON
		return anthropicResponse(msg, u.InputTokens.Valid() && u.OutputTokens.Valid()), nil
	})
}

// stream sends the request with stream: true, passes text deltas to fn and
// accumulates the message. An error event fails it with a Stream *Error.
func (m *anthropicModel) stream(ctx context.Context, req anthropic.MessageNewParams, fn func(context.Context, []byte) error, retries int) (*llms.ContentResponse, error) {
	s := m.client.Messages.NewStreaming(ctx, req, m.extra()...)
	defer s.Close()
	var msg anthropic.Message
	// Whether the input and the output were counted: message_start gives
	// the input, message_delta the input again or not and the output.
	// message_start's output_tokens are the count so far, not the answer's,
	// and Accumulate takes message_delta's output_tokens as zero when its
	// usage is left out, as some servers speaking the Messages API do.
	var inputCounted, outputCounted bool
	for s.Next() {
		ev := s.Current()
		if err := msg.Accumulate(ev); err != nil {
			return nil, fmt.Errorf("reading the stream: %w", err)
		}
		switch ev.Type {
		case "message_start":
			inputCounted = ev.Message.Usage.JSON.InputTokens.Valid()
		case "message_delta":
			inputCounted = inputCounted || ev.Usage.JSON.InputTokens.Valid()
			outputCounted = ev.Usage.JSON.OutputTokens.Valid()
		}
		if ev.Type == "content_block_delta" && ev.Delta.Type == "text_delta" && ev.Delta.Text != "" {
			if err := fn(ctx, []byte(ev.Delta.Text)); err != nil {
				return nil, err
			}
		}
	}
	if err := s.Err(); err != nil {
		var apiErr *anthropic.Error
		if asAPIError(err, &apiErr) && apiErr.StatusCode < 400 {
			return nil, streamError(m.ep, []byte(apiErr.RawJSON()), retries)
		}
		if msg.StopReason == "" || !cutAfterFinish(ctx, err) {
			return nil, err
		}
	}
	if msg.StopReason == "" {
		return nil, streamError(m.ep, []byte(`{"error":{"type":"incomplete_stream","message":"the stream ended before message_stop"}}`), retries)
	}
	return anthropicResponse(&msg, inputCounted && outputCounted), nil
}

// request builds the request from the conversation and the call options.
func (m *anthropicModel) request(messages []llms.MessageContent, opts llms.CallOptions) (anthropic.MessageNewParams, error) {
	s := m.settings
	p := anthropic.MessageNewParams{
		Model:         anthropic.Model(m.model),
		MaxTokens:     int64(callMaxTokens(s, opts, m.thinking.budget)),
		StopSequences: s.StopSequences,
	}
	extra := map[string]any{}
	temperature := DefaultTemperature
	if s.Temperature != nil {
		temperature = *s.Temperature
	}
	if opts.Temperature != 0 {
		temperature = opts.Temperature // the caller's wins
	}
	if (m.thinking.raw == nil || m.thinking.raw["type"] == "disabled") && !defaultBesideTopP(s, opts) && !isClaudeLatest(m.model) {
		// With thinking on, the API takes no temperature but 1, its
		// default; the latest models take none at all.
		extra["temperature"] = temperature
	}
	if s.TopP != nil {
		extra["top_p"] = *s.TopP
	}
	if s.TopK != nil {
		extra["top_k"] = *s.TopK
	}
	if m.thinking.raw != nil {
		p.Thinking = m.thinking.param()
	}
	if m.thinking.effort != "" {
		p.OutputConfig.Effort = anthropic.OutputConfigEffort(m.thinking.effort)
	}
	switch s.ServiceTier {
	case "auto":
		p.ServiceTier = anthropic.MessageNewParamsServiceTierAuto
	case "default":
		p.ServiceTier = anthropic.MessageNewParamsServiceTierStandardOnly
	}
	for _, k := range bodyKeys["anthropic_"] {
		if v, ok := s.Provider["anthropic_"+k]; ok && k != "effort" {
			extra[k] = plain(v)
		}
	}
	if cc, ok := cacheControl(s.Provider["anthropic_cache"]); ok {
		p.CacheControl = cc
	}

	system, turns, err := anthropicMessages(messages)
	if err != nil {
		return p, err
	}
	if len(system) > 0 {
		if cc, ok := cacheControl(s.Provider["anthropic_cache_instructions"]); ok {
			system[len(system)-1].CacheControl = cc
		}
		p.System = system
	}
	if cc, ok := cacheControl(s.Provider["anthropic_cache_messages"]); ok && len(turns) > 0 {
		last := turns[len(turns)-1]
		var content []anthropic.ContentBlockParamUnion
		if last.OfUser != nil {
			content = last.OfUser.Content
		} else if last.OfAssistant != nil {
			content = last.OfAssistant.Content
		}
		if n := len(content); n > 0 {
			content[n-1] = withCacheControl(content[n-1], content[n-1].GetCacheControl(), cc, param.Override[anthropic.ContentBlockParamUnion])
		}
	}
	p.Messages = turns

	tools, err := m.tools(opts.Tools)
	if err != nil {
		return p, err
	}
	p.Tools = tools
	if len(tools) > 0 {
		p.ToolChoice = m.toolChoice(opts.ToolChoice)
	}
	p.SetExtraFields(extra)
	return p, nil
}

// toolChoice is the call's tool choice (the loop's "none" after the round
// limit) or the spec's, with parallel_tool_calls.
func (m *anthropicModel) toolChoice(call any) anthropic.ToolChoiceUnionParam {
	mode, names := "", []string(nil)
	if tc := m.settings.ToolChoice; tc != nil {
		mode, names = tc.Mode, tc.Tools
	}
	if c, ok := call.(string); ok && c != "" {
		mode, names = c, nil
	}
	var disable param.Opt[bool]
	if p := m.settings.ParallelToolCalls; p != nil && !*p {
		disable = param.NewOpt(true)
	}
	switch {
	case mode == "none":
		return anthropic.ToolChoiceUnionParam{OfNone: &anthropic.ToolChoiceNoneParam{}}
	case len(names) == 1:
		return anthropic.ToolChoiceUnionParam{OfTool: &anthropic.ToolChoiceToolParam{Name: names[0], DisableParallelToolUse: disable}}
	case mode == "required":
		return anthropic.ToolChoiceUnionParam{OfAny: &anthropic.ToolChoiceAnyParam{DisableParallelToolUse: disable}}
	case mode == "auto" || disable.Valid():
		return anthropic.ToolChoiceUnionParam{OfAuto: &anthropic.ToolChoiceAutoParam{DisableParallelToolUse: disable}}
	}
	return anthropic.ToolChoiceUnionParam{}
}

// param is the thinking object of a request: typed when made from the
// unified setting, the spec's anthropic_thinking as written otherwise.
func (plan thinkingPlan) param() anthropic.ThinkingConfigParamUnion {
	switch {
	case !plan.unified:
		return param.Override[anthropic.ThinkingConfigParamUnion](plain(plan.raw))
	case plan.raw["type"] == "adaptive":
		return anthropic.ThinkingConfigParamUnion{OfAdaptive: &anthropic.ThinkingConfigAdaptiveParam{}}
	}
	return anthropic.ThinkingConfigParamOfEnabled(int64(plan.budget))
}

// tools declares the loop's tools, every one with an input schema (the API
// rejects a tool without), and the native tools.
func (m *anthropicModel) tools(defs []llms.Tool) ([]anthropic.ToolUnionParam, error) {
	var out []anthropic.ToolUnionParam
	eager, _ := m.settings.Provider["anthropic_eager_input_streaming"].(bool)
	for _, t := range defs {
		if t.Function == nil {
			continue
		}
		schema := t.Function.Parameters
		if schema == nil {
			schema = map[string]any{"type": "object", "properties": map[string]any{}}
		}
		tool := anthropic.ToolParam{
			Name: t.Function.Name,
			// The schema is the tool's own JSON Schema, sent as it is.
			InputSchema: param.Override[anthropic.ToolInputSchemaParam](schema),
		}
		if t.Function.Description != "" {
			tool.Description = param.NewOpt(t.Function.Description)
		}
		if eager {
			tool.EagerInputStreaming = param.NewOpt(true)
		}
		out = append(out, anthropic.ToolUnionParam{OfTool: &tool})
	}
	for _, nt := range m.native {
		def, err := anthropicNative(nt, m.settings)
		if err != nil {
			return nil, err
		}
		out = append(out, param.Override[anthropic.ToolUnionParam](def))
	}
	if cc, ok := cacheControl(m.settings.Provider["anthropic_cache_tool_definitions"]); ok && len(out) > 0 {
		last := &out[len(out)-1]
		*last = withCacheControl(*last, last.GetCacheControl(), cc, param.Override[anthropic.ToolUnionParam])
	}
	return out, nil
}

// cacheControl reads an anthropic_cache_* setting: true, or a TTL.
func cacheControl(v any) (anthropic.CacheControlEphemeralParam, bool) {
	cc := anthropic.NewCacheControlEphemeralParam()
	switch v := v.(type) {
	case bool:
		return cc, v
	case string:
		cc.TTL = anthropic.CacheControlEphemeralTTL(v)
		return cc, true
	}
	return cc, false
}

// withCacheControl marks a block or a tool for caching: in field, its
// typed param's cache_control, or, for one given as JSON (a block kept as
// the API sent it, a native tool), in its JSON.
func withCacheControl[T any](b T, field *anthropic.CacheControlEphemeralParam, cc anthropic.CacheControlEphemeralParam,
	override func(any) T) T {
	if field != nil {
		*field = cc
		return b
	}
	raw, err := json.Marshal(b)
	if err != nil {
		return b
	}
	var v map[string]any
	if json.Unmarshal(raw, &v) != nil || v == nil {
		return b
	}
	v["cache_control"] = cc
	return override(v)
}

// anthropicMessages converts the conversation. Consecutive messages of one
// role become one turn (the loop may send an assistant turn as one message
// per block, and sends one message per tool result); in a user turn, tool
// results come first, as the API requires; blank text blocks are dropped.
func anthropicMessages(messages []llms.MessageContent) ([]anthropic.TextBlockParam, []anthropic.MessageParam, error) {
	var system []anthropic.TextBlockParam
	var turns []anthropic.MessageParam
	tb := &turnBuilder[anthropic.ContentBlockParamUnion]{emit: func(side turn, blocks []anthropic.ContentBlockParamUnion) {
		if side == turnAssistant {
			turns = append(turns, anthropic.NewAssistantMessage(blocks...))
		} else {
			turns = append(turns, anthropic.NewUserMessage(blocks...))
		}
	}}
	addSystem := func(t string) { system = append(system, anthropic.TextBlockParam{Text: t}) }
	err := eachPart(messages, "Messages", addSystem, tb.start, func(i int, part llms.ContentPart, failed bool) error {
		switch p := part.(type) {
		case llms.TextContent:
			if strings.TrimSpace(p.Text) != "" { // the API refuses a message whose text is blank
				tb.add(anthropic.NewTextBlock(p.Text))
			}
		case llms.ToolCall:
			if p.FunctionCall == nil {
				return nil
			}
			input := json.RawMessage(p.FunctionCall.Arguments)
			var obj map[string]any
			if json.Unmarshal(input, &obj) != nil || obj == nil {
				input = json.RawMessage(`{}`) // the API takes an object only
			}
			tb.add(anthropic.NewToolUseBlock(p.ID, input, p.FunctionCall.Name))
		case llms.ToolCallResponse:
			content := p.Content
			if strings.TrimSpace(content) == "" {
				content = "(empty)" // the API refuses an empty text block, as Converse does
			}
			tb.addResult(anthropic.NewToolResultBlock(p.ToolCallID, content, failed))
		case llms.BinaryContent:
			switch {
			case isToolError(p):
			case isBlock(p):
				tb.add(param.Override[anthropic.ContentBlockParamUnion](json.RawMessage(p.Data)))
			case strings.HasPrefix(p.MIMEType, "image/"):
				tb.add(anthropic.NewImageBlockBase64(p.MIMEType, base64Of(p.Data)))
			default:
				return fmt.Errorf("message %d: the Messages API takes no %s part", i, p.MIMEType)
			}
		case llms.ImageURLContent:
			tb.add(anthropic.NewImageBlock(anthropic.URLImageSourceParam{URL: p.URL}))
		default:
			return fmt.Errorf("message %d: the Messages API takes no %T part", i, part)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	tb.flush()
	return system, turns, nil
}

// anthropicParam is block b as the param that sends it back: the SDK's
// own conversion, or the block as received for a type the SDK does not model.
func anthropicParam(b anthropic.ContentBlockUnion) []byte {
	raw, err := json.Marshal(b.ToParam())
	if err != nil || string(raw) == "null" {
		raw = []byte(b.RawJSON())
	}
	return raw
}

// anthropicResponse normalises a message into one choice: the text, the
// tool calls, and the whole turn in order (InfoTurn), every block the loop
// does not interpret kept as the param that sends it back. counted is
// whether the message counted its input and output tokens: Anthropic
// always does, but a proxy or a local server speaking the Messages API may
// not, and then the choice carries no counts rather than counts of zero.
func anthropicResponse(msg *anthropic.Message, counted bool) *llms.ContentResponse {
	choice := &llms.ContentChoice{StopReason: string(msg.StopReason)}
	var text, thinking strings.Builder
	var turn []llms.ContentPart
	for _, b := range msg.Content {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
			if len(b.Citations) == 0 {
				turn = append(turn, llms.TextContent{Text: b.Text})
				continue
			}
			// The citations of a text block (web search, documents) are
			// part of the turn the API wants back; a text part would lose
			// them, so the block goes back whole.
			turn = append(turn, blockPart(anthropicParam(b)))
		case "tool_use":
			args := "{}"
			var compact bytes.Buffer
			if json.Compact(&compact, b.Input) == nil && compact.Len() > 0 {
				args = compact.String()
			}
			call := llms.ToolCall{ID: b.ID, Type: "function", FunctionCall: &llms.FunctionCall{Name: b.Name, Arguments: args}}
			choice.ToolCalls = append(choice.ToolCalls, call)
			turn = append(turn, call)
		default:
			if b.Type == "thinking" {
				thinking.WriteString(b.Thinking)
			}
			turn = append(turn, blockPart(anthropicParam(b)))
		}
	}
	choice.Content = text.String()
	choice.ReasoningContent = thinking.String()
	if len(choice.ToolCalls) > 0 {
		choice.FuncCall = choice.ToolCalls[0].FunctionCall
	}
	// input_tokens are only those after the last cache breakpoint: the
	// cache's tokens are counted beside them. The stream's counts are
	// totals, message_delta's replacing message_start's (Accumulate), so
	// nothing is counted twice.
	u := msg.Usage
	info := Info{Turn: turn, NoUsage: !counted, Usage: Usage{
		Input:      int(u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens),
		Output:     int(u.OutputTokens),
		CacheWrite: int(u.CacheCreationInputTokens), CacheRead: int(u.CacheReadInputTokens),
		Reasoning: int(u.OutputTokensDetails.ThinkingTokens),
	}}
	if msg.StopReason == anthropic.StopReasonRefusal {
		info.Refused = true
		info.Refusal = strings.TrimSpace(choice.Content)
		if info.Refusal == "" {
			info.Refusal = strings.TrimSpace(msg.StopDetails.Explanation)
		}
	}
	SetInfo(choice, info)
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{choice}}
}
