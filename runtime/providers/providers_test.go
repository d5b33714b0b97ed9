package providers

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/spec"
)

func TestNewRejects(t *testing.T) {
	t.Parallel()
	known := strings.Join(Known(), ", ")
	tests := []struct {
		name       string
		ref        string
		env        []string
		baseURL    string
		want       string
		missingKey bool
	}{
		{name: "no provider", ref: "gpt-4o",
			want: `model "gpt-4o" must be written provider:model, e.g. openai:gpt-4o or anthropic:claude-sonnet-4-5; providers: ` + known},
		{name: "no model", ref: "openai:", want: `model "openai:" names no model after "openai:"`},
		{name: "misspelt provider", ref: "opnai:gpt-4o",
			want: `unknown model provider "opnai" (did you mean "openai"?); known providers: ` + known},
		{name: "unknown provider", ref: "watsonx:granite", want: `unknown model provider "watsonx"; known providers: ` + known},
		{name: "script", ref: "script:turns.yaml", want: `model provider "script" is built by the runtime, not by providers.New`},
		{name: "openai key", ref: "openai:gpt-4o", missingKey: true,
			want: "openai: API key not set: set the OPENAI_API_KEY environment variable"},
		{name: "openai key with OpenAI's base URL", ref: "openai:gpt-4o", env: []string{"OPENAI_BASE_URL", "https://api.openai.com/v1"},
			missingKey: true, want: "openai: API key not set: set the OPENAI_API_KEY environment variable"},
		{name: "anthropic key", ref: "anthropic:claude-sonnet-4-5", missingKey: true,
			want: "anthropic: API key not set: set the ANTHROPIC_API_KEY environment variable"},
		{name: "anthropic key behind a proxy", ref: "anthropic:claude-sonnet-4-5", baseURL: "http://localhost:4000", missingKey: true,
			want: "anthropic: API key not set: set the ANTHROPIC_API_KEY environment variable"},
		{name: "groq key is not OPENAI_API_KEY", ref: "groq:llama-3.3-70b-versatile", env: []string{"OPENAI_API_KEY", "sk-test"},
			missingKey: true, want: "groq: API key not set: set the GROQ_API_KEY environment variable"},
		{name: "openrouter key", ref: "openrouter:openai/gpt-4o", missingKey: true,
			want: "openrouter: API key not set: set the OPENROUTER_API_KEY environment variable"},
		{name: "base URL without scheme", ref: "openai:qwen3", baseURL: "localhost:8000",
			want: `openai: base URL "localhost:8000" must be an absolute http:// or https:// URL`},
		{name: "ollama base URL", ref: "ollama:llama3.2", baseURL: "/v1",
			want: `ollama: base URL "/v1" must be an absolute http:// or https:// URL`},
		// A base URL is shown as a server's URL is everywhere: without the
		// password, query or path segment where a token may be.
		{name: "base URL without scheme holding a key", ref: "openai:qwen3", baseURL: "api.example.com:443/v1/sk-4f9a0c7d2b?api_key=sk-secret",
			want: `openai: base URL "api.example.com:443/v1/…?…" must be an absolute http:// or https:// URL`},
		{name: "base URL with a password", ref: "openai:qwen3", baseURL: "ftp://user:sk-secret@host/v1",
			want: `openai: base URL "ftp://user:xxxxx@host/v1" must be an absolute http:// or https:// URL`},
		{name: "base URL that does not parse", ref: "openai:qwen3", baseURL: "https://user:sk secret@host/v1",
			want: `openai: base URL is not a URL: it must be an absolute http:// or https:// URL`},
		{name: "azure endpoint holding a key", ref: "azure:gpt-4o", env: []string{"AZURE_OPENAI_API_KEY", "sk"},
			baseURL: "https://user:sk-secret@res.openai.azure.com/openai?api-key=sk-secret",
			want:    `azure: set OPENAI_API_VERSION for the endpoint https://user:xxxxx@res.openai.azure.com/openai?…, or use its /openai/v1 endpoint`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, err := New(tt.ref, spec.ModelSettings{BaseURL: tt.baseURL}, Options{Getenv: env(tt.env...)})
			require.Error(t, err)
			assert.Nil(t, m)
			assert.Equal(t, tt.want, err.Error())
			assert.NotContains(t, err.Error(), "sk-secret")
			assert.Equal(t, tt.missingKey, errors.Is(err, ErrMissingKey))
		})
	}
}

func TestResolve(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		provider string
		env      []string
		baseURL  string
		want     endpoint
	}{
		{name: "openai", provider: "openai", env: []string{"OPENAI_API_KEY", "sk"},
			want: endpoint{dialect: DialectOpenAI, baseURL: "https://api.openai.com/v1", token: "sk", keyEnv: "OPENAI_API_KEY"}},
		{name: "openai OPENAI_API_BASE", provider: "openai", env: []string{"OPENAI_API_KEY", "sk", "OPENAI_API_BASE", "http://vllm:8000/v1"},
			want: endpoint{dialect: DialectOpenAI, baseURL: "http://vllm:8000/v1", token: "sk", keyEnv: "OPENAI_API_KEY", legacyMaxTokens: true}},
		{name: "OPENAI_BASE_URL wins", provider: "openai",
			env:  []string{"OPENAI_BASE_URL", "http://a:1/v1", "OPENAI_API_BASE", "http://b:2/v1"},
			want: endpoint{dialect: DialectOpenAI, baseURL: "http://a:1/v1", token: placeholderToken, keyEnv: "OPENAI_API_KEY", legacyMaxTokens: true}},
		{name: "base_url wins over the environment", provider: "openai", baseURL: "http://localhost:1234/v1",
			env:  []string{"OPENAI_BASE_URL", "http://a:1/v1"},
			want: endpoint{dialect: DialectOpenAI, baseURL: "http://localhost:1234/v1", token: placeholderToken, keyEnv: "OPENAI_API_KEY", legacyMaxTokens: true}},
		{name: "azure-style openai subdomain needs a key", provider: "openai", baseURL: "https://eu.api.openai.com/v1", env: []string{"OPENAI_API_KEY", "sk"},
			want: endpoint{dialect: DialectOpenAI, baseURL: "https://eu.api.openai.com/v1", token: "sk", keyEnv: "OPENAI_API_KEY"}},
		{name: "anthropic", provider: "anthropic", env: []string{"ANTHROPIC_API_KEY", "sk-ant"},
			want: endpoint{dialect: DialectAnthropic, baseURL: "https://api.anthropic.com/v1", token: "sk-ant", keyEnv: "ANTHROPIC_API_KEY"}},
		{name: "ANTHROPIC_BASE_URL gets /v1", provider: "anthropic", env: []string{"ANTHROPIC_API_KEY", "k", "ANTHROPIC_BASE_URL", "https://proxy.example.com/"},
			want: endpoint{dialect: DialectAnthropic, baseURL: "https://proxy.example.com/v1", token: "k", keyEnv: "ANTHROPIC_API_KEY"}},
		{name: "anthropic base_url with /v1 keeps it", provider: "anthropic", baseURL: "https://proxy.example.com/v1/", env: []string{"ANTHROPIC_API_KEY", "k"},
			want: endpoint{dialect: DialectAnthropic, baseURL: "https://proxy.example.com/v1", token: "k", keyEnv: "ANTHROPIC_API_KEY"}},
		{name: "ollama default", provider: "ollama",
			want: endpoint{dialect: DialectOpenAI, baseURL: "http://localhost:11434/v1", token: "ollama", legacyMaxTokens: true}},
		{name: "ollama base_url", provider: "ollama", baseURL: "http://gpu-box:11434/v1", env: []string{"OLLAMA_HOST", "ignored:1"},
			want: endpoint{dialect: DialectOpenAI, baseURL: "http://gpu-box:11434/v1", token: "ollama", legacyMaxTokens: true}},
		{name: "groq", provider: "groq", env: []string{"GROQ_API_KEY", "gsk"},
			want: endpoint{dialect: DialectOpenAI, baseURL: "https://api.groq.com/openai/v1", token: "gsk", keyEnv: "GROQ_API_KEY", legacyMaxTokens: true}},
		{name: "mistral", provider: "mistral", env: []string{"MISTRAL_API_KEY", "m"},
			want: endpoint{dialect: DialectOpenAI, baseURL: "https://api.mistral.ai/v1", token: "m", keyEnv: "MISTRAL_API_KEY", legacyMaxTokens: true}},
		{name: "deepseek", provider: "deepseek", env: []string{"DEEPSEEK_API_KEY", "d"},
			want: endpoint{dialect: DialectOpenAI, baseURL: "https://api.deepseek.com/v1", token: "d", keyEnv: "DEEPSEEK_API_KEY", legacyMaxTokens: true}},
		{name: "together", provider: "together", env: []string{"TOGETHER_API_KEY", "t"},
			want: endpoint{dialect: DialectOpenAI, baseURL: "https://api.together.xyz/v1", token: "t", keyEnv: "TOGETHER_API_KEY", legacyMaxTokens: true}},
		{name: "openrouter", provider: "openrouter", env: []string{"OPENROUTER_API_KEY", "o"},
			want: endpoint{dialect: DialectOpenAI, baseURL: "https://openrouter.ai/api/v1", token: "o", keyEnv: "OPENROUTER_API_KEY", legacyMaxTokens: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := resolve(tt.provider, tt.baseURL, env(tt.env...))
			require.NoError(t, err)
			tt.want.provider = tt.provider
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestOllamaBaseURL(t *testing.T) {
	t.Parallel()
	tests := []struct{ host, want string }{
		{"", "http://localhost:11434/v1"},
		{"localhost:11434", "http://localhost:11434/v1"},
		{"0.0.0.0", "http://0.0.0.0:11434/v1"},
		{":8080", "http://localhost:8080/v1"},
		{"gpu-box", "http://gpu-box:11434/v1"},
		{"http://gpu-box", "http://gpu-box/v1"},
		{"https://ollama.example.com", "https://ollama.example.com/v1"},
		{"https://example.com:8443/ollama/", "https://example.com:8443/ollama/v1"},
		{"[::1]:11434", "http://[::1]:11434/v1"},
		{"::1", "http://[::1]:11434/v1"},
		{" 10.0.0.5:9000 ", "http://10.0.0.5:9000/v1"},
	}
	for _, tt := range tests {
		t.Run(tt.host, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.want, ollamaBaseURL(tt.host))
		})
	}
}

func TestKnownProvidersResolve(t *testing.T) {
	t.Parallel()
	var kv []string
	for _, p := range table {
		for _, k := range p.keyEnvs {
			kv = append(kv, k, "k")
		}
	}
	keys := env(append(kv, "AZURE_OPENAI_ENDPOINT", "https://example.openai.azure.com/openai/v1",
		"SNOWFLAKE_ACCOUNT", "acme", "AWS_REGION", "us-east-1")...)
	for _, name := range Known() {
		p, _ := lookup(name)
		if name == scriptProvider || p.unavailable != "" {
			continue
		}
		_, err := resolve(name, "", keys)
		assert.NoError(t, err, name)
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	all := spec.ModelSettings{
		Seed: ptr(1), PresencePenalty: ptr(0.0), FrequencyPenalty: ptr(0.5),
		LogitBias: map[string]int{"50256": -100}, ExtraBody: map[string]any{"reasoning_effort": "low"},
	}
	tests := []struct {
		name     string
		ref      string
		settings spec.ModelSettings
		want     []string // the unsupported settings, in order; nil for none
		err      string   // another error
	}{
		{name: "openai takes every setting", ref: "openai:gpt-4o", settings: all},
		{name: "compatible providers too", ref: "groq:llama", settings: all},
		{name: "anthropic has no seed, penalties or logit bias", ref: "anthropic:claude-sonnet-4-5", settings: all,
			want: []string{"seed", "presence_penalty", "frequency_penalty", "logit_bias"}},
		{name: "anthropic takes extra_body", ref: "anthropic:claude-sonnet-4-5",
			settings: spec.ModelSettings{TopP: ptr(0.9), ExtraBody: map[string]any{"thinking": map[string]any{"type": "enabled"}}}},
		{name: "extra_body must encode", ref: "openai:gpt-4o", settings: spec.ModelSettings{ExtraBody: map[string]any{"f": func() {}}},
			err: "model_settings.extra_body.f: json: unsupported type: func()"},
		{name: "unknown provider", ref: "opnai:gpt-4o", err: `unknown model provider "opnai" (did you mean "openai"?)`},
		{name: "script", ref: "script:turns.yaml", err: `model provider "script" is built by the runtime`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := Validate(tt.ref, tt.settings)
			if tt.err != "" {
				assert.ErrorContains(t, err, tt.err)
				return
			}
			var got []string
			if err != nil {
				for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
					var unsupported *UnsupportedSettingError
					require.ErrorAs(t, e, &unsupported)
					got = append(got, unsupported.Setting)
				}
			}
			assert.Equal(t, tt.want, got)

			_, err = New(tt.ref, tt.settings, Options{Getenv: env("OPENAI_API_KEY", "k", "ANTHROPIC_API_KEY", "k", "GROQ_API_KEY", "k")})
			if tt.want == nil {
				assert.NoError(t, err)
			} else {
				assert.ErrorContains(t, err, "anthropic does not support model_settings."+tt.want[0], "New refuses what Validate refuses")
			}
		})
	}
}

// The spec package owns the list of providers a spec may name; this
// package's table serves each of them, script aside, and no other.
func TestTableServesSpecsProviders(t *testing.T) {
	t.Parallel()
	names := []string{scriptProvider}
	for _, p := range table {
		names = append(names, p.name)
	}
	slices.Sort(names)
	assert.Equal(t, spec.KnownProviders(), names)
	assert.Equal(t, spec.DialectAnthropic, dialectOf(provider{api: apiAnthropic}))
	assert.Equal(t, spec.DialectOpenAI, dialectOf(provider{api: apiResponses}))
}

// Every provider a spec may name builds a model given its credentials, or is
// refused by Validate with the reason; only GitHub Models (retired) is.
func TestEveryKnownProviderRunsOrIsRefused(t *testing.T) {
	t.Parallel()
	var kv []string
	for _, p := range table {
		for _, k := range p.keyEnvs {
			kv = append(kv, k, "k")
		}
	}
	keys := env(append(kv, "AZURE_OPENAI_ENDPOINT", "https://example.openai.azure.com/openai/v1",
		"SNOWFLAKE_ACCOUNT", "acme", "AWS_REGION", "us-east-1")...)
	var refused []string
	for _, name := range Known() {
		if name == scriptProvider {
			continue
		}
		ref := name + ":some-model"
		if err := Validate(ref, spec.ModelSettings{}); err != nil {
			require.ErrorIs(t, err, ErrUnavailable, name)
			_, reason, _ := strings.Cut(err.Error(), ErrUnavailable.Error()+": ")
			assert.NotEmpty(t, reason, name)
			refused = append(refused, name)
			continue
		}
		m, err := New(ref, spec.ModelSettings{}, Options{Getenv: keys})
		require.NoError(t, err, name)
		assert.NotEmpty(t, m.Client, name)
	}
	assert.Equal(t, []string{"github"}, refused)
}

// An extra_body member goes into the body under its name as written, dots,
// wildcards and other marks included, as on Vertex AI, not as a path into
// the body.
func TestExtraBodyKeysAreLiteral(t *testing.T) {
	t.Parallel()
	extra := map[string]any{"a.b": 1.0, "x*": 2.0, "@this": 3.0, "café.n": 4.0, "plain": map[string]any{"k.v": 5.0}}
	for _, tt := range []struct{ ref, key string }{
		{"anthropic:claude-sonnet-4-5", "ANTHROPIC_API_KEY"},
		{"openai:gpt-4o", "OPENAI_API_KEY"},
		{"openai-responses:gpt-5", "OPENAI_API_KEY"},
		{"google-vertex:gemini-2.5-flash", "GOOGLE_API_KEY"},
	} {
		body := firstBody(t, tt.ref, spec.ModelSettings{ExtraBody: extra}, env(tt.key, "test-key"))
		for k, v := range extra {
			assert.Equal(t, v, body[k], "%s: %s", tt.ref, k)
		}
		assert.NotContains(t, body, "a", tt.ref)
	}
}

// An extra_body member with an empty name, which a YAML or JSON object may
// have, is sent under it as Vertex AI sends it, not refused by the SDKs'
// path syntax ("path cannot be empty") with every request.
func TestExtraBodyEmptyName(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ ref, key string }{
		{"anthropic:claude-sonnet-4-5", "ANTHROPIC_API_KEY"},
		{"openai:gpt-4o", "OPENAI_API_KEY"},
		{"openai-responses:gpt-5", "OPENAI_API_KEY"},
		{"google-vertex:gemini-2.5-flash", "GOOGLE_API_KEY"},
	} {
		body := firstBody(t, tt.ref, spec.ModelSettings{ExtraBody: map[string]any{"": 1.0, "x": 2.0}}, env(tt.key, "test-key"))
		assert.Equal(t, 1.0, body[""], tt.ref)
		assert.Equal(t, 2.0, body["x"], tt.ref)
	}
}
