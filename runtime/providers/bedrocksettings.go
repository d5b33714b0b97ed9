package providers

import (
	"fmt"
	"strings"

	"github.com/agentspec/agentspec/spec"
)

// What the Converse API takes of the settings, and what it refuses.

// bedrockKeys are the bedrock_ settings the Converse model sends.
var bedrockKeys = []string{
	"bedrock_guardrail_config", "bedrock_performance_configuration", "bedrock_request_metadata",
	"bedrock_additional_model_response_fields_paths", "bedrock_prompt_variables",
	"bedrock_additional_model_requests_fields", "bedrock_cache_tool_definitions", "bedrock_cache_instructions",
	"bedrock_cache_messages", "bedrock_service_tier", "bedrock_inference_profile",
}

// bedrockClaude reports whether a Bedrock model id (or inference profile
// id, us.anthropic..., or ARN) names a Claude model.
func bedrockClaude(model string) bool { return strings.Contains(model, "anthropic.claude") }

// bedrockNova reports whether a Bedrock model id names an Amazon Nova model.
func bedrockNova(model string) bool { return strings.Contains(model, "amazon.nova") }

// bedrockAnyTool reports whether a Bedrock model takes toolChoice any (a
// tool call forced, the model choosing which): Claude, Nova and Mistral
// Large models do, as the Converse API's ToolChoice documents, and any
// other refuses the request ("This model doesn't support the
// toolConfig.toolChoice.any field").
func bedrockAnyTool(model string) bool {
	return bedrockClaude(model) || bedrockNova(model) || strings.Contains(model, "mistral.mistral-large")
}

// bedrockNoToolUse are the model families AWS's table of the Converse
// API's supported models and features gives no tool use
// (https://docs.aws.amazon.com/bedrock/latest/userguide/conversation-inference-supported-models-features.html),
// each with what names its models in a model id, an inference profile id
// (us.meta...) or an ARN. A request with tools to one of them is refused.
var bedrockNoToolUse = []struct {
	family string
	ids    []string
}{
	{"AI21 Jamba-Instruct", []string{"ai21.jamba-instruct"}},
	{"AI21 Labs Jurassic-2", []string{"ai21.j2-"}},
	{"Amazon Titan", []string{"amazon.titan-"}},
	{"Anthropic Claude 2.x and earlier", []string{"anthropic.claude-v", "anthropic.claude-instant"}},
	{"Cohere Command", []string{"cohere.command-text"}},
	{"Cohere Command Light", []string{"cohere.command-light-text"}},
	{"Meta Llama 2 and Llama 3", []string{"meta.llama2-", "meta.llama3-8b-", "meta.llama3-70b-"}},
	{"Meta Llama 3.2 1B and 3B", []string{"meta.llama3-2-1b-", "meta.llama3-2-3b-"}},
	{"Mistral AI Instruct", []string{"mistral.mistral-7b-instruct", "mistral.mixtral-8x7b-instruct"}},
}

// ToolUseError is a model that cannot be given tools: the Converse API
// has no tool use for its family.
type ToolUseError struct {
	Ref    string // the model reference, bedrock:MODEL
	Family string // the family, as AWS's table names it
}

func (e *ToolUseError) Error() string { return e.Ref + " cannot call tools: " + e.Reason() }

// Reason is why the model cannot call tools, and what to do.
func (e *ToolUseError) Reason() string {
	return fmt.Sprintf("the Converse API has no tool use for %s models; "+
		"give the spec a model that has it (Claude 3 or later, Nova, Llama 3.1, Mistral Large, Command R, ...) "+
		"or leave out the capabilities that offer tools", e.Family)
}

// CheckTools reports, as a *ToolUseError, a model of ref that cannot be
// given tools, so that a spec whose capabilities offer some is refused
// before any request rather than by the provider at the first: a bedrock
// model of a family the Converse API has no tool use for. Any other
// reference passes.
func CheckTools(ref string) error {
	name, model, err := parseRef(ref)
	if err != nil {
		return nil
	}
	if p, ok := lookup(name); !ok || p.api != apiBedrock {
		return nil
	}
	for _, f := range bedrockNoToolUse {
		for _, id := range f.ids {
			if strings.Contains(model, id) {
				return &ToolUseError{Ref: strings.TrimSpace(ref), Family: f.family}
			}
		}
	}
	return nil
}

// bedrockResultStatus reports whether a Bedrock model takes a toolResult's
// status: Claude and Nova models do, and any other refuses the request
// ("This model doesn't support the toolResult.status field"), so its
// failed results say so by their text alone.
func bedrockResultStatus(model string) bool { return bedrockClaude(model) || bedrockNova(model) }

// bedrockReasoningBack reports whether a reasoning block of an earlier turn
// goes back to model. Claude takes its reasoning back, signature and all,
// and refuses a tool result after a thinking turn without it. The other
// families have no reasoningContent in their input: gpt-oss, Kimi and GLM,
// among others, refuse a request whose history holds one (a
// ValidationException), so theirs stays out, as pydantic-ai sends it back to
// Claude and DeepSeek R1 only. A signed or redacted block, Claude's kind,
// goes back to DeepSeek R1, as pydantic-ai's does, and to a model whose id
// names no family (bedrockOpaque), which may be a Claude model that needs it.
func bedrockReasoningBack(model string, b bedrockBlock) bool {
	switch {
	case bedrockClaude(model):
		return true
	case strings.Contains(model, "deepseek.r1") || bedrockOpaque(model):
		return b.Signature != "" || len(b.Redacted) > 0
	}
	return false
}

// bedrockOpaque reports whether a Bedrock model id names no model family:
// an ARN whose resource id holds no provider.model segment, as an
// application inference profile's (application-inference-profile/a1b2c3d4e5f6)
// or a provisioned or imported model's does. A system-defined inference
// profile's ARN (inference-profile/us.anthropic.claude-...) or a
// foundation model's holds the model id, and is judged by it.
func bedrockOpaque(model string) bool {
	if !strings.HasPrefix(model, "arn:") {
		return false
	}
	_, resource, _ := strings.Cut(model, "/")
	return !strings.Contains(resource, ".")
}

// bedrockOpenAI reports whether a Bedrock model id names an OpenAI model.
func bedrockOpenAI(model string) bool { return strings.Contains(model, "openai.") }

// bedrockPlan is how thinking reaches a Bedrock model.
type bedrockPlan struct {
	raw             map[string]any // Claude's thinking object, in additionalModelRequestFields
	effort          string         // outputConfig.effort (Claude 4.6+)
	budget          int            // the budget added to max_tokens
	reasoningEffort string         // OpenAI models' reasoning_effort
}

// bedrockThinking maps the unified thinking setting as for the native
// providers: Claude adaptive (4.6+) or with a budget, OpenAI models'
// reasoning_effort. Others are refused by checkBedrock.
func bedrockThinking(model string, s spec.ModelSettings) bedrockPlan {
	var plan bedrockPlan
	t := s.Thinking
	if t == nil {
		return plan
	}
	switch {
	case bedrockClaude(model) && t.Enabled:
		plan.budget, plan.raw, plan.effort = claudeThinking(model, t)
	case bedrockOpenAI(model):
		if t.Enabled {
			plan.reasoningEffort = reasoningEffort(t)
		}
	}
	return plan
}

// checkBedrock refuses what the Converse API cannot carry.
func checkBedrock(p provider, model string, s spec.ModelSettings) []error {
	var errs []error
	add := func(key, reason string) { errs = append(errs, unsupported(p, key, reason)) }
	opaque := bedrockOpaque(model)
	// family is add for what depends on the model's family, which a model
	// whose ARN names none is told how to name.
	family := func(key, reason string) {
		if opaque {
			reason += "; or give the model's id as the model and this ARN as bedrock_inference_profile"
		}
		add(key, reason)
	}
	refuseFields(s, add, "the Converse API has no such field; a model that takes it can get it through bedrock_additional_model_requests_fields",
		"seed", "presence_penalty", "frequency_penalty", "logit_bias", "parallel_tool_calls")
	if len(s.ExtraBody) > 0 {
		add("extra_body", "the Converse API has a fixed body; send model fields through bedrock_additional_model_requests_fields")
	}
	refuseClaudeSampling(model, s, add)
	refuseClaudeForcing(model, s, add)
	if s.TopK != nil && !bedrockClaude(model) && !bedrockNova(model) {
		family("top_k", "the Converse API sends top_k to Claude and Nova models only; another model can get it through bedrock_additional_model_requests_fields")
	}
	if tc := s.ToolChoice; tc != nil {
		switch {
		case len(tc.Tools) > 1:
			add("tool_choice", "the Converse API can force one named tool, not a list of several")
		case tc.Mode == "none":
			add("tool_choice", "the Converse API has no tool choice none; leave the tools out instead")
		case opaque:
			// The model is not known: the API judges the choice.
		case len(tc.Tools) == 1 && !bedrockClaude(model) && !bedrockNova(model):
			// toolChoice.tool is taken by these models only; another
			// refuses the request.
			add("tool_choice", "the Converse API forces a named tool on Claude and Nova models only")
		case tc.Mode == "required" && len(tc.Tools) == 0 && !bedrockAnyTool(model):
			// Sent as toolChoice any, which these models only take.
			add("tool_choice", "the Converse API forces a tool call (required) on Claude, Nova and Mistral Large models only")
		}
	}
	if s.ServiceTier != "" && s.ServiceTier != "auto" && s.ServiceTier != "default" && s.ServiceTier != "flex" && s.ServiceTier != "priority" {
		add("service_tier", "Bedrock's tiers are default, flex and priority")
	}
	if t := s.Thinking; t != nil {
		switch {
		case !bedrockClaude(model) && !bedrockOpenAI(model):
			family("thinking", "agentspec knows the reasoning switch of Claude and OpenAI models on Bedrock only; "+
				"send the model's own field through bedrock_additional_model_requests_fields")
		case t.Budget > 0 && !bedrockClaude(model):
			add("thinking", "a token budget is Claude's; give an effort (minimal, low, medium, high, xhigh)")
		}
	}
	if plan := bedrockThinking(model, s); plan.raw != nil {
		switch {
		case plan.budget > 0 && isClaudeLatest(model):
			add("thinking", adaptiveOnly)
		case plan.budget > 0 && plan.budget < minThinkingBudget:
			add("thinking", fmt.Sprintf("a thinking budget of %d tokens is below the API's minimum of %d", plan.budget, minThinkingBudget))
		case plan.budget > 0 && s.MaxTokens > 0 && plan.budget >= s.MaxTokens:
			add("thinking", fmt.Sprintf("the thinking budget (%d tokens) must be below model_settings.max_tokens (%d)", plan.budget, s.MaxTokens))
		case s.Temperature != nil && *s.Temperature != 1:
			add("thinking", "with thinking on, Claude takes no temperature but 1; remove model_settings.temperature")
		case s.TopK != nil:
			add("thinking", "with thinking on, Claude takes no top_k; remove model_settings.top_k")
		case s.ToolChoice != nil && (s.ToolChoice.Mode == "required" || len(s.ToolChoice.Tools) > 0) && plan.raw["type"] == "enabled":
			// Adaptive thinking takes a forced tool call; a budget does not.
			add("thinking", "with thinking on, Claude lets the model choose its tools: tool_choice may be auto")
		}
	}
	for key, want := range map[string]string{
		"bedrock_guardrail_config":                       "object",
		"bedrock_performance_configuration":              "object",
		"bedrock_request_metadata":                       "object",
		"bedrock_prompt_variables":                       "object",
		"bedrock_additional_model_requests_fields":       "object",
		"bedrock_additional_model_response_fields_paths": "list",
		"bedrock_inference_profile":                      "string",
	} {
		v, ok := s.Provider[key]
		if !ok {
			continue
		}
		fine := false
		switch want {
		case "object":
			_, fine = v.(map[string]any)
		case "list":
			_, fine = stringList(v)
		case "string":
			_, fine = v.(string)
		}
		if !fine {
			add(key, "expected "+map[string]string{"object": "a mapping", "list": "a list of strings", "string": "a string"}[want])
		}
	}
	for _, key := range []string{"bedrock_cache_tool_definitions", "bedrock_cache_instructions", "bedrock_cache_messages"} {
		switch v := s.Provider[key].(type) {
		case nil, bool:
		case string:
			if v != "5m" && v != "1h" {
				add(key, "expected true, false, 5m or 1h")
			}
		default:
			add(key, "expected true, false, 5m or 1h")
		}
	}
	return errs
}
