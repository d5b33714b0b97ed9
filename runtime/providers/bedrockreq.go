package providers

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/document"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	smithydocument "github.com/aws/smithy-go/document"
	"github.com/tmc/langchaingo/llms"
)

// Building Converse requests from the conversation and the settings.

type bedrockMessageOutput = types.ConverseOutputMemberMessage

// bedrockInput is what Converse and ConverseStream requests share.
type bedrockInput struct {
	modelID       string
	system        []types.SystemContentBlock
	messages      []types.Message
	inference     *types.InferenceConfiguration
	tools         *types.ToolConfiguration
	additional    map[string]any
	responsePaths []string
	guardrail     map[string]any
	performance   *types.PerformanceConfiguration
	metadata      map[string]string
	variables     map[string]types.PromptVariableValues
	tier          *types.ServiceTier
	output        *types.OutputConfig
}

func (in bedrockInput) converse() *bedrockruntime.ConverseInput {
	out := &bedrockruntime.ConverseInput{
		ModelId: aws.String(in.modelID), System: in.system, Messages: in.messages,
		InferenceConfig: in.inference, ToolConfig: in.tools, AdditionalModelResponseFieldPaths: in.responsePaths,
		PerformanceConfig: in.performance, RequestMetadata: in.metadata, PromptVariables: in.variables,
		ServiceTier: in.tier, OutputConfig: in.output,
	}
	if len(in.additional) > 0 {
		out.AdditionalModelRequestFields = document.NewLazyDocument(in.additional)
	}
	if in.guardrail != nil {
		out.GuardrailConfig = &types.GuardrailConfiguration{
			GuardrailIdentifier: optString(in.guardrail["guardrailIdentifier"]),
			GuardrailVersion:    optString(in.guardrail["guardrailVersion"]),
			Trace:               types.GuardrailTrace(str(in.guardrail["trace"])),
		}
	}
	return out
}

// converseStream is converse's request for ConverseStream. The two SDK
// types have the same fields but the guardrail's, so the fields are copied
// by name: one list to keep, and a field added to both reaches both.
func (in bedrockInput) converseStream() *bedrockruntime.ConverseStreamInput {
	c := in.converse()
	out := &bedrockruntime.ConverseStreamInput{}
	src, dst := reflect.ValueOf(c).Elem(), reflect.ValueOf(out).Elem()
	for i := range dst.NumField() {
		f := dst.Type().Field(i)
		if v := src.FieldByName(f.Name); f.IsExported() && v.IsValid() && v.Type() == f.Type {
			dst.Field(i).Set(v)
		}
	}
	if g := c.GuardrailConfig; g != nil {
		out.GuardrailConfig = &types.GuardrailStreamConfiguration{
			GuardrailIdentifier: g.GuardrailIdentifier, GuardrailVersion: g.GuardrailVersion, Trace: g.Trace,
			StreamProcessingMode: types.GuardrailStreamProcessingMode(str(in.guardrail["streamProcessingMode"])),
		}
	}
	return out
}

// input builds the request.
func (m *bedrockModel) input(messages []llms.MessageContent, opts llms.CallOptions) (bedrockInput, error) {
	s := m.settings
	in := bedrockInput{modelID: m.model, additional: map[string]any{}}
	if v, ok := s.Provider["bedrock_inference_profile"].(string); ok && v != "" {
		in.modelID = v
	}
	plan := bedrockThinking(m.model, s)
	temperature := DefaultTemperature
	if s.Temperature != nil {
		temperature = *s.Temperature
	}
	if opts.Temperature != 0 {
		temperature = opts.Temperature // the caller's wins
	}
	in.inference = &types.InferenceConfiguration{
		MaxTokens:     aws.Int32(int32(callMaxTokens(s, opts, plan.budget))),
		StopSequences: s.StopSequences,
	}
	if plan.raw == nil && !defaultBesideTopP(s, opts) && !isClaudeLatest(m.model) {
		// With Claude's thinking on, the API takes no temperature but 1;
		// the latest Claude models take none at all.
		in.inference.Temperature = aws.Float32(float32(temperature))
	}
	if s.TopP != nil {
		in.inference.TopP = aws.Float32(float32(*s.TopP))
	}
	if s.TopK != nil {
		if bedrockNova(m.model) {
			in.additional["inferenceConfig"] = map[string]any{"topK": *s.TopK}
		} else {
			in.additional["top_k"] = *s.TopK
		}
	}
	if plan.raw != nil {
		in.additional["thinking"] = plan.raw
	}
	if plan.effort != "" {
		in.output = &types.OutputConfig{Effort: aws.String(plan.effort)}
	}
	if plan.reasoningEffort != "" {
		in.additional["reasoning_effort"] = plan.reasoningEffort
	}
	if v, ok := s.Provider["bedrock_additional_model_requests_fields"].(map[string]any); ok {
		maps.Copy(in.additional, plain(v).(map[string]any)) // the spec's own fields win
	}
	if v, ok := stringList(s.Provider["bedrock_additional_model_response_fields_paths"]); ok {
		in.responsePaths = v
	}
	if v, ok := s.Provider["bedrock_guardrail_config"].(map[string]any); ok {
		in.guardrail = v
	}
	if v, ok := s.Provider["bedrock_performance_configuration"].(map[string]any); ok {
		in.performance = &types.PerformanceConfiguration{Latency: types.PerformanceConfigLatency(str(v["latency"]))}
	}
	if v, ok := s.Provider["bedrock_request_metadata"].(map[string]any); ok {
		in.metadata = map[string]string{}
		for k, e := range v {
			in.metadata[k] = fmt.Sprint(e)
		}
	}
	if v, ok := s.Provider["bedrock_prompt_variables"].(map[string]any); ok {
		in.variables = map[string]types.PromptVariableValues{}
		for k, e := range v {
			text := str(e)
			if obj, ok := e.(map[string]any); ok {
				text = str(obj["text"])
			}
			in.variables[k] = &types.PromptVariableValuesMemberText{Value: text}
		}
	}
	if tier := bedrockTier(s.ServiceTier, s.Provider["bedrock_service_tier"]); tier != "" {
		in.tier = &types.ServiceTier{Type: types.ServiceTierType(tier)}
	}

	system, turns, err := bedrockMessages(messages, bedrockResultStatus(m.model), func(b bedrockBlock) bool { return bedrockReasoningBack(m.model, b) })
	if err != nil {
		return in, err
	}
	if cp, ok := bedrockCachePoint(s.Provider["bedrock_cache_instructions"]); ok && len(system) > 0 {
		system = append(system, &types.SystemContentBlockMemberCachePoint{Value: cp})
	}
	if cp, ok := bedrockCachePoint(s.Provider["bedrock_cache_messages"]); ok && len(turns) > 0 {
		last := &turns[len(turns)-1]
		last.Content = append(last.Content, &types.ContentBlockMemberCachePoint{Value: cp})
	}
	in.system, in.messages = system, turns
	in.tools = m.toolConfig(opts)
	if len(in.additional) == 0 {
		in.additional = nil
	}
	return in, nil
}

// toolConfig declares the tools, with the call's or the spec's choice.
// Converse has no "none": the loop's "none" after the round limit keeps the
// tools (a conversation with tool blocks needs them declared) and lets the
// model choose.
func (m *bedrockModel) toolConfig(opts llms.CallOptions) *types.ToolConfiguration {
	var tools []types.Tool
	for _, t := range opts.Tools {
		if t.Function == nil {
			continue
		}
		schema := t.Function.Parameters
		if schema == nil {
			schema = map[string]any{"type": "object", "properties": map[string]any{}}
		}
		spec := types.ToolSpecification{
			Name:        aws.String(t.Function.Name),
			InputSchema: &types.ToolInputSchemaMemberJson{Value: document.NewLazyDocument(schema)},
		}
		if t.Function.Description != "" {
			spec.Description = aws.String(t.Function.Description)
		}
		tools = append(tools, &types.ToolMemberToolSpec{Value: spec})
	}
	if len(tools) == 0 {
		return nil
	}
	if cp, ok := bedrockCachePoint(m.settings.Provider["bedrock_cache_tool_definitions"]); ok {
		tools = append(tools, &types.ToolMemberCachePoint{Value: cp})
	}
	cfg := &types.ToolConfiguration{Tools: tools}
	mode, names := "", []string(nil)
	if tc := m.settings.ToolChoice; tc != nil {
		mode, names = tc.Mode, tc.Tools
	}
	if c, ok := opts.ToolChoice.(string); ok && c != "" {
		mode, names = c, nil
	}
	switch {
	case mode == "none":
	case len(names) == 1:
		cfg.ToolChoice = &types.ToolChoiceMemberTool{Value: types.SpecificToolChoice{Name: aws.String(names[0])}}
	case mode == "required":
		cfg.ToolChoice = &types.ToolChoiceMemberAny{}
	case mode == "auto":
		cfg.ToolChoice = &types.ToolChoiceMemberAuto{}
	}
	return cfg
}

// bedrockCachePoint reads a bedrock_cache_* setting: true, or a TTL.
func bedrockCachePoint(v any) (types.CachePointBlock, bool) {
	cp := types.CachePointBlock{Type: types.CachePointTypeDefault}
	switch v := v.(type) {
	case bool:
		return cp, v
	case string:
		cp.Ttl = types.CacheTTL(v)
		return cp, true
	}
	return cp, false
}

// bedrockTier is the service tier sent: bedrock_service_tier ({type: ...}
// or the type alone) wins over the unified one, whose "auto" sends none.
func bedrockTier(unified string, own any) string {
	switch v := own.(type) {
	case string:
		return v
	case map[string]any:
		return str(v["type"])
	}
	if unified == "auto" {
		return ""
	}
	return unified
}

// bedrockMessages converts the conversation. Converse wants user and
// assistant turns alternating, so consecutive messages of one role are
// merged; a turn's tool results come first in it, with their status when
// withStatus (bedrockResultStatus); a reasoning block goes back where
// reasoning says so (bedrockReasoningBack).
func bedrockMessages(messages []llms.MessageContent, withStatus bool, reasoning func(bedrockBlock) bool) ([]types.SystemContentBlock, []types.Message, error) {
	var system []types.SystemContentBlock
	var turns []types.Message
	tb := &turnBuilder[types.ContentBlock]{emit: func(side turn, blocks []types.ContentBlock) {
		role := types.ConversationRoleUser
		if side == turnAssistant {
			role = types.ConversationRoleAssistant
		}
		if n := len(turns); n > 0 && turns[n-1].Role == role {
			// The turn between them held nothing Converse takes (blank
			// text, reasoning that does not go back) and was left out, as
			// pydantic-ai leaves it: Converse refuses two turns of one
			// role in a row, so they go as one, tool results first.
			turns[n-1].Content = bedrockResultsFirst(append(turns[n-1].Content, blocks...))
			return
		}
		turns = append(turns, types.Message{Role: role, Content: blocks})
	}}
	addSystem := func(t string) { system = append(system, &types.SystemContentBlockMemberText{Value: t}) }
	err := eachPart(messages, "Converse", addSystem, tb.start, func(i int, part llms.ContentPart, failed bool) error {
		switch p := part.(type) {
		case llms.TextContent:
			if strings.TrimSpace(p.Text) != "" { // Converse refuses blank text blocks
				tb.add(&types.ContentBlockMemberText{Value: p.Text})
			}
		case llms.ToolCall:
			if p.FunctionCall == nil {
				return nil
			}
			input, ok := documentObject(p.FunctionCall.Arguments)
			if !ok {
				input = map[string]any{} // the API takes an object only
			}
			tb.add(&types.ContentBlockMemberToolUse{Value: types.ToolUseBlock{
				ToolUseId: aws.String(p.ID), Name: aws.String(p.FunctionCall.Name), Input: document.NewLazyDocument(input),
			}})
		case llms.ToolCallResponse:
			var status types.ToolResultStatus
			switch {
			case !withStatus:
			case failed:
				status = types.ToolResultStatusError
			default:
				status = types.ToolResultStatusSuccess
			}
			content := p.Content
			if strings.TrimSpace(content) == "" {
				content = "(empty)" // Converse refuses a blank text block
			}
			result := &types.ContentBlockMemberToolResult{Value: types.ToolResultBlock{
				ToolUseId: aws.String(p.ToolCallID), Status: status,
				Content: []types.ToolResultContentBlock{&types.ToolResultContentBlockMemberText{Value: content}},
			}}
			tb.addResult(result)
		case llms.BinaryContent:
			switch {
			case isToolError(p):
			case isBlock(p):
				var b bedrockBlock
				if !decodeBlock(p, &b) || b.Type != blockBedrockReasoning {
					return nil // another provider's block
				}
				if !reasoning(b) {
					return nil
				}
				if len(b.Redacted) > 0 {
					tb.add(&types.ContentBlockMemberReasoningContent{Value: &types.ReasoningContentBlockMemberRedactedContent{Value: b.Redacted}})
					return nil
				}
				rt := types.ReasoningTextBlock{Text: aws.String(b.Text)}
				if b.Signature != "" {
					rt.Signature = aws.String(b.Signature)
				}
				tb.add(&types.ContentBlockMemberReasoningContent{Value: &types.ReasoningContentBlockMemberReasoningText{Value: rt}})
			case strings.HasPrefix(p.MIMEType, "image/"):
				format := strings.TrimPrefix(p.MIMEType, "image/")
				if format == "jpg" {
					format = "jpeg"
				}
				tb.add(&types.ContentBlockMemberImage{Value: types.ImageBlock{
					Format: types.ImageFormat(format), Source: &types.ImageSourceMemberBytes{Value: p.Data},
				}})
			default:
				return fmt.Errorf("message %d: the Converse API takes no %s part", i, p.MIMEType)
			}
		default:
			return fmt.Errorf("message %d: the Converse API takes no %T part", i, part)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	tb.flush()
	return system, turns, nil
}

// bedrockResultsFirst puts a turn's tool results before its other blocks,
// each kind in its order, as Claude's models require of a user turn.
func bedrockResultsFirst(blocks []types.ContentBlock) []types.ContentBlock {
	isResult := func(b types.ContentBlock) bool {
		_, ok := b.(*types.ContentBlockMemberToolResult)
		return ok
	}
	out := make([]types.ContentBlock, 0, len(blocks))
	for _, b := range blocks {
		if isResult(b) {
			out = append(out, b)
		}
	}
	for _, b := range blocks {
		if !isResult(b) {
			out = append(out, b)
		}
	}
	return out
}

func optString(v any) *string {
	if s, ok := v.(string); ok && s != "" {
		return aws.String(s)
	}
	return nil
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// documentObject decodes a call's JSON arguments into a document's value,
// its numbers as smithy's document.Number, which the document encoder
// writes as given: decoded into float64, an integer past 2^53 would go
// back to the model rounded. It is false when args is not one JSON object.
func documentObject(args string) (map[string]any, bool) {
	if !json.Valid([]byte(args)) {
		return nil, false
	}
	dec := json.NewDecoder(strings.NewReader(args))
	dec.UseNumber()
	var obj map[string]any
	if dec.Decode(&obj) != nil || obj == nil {
		return nil, false
	}
	return documentNumbers(obj).(map[string]any), true
}

// documentNumbers turns the json.Numbers of a decoded value into
// document.Numbers, in place.
func documentNumbers(v any) any {
	switch v := v.(type) {
	case json.Number:
		return smithydocument.Number(v)
	case map[string]any:
		for k, x := range v {
			v[k] = documentNumbers(x)
		}
	case []any:
		for i, x := range v {
			v[i] = documentNumbers(x)
		}
	}
	return v
}
