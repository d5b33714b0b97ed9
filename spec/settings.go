package spec

import (
	"encoding/json"
	"fmt"
	"strings"
)

// ProviderSettingKeys are the provider-prefixed model_settings keys
// pydantic-ai documents. The schema accepts each; Spec.ModelSettings.Provider
// holds the ones a spec sets.
var ProviderSettingKeys = []string{
	"anthropic_betas",
	"anthropic_cache",
	"anthropic_cache_instructions",
	"anthropic_cache_messages",
	"anthropic_cache_tool_definitions",
	"anthropic_code_execution_tool_version",
	"anthropic_container",
	"anthropic_context_management",
	"anthropic_eager_input_streaming",
	"anthropic_effort",
	"anthropic_metadata",
	"anthropic_service_tier",
	"anthropic_speed",
	"anthropic_task_budget",
	"anthropic_thinking",
	"bedrock_additional_model_requests_fields",
	"bedrock_additional_model_response_fields_paths",
	"bedrock_cache_instructions",
	"bedrock_cache_messages",
	"bedrock_cache_tool_definitions",
	"bedrock_guardrail_config",
	"bedrock_inference_profile",
	"bedrock_performance_configuration",
	"bedrock_prompt_variables",
	"bedrock_request_metadata",
	"bedrock_service_tier",
	"cerebras_clear_thinking",
	"cerebras_disable_reasoning",
	"google_cached_content",
	"google_cloud_service_tier",
	"google_labels",
	"google_logprobs",
	"google_model_armor_config",
	"google_safety_settings",
	"google_thinking_config",
	"google_top_logprobs",
	"google_video_resolution",
	"groq_reasoning_effort",
	"groq_reasoning_format",
	"mistral_prompt_cache_key",
	"openai_background",
	"openai_context_management",
	"openai_continuous_usage_stats",
	"openai_conversation_id",
	"openai_include_code_execution_outputs",
	"openai_include_file_search_results",
	"openai_include_raw_annotations",
	"openai_include_web_search_sources",
	"openai_logprobs",
	"openai_moderation",
	"openai_native_tools",
	"openai_prediction",
	"openai_previous_response_id",
	"openai_prompt_cache_key",
	"openai_prompt_cache_options",
	"openai_prompt_cache_retention",
	"openai_reasoning_context",
	"openai_reasoning_effort",
	"openai_reasoning_mode",
	"openai_reasoning_summary",
	"openai_send_reasoning_ids",
	"openai_service_tier",
	"openai_store",
	"openai_text_verbosity",
	"openai_top_logprobs",
	"openai_truncation",
	"openai_user",
	"openrouter_cache_instructions",
	"openrouter_cache_messages",
	"openrouter_cache_tool_definitions",
	"openrouter_models",
	"openrouter_preset",
	"openrouter_provider",
	"openrouter_reasoning",
	"openrouter_transforms",
	"openrouter_usage",
	"snowflake_reasoning",
	"xai_agent_count",
	"xai_include_attachment_search_output",
	"xai_include_code_execution_output",
	"xai_include_collections_search_output",
	"xai_include_encrypted_content",
	"xai_include_inline_citations",
	"xai_include_mcp_output",
	"xai_include_web_search_output",
	"xai_include_x_search_output",
	"xai_logprobs",
	"xai_max_turns",
	"xai_previous_response_id",
	"xai_reasoning_effort",
	"xai_store_messages",
	"xai_top_logprobs",
	"xai_user",
	"zai_clear_thinking",
}

// settingPrefixes are the providers the keys above are prefixed with.
var settingPrefixes = []string{
	"anthropic_", "bedrock_", "cerebras_", "google_", "groq_", "mistral_", "openai_", "openrouter_", "snowflake_", "xai_", "zai_",
}

// IsProviderSetting reports whether key is a provider-prefixed
// model_settings key.
func IsProviderSetting(key string) bool {
	for _, p := range settingPrefixes {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

// thinkingValue reads model_settings.thinking as the schema allows it.
func thinkingValue(v any) (*Thinking, error) {
	switch v := v.(type) {
	case nil:
		return nil, nil
	case bool:
		return &Thinking{Enabled: v}, nil
	case string:
		return &Thinking{Enabled: true, Effort: v}, nil
	case json.Number:
		n, err := v.Int64()
		if err != nil {
			return nil, fmt.Errorf("thinking: %w", err)
		}
		return &Thinking{Enabled: true, Budget: int(n)}, nil
	}
	return nil, fmt.Errorf("thinking: unexpected %T", v)
}

// toolChoiceValue reads model_settings.tool_choice as the schema allows it.
func toolChoiceValue(v any) *ToolChoice {
	switch v := v.(type) {
	case string:
		return &ToolChoice{Mode: v}
	case []any:
		tc := &ToolChoice{Mode: "required"}
		for _, name := range v {
			s, _ := name.(string)
			tc.Tools = append(tc.Tools, s)
		}
		return tc
	}
	return nil
}
