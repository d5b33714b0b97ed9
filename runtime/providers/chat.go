package providers

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/shared"
	"github.com/tmc/langchaingo/llms"

	"github.com/agentspec/agentspec/spec"
)

// chatModel is the Chat Completions API on openai-go, for OpenAI and every
// OpenAI-compatible server. It assembles streamed tool calls by their
// index, reads reasoning (reasoning_content, reasoning, content given as a
// list of text and thinking parts), refusals, truncation, usage with cached
// and reasoning tokens, and error chunks inside a stream.
type chatModel struct {
	common
	client openai.Client
}

func newChat(c common, organization string) *chatModel {
	return &chatModel{common: c, client: openai.NewClient(openaiOptions(c, organization)...)}
}

// openaiOptions point an openai-go client at the endpoint, through the doer.
func openaiOptions(c common, organization string) []option.RequestOption {
	opts := []option.RequestOption{
		option.WithHTTPClient(c.doer),
		option.WithMaxRetries(0), // the doer retries
		// openai-go reads OPENAI_ORG_ID and OPENAI_PROJECT_ID from the
		// process; they are OpenAI's, not a compatible provider's.
		option.WithHeaderDel("OpenAI-Organization"),
		option.WithHeaderDel("OpenAI-Project"),
	}
	switch {
	case c.ep.provider == "azure" && c.ep.apiVersion != "":
		// The deployment API: the model is the deployment, the version a
		// query parameter, the key an api-key header.
		base := strings.TrimRight(c.ep.baseURL, "/") + "/openai/deployments/" + url.PathEscape(c.model) + "/"
		opts = append(opts, option.WithBaseURL(base), option.WithQuery("api-version", c.ep.apiVersion),
			option.WithHeader("api-key", c.ep.token), option.WithAPIKey(c.ep.token))
	case c.ep.provider == "azure" || c.ep.provider == "azure-responses":
		opts = append(opts, option.WithBaseURL(strings.TrimRight(c.ep.baseURL, "/")+"/"),
			option.WithHeader("api-key", c.ep.token), option.WithAPIKey(c.ep.token))
	default:
		opts = append(opts, option.WithBaseURL(strings.TrimRight(c.ep.baseURL, "/")+"/"), option.WithAPIKey(c.ep.token))
	}
	if organization != "" {
		opts = append(opts, option.WithOrganization(organization))
	}
	for k, v := range c.ep.headers {
		opts = append(opts, option.WithHeader(k, v))
	}
	return opts
}

// openaiExtra sets the spec's extra_body on an openai-go request.
func (c common) openaiExtra() []option.RequestOption {
	return extraBody(c.settings.ExtraBody, option.WithJSONSet)
}

func (m *chatModel) send(ctx context.Context, req openai.ChatCompletionNewParams) (*llms.ContentResponse, error) {
	v, err := m.client.Chat.Completions.New(ctx, req, m.openaiExtra()...)
	return read(v, err, m.response)
}

func (m *chatModel) request(messages []llms.MessageContent, opts llms.CallOptions) (openai.ChatCompletionNewParams, error) {
	s := m.settings
	p := openai.ChatCompletionNewParams{Model: m.model}
	temperature := DefaultTemperature
	if s.Temperature != nil {
		temperature = *s.Temperature
	}
	if opts.Temperature != 0 {
		temperature = opts.Temperature // the caller's wins
	}
	// OpenAI's reasoning models refuse a temperature while they reason, and
	// take 1 when they do not: only a spec's or a caller's own is sent.
	if s.Temperature != nil || opts.Temperature != 0 || !openaiReasons(m.provider, m.model) {
		p.Temperature = param.NewOpt(temperature)
	}
	// Without a bound from the spec the server's own default applies:
	// reasoning models need room the default here would not give.
	if n := max(s.MaxTokens, opts.MaxTokens); n > 0 {
		if opts.MaxTokens > 0 {
			n = opts.MaxTokens
		}
		if m.ep.legacyMaxTokens {
			p.MaxTokens = param.NewOpt(int64(n))
		} else {
			p.MaxCompletionTokens = param.NewOpt(int64(n))
		}
	}
	if s.TopP != nil {
		p.TopP = param.NewOpt(*s.TopP)
	}
	if s.Seed != nil {
		p.Seed = param.NewOpt(int64(*s.Seed))
	}
	if s.PresencePenalty != nil {
		p.PresencePenalty = param.NewOpt(*s.PresencePenalty)
	}
	if s.FrequencyPenalty != nil {
		p.FrequencyPenalty = param.NewOpt(*s.FrequencyPenalty)
	}
	if len(s.LogitBias) > 0 {
		p.LogitBias = map[string]int64{}
		for k, v := range s.LogitBias {
			p.LogitBias[k] = int64(v)
		}
	}
	if len(s.StopSequences) > 0 {
		p.Stop = openai.ChatCompletionNewParamsStopUnion{OfStringArray: s.StopSequences}
	}
	if opts.StreamingFunc != nil {
		p.StreamOptions.IncludeUsage = param.NewOpt(true)
	}
	extra := m.extraFields()
	if opts.StreamingFunc != nil {
		if v, ok := s.Provider["openai_continuous_usage_stats"]; ok {
			extra["stream_options"] = map[string]any{"include_usage": true, "continuous_usage_stats": v}
		}
	}

	msgs, err := m.messages(messages)
	if err != nil {
		return p, err
	}
	p.Messages = msgs
	for _, t := range opts.Tools {
		if t.Function == nil {
			continue
		}
		description, schema, err := functionParts(t.Function)
		if err != nil {
			return p, err
		}
		def := shared.FunctionDefinitionParam{Name: t.Function.Name, Description: description, Parameters: schema}
		if t.Function.Strict {
			def.Strict = param.NewOpt(true)
		}
		p.Tools = append(p.Tools, openai.ChatCompletionFunctionTool(def))
	}
	if len(p.Tools) > 0 {
		// OpenAI rejects both fields in a request without tools.
		if choice, ok := chatToolChoice(s.ToolChoice, opts.ToolChoice); ok {
			p.ToolChoice = choice
		}
		if s.ParallelToolCalls != nil {
			p.ParallelToolCalls = param.NewOpt(*s.ParallelToolCalls)
		}
	}
	p.SetExtraFields(extra)
	return p, nil
}

// extraFields are the body members of the provider's settings that
// ChatCompletionNewParams has no field for, or that differ per provider.
func (m *chatModel) extraFields() map[string]any {
	s, pr := m.settings, m.provider
	extra := map[string]any{}
	if s.ServiceTier != "" {
		extra["service_tier"] = s.ServiceTier
	}
	if t := s.Thinking; t != nil && (t.Enabled || !alwaysReasons(pr, m.model)) {
		switch pr.thinking {
		case thinkingEffort:
			effort := reasoningEffort(t)
			if pr.name == "mistral" && effort != "none" {
				effort = "high" // Mistral's adjustable models know high and none
			}
			extra["reasoning_effort"] = effort
		case thinkingOpenRouter:
			if t.Enabled {
				extra["reasoning"] = map[string]any{"effort": reasoningEffort(t), "enabled": true}
			} else {
				extra["reasoning"] = map[string]any{"effort": "none"}
			}
		case thinkingDeepSeek:
			extra["thinking"] = map[string]any{"type": map[bool]string{true: "enabled", false: "disabled"}[t.Enabled]}
		case thinkingGroq:
			if t.Enabled {
				extra["reasoning_format"] = "parsed"
				if t.Effort != "" {
					extra["reasoning_effort"] = t.Effort
				}
			} else {
				extra["reasoning_effort"] = "none"
			}
		case thinkingCerebras:
			if !t.Enabled {
				extra["disable_reasoning"] = true
			}
		}
	}
	if pr.prefix == "google_" {
		// Gemini's own fields go in its compatibility layer's extra_body.
		google := map[string]any{}
		for _, k := range []string{"thinking_config", "cached_content"} {
			if v, ok := s.Provider["google_"+k]; ok {
				google[k] = plain(v)
			}
		}
		if len(google) > 0 {
			extra["extra_body"] = map[string]any{"google": google}
		}
		if _, ok := google["thinking_config"]; ok {
			delete(extra, "reasoning_effort") // the API takes one of the two
		}
	}
	// Provider keys win over the unified ones.
	for _, k := range bodyKeys[pr.prefix] {
		if v, ok := s.Provider[pr.prefix+k]; ok {
			extra[k] = plain(v)
		}
	}
	return extra
}

// toolChoiceOf is the call's tool choice (the loop's "none" after the
// round limit) or the spec's: a mode, or the tools the model must call one
// of. ok is false when neither sets one.
func toolChoiceOf(tc *spec.ToolChoice, call any) (mode string, names []string, ok bool) {
	if c, isString := call.(string); isString && c != "" {
		return c, nil, true
	}
	if tc == nil {
		return "", nil, false
	}
	return tc.Mode, tc.Tools, true
}

// chatToolChoice is toolChoiceOf as Chat Completions takes it.
func chatToolChoice(tc *spec.ToolChoice, call any) (openai.ChatCompletionToolChoiceOptionUnionParam, bool) {
	var choice openai.ChatCompletionToolChoiceOptionUnionParam
	mode, names, ok := toolChoiceOf(tc, call)
	switch {
	case len(names) == 1:
		choice.OfFunctionToolChoice = &openai.ChatCompletionNamedToolChoiceParam{
			Function: openai.ChatCompletionNamedToolChoiceFunctionParam{Name: names[0]}}
	case len(names) > 1:
		choice.OfAllowedTools = &openai.ChatCompletionAllowedToolChoiceParam{AllowedTools: openai.ChatCompletionAllowedToolsParam{
			Mode: openai.ChatCompletionAllowedToolsModeRequired, Tools: functionRefs(names)}}
	default:
		choice.OfAuto = param.NewOpt(mode)
	}
	return choice, ok
}

// functionRefs name functions in an allowed_tools list of Chat
// Completions, whose type gives its items as JSON objects.
func functionRefs(names []string) []map[string]any {
	refs := make([]map[string]any, len(names))
	for i, name := range names {
		refs[i] = map[string]any{"type": "function", "function": map[string]any{"name": name}}
	}
	return refs
}

// functionParts are the description (none when empty) and the parameter
// schema (nil when none) of a function tool, as openai-go's params take them.
func functionParts(f *llms.FunctionDefinition) (param.Opt[string], map[string]any, error) {
	var description param.Opt[string]
	if f.Description != "" {
		description = param.NewOpt(f.Description)
	}
	if f.Parameters == nil {
		return description, nil, nil
	}
	schema, err := schemaObject(f.Parameters)
	if err != nil {
		return description, nil, fmt.Errorf("the parameters of tool %s: %w", f.Name, err)
	}
	return description, schema, nil
}

// schemaObject is a tool's parameter schema as the JSON object the SDKs'
// typed params hold, numbers kept as written.
func schemaObject(schema any) (map[string]any, error) {
	if m, ok := schema.(map[string]any); ok {
		return m, nil
	}
	raw, err := json.Marshal(schema)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	return m, nil
}

// hasReasoning tells whether an assistant turn of messages kept reasoning.
func hasReasoning(messages []llms.MessageContent) bool {
	for _, msg := range messages {
		if msg.Role != llms.ChatMessageTypeAI {
			continue
		}
		for _, part := range msg.Parts {
			var b chatBlock
			if decodeBlock(part, &b) && b.Type == blockReasoning && b.Text != "" {
				return true
			}
		}
	}
	return false
}

// messages converts the conversation: one assistant message holds its text
// and every tool call; reasoning kept from a response is sent back where the
// provider wants it (DeepSeek, after tool calls).
func (m *chatModel) messages(messages []llms.MessageContent) ([]openai.ChatCompletionMessageParamUnion, error) {
	var out []openai.ChatCompletionMessageParamUnion
	// Once a conversation has reasoning, DeepSeek's thinking mode wants a
	// reasoning_content on every assistant turn with tool calls, even one
	// whose round gave none (an empty one then): without it the request is
	// refused, as recorded conversations show after a round with no
	// reasoning.
	thinking := m.provider.sendsReasoning && hasReasoning(messages)
	for i, msg := range messages {
		var text []string
		var calls []openai.ChatCompletionMessageToolCallUnionParam
		var reasoning strings.Builder
		var images []openai.ChatCompletionContentPartUnionParam
		extras := map[string]json.RawMessage{}
		for _, part := range msg.Parts {
			var b chatBlock
			if decodeBlock(part, &b) && b.Type == blockCallExtra {
				extras[b.ID] = b.Extra
			}
		}
		for _, part := range msg.Parts {
			switch p := part.(type) {
			case llms.TextContent:
				text = append(text, p.Text)
			case llms.ToolCall:
				if p.FunctionCall == nil {
					continue
				}
				call := openai.ChatCompletionMessageFunctionToolCallParam{ID: p.ID,
					Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: p.FunctionCall.Name, Arguments: p.FunctionCall.Arguments}}
				if extra, ok := extras[p.ID]; ok {
					call.SetExtraFields(map[string]any{"extra_content": extra})
				}
				calls = append(calls, openai.ChatCompletionMessageToolCallUnionParam{OfFunction: &call})
			case llms.ToolCallResponse:
				out = append(out, openai.ToolMessage(p.Content, p.ToolCallID))
			case llms.ImageURLContent:
				images = append(images, openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: p.URL}))
			case llms.BinaryContent:
				switch {
				case isToolError(p):
				case isBlock(p):
					var b chatBlock
					if decodeBlock(p, &b) && b.Type == blockReasoning {
						reasoning.WriteString(b.Text)
					}
				case strings.HasPrefix(p.MIMEType, "image/"):
					images = append(images, openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: p.String()}))
				default:
					return nil, fmt.Errorf("message %d: Chat Completions takes no %s part", i, p.MIMEType)
				}
			default:
				return nil, fmt.Errorf("message %d: Chat Completions takes no %T part", i, part)
			}
		}
		joined := strings.Join(text, "")
		switch msg.Role {
		case llms.ChatMessageTypeSystem:
			out = append(out, openai.SystemMessage(joined))
		case llms.ChatMessageTypeHuman, llms.ChatMessageTypeGeneric:
			if len(images) > 0 {
				var parts []openai.ChatCompletionContentPartUnionParam
				if joined != "" {
					parts = append(parts, openai.TextContentPart(joined))
				}
				out = append(out, openai.UserMessage(append(parts, images...)))
			} else {
				out = append(out, openai.UserMessage(joined))
			}
		case llms.ChatMessageTypeAI:
			v := openai.ChatCompletionAssistantMessageParam{ToolCalls: calls}
			v.Content.OfString = param.NewOpt(joined)
			if len(calls) > 0 && m.provider.sendsReasoning && (reasoning.Len() > 0 || thinking) {
				v.SetExtraFields(map[string]any{"reasoning_content": reasoning.String()})
			}
			out = append(out, openai.ChatCompletionMessageParamUnion{OfAssistant: &v})
		case llms.ChatMessageTypeTool:
			// Added part by part above.
		default:
			return nil, fmt.Errorf("message %d: role %q has no place in Chat Completions", i, msg.Role)
		}
	}
	return out, nil
}
