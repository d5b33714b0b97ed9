package providers

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/tmc/langchaingo/llms"

	"github.com/agentspec/agentspec/spec"
)

// unsupported is the error of a setting p cannot honour.
func unsupported(p provider, key, reason string) error {
	return &UnsupportedSettingError{Provider: p.name, Setting: key, Reason: reason}
}

// bodyKeys are the provider-prefixed settings sent as the body member of the
// same name without the prefix, by prefix. Keys of a prefix missing here are
// refused with the reason in refusedKeys, or as not sent yet.
var bodyKeys = map[string][]string{
	"openai_": {"reasoning_effort", "logprobs", "top_logprobs", "store", "user", "service_tier", "prediction",
		"prompt_cache_key", "prompt_cache_retention", "prompt_cache_options", "moderation"},
	"anthropic_":  {"metadata", "service_tier", "container", "speed", "context_management", "effort"},
	"groq_":       {"reasoning_format", "reasoning_effort"},
	"mistral_":    {"prompt_cache_key"},
	"openrouter_": {"models", "provider", "preset", "transforms", "reasoning", "usage"},
	"xai_":        {"reasoning_effort", "logprobs", "top_logprobs", "user"},
	"cerebras_":   {"disable_reasoning", "clear_thinking"},
}

// specialKeys are handled by the models themselves.
var specialKeys = []string{
	"anthropic_thinking", "anthropic_betas", "anthropic_cache", "anthropic_cache_instructions",
	"anthropic_cache_tool_definitions", "anthropic_cache_messages", "anthropic_eager_input_streaming",
	"anthropic_code_execution_tool_version", "openai_continuous_usage_stats",
	"google_thinking_config", "google_cached_content",
}

// chatOnly are openai_ keys of Chat Completions that the Responses API has
// no parameter for: sent there, they would be refused or ignored.
var chatOnly = []string{"openai_logprobs", "openai_prediction", "openai_continuous_usage_stats"}

// responsesOnly are openai_ keys of the Responses API.
var responsesOnly = []string{
	"openai_native_tools", "openai_reasoning_mode", "openai_reasoning_context", "openai_reasoning_summary",
	"openai_send_reasoning_ids", "openai_truncation", "openai_text_verbosity", "openai_previous_response_id",
	"openai_conversation_id", "openai_include_code_execution_outputs", "openai_include_web_search_sources",
	"openai_include_file_search_results", "openai_include_raw_annotations", "openai_context_management",
	"openai_background",
}

// refuseFields calls add(key, reason) for each of keys, in order, that s
// sets: the sampling settings some APIs have no field for.
func refuseFields(s spec.ModelSettings, add func(key, reason string), reason string, keys ...string) {
	set := map[string]bool{
		"seed":                s.Seed != nil,
		"presence_penalty":    s.PresencePenalty != nil,
		"frequency_penalty":   s.FrequencyPenalty != nil,
		"logit_bias":          len(s.LogitBias) > 0,
		"stop_sequences":      len(s.StopSequences) > 0,
		"parallel_tool_calls": s.ParallelToolCalls != nil,
	}
	for _, k := range keys {
		if set[k] {
			add(k, reason)
		}
	}
}

// checkSettings returns an *UnsupportedSettingError for each setting p
// cannot honour with model.
func checkSettings(p provider, model string, s spec.ModelSettings) []error {
	var errs []error
	add := func(key, reason string) { errs = append(errs, unsupported(p, key, reason)) }
	anthropic := p.api == apiAnthropic
	switch {
	case p.api == apiBedrock:
		errs = append(errs, checkBedrock(p, model, s)...)
	case p.api == apiGemini:
		errs = append(errs, checkGemini(p, model, s)...)
	case anthropic:
		refuseFields(s, add, "", "seed", "presence_penalty", "frequency_penalty", "logit_bias")
		refuseClaudeSampling(model, s, add)
		refuseClaudeForcing(model, s, add)
		if s.ToolChoice != nil && len(s.ToolChoice.Tools) > 1 {
			add("tool_choice", "the Messages API can force one named tool, not a list of several")
		}
		if s.ServiceTier == "flex" || s.ServiceTier == "priority" {
			add("service_tier", "Anthropic's tiers are auto and default (standard_only)")
		}
	default:
		if s.TopK != nil {
			add("top_k", "the Chat Completions API has no top_k; a server that takes it can get it through extra_body")
		}
		refuseOpenAISampling(p, model, s, add)
		if s.ServiceTier != "" && p.prefix != "openai_" {
			add("service_tier", "only OpenAI's APIs have service tiers")
		}
	}
	if p.api == apiResponses {
		refuseFields(s, add, "the Responses API has no such field; use openai-chat:",
			"seed", "presence_penalty", "frequency_penalty", "logit_bias", "stop_sequences")
	}
	if s.Thinking != nil && p.api != apiBedrock && p.api != apiGemini {
		switch {
		case p.thinking == "":
			add("thinking", "agentspec knows no reasoning switch for it; send the provider's own field through extra_body")
		case s.Thinking.Budget > 0 && p.thinking != thinkingAnthropic:
			add("thinking", "a token budget is Anthropic's; give an effort (minimal, low, medium, high, xhigh)")
		}
	}
	if _, err := anthropicThinking(p, model, s); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, checkNumbers(s)...)
	if len(s.ExtraBody) > 0 {
		for k, v := range s.ExtraBody {
			if _, err := json.Marshal(v); err != nil {
				errs = append(errs, fmt.Errorf("model_settings.extra_body.%s: %w", k, err))
			}
		}
	}
	keys := make([]string, 0, len(s.Provider))
	for k := range s.Provider {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		prefix := k[:strings.Index(k, "_")+1]
		switch {
		case p.prefix == "" || prefix != p.prefix:
			add(k, fmt.Sprintf("it is read by %s models only", strings.TrimSuffix(prefix, "_")))
		case slices.Contains(responsesOnly, k) && p.api != apiResponses:
			add(k, "it belongs to the Responses API; use openai-responses:")
		case slices.Contains(chatOnly, k) && p.api == apiResponses:
			add(k, "the Responses API has no such parameter; it belongs to Chat Completions (openai-chat:)")
		case slices.Contains(bodyKeys[prefix], strings.TrimPrefix(k, prefix)), slices.Contains(specialKeys, k),
			p.api == apiBedrock && slices.Contains(bedrockKeys, k), p.api == apiGemini && slices.Contains(geminiKeys, k):
		case p.api == apiResponses && slices.Contains(responsesOnly, k):
			if !slices.Contains(responsesKeys, k) {
				add(k, "agentspec does not send it yet")
			}
		default:
			add(k, "agentspec does not send it yet")
		}
	}
	if v, ok := s.Provider["anthropic_betas"]; ok && anthropic {
		if _, ok := stringList(v); !ok {
			add("anthropic_betas", "expected a list of beta names")
		}
	}
	return errs
}

// checkNumbers refuses what a spec built in Go can hold and no request can
// carry (the loader never produces it): a number that is not finite, a
// provider key's value that is not JSON, a thinking budget whose max_tokens
// would overflow.
func checkNumbers(s spec.ModelSettings) []error {
	var errs []error
	for _, f := range []struct {
		key string
		v   *float64
	}{
		{"temperature", s.Temperature}, {"top_p", s.TopP},
		{"presence_penalty", s.PresencePenalty}, {"frequency_penalty", s.FrequencyPenalty},
	} {
		if f.v != nil && (math.IsNaN(*f.v) || math.IsInf(*f.v, 0)) {
			errs = append(errs, fmt.Errorf("model_settings.%s: %v is not a finite number", f.key, *f.v))
		}
	}
	if t := s.Thinking; t != nil && t.Budget > math.MaxInt32 {
		errs = append(errs, fmt.Errorf("model_settings.thinking: a budget of %d tokens is beyond any model's", t.Budget))
	}
	keys := make([]string, 0, len(s.Provider))
	for k := range s.Provider {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if _, err := json.Marshal(s.Provider[k]); err != nil {
			errs = append(errs, fmt.Errorf("model_settings.%s: %w", k, err))
		}
	}
	return errs
}

// responsesKeys are the Responses-only keys the responses model sends.
var responsesKeys = []string{"openai_reasoning_summary", "openai_truncation", "openai_text_verbosity", "openai_previous_response_id", "openai_background"}

func stringList(v any) ([]string, bool) {
	list, ok := v.([]any)
	if !ok {
		return nil, false
	}
	out := make([]string, 0, len(list))
	for _, e := range list {
		s, ok := e.(string)
		if !ok {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

// claudeLatest are the Claude models, by the start of their name, that
// take no sampling settings (temperature, top_p, top_k), think adaptively
// only and take the effort xhigh, as pydantic-ai's profiles list them:
// Opus 4.7 and later, Sonnet 5, Fable 5, Mythos 5.
var claudeLatest = []string{"claude-opus-4-7", "claude-opus-4-8", "claude-opus-5", "claude-sonnet-5", "claude-fable-5", "claude-mythos-5"}

// isClaudeLatest reports whether a Claude model id, Anthropic's or a
// Bedrock model or inference profile id, names one of claudeLatest.
func isClaudeLatest(model string) bool { return isClaude(model, claudeLatest) }

// isClaude reports whether a Claude model id, Anthropic's or a Bedrock
// model or inference profile id, names a model of one of the families.
func isClaude(model string, families []string) bool {
	i := strings.Index(model, "claude-")
	if i < 0 {
		return false
	}
	return slices.ContainsFunc(families, func(p string) bool { return strings.HasPrefix(model[i:], p) })
}

// claudeAlwaysThinking are the Claude models, by the start of their name,
// that refuse thinking {type: disabled}, as Anthropic's migration guide to
// Fable 5.1 and Bedrock's adaptive thinking guide say: Fable 5 and 5.1,
// Mythos 5 and 5.1.
var claudeAlwaysThinking = []string{"claude-fable-5", "claude-mythos-5"}

// claudeUnforced are the Claude models, by the start of their name, that
// refuse a forced tool call (tool_choice any or tool), as Anthropic's
// migration guide to them says: Fable 5.1 and Mythos 5.1.
var claudeUnforced = []string{"claude-fable-5-1", "claude-mythos-5-1"}

// refuseClaudeForcing refuses a tool_choice of required or a named tool for
// a Claude model of claudeUnforced, which the API would refuse.
func refuseClaudeForcing(model string, s spec.ModelSettings, add func(key, reason string)) {
	if tc := s.ToolChoice; tc != nil && (tc.Mode == "required" || len(tc.Tools) > 0) && isClaude(model, claudeUnforced) {
		add("tool_choice", "this Claude model (Fable 5.1, Mythos 5.1) takes no forced tool call; "+
			"leave tool_choice auto and say in the instructions when to call the tool")
	}
}

// refuseClaudeSampling refuses each sampling setting s sets for a Claude
// model of claudeLatest, which the API would refuse.
func refuseClaudeSampling(model string, s spec.ModelSettings, add func(key, reason string)) {
	if !isClaudeLatest(model) {
		return
	}
	const reason = "this Claude model (Opus 4.7 and later, Sonnet 5, Fable 5, Mythos 5) takes no sampling settings; remove it"
	if s.Temperature != nil {
		add("temperature", reason)
	}
	if s.TopP != nil {
		add("top_p", reason)
	}
	if s.TopK != nil {
		add("top_k", reason)
	}
}

// adaptiveOnly is why a Claude model of claudeLatest is refused a
// thinking budget.
const adaptiveOnly = "this Claude model (Opus 4.7 and later, Sonnet 5, Fable 5, Mythos 5) takes adaptive thinking only; " +
	"give an effort (minimal, low, medium, high, xhigh) rather than a token budget"

// thinkingBudgets are the Anthropic budgets of the unified efforts, as
// pydantic-ai maps them.
var thinkingBudgets = map[string]int{"minimal": 1024, "low": 2048, "": 10000, "medium": 10000, "high": 16384, "xhigh": 32768}

// minThinkingBudget is the smallest budget the Messages API takes.
const minThinkingBudget = 1024

// claudeVersion reads the major and minor version of a Claude model id
// (claude-sonnet-4-6, claude-opus-4-5-20251101, claude-3-7-sonnet-latest).
var claudeVersion = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`claude-(?:[a-z]+-)?(\d+)(?:[-.](\d{1,2}))?(?:\D|$)`)
})

// adaptiveThinking reports whether model takes thinking {type: adaptive}:
// Claude 4.6 and later, and Claude Mythos Preview, whose id has no
// version, for which the SDK too deprecates a budget (thinking_warn.go).
func adaptiveThinking(model string) bool {
	if strings.Contains(model, "claude-mythos-preview") {
		return true
	}
	m := claudeVersion().FindStringSubmatch(model)
	if m == nil {
		return false
	}
	major, _ := strconv.Atoi(m[1])
	minor, _ := strconv.Atoi(m[2])
	return major > 4 || major == 4 && minor >= 6
}

// thinkingPlan is how thinking is sent to Anthropic.
type thinkingPlan struct {
	raw    map[string]any // the thinking object; nil sends none
	effort string         // output_config.effort; "" sends none
	budget int            // budget_tokens of an enabled thinking
	// unified is set when raw was made from the unified thinking setting,
	// not taken as the spec's anthropic_thinking wrote it.
	unified bool
}

// anthropicThinking decides the thinking of an Anthropic request from
// anthropic_thinking, anthropic_effort and the unified thinking setting, and
// checks the rules the API enforces: a budget of at least 1024 tokens, below
// max_tokens, with temperature 1 and no top_k.
func anthropicThinking(p provider, model string, s spec.ModelSettings) (thinkingPlan, error) {
	var plan thinkingPlan
	if p.api != apiAnthropic {
		return plan, nil
	}
	key := "thinking"
	if raw, ok := s.Provider["anthropic_thinking"].(map[string]any); ok {
		key = "anthropic_thinking"
		plan.raw = raw
		switch typ, _ := raw["type"].(string); typ {
		case "enabled":
			n, ok := raw["budget_tokens"].(json.Number)
			b, err := n.Int64()
			if !ok || err != nil {
				return plan, unsupported(p, key, "type enabled needs budget_tokens, a whole number of tokens")
			}
			plan.budget = int(b)
		case "disabled":
			if isClaude(model, claudeAlwaysThinking) {
				return plan, unsupported(p, key, "this Claude model (Fable 5, Mythos 5 and their 5.1) always thinks and takes no type disabled; "+
					"leave anthropic_thinking out, or ask for a low effort")
			}
		case "adaptive":
		default:
			return plan, unsupported(p, key, fmt.Sprintf("type must be enabled, adaptive or disabled, not %q", typ))
		}
	} else if t := s.Thinking; t != nil && t.Enabled {
		plan.budget, plan.raw, plan.effort = claudeThinking(model, t)
		plan.unified = true
	}
	if e, ok := s.Provider["anthropic_effort"].(string); ok {
		plan.effort = e
		if (e == "xhigh" || e == "max") && plan.raw["type"] == "disabled" && isClaude(model, []string{"claude-opus-5"}) {
			// As pydantic-ai's profile has it; Opus 4.8 takes every level.
			return plan, unsupported(p, "anthropic_effort", "Claude Opus 5 takes an effort of high at most while its thinking is disabled")
		}
	}
	if plan.raw == nil || plan.raw["type"] == "disabled" {
		return plan, nil
	}
	switch {
	case plan.budget > 0 && isClaudeLatest(model):
		return plan, unsupported(p, key, adaptiveOnly)
	case plan.budget > 0 && plan.budget < minThinkingBudget:
		return plan, unsupported(p, key, fmt.Sprintf("a thinking budget of %d tokens is below the API's minimum of %d", plan.budget, minThinkingBudget))
	case plan.budget > 0 && s.MaxTokens > 0 && plan.budget >= s.MaxTokens:
		return plan, unsupported(p, key, fmt.Sprintf("the thinking budget (%d tokens) must be below model_settings.max_tokens (%d)", plan.budget, s.MaxTokens))
	case s.Temperature != nil && *s.Temperature != 1:
		return plan, unsupported(p, key, "with thinking on, the API takes no temperature but 1; remove model_settings.temperature")
	case s.TopK != nil:
		return plan, unsupported(p, key, "with thinking on, the API takes no top_k; remove model_settings.top_k")
	case s.TopP != nil && (*s.TopP < 0.95 || *s.TopP > 1):
		return plan, unsupported(p, key, "with thinking on, the API takes a top_p between 0.95 and 1 only")
	case s.ToolChoice != nil && (s.ToolChoice.Mode == "required" || len(s.ToolChoice.Tools) > 0) && plan.raw["type"] == "enabled":
		// Adaptive thinking takes a forced tool call; a budget does not.
		return plan, unsupported(p, key, "with thinking on, the API lets the model choose its tools: tool_choice may be auto or none")
	}
	return plan, nil
}

// maxTokens is the max_tokens of a request: the spec's, or the default plus
// the thinking budget.
func maxTokens(s spec.ModelSettings, budget int) int {
	if s.MaxTokens > 0 {
		return s.MaxTokens
	}
	return DefaultMaxTokens + budget
}

// callMaxTokens is maxTokens, unless the caller's options set one.
func callMaxTokens(s spec.ModelSettings, opts llms.CallOptions, budget int) int {
	if opts.MaxTokens > 0 {
		return opts.MaxTokens
	}
	return maxTokens(s, budget)
}

// reasoningEffort is the reasoning_effort the unified thinking setting means
// on an OpenAI-style API: "" sends none.
func reasoningEffort(t *spec.Thinking) string {
	switch {
	case t == nil:
		return ""
	case !t.Enabled:
		return "none"
	case t.Effort == "":
		return "medium"
	}
	return t.Effort
}

// openaiReasoning are OpenAI's model families by name prefix, the first
// that matches winning, each with whether it always reasons: the o-series,
// the first GPT-5 models and the GPT-5.x chat, codex and pro variants
// refuse a reasoning effort of none, which the others from GPT-5.1 on take.
// A model of no family here reasons as its server decides.
var openaiReasoning = []openaiFamily{
	{"gpt-6-astra", true, true}, {"gpt-5.6", false, true}, {"gpt-5.5-pro", true, true}, {"gpt-5.5", false, true},
	{"gpt-5.4-pro", true, true}, {"gpt-5.4", false, false}, {"gpt-5.3-chat", true, true}, {"gpt-5.3", false, false},
	{"gpt-5.2-pro", true, true}, {"gpt-5.2-chat", true, true}, {"gpt-5.2", false, false},
	{"gpt-5.1-codex", true, true}, {"gpt-5.1-chat", true, true}, {"gpt-5.1", false, false},
	{"gpt-5-chat", false, false}, {"gpt-5", true, true}, {"o1", true, true}, {"o3", true, true}, {"o4", true, true},
}

// openaiFamily is a family of openaiReasoning.
type openaiFamily struct {
	prefix string
	always bool
	// byDefault: the model reasons when no effort is asked (GPT-5.5 and
	// 5.6); GPT-5.1 to 5.4 reason only when asked to.
	byDefault bool
}

// openaiFamilyOf returns the family of openaiReasoning model is of, if any.
func openaiFamilyOf(model string) (openaiFamily, bool) {
	for _, f := range openaiReasoning {
		if strings.HasPrefix(model, f.prefix) {
			return f, true
		}
	}
	return openaiFamily{}, false
}

// refuseOpenAISampling refuses the sampling settings an OpenAI model refuses
// while it reasons (temperature, top_p and, on Chat Completions, the
// penalties and logit_bias; pydantic-ai's list) when the spec has it
// reason: a model that always does, one that does by default unless told
// thinking: false (or openai_reasoning_effort: none), one that does only
// when asked when it is asked. pydantic-ai drops them with a warning; a
// setting agentspec cannot honour is refused instead (docs/providers.md).
func refuseOpenAISampling(p provider, model string, s spec.ModelSettings, add func(key, reason string)) {
	if p.prefix != "openai_" {
		return
	}
	f, ok := openaiFamilyOf(model)
	if !ok || f.prefix == "gpt-5-chat" {
		return
	}
	effort := reasoningEffort(s.Thinking)
	if v, ok := s.Provider["openai_reasoning_effort"].(string); ok {
		effort = v
	}
	reason := "this OpenAI model refuses it while it reasons, as it "
	switch {
	case f.always:
		reason += "always does; remove it"
	case effort == "" && f.byDefault:
		reason += "does by default; remove it, or turn reasoning off with thinking: false"
	case effort != "" && effort != "none":
		reason += "does with the thinking asked; remove it, or turn reasoning off with thinking: false"
	default:
		return
	}
	if s.Temperature != nil {
		add("temperature", reason)
	}
	if s.TopP != nil {
		add("top_p", reason)
	}
	if p.api != apiResponses { // refused there already, as the API has no such field
		refuseFields(s, add, reason, "presence_penalty", "frequency_penalty", "logit_bias")
	}
}

// openaiReasons reports whether model is of an OpenAI family of
// openaiReasoning that reasons (all but gpt-5-chat).
func openaiReasons(p provider, model string) bool {
	f, ok := openaiFamilyOf(model)
	return p.prefix == "openai_" && ok && f.prefix != "gpt-5-chat"
}

// alwaysReasons reports whether model reasons whatever it is asked and
// refuses to be told not to: an OpenAI model of openaiReasoning that always
// reasons (a reasoning effort of none is refused), or a Gemini Pro model
// from 2.5 on (a thinking budget of 0 is refused). The unified thinking:
// false is not sent to it, as pydantic-ai ignores it there.
func alwaysReasons(p provider, model string) bool {
	switch p.prefix {
	case "openai_":
		f, _ := openaiFamilyOf(model)
		return f.always
	case "google_":
		m := geminiVersion().FindStringSubmatch(model)
		if m == nil || !strings.Contains(model, "pro") || strings.Contains(model, "flash") {
			return false
		}
		major, _ := strconv.Atoi(m[1])
		return major >= 3 || strings.Contains(model, "gemini-2.5")
	}
	return false
}

// claudeThinking is how a Claude model thinks for the unified thinking
// setting t (enabled), on Anthropic's API and on Bedrock's alike: a token
// budget when t gives one; adaptive thinking with an effort on the models
// that have it (minimal becomes low, xhigh max but on claudeLatest, which
// takes it); else the budget t's effort stands for.
func claudeThinking(model string, t *spec.Thinking) (budget int, raw map[string]any, effort string) {
	switch {
	case t.Budget > 0:
		return t.Budget, map[string]any{"type": "enabled", "budget_tokens": t.Budget}, ""
	case adaptiveThinking(model):
		switch effort = t.Effort; effort {
		case "minimal":
			effort = "low"
		case "xhigh":
			if !isClaudeLatest(model) { // the models before them know no xhigh
				effort = "max"
			}
		}
		return 0, map[string]any{"type": "adaptive"}, effort
	}
	budget = thinkingBudgets[t.Effort]
	return budget, map[string]any{"type": "enabled", "budget_tokens": budget}, ""
}
