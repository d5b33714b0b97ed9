package providers

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/agentspec/agentspec/internal/redact"
	"github.com/agentspec/agentspec/internal/suggest"
)

// endpoint is everything New resolves before building a client.
type endpoint struct {
	provider string
	dialect  Dialect
	baseURL  string
	token    string
	// keyEnv names the variable the key comes from, for error hints.
	keyEnv string
	// legacyMaxTokens sends max_tokens instead of max_completion_tokens,
	// which only OpenAI's own API and Azure's newer versions know.
	legacyMaxTokens bool
	// apiVersion is Azure's api-version query parameter, when it has one.
	apiVersion string
	// headers are sent with every request (OpenRouter's app attribution).
	headers map[string]string
	// region is the AWS region of a Bedrock endpoint, or the Google Cloud
	// location of a Vertex AI one; project is the Google Cloud project.
	region, project string
	// sigv4: requests are signed with AWS SigV4 (bedrock-mantle without a
	// Bedrock API key); token is then a placeholder the signature replaces.
	sigv4 bool
}

func parseRef(ref string) (provider, name string, err error) {
	provider, name, ok := strings.Cut(strings.TrimSpace(ref), ":")
	switch {
	case !ok:
		return "", "", fmt.Errorf("model %q must be written provider:model, e.g. openai:gpt-4o or anthropic:claude-sonnet-4-5; providers: %s",
			ref, strings.Join(Known(), ", "))
	case name == "":
		return "", "", fmt.Errorf("model %q names no model after %q", ref, provider+":")
	}
	return provider, name, nil
}

// endpointFor resolves the endpoint of a provider for model, or takes it
// from the recording a Replayer serves.
func endpointFor(provider, model, baseURL string, getenv func(string) string, transport http.RoundTripper) (endpoint, error) {
	if rp, ok := transport.(*Replayer); ok {
		if ep, recorded, err := rp.endpoint(provider, model); recorded || err != nil {
			return ep, err
		}
	}
	ep, err := resolveModel(provider, model, baseURL, getenv)
	if err != nil {
		return ep, err
	}
	if rec, ok := transport.(*Recorder); ok {
		if err := rec.setEndpoint(ep); err != nil {
			return ep, err
		}
	}
	return ep, nil
}

// resolve finds the base URL and key of a provider, from the spec's base_url
// first and the environment second.
func resolve(name, baseURL string, getenv func(string) string) (endpoint, error) {
	return resolveModel(name, "", baseURL, getenv)
}

// resolveModel is resolve for the row that serves model (providerFor).
func resolveModel(name, model, baseURL string, getenv func(string) string) (endpoint, error) {
	if name == scriptProvider {
		return endpoint{}, fmt.Errorf("model provider %q is built by the runtime, not by providers.New", name)
	}
	p, ok := providerFor(name, model)
	if !ok {
		return endpoint{}, unknownProvider(name)
	}
	if p.unavailable != "" {
		return endpoint{}, fmt.Errorf("%s: %w: %s", name, ErrUnavailable, p.unavailable)
	}
	ep := endpoint{provider: name, dialect: dialectOf(p), legacyMaxTokens: p.api == apiChat}
	for _, k := range p.keyEnvs {
		if v := strings.TrimSpace(getenv(k)); v != "" {
			ep.token, ep.keyEnv = v, k
			break
		}
	}
	if ep.keyEnv == "" && len(p.keyEnvs) > 0 {
		ep.keyEnv = p.keyEnvs[0]
	}
	fromEnv := ""
	for _, k := range p.baseEnvs {
		if v := strings.TrimSpace(getenv(k)); v != "" {
			fromEnv = v
			break
		}
	}
	if fromEnv != "" && p.baseSuffix != "" && !strings.HasSuffix(strings.TrimRight(fromEnv, "/"), p.baseSuffix) {
		fromEnv = strings.TrimRight(fromEnv, "/") + p.baseSuffix
	}
	def := p.baseURL
	switch {
	case name == "ollama":
		// OLLAMA_HOST is how Ollama itself is pointed elsewhere.
		if h := getenv("OLLAMA_HOST"); fromEnv == "" && strings.TrimSpace(h) != "" {
			fromEnv = ollamaBaseURL(h)
		}
	case strings.HasPrefix(name, "gateway/"):
		def = gatewayBase(ep.token) + p.baseSuffix
	case name == "azure":
		ep.apiVersion = getenv("OPENAI_API_VERSION")
	case name == "azure-responses" && fromEnv != "" && !strings.HasSuffix(strings.TrimRight(fromEnv, "/"), "/v1"):
		// The Responses API is served on Azure's v1 endpoint.
		fromEnv = strings.TrimRight(fromEnv, "/") + "/openai/v1"
	case name == "openrouter":
		for env, header := range map[string]string{"OPENROUTER_APP_URL": "HTTP-Referer", "OPENROUTER_APP_TITLE": "X-Title"} {
			if v := strings.TrimSpace(getenv(env)); v != "" {
				if ep.headers == nil {
					ep.headers = map[string]string{}
				}
				ep.headers[header] = v
			}
		}
	case name == "snowflake":
		if account := strings.TrimSpace(getenv("SNOWFLAKE_ACCOUNT")); account != "" {
			def = "https://" + account + ".snowflakecomputing.com/api/v2/cortex/v1"
		}
	case name == "bedrock-mantle":
		ep.region = firstNonEmpty(getenv("AWS_DEFAULT_REGION"), getenv("AWS_REGION"))
		if region := ep.region; region != "" {
			def = "https://bedrock-mantle." + region + ".api.aws/openai/v1"
		}
	}
	gateway := strings.HasPrefix(name, "gateway/")
	switch p.api {
	case apiBedrock:
		ep.region = firstNonEmpty(getenv("AWS_REGION"), getenv("AWS_DEFAULT_REGION"))
		switch {
		case gateway && ep.region == "":
			ep.region = bedrockGatewayRegion
		case !gateway && ep.region != "":
			def = bedrockDefaultEndpoint(ep.region)
		}
	}
	if p.api == apiGemini || p.vertex {
		ep.region = firstNonEmpty(getenv("GOOGLE_CLOUD_LOCATION"), "us-central1")
		ep.project = strings.TrimSpace(getenv("GOOGLE_CLOUD_PROJECT"))
		if !gateway && strings.TrimSpace(getenv("GOOGLE_APPLICATION_CREDENTIALS")) != "" {
			ep.token, ep.keyEnv = "", "GOOGLE_APPLICATION_CREDENTIALS" // ADC wins over an API key
		}
		if ep.token != "" {
			ep.project = "" // an API key's requests name no project
		}
		if !gateway {
			switch {
			case ep.region == "global" || ep.token != "": // express mode has one global host
				def = "https://aiplatform.googleapis.com"
			case ep.region == "us" || ep.region == "eu":
				// The multi-regions have a host of their own, as the genai
				// SDK names it; us-aiplatform.googleapis.com is no host.
				def = "https://aiplatform." + ep.region + ".rep.googleapis.com"
			default:
				def = "https://" + ep.region + "-aiplatform.googleapis.com"
			}
		}
	}
	ep.baseURL = firstNonEmpty(baseURL, fromEnv, def)
	if ep.baseURL == "" && p.api == apiBedrock {
		// The SDK finds the region in the shared config, and the endpoint.
		return ep, nil
	}
	if ep.baseURL == "" {
		need := map[string]string{"snowflake": "SNOWFLAKE_ACCOUNT", "bedrock-mantle": "AWS_DEFAULT_REGION or AWS_REGION"}[name]
		if need == "" {
			need = p.baseEnvs[0]
		}
		return ep, fmt.Errorf("%s: no base URL: set %s or model_settings.base_url", name, need)
	}
	u, err := parseBaseURL(ep.baseURL)
	if err != nil {
		return ep, fmt.Errorf("%s: %w", name, err)
	}
	if name == "azure" {
		// An endpoint ending in /v1 is Azure's OpenAI-compatible one; any
		// other is the deployment API, which wants a version.
		if !strings.HasSuffix(strings.TrimRight(u.Path, "/"), "/v1") && ep.apiVersion == "" {
			return ep, fmt.Errorf("azure: set OPENAI_API_VERSION for the endpoint %s, or use its /openai/v1 endpoint", redact.URL(ep.baseURL))
		}
	}
	if p.api != apiChat {
		ep.legacyMaxTokens = false
	} else if official := isOpenAIHost(u); official {
		ep.legacyMaxTokens = false
	}
	if name == "azure-responses" || name == "azure" && (ep.apiVersion == "" || ep.apiVersion >= azureCompletionTokens) {
		// Azure's reasoning deployments refuse max_tokens; every deployment
		// takes max_completion_tokens from that api-version on, and its /v1
		// endpoint (no version) always.
		ep.legacyMaxTokens = false
	}
	if p.api == apiAnthropic && !p.vertex {
		// As in Anthropic's SDKs the variable is the API root; the base kept
		// (and recorded) is the versioned one.
		ep.baseURL = withV1(ep.baseURL)
	}
	if ep.token == "" {
		switch {
		case p.api == apiBedrock || p.api == apiGemini || p.vertex:
			// Signed with SigV4, or authorized by Application Default
			// Credentials: newBedrock and newGemini find the credentials.
			if !gateway {
				// What an authentication failure's hint names.
				ep.keyEnv = bedrockAuth
				if p.api == apiGemini || p.vertex {
					ep.keyEnv = "the Application Default Credentials (GOOGLE_APPLICATION_CREDENTIALS, gcloud's)"
				}
				return ep, nil
			}
			return ep, missingKey(ep)
		case name == "bedrock-mantle":
			ep.token, ep.keyEnv, ep.sigv4 = placeholderToken, bedrockAuth, true
		case p.keyOptional:
			ep.token, ep.keyEnv = placeholderToken, ""
			if name == "ollama" {
				ep.token = "ollama"
			}
		case (name == "openai" || name == "openai-chat" || name == "openai-responses") && !isOpenAIHost(u):
			// Local servers (vLLM, llama.cpp, LM Studio) need no key.
			ep.token = placeholderToken
		default:
			return ep, missingKey(ep)
		}
	}
	return ep, nil
}

func missingKey(ep endpoint) error {
	return fmt.Errorf("%s: %w: set the %s environment variable", ep.provider, ErrMissingKey, ep.keyEnv)
}

func unknownProvider(provider string) error {
	msg := fmt.Sprintf("unknown model provider %q", provider)
	if near := suggest.Closest(provider, Known()); near != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", near)
	}
	return errors.New(msg + "; known providers: " + strings.Join(Known(), ", "))
}

// parseBaseURL parses a base URL. Its error shows the URL as messages show
// one (see redact.URL), since a key may be written in it (a password, a
// query's api_key) and the error lands in logs.
func parseBaseURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, errors.New("base URL is not a URL: it must be an absolute http:// or https:// URL")
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("base URL %q must be an absolute http:// or https:// URL", redact.URL(raw))
	}
	return u, nil
}

// azureCompletionTokens is the first Azure OpenAI api-version that takes
// max_completion_tokens (versions are dates, so they compare as text).
const azureCompletionTokens = "2024-09-01"

// isOpenAIHost reports whether u is OpenAI's own API, which needs a key
// and knows max_completion_tokens.
func isOpenAIHost(u *url.URL) bool {
	host := u.Hostname()
	return host == "openai.com" || strings.HasSuffix(host, ".openai.com")
}

// withV1 appends the API version to an Anthropic root URL unless it is there.
func withV1(root string) string {
	root = strings.TrimRight(root, "/")
	if strings.HasSuffix(root, "/v1") {
		return root
	}
	return root + "/v1"
}

// ollamaBaseURL derives the OpenAI-compatible base from OLLAMA_HOST, which,
// as Ollama itself reads it, may omit the scheme ("localhost:11434"), the port
// ("example.com") or both.
func ollamaBaseURL(host string) string {
	host = strings.TrimSpace(host)
	if host == "" {
		return "http://localhost:11434/v1"
	}
	scheme, rest, hasScheme := strings.Cut(host, "://")
	if !hasScheme {
		scheme, rest = "http", host
	}
	hostport, path, _ := strings.Cut(rest, "/")
	name, port, err := net.SplitHostPort(hostport)
	if err != nil {
		name, port = strings.Trim(hostport, "[]"), ""
	}
	if name == "" {
		name = "localhost"
	}
	// Without a scheme the port defaults to Ollama's; with one, to the scheme's.
	if port == "" && !hasScheme {
		port = "11434"
	}
	hostport = name
	if port != "" {
		hostport = net.JoinHostPort(name, port)
	} else if strings.Contains(name, ":") {
		hostport = "[" + name + "]"
	}
	base := scheme + "://" + hostport
	if path = strings.Trim(path, "/"); path != "" {
		base += "/" + path
	}
	return base + "/v1"
}

// hint tells the user where to look after an authentication failure.
func hint(ep endpoint) string {
	if ep.keyEnv == "" {
		return ""
	}
	return "check " + ep.keyEnv
}

func firstNonEmpty(values ...string) string {
	for _, v := range values {
		if v = strings.TrimSpace(v); v != "" {
			return v
		}
	}
	return ""
}
