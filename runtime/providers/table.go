package providers

import (
	"net/url"
	"slices"
	"strings"
)

// api is the wire protocol a provider is served through.
type api string

const (
	apiChat      api = "chat"      // OpenAI Chat Completions, through openai-go
	apiResponses api = "responses" // OpenAI Responses, through openai-go
	apiAnthropic api = "anthropic" // Anthropic Messages, through anthropic-sdk-go
	apiBedrock   api = "converse"  // Bedrock's Converse, through aws-sdk-go-v2
	apiGemini    api = "gemini"    // Vertex AI's generateContent, with cloud.google.com/go/auth
)

// provider is one row of the provider table: how a "name:model" reference
// reaches its API.
type provider struct {
	name string
	api  api
	// keyEnvs are the variables the key is read from, the first set wins.
	keyEnvs []string
	// keyOptional: a missing key sends a placeholder (local servers,
	// gateways that authenticate otherwise).
	keyOptional bool
	// baseEnvs are variables that override baseURL, the first set wins;
	// baseSuffix is appended to a base read from them.
	baseEnvs   []string
	baseSuffix string
	baseURL    string
	// unavailable, when set, says why agentspec cannot run the provider.
	unavailable string
	// sendsReasoning: the API wants the reasoning_content of an assistant
	// turn with tool calls sent back (DeepSeek's thinking mode).
	sendsReasoning bool
	// thinking says how the unified thinking setting is sent; "" means the
	// provider has no reasoning switch agentspec knows.
	thinking thinkingStyle
	// prefix is the model_settings prefix the provider reads (openai_, ...).
	prefix string
	// vertex: the Messages API of Anthropic's publisher models on Vertex
	// AI (rawPredict and streamRawPredict), authorized as Gemini on Vertex
	// AI is; the row providerFor derives for a Claude model of google-cloud.
	vertex bool
}

// thinkingStyle is how a chat provider turns reasoning on.
type thinkingStyle string

const (
	thinkingEffort     thinkingStyle = "reasoning_effort"   // reasoning_effort: low|medium|high
	thinkingOpenRouter thinkingStyle = "openrouter"         // reasoning: {effort, enabled}
	thinkingDeepSeek   thinkingStyle = "deepseek"           // thinking: {type: enabled|disabled}
	thinkingGroq       thinkingStyle = "groq"               // reasoning_format (+ reasoning_effort)
	thinkingCerebras   thinkingStyle = "disable_reasoning"  // only "off" is sent
	thinkingAnthropic  thinkingStyle = "anthropic_thinking" // Anthropic's thinking object
)

const (
	whyGatewayOther = "the Pydantic AI Gateway routes only openai, openai-chat, anthropic and groq here"
)

var table = []provider{
	{name: "openai", api: apiChat, keyEnvs: []string{"OPENAI_API_KEY"}, baseEnvs: []string{"OPENAI_BASE_URL", "OPENAI_API_BASE"},
		baseURL: "https://api.openai.com/v1", thinking: thinkingEffort, prefix: "openai_"},
	{name: "openai-chat", api: apiChat, keyEnvs: []string{"OPENAI_API_KEY"}, baseEnvs: []string{"OPENAI_BASE_URL", "OPENAI_API_BASE"},
		baseURL: "https://api.openai.com/v1", thinking: thinkingEffort, prefix: "openai_"},
	{name: "openai-responses", api: apiResponses, keyEnvs: []string{"OPENAI_API_KEY"}, baseEnvs: []string{"OPENAI_BASE_URL", "OPENAI_API_BASE"},
		baseURL: "https://api.openai.com/v1", thinking: thinkingEffort, prefix: "openai_"},
	{name: "azure", api: apiChat, keyEnvs: []string{"AZURE_OPENAI_API_KEY"}, baseEnvs: []string{"AZURE_OPENAI_ENDPOINT"},
		thinking: thinkingEffort, prefix: "openai_"},
	{name: "anthropic", api: apiAnthropic, keyEnvs: []string{"ANTHROPIC_API_KEY"}, baseEnvs: []string{"ANTHROPIC_BASE_URL"},
		baseURL: "https://api.anthropic.com", thinking: thinkingAnthropic, prefix: "anthropic_"},
	// The Gemini API through its OpenAI-compatible endpoint: tool calls with
	// ids, reasoning_effort, thought signatures in each call's extra_content.
	{name: "google", api: apiChat, keyEnvs: []string{"GOOGLE_API_KEY", "GEMINI_API_KEY"},
		baseURL: "https://generativelanguage.googleapis.com/v1beta/openai", thinking: thinkingEffort, prefix: "google_"},
	{name: "google-gla", api: apiChat, keyEnvs: []string{"GOOGLE_API_KEY", "GEMINI_API_KEY"},
		baseURL: "https://generativelanguage.googleapis.com/v1beta/openai", thinking: thinkingEffort, prefix: "google_"},
	// Gemini on Vertex AI: Application Default Credentials, or an API key
	// (express mode) when GOOGLE_APPLICATION_CREDENTIALS is unset.
	{name: "google-cloud", api: apiGemini, keyEnvs: []string{"GOOGLE_API_KEY", "GEMINI_API_KEY"}, keyOptional: true, prefix: "google_"},
	{name: "google-vertex", api: apiGemini, keyEnvs: []string{"GOOGLE_API_KEY", "GEMINI_API_KEY"}, keyOptional: true, prefix: "google_"},
	// Converse, signed with SigV4 unless a Bedrock API key is set.
	{name: "bedrock", api: apiBedrock, keyEnvs: []string{"AWS_BEARER_TOKEN_BEDROCK"}, keyOptional: true,
		baseEnvs: []string{"AWS_ENDPOINT_URL_BEDROCK_RUNTIME", "AWS_ENDPOINT_URL"}, prefix: "bedrock_"},
	{name: "groq", api: apiChat, keyEnvs: []string{"GROQ_API_KEY"}, baseEnvs: []string{"GROQ_BASE_URL"}, baseSuffix: "/openai/v1",
		baseURL: "https://api.groq.com/openai/v1", thinking: thinkingGroq, prefix: "groq_"},
	{name: "mistral", api: apiChat, keyEnvs: []string{"MISTRAL_API_KEY"}, baseURL: "https://api.mistral.ai/v1",
		thinking: thinkingEffort, prefix: "mistral_"},
	{name: "cohere", api: apiChat, keyEnvs: []string{"CO_API_KEY"}, baseEnvs: []string{"CO_BASE_URL"}, baseSuffix: "/compatibility/v1",
		baseURL: "https://api.cohere.ai/compatibility/v1"},
	{name: "deepseek", api: apiChat, keyEnvs: []string{"DEEPSEEK_API_KEY"}, baseURL: "https://api.deepseek.com/v1",
		sendsReasoning: true, thinking: thinkingDeepSeek},
	{name: "xai", api: apiChat, keyEnvs: []string{"XAI_API_KEY"}, baseURL: "https://api.x.ai/v1", thinking: thinkingEffort, prefix: "xai_"},
	{name: "cerebras", api: apiChat, keyEnvs: []string{"CEREBRAS_API_KEY"}, baseURL: "https://api.cerebras.ai/v1",
		thinking: thinkingCerebras, prefix: "cerebras_"},
	{name: "fireworks", api: apiChat, keyEnvs: []string{"FIREWORKS_API_KEY"}, baseURL: "https://api.fireworks.ai/inference/v1", thinking: thinkingEffort},
	{name: "together", api: apiChat, keyEnvs: []string{"TOGETHER_API_KEY"}, baseURL: "https://api.together.xyz/v1", thinking: thinkingEffort},
	{name: "openrouter", api: apiChat, keyEnvs: []string{"OPENROUTER_API_KEY"}, baseURL: "https://openrouter.ai/api/v1",
		thinking: thinkingOpenRouter, prefix: "openrouter_"},
	{name: "huggingface", api: apiChat, keyEnvs: []string{"HF_TOKEN"}, baseURL: "https://router.huggingface.co/v1"},
	{name: "moonshotai", api: apiChat, keyEnvs: []string{"MOONSHOTAI_API_KEY"}, baseURL: "https://api.moonshot.ai/v1"},
	{name: "heroku", api: apiChat, keyEnvs: []string{"HEROKU_INFERENCE_KEY"}, baseEnvs: []string{"HEROKU_INFERENCE_URL"}, baseSuffix: "/v1",
		baseURL: "https://us.inference.heroku.com/v1"},
	{name: "litellm", api: apiChat, keyEnvs: []string{"LITELLM_API_KEY"}, keyOptional: true, baseEnvs: []string{"LITELLM_BASE_URL", "OPENAI_BASE_URL"},
		baseURL: "http://localhost:4000/v1", thinking: thinkingEffort},
	{name: "ollama", api: apiChat, keyEnvs: []string{"OLLAMA_API_KEY"}, keyOptional: true, baseEnvs: []string{"OLLAMA_BASE_URL"},
		baseURL: "http://localhost:11434/v1", thinking: thinkingEffort},
	{name: "vercel", api: apiChat, keyEnvs: []string{"VERCEL_AI_GATEWAY_API_KEY", "VERCEL_OIDC_TOKEN"}, baseURL: "https://ai-gateway.vercel.sh/v1", thinking: thinkingEffort},
	{name: "zai", api: apiChat, keyEnvs: []string{"ZAI_API_KEY"}, baseURL: "https://api.z.ai/api/paas/v4", prefix: "zai_"},
	{name: "nebius", api: apiChat, keyEnvs: []string{"NEBIUS_API_KEY"}, baseURL: "https://api.studio.nebius.com/v1"},
	{name: "sambanova", api: apiChat, keyEnvs: []string{"SAMBANOVA_API_KEY"}, baseEnvs: []string{"SAMBANOVA_BASE_URL"}, baseURL: "https://api.sambanova.ai/v1"},
	{name: "alibaba", api: apiChat, keyEnvs: []string{"ALIBABA_API_KEY", "DASHSCOPE_API_KEY"}, baseURL: "https://dashscope-intl.aliyuncs.com/compatible-mode/v1"},
	{name: "crusoe", api: apiChat, keyEnvs: []string{"CRUSOE_API_KEY"}, baseURL: "https://api.inference.crusoecloud.com/v1"},
	{name: "ovhcloud", api: apiChat, keyEnvs: []string{"OVHCLOUD_API_KEY"}, baseURL: "https://oai.endpoints.kepler.ai.cloud.ovh.net/v1"},
	{name: "snowflake", api: apiChat, keyEnvs: []string{"SNOWFLAKE_TOKEN"}, prefix: "snowflake_"},
	{name: "github", unavailable: "GitHub Models was retired on 2026-07-30", keyEnvs: []string{"GITHUB_API_KEY"}},
	{name: "azure-responses", api: apiResponses, keyEnvs: []string{"AZURE_OPENAI_API_KEY"}, baseEnvs: []string{"AZURE_OPENAI_ENDPOINT"},
		thinking: thinkingEffort, prefix: "openai_"},
	{name: "bedrock-mantle", api: apiResponses, keyEnvs: []string{"AWS_BEARER_TOKEN_BEDROCK"}, thinking: thinkingEffort, prefix: "openai_"},
	{name: "gateway/responses", api: apiResponses, keyEnvs: gatewayKeys, baseEnvs: gatewayBases, baseSuffix: "/openai", thinking: thinkingEffort, prefix: "openai_"},
	{name: "gateway/chat", api: apiChat, keyEnvs: gatewayKeys, baseEnvs: gatewayBases, baseSuffix: "/openai", thinking: thinkingEffort, prefix: "openai_"},
	{name: "gateway/converse", api: apiBedrock, keyEnvs: gatewayKeys, baseEnvs: gatewayBases, baseSuffix: "/bedrock", prefix: "bedrock_"},
	{name: "gateway/google-cloud", api: apiGemini, keyEnvs: gatewayKeys, baseEnvs: gatewayBases, baseSuffix: "/google-vertex", prefix: "google_"},
	{name: "gateway/openai", api: apiResponses, keyEnvs: gatewayKeys, baseEnvs: gatewayBases, baseSuffix: "/openai", thinking: thinkingEffort, prefix: "openai_"},
	{name: "gateway/openai-responses", api: apiResponses, keyEnvs: gatewayKeys, baseEnvs: gatewayBases, baseSuffix: "/openai", thinking: thinkingEffort, prefix: "openai_"},
	{name: "gateway/openai-chat", api: apiChat, keyEnvs: gatewayKeys, baseEnvs: gatewayBases, baseSuffix: "/openai", thinking: thinkingEffort, prefix: "openai_"},
	{name: "gateway/anthropic", api: apiAnthropic, keyEnvs: gatewayKeys, baseEnvs: gatewayBases, baseSuffix: "/anthropic", thinking: thinkingAnthropic, prefix: "anthropic_"},
	{name: "gateway/groq", api: apiChat, keyEnvs: gatewayKeys, baseEnvs: gatewayBases, baseSuffix: "/groq", thinking: thinkingGroq, prefix: "groq_"},
	{name: "gateway/bedrock", api: apiBedrock, keyEnvs: gatewayKeys, baseEnvs: gatewayBases, baseSuffix: "/bedrock", prefix: "bedrock_"},
	{name: "gateway/google", api: apiGemini, keyEnvs: gatewayKeys, baseEnvs: gatewayBases, baseSuffix: "/google-vertex", prefix: "google_"},
}

var (
	gatewayKeys  = []string{"PYDANTIC_AI_GATEWAY_API_KEY", "PAIG_API_KEY"}
	gatewayBases = []string{"PYDANTIC_AI_GATEWAY_BASE_URL", "PAIG_BASE_URL"}
)

// LocalDefault is, for a model whose provider is served on this machine by
// default (ollama, litellm), that default endpoint, when the environment
// getenv gives names none, as a run would read it (a blank variable names
// nothing; Ollama's own OLLAMA_HOST names one): the model's requests then
// go to a local port nobody chose for them. ok is false for any other
// model, and when the environment names the endpoint.
func LocalDefault(model string, getenv func(string) string) (endpoint string, vars []string, ok bool) {
	name, _, found := strings.Cut(strings.TrimSpace(model), ":")
	if !found {
		return "", nil, false
	}
	p, known := lookup(name)
	if !known || !isLocal(p.baseURL) {
		return "", nil, false
	}
	vars = slices.Clone(p.baseEnvs)
	if name == "ollama" {
		vars = append(vars, "OLLAMA_HOST") // read by resolve when the others are not set
	}
	for _, v := range vars {
		if strings.TrimSpace(getenv(v)) != "" {
			return "", nil, false
		}
	}
	return p.baseURL, vars, true
}

// isLocal tells whether a URL's host is this machine.
func isLocal(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	switch h := u.Hostname(); h {
	case "localhost", "127.0.0.1", "::1":
		return true
	}
	return false
}

// providerFor is the row that serves model under the provider name: the
// table's, but for a Claude model of google-cloud (google-vertex), which
// Vertex AI serves as Anthropic's publisher model through the Messages API
// rather than generateContent. The name stays the one the spec wrote.
func providerFor(name, model string) (provider, bool) {
	p, ok := lookup(name)
	if !ok || p.api != apiGemini || strings.HasPrefix(name, "gateway/") {
		return p, ok
	}
	if _, claude := vertexClaude(model); claude {
		p.api, p.thinking, p.prefix, p.vertex = apiAnthropic, thinkingAnthropic, "anthropic_", true
		p.keyEnvs, p.keyOptional = nil, false // express mode serves Google's models only
	}
	return p, ok
}

// vertexClaude is the id of an Anthropic publisher model on Vertex AI, as
// model names it: claude-sonnet-4-5@20250929 as written, or with its
// publisher path, publishers/anthropic/models/claude-sonnet-4-5@20250929.
func vertexClaude(model string) (string, bool) {
	if id, ok := strings.CutPrefix(model, "publishers/anthropic/models/"); ok {
		return id, id != "" && !strings.Contains(id, "/")
	}
	return model, strings.HasPrefix(model, "claude-") && !strings.Contains(model, "/")
}

func lookup(name string) (provider, bool) {
	i := slices.IndexFunc(table, func(p provider) bool { return p.name == name })
	if i < 0 {
		return provider{}, false
	}
	return table[i], true
}

// gatewayBase is the gateway root derived from the region a key names
// (pylf_v<n>_<region>_...), when no base variable is set.
func gatewayBase(key string) string {
	parts := strings.Split(key, "_")
	if len(parts) >= 3 && parts[0] == "pylf" && strings.HasPrefix(parts[1], "v") && parts[2] != "" {
		return "https://gateway-" + parts[2] + ".pydantic.dev/proxy"
	}
	return "https://gateway.pydantic.dev/proxy"
}
