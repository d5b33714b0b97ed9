// Package providers turns a spec's "provider:model" reference into a
// langchaingo llms.Model fit for a multi-round tool loop.
//
// Where langchaingo v0.1.14's clients cannot carry what the APIs need
// (thinking blocks, reasoning content, refusals, stream errors, tool calls
// streamed by index, failed tool results), the models are built on the
// providers' official SDKs: Anthropic's Messages API on anthropic-sdk-go,
// OpenAI's Chat Completions (and every OpenAI-compatible server) and
// Responses APIs on openai-go, Bedrock's Converse on aws-sdk-go-v2 (SigV4 or
// a bearer token), and Gemini's generateContent on Vertex AI as REST with
// Application Default Credentials from cloud.google.com/go/auth, which also
// authorize Claude on Vertex AI, the Messages model with its requests
// rewritten for Anthropic's publisher models there. They keep
// langchaingo's llms.Model interface, and carry what its types cannot say by
// the typed codec in codec.go (Info, SetInfo, ReadInfo and the block parts).
//
// Every model talks HTTP through a Doer that bounds each attempt with a
// timeout, retries 429s, 5xx and transient network failures with backoff
// (honouring Retry-After), and turns a final failure into an *Error that
// Describe renders in one line. An error event inside a stream is retried
// or reported the same way.
//
// Every model_settings key reaches the wire or is refused before any request,
// by Validate, with an *UnsupportedSettingError naming the key and the
// provider. Options.Transport is where Recorder and Replayer plug in, for
// tests that replay a real conversation without a network; a recording keeps
// the endpoint it was made against, so its replay needs neither an API key
// nor the base URL. The providertest package has fake servers for both wire
// protocols.
package providers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"cloud.google.com/go/auth"
	"github.com/tmc/langchaingo/llms"

	"github.com/agentspec/agentspec/spec"
)

// Dialect is spec.Dialect: how the agent loop replays an assistant turn to a
// model whose responses carry no InfoTurn, the OpenAI shape (one message
// holding text and every tool call) or the Anthropic shape (one message per
// block). This package's models take either, and return InfoTurn.
type Dialect = spec.Dialect

// The dialects a Model can have.
const (
	DialectOpenAI    = spec.DialectOpenAI
	DialectAnthropic = spec.DialectAnthropic
)

// Model is a configured provider client, safe for concurrent use.
//
// The spec's model settings are applied to every call; of the caller's call
// options, the tools, the tool choice, the streaming function and a nonzero
// temperature or max tokens are read.
// Its errors are an *Error when the provider failed (Describe renders them),
// wrap the context's error when the call was canceled, and wrap ErrReplay
// when a Replayer refused the request.
type Model struct {
	llms.Model
	Provider string // "openai", "anthropic", "ollama", ...
	Name     string // the model name after the colon
	Dialect  Dialect
	// Client names the library that speaks to the API, for messages:
	// "anthropic-sdk-go", "openai-go", "aws-sdk-go-v2" or
	// "cloud.google.com/go/auth".
	Client string
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
	// NativeTools are the provider-side tools the capabilities ask for, sent
	// with every request; New refuses a kind the provider does not run
	// (HasNative tells beforehand).
	NativeTools []NativeTool
	// Credentials, when set, keeps what the AWS credential chain and
	// Google's Application Default Credentials found for the models built
	// with it to share, a Vertex AI token included (see CredentialCache);
	// nil looks them up for each model.
	Credentials *CredentialCache

	// retry overrides the retry policy, so tests need not sleep.
	retry *retryPolicy
}

// Defaults for what a spec leaves out.
const (
	// DefaultTimeout bounds one attempt of a request, response body
	// included, when the spec sets no model_settings.timeout.
	DefaultTimeout = 10 * time.Minute
	// DefaultTemperature is sent when the spec sets none: some clients would
	// send 0 otherwise, and one value everywhere keeps runs comparable. It is
	// not sent to Claude beside a top_p the spec sets (defaultBesideTopP).
	DefaultTemperature = 1.0
	// DefaultMaxTokens bounds a response when the spec sets no max_tokens
	// (the Anthropic API requires a bound). With thinking on, the thinking
	// budget is added to it.
	DefaultMaxTokens = 4096
)

// ErrMissingKey is wrapped by the error New returns when the provider's API
// key variable is unset.
var ErrMissingKey = errors.New("API key not set")

// ErrUnavailable is wrapped by the error Validate returns for a provider a
// spec may name but agentspec cannot run; the message says why.
var ErrUnavailable = errors.New("provider not available")

// placeholderToken is sent to OpenAI-compatible local servers that need no
// key: the client refuses an empty one.
const placeholderToken = "no-key"

// scriptProvider is built by the runtime, never here, but a user may write it.
const scriptProvider = "script"

// Known returns every provider name a model reference may use, sorted,
// those agentspec cannot run included (Validate says why for them): the
// spec package's list, which this package's table serves.
func Known() []string { return spec.KnownProviders() }

// UnsupportedSettingError is returned by New and Validate when the spec sets
// a model setting the provider cannot honour: sending it would be refused,
// and dropping it would hide that it has no effect.
type UnsupportedSettingError struct {
	Provider string
	Setting  string // the model_settings key, e.g. "logit_bias"
	Reason   string // why, when more than "the API has no such field"
}

func (e *UnsupportedSettingError) Error() string {
	msg := fmt.Sprintf("%s does not support model_settings.%s", e.Provider, e.Setting)
	if e.Reason != "" {
		msg += ": " + e.Reason
	}
	return msg
}

// Validate checks what New checks that depends on ref and settings alone,
// reading no environment: the reference's form, the provider's name, and the
// settings the provider cannot honour (each an *UnsupportedSettingError,
// joined). A program can call it before it has keys, e.g. to report a spec's
// problems at their positions.
func Validate(ref string, settings spec.ModelSettings) error {
	name, model, err := parseRef(ref)
	if err != nil {
		return err
	}
	if name == scriptProvider {
		return fmt.Errorf("model provider %q is built by the runtime, not by providers.New", name)
	}
	p, ok := providerFor(name, model)
	if !ok {
		return unknownProvider(name)
	}
	if p.unavailable != "" {
		return fmt.Errorf("%s: %w: %s", name, ErrUnavailable, p.unavailable)
	}
	return errors.Join(checkSettings(p, model, settings)...)
}

func dialectOf(p provider) Dialect {
	if p.api == apiAnthropic {
		return DialectAnthropic
	}
	return DialectOpenAI
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
	name, model, _ := parseRef(ref)
	p, _ := providerFor(name, model)
	if err := checkNative(p, opts.NativeTools); err != nil {
		return nil, err
	}
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	ep, err := endpointFor(name, model, settings.BaseURL, getenv, opts.Transport)
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
		retry:   policy,
		onRetry: opts.OnRetry,
	}
	if ep.sigv4 {
		creds, region, err := awsCredentials(name, ep.region, getenv, opts.Transport, opts.Credentials)
		if err != nil {
			return nil, err
		}
		if region == "" {
			return nil, fmt.Errorf("%s: no AWS region: set AWS_REGION or AWS_DEFAULT_REGION, or region in the AWS profile", name)
		}
		d.sign = sigv4Signer(creds, region, "bedrock-mantle")
	}
	c := common{provider: p, ep: ep, model: model, settings: settings, doer: d, native: opts.NativeTools}
	out := &Model{Provider: name, Name: model, Dialect: ep.dialect}
	switch p.api {
	case apiBedrock:
		m, err := newBedrock(c, getenv, opts.Transport, opts.Credentials)
		if err != nil {
			return nil, err
		}
		out.Model, out.Client = generatorOf(c, m), "aws-sdk-go-v2"
	case apiGemini:
		m, err := newGemini(c, getenv, opts.Transport, opts.Credentials)
		if err != nil {
			return nil, err
		}
		out.Model, out.Client = generatorOf(c, m), "cloud.google.com/go/auth"
	case apiAnthropic:
		var creds *auth.Credentials
		if p.vertex {
			var err error
			if creds, err = vertexCredentials(&c, getenv, opts.Transport, opts.Credentials); err != nil {
				return nil, err
			}
		}
		out.Model, out.Client = generatorOf(c, newAnthropic(c, creds)), "anthropic-sdk-go"
	case apiResponses:
		out.Model, out.Client = generatorOf(c, newResponses(c)), "openai-go"
	default:
		organization := ""
		if name == "openai" || name == "openai-chat" {
			organization = getenv("OPENAI_ORGANIZATION")
		}
		out.Model, out.Client = generatorOf(c, newChat(c, organization)), "openai-go"
	}
	return out, nil
}

// common is what every model of this package is built from.
type common struct {
	provider provider
	ep       endpoint
	model    string
	settings spec.ModelSettings
	doer     *doer
	native   []NativeTool
}

// wrap gives an error the provider's name and a cause errors.Is can match.
func (c common) wrap(ctx context.Context, err error) error {
	var perr *Error
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("%s: %w", c.ep.provider, context.Cause(ctx))
	case errors.As(err, &perr):
		return perr
	case errors.Is(err, errAttemptTimeout):
		// The time ran out while the body, streamed or whole, was being
		// read: the doer had returned the response by then.
		return &Error{Provider: c.ep.provider, timeout: c.doer.timeout}
	case errors.Is(err, ErrReplay):
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("%s: %w", c.ep.provider, err)
	case strings.HasPrefix(err.Error(), c.ep.provider+":"):
		return err
	default:
		return fmt.Errorf("%s: %w", c.ep.provider, err)
	}
}

// readOptions applies the caller's call options; of them, this package's
// models read the tools, the tool choice, the streaming function, and a
// nonzero temperature or max tokens.
func readOptions(options []llms.CallOption) llms.CallOptions {
	var o llms.CallOptions
	for _, opt := range options {
		opt(&o)
	}
	return o
}

// defaultBesideTopP tells whether the temperature a Claude request would
// carry is only DefaultTemperature, beside a top_p the spec sets: the newer
// Claude models refuse the two together ("temperature and top_p cannot both
// be specified"), so the default is left out and the spec's choice kept.
func defaultBesideTopP(s spec.ModelSettings, opts llms.CallOptions) bool {
	return s.TopP != nil && s.Temperature == nil && opts.Temperature == 0
}
