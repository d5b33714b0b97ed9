// Package providers turns a spec's "provider:model" reference into a
// langchaingo model fit for a multi-round tool loop.
//
// Every model talks HTTP through a Doer that langchaingo's clients accept via
// WithHTTPClient. The Doer bounds each attempt with a timeout, retries 429s,
// 5xx and transient network failures with backoff (honouring Retry-After),
// turns a final failure into an *Error that Describe renders in one line, and
// rewrites the JSON request body where langchaingo v0.1.14 falls short of the
// APIs: Anthropic turns are merged, tool_choice and parallel tool use are
// forwarded, OpenAI-compatible servers get the max_tokens field they accept,
// and the settings langchaingo has no field for are added.
//
// Every model_settings key reaches the wire or is refused before any request:
// top_p, seed, presence_penalty, frequency_penalty and logit_bias are added
// to OpenAI-dialect bodies; Anthropic's API has no seed, penalties or logit
// bias, so New (and Validate) fail with an *UnsupportedSettingError when a
// spec sets them for it. extra_headers are set on every attempt. extra_body's
// members are merged last into the top level of every request body, either
// dialect: a member named like a generated one replaces it (extra_body
// {temperature: 0} wins over model_settings.temperature; extra_body
// {messages: ...} would replace the conversation), which is what it is for:
// reaching API fields this package does not know.
//
// WithToolChoiceNone marks a request that keeps its tools but may not call
// them, for every dialect. Options.Transport is where Recorder and Replayer
// plug in, for tests that replay a real conversation without a network; a
// recording keeps the endpoint it was made against, so its replay needs
// neither an API key nor the base URL. The providertest package has fake
// servers for both wire protocols.
package providers

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/anthropic"
	"github.com/tmc/langchaingo/llms/openai"

	"github.com/agentspec/agentspec/spec"

	"github.com/agentspec/agentspec/internal/suggest"
)

// Dialect selects how the agent loop replays an assistant turn: the OpenAI
// shape (one message holding text and every tool call) and the Anthropic shape
// (one message per content block) are each rejected by the other API.
type Dialect string

// The dialects a Model can have.
const (
	DialectOpenAI    Dialect = "openai"
	DialectAnthropic Dialect = "anthropic"
)

// Model is a configured provider client, safe for concurrent use.
//
// The embedded llms.Model applies the spec's model settings (temperature, max
// tokens, seed, ...) to every call as defaults the caller's own options
// override. Its errors are an *Error when the provider failed (Describe
// renders them), wrap the context's error when the call was canceled, and
// wrap ErrReplay when a Replayer refused the request.
type Model struct {
	llms.Model
	Provider string // "openai", "anthropic", "ollama", ...
	Name     string // the model name after the colon
	Dialect  Dialect
}

// Options are the process-level inputs of New.
type Options struct {
	// Getenv reads API keys and base URLs; nil means os.Getenv.
	Getenv func(string) string
	// Transport carries the HTTP requests, e.g. a Recorder or a Replayer;
	// nil means a transport with dial and TLS handshake timeouts. Each attempt
	// is bounded by model_settings.timeout (DefaultTimeout when unset).
	Transport http.RoundTripper
	// OnRetry, when set, is told about each retry before its wait; calls
	// made concurrently report concurrently.
	OnRetry func(RetryInfo)

	// retry overrides the retry policy, so tests need not sleep.
	retry *retryPolicy
}

// DefaultTimeout bounds one attempt of a request, response body included,
// when the spec sets no model_settings.timeout.
const DefaultTimeout = 10 * time.Minute

// ErrMissingKey is wrapped by the error New returns when the provider's API
// key variable is unset.
var ErrMissingKey = errors.New("API key not set")

// placeholderToken is sent to OpenAI-compatible local servers that need no
// key: the client refuses an empty one.
const placeholderToken = "no-key"

// compatible are the hosted OpenAI-compatible providers: a fixed base URL and
// their own key variable.
var compatible = map[string]struct{ keyEnv, baseURL string }{
	"deepseek":   {"DEEPSEEK_API_KEY", "https://api.deepseek.com/v1"},
	"groq":       {"GROQ_API_KEY", "https://api.groq.com/openai/v1"},
	"mistral":    {"MISTRAL_API_KEY", "https://api.mistral.ai/v1"},
	"openrouter": {"OPENROUTER_API_KEY", "https://openrouter.ai/api/v1"},
	"together":   {"TOGETHER_API_KEY", "https://api.together.xyz/v1"},
}

// scriptProvider is built by the runtime, never here, but a user may write it.
const scriptProvider = "script"

// Known returns every provider name a model reference may use, sorted.
func Known() []string {
	names := []string{"anthropic", "ollama", "openai", scriptProvider}
	for name := range compatible {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// UnsupportedSettingError is returned by New and Validate when the spec sets
// a model setting the provider's API has no field for: sending it would be
// refused, and dropping it would hide that it has no effect.
type UnsupportedSettingError struct {
	Provider string
	Setting  string // the model_settings key, e.g. "logit_bias"
}

func (e *UnsupportedSettingError) Error() string {
	return fmt.Sprintf("%s does not support model_settings.%s", e.Provider, e.Setting)
}

// Validate checks what New checks that depends on ref and settings alone,
// reading no environment: the reference's form, the provider's name, and the
// settings the provider cannot honour (each an *UnsupportedSettingError,
// joined). A program can call it before it has keys, e.g. to report a spec's
// problems at their positions.
func Validate(ref string, settings spec.ModelSettings) error {
	provider, _, err := parseRef(ref)
	if err != nil {
		return err
	}
	switch {
	case provider == scriptProvider:
		return fmt.Errorf("model provider %q is built by the runtime, not by providers.New", provider)
	case !slices.Contains(Known(), provider):
		return unknownProvider(provider)
	}
	var errs []error
	if dialectOf(provider) == DialectAnthropic {
		for _, unsupported := range []struct {
			key string
			set bool
		}{
			{"seed", settings.Seed != nil},
			{"presence_penalty", settings.PresencePenalty != nil},
			{"frequency_penalty", settings.FrequencyPenalty != nil},
			{"logit_bias", len(settings.LogitBias) > 0},
		} {
			if unsupported.set {
				errs = append(errs, &UnsupportedSettingError{Provider: provider, Setting: unsupported.key})
			}
		}
	}
	if _, _, err := bodyMembers(dialectOf(provider), settings); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func dialectOf(provider string) Dialect {
	if provider == "anthropic" {
		return DialectAnthropic
	}
	return DialectOpenAI
}

// endpoint is everything New resolves before building a client.
type endpoint struct {
	provider string
	dialect  Dialect
	baseURL  string
	token    string
	// keyEnv names the variable the key comes from, for error hints.
	keyEnv string
	// legacyMaxTokens sends max_tokens instead of max_completion_tokens,
	// which only OpenAI's own API knows.
	legacyMaxTokens bool
}

// New builds the model for ref ("provider:model"). It checks the provider's
// key and base URL before any request, so a missing key is reported at once
// and by its variable name. With a Replayer as Options.Transport whose
// recording names its endpoint, the recorded provider, base URL and request
// shape are used instead and no key is needed; with a Recorder, the endpoint
// is written into the recording.
func New(ref string, settings spec.ModelSettings, opts Options) (*Model, error) {
	if err := Validate(ref, settings); err != nil {
		return nil, err
	}
	provider, name, _ := parseRef(ref)
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	ep, err := endpointFor(provider, settings.BaseURL, getenv, opts.Transport)
	if err != nil {
		return nil, err
	}
	rewrite, err := rewriter(ep, settings)
	if err != nil {
		return nil, err
	}

	timeout := settings.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	transport := opts.Transport
	if transport == nil {
		transport = newTransport()
	}
	policy := defaultRetry
	if opts.retry != nil {
		policy = *opts.retry
	}
	d := &doer{
		ep:      ep,
		client:  &http.Client{Transport: transport},
		timeout: timeout,
		headers: settings.ExtraHeaders,
		rewrite: rewrite,
		retry:   policy,
		onRetry: opts.OnRetry,
	}

	var llm llms.Model
	switch ep.dialect {
	case DialectAnthropic:
		llm, err = anthropic.New(
			anthropic.WithModel(name),
			anthropic.WithToken(ep.token),
			anthropic.WithBaseURL(ep.baseURL),
			anthropic.WithHTTPClient(d),
		)
	default:
		organization := ""
		if provider == "openai" {
			organization = getenv("OPENAI_ORGANIZATION")
		}
		llm, err = openai.New(
			openai.WithModel(name),
			openai.WithToken(ep.token),
			openai.WithBaseURL(ep.baseURL),
			// Without this, langchaingo would read OPENAI_ORGANIZATION from
			// the process and send it to every compatible provider.
			openai.WithOrganization(organization),
			openai.WithHTTPClient(d),
		)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", provider, err)
	}
	return &Model{
		Model:    &chatModel{llm: llm, provider: provider, defaults: callOptions(settings)},
		Provider: provider,
		Name:     name,
		Dialect:  ep.dialect,
	}, nil
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

// endpointFor resolves the endpoint of a provider, or takes it from the
// recording a Replayer serves.
func endpointFor(provider, baseURL string, getenv func(string) string, transport http.RoundTripper) (endpoint, error) {
	if rp, ok := transport.(*Replayer); ok {
		if ep, recorded, err := rp.endpoint(provider); recorded || err != nil {
			return ep, err
		}
	}
	ep, err := resolve(provider, baseURL, getenv)
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
func resolve(provider, baseURL string, getenv func(string) string) (endpoint, error) {
	ep := endpoint{provider: provider, dialect: dialectOf(provider), legacyMaxTokens: true}
	switch provider {
	case "openai":
		ep.keyEnv = "OPENAI_API_KEY"
		ep.baseURL = firstNonEmpty(baseURL, getenv("OPENAI_BASE_URL"), getenv("OPENAI_API_BASE"), "https://api.openai.com/v1")
		ep.token = getenv(ep.keyEnv)
		official, err := isOpenAIHost(ep.baseURL)
		if err != nil {
			return ep, fmt.Errorf("openai: %w", err)
		}
		ep.legacyMaxTokens = !official
		if ep.token == "" {
			if official {
				return ep, missingKey(ep)
			}
			// Local servers (vLLM, llama.cpp, LM Studio) need no key.
			ep.token = placeholderToken
		}
		return ep, nil
	case "anthropic":
		ep.keyEnv = "ANTHROPIC_API_KEY"
		ep.legacyMaxTokens = false
		ep.baseURL = "https://api.anthropic.com/v1"
		// ANTHROPIC_BASE_URL is the API root, as in Anthropic's SDKs, while
		// langchaingo's base includes the version.
		if root := firstNonEmpty(baseURL, getenv("ANTHROPIC_BASE_URL")); root != "" {
			ep.baseURL = withV1(root)
		}
		ep.token = getenv(ep.keyEnv)
	case "ollama":
		ep.baseURL = firstNonEmpty(baseURL, ollamaBaseURL(getenv("OLLAMA_HOST")))
		ep.token = "ollama"
	case scriptProvider:
		return ep, fmt.Errorf("model provider %q is built by the runtime, not by providers.New", provider)
	default:
		c, ok := compatible[provider]
		if !ok {
			return ep, unknownProvider(provider)
		}
		ep.keyEnv = c.keyEnv
		ep.baseURL = firstNonEmpty(baseURL, c.baseURL)
		ep.token = getenv(c.keyEnv)
	}
	if _, err := parseBaseURL(ep.baseURL); err != nil {
		return ep, fmt.Errorf("%s: %w", provider, err)
	}
	if ep.token == "" {
		return ep, missingKey(ep)
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

func parseBaseURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("base URL %q must be an absolute http:// or https:// URL", raw)
	}
	return u, nil
}

// isOpenAIHost reports whether base is OpenAI's own API, which needs a key
// and knows max_completion_tokens.
func isOpenAIHost(base string) (bool, error) {
	u, err := parseBaseURL(base)
	if err != nil {
		return false, err
	}
	host := u.Hostname()
	return host == "openai.com" || strings.HasSuffix(host, ".openai.com"), nil
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

// chatModel applies the spec's settings to every call and gives errors the
// provider's name and a cause that errors.Is can match.
type chatModel struct {
	llm      llms.Model
	provider string
	defaults []llms.CallOption
}

func (m *chatModel) GenerateContent(ctx context.Context, messages []llms.MessageContent, options ...llms.CallOption) (*llms.ContentResponse, error) {
	opts := append(slices.Clip(m.defaults), options...)
	resp, err := m.llm.GenerateContent(ctx, messages, opts...)
	if err != nil {
		return nil, m.wrap(ctx, err)
	}
	return resp, nil
}

// Call implements the deprecated half of llms.Model.
func (m *chatModel) Call(ctx context.Context, prompt string, options ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, m, prompt, options...)
}

func (m *chatModel) wrap(ctx context.Context, err error) error {
	var perr *Error
	switch {
	case ctx.Err() != nil:
		// The openai client flattens a cancellation into a plain string.
		return fmt.Errorf("%s: %w", m.provider, context.Cause(ctx))
	case errors.As(err, &perr):
		// langchaingo's wrapping adds nothing to the provider's own words.
		return perr
	case strings.HasPrefix(err.Error(), m.provider+":"):
		return err
	default:
		return fmt.Errorf("%s: %w", m.provider, err)
	}
}

// callOptions are the settings langchaingo's clients accept as call options.
// Top-p and parallel tool calls, which they drop, are added to the body by
// the rewriter.
func callOptions(s spec.ModelSettings) []llms.CallOption {
	var opts []llms.CallOption
	if s.Temperature != nil {
		opts = append(opts, llms.WithTemperature(*s.Temperature))
	}
	if s.MaxTokens > 0 {
		opts = append(opts, llms.WithMaxTokens(s.MaxTokens))
	}
	if s.TopP != nil {
		opts = append(opts, llms.WithTopP(*s.TopP))
	}
	if s.Seed != nil {
		opts = append(opts, llms.WithSeed(*s.Seed))
	}
	if s.PresencePenalty != nil {
		opts = append(opts, llms.WithPresencePenalty(*s.PresencePenalty))
	}
	if s.FrequencyPenalty != nil {
		opts = append(opts, llms.WithFrequencyPenalty(*s.FrequencyPenalty))
	}
	if len(s.StopSequences) > 0 {
		opts = append(opts, llms.WithStopWords(s.StopSequences))
	}
	return opts
}
