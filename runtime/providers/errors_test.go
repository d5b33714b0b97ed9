package providers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/agentspec/agentspec/runtime/providers/providertest"
	"github.com/agentspec/agentspec/spec"
)

func TestParseErrorBody(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body, typ, msg string
	}{
		{"openai", `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`,
			"invalid_request_error", "Incorrect API key provided"},
		{"openai code only", `{"error":{"message":"quota","code":"insufficient_quota"}}`, "insufficient_quota", "quota"},
		{"anthropic", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, "overloaded_error", "Overloaded"},
		{"ollama", `{"error":"model \"llama9\" not found, try pulling it first"}`, "", `model "llama9" not found, try pulling it first`},
		{"vllm", `{"object":"error","message":"The model does not exist.","type":"NotFoundError","code":404}`,
			"NotFoundError", "The model does not exist."},
		{"fastapi", `{"detail":"Not Found"}`, "", "Not Found"},
		{"html", "<html><body>502 Bad Gateway</body></html>", "", "<html><body>502 Bad Gateway</body></html>"},
		{"empty", "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			typ, msg := parseErrorBody([]byte(tt.body))
			assert.Equal(t, tt.typ, typ)
			assert.Equal(t, tt.msg, msg)
		})
	}
}

func TestDescribe(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		want string
		code llms.ErrorCode
	}{
		{"nil", nil, "", ""},
		{"not found", &Error{Provider: "openai", StatusCode: 404, Message: "The model `gpt-9` does not exist"},
			"openai: not found (404): The model `gpt-9` does not exist — check the model name and the base URL", llms.ErrCodeResourceNotFound},
		{"bad request", &Error{Provider: "anthropic", StatusCode: 400, Message: "messages.1: bad"},
			"anthropic: request rejected (400): messages.1: bad", llms.ErrCodeInvalidRequest},
		{"rate limited", &Error{Provider: "groq", StatusCode: 429, Message: "slow down", Retries: 4},
			"groq: rate limited (429) after 4 retries: slow down", llms.ErrCodeRateLimit},
		{"one retry", &Error{Provider: "openai", StatusCode: 400, Message: "Invalid 'input': empty", Retries: 1},
			"openai: request rejected (400) after 1 retry: Invalid 'input': empty", llms.ErrCodeInvalidRequest},
		{"quota", &Error{Provider: "openai", StatusCode: 429, Type: "insufficient_quota", Message: "You exceeded your current quota, please check your plan and billing details."},
			"openai: out of quota or credit (429): You exceeded your current quota, please check your plan and billing details.", llms.ErrCodeQuotaExceeded},
		{"no message", &Error{Provider: "deepseek", StatusCode: 502},
			"deepseek: provider unavailable (502): Bad Gateway", llms.ErrCodeProviderUnavailable},
		{"teapot", &Error{Provider: "openai", StatusCode: 302, Message: "moved"}, "openai: request failed (302): moved", llms.ErrCodeUnknown},
		{"wrapped", fmt.Errorf("round 3: %w", &Error{Provider: "anthropic", StatusCode: 401, Message: "invalid x-api-key", hint: "check ANTHROPIC_API_KEY"}),
			"anthropic: authentication failed (401): invalid x-api-key — check ANTHROPIC_API_KEY", llms.ErrCodeAuthentication},
		{"timeout", &Error{Provider: "ollama", timeout: 90 * time.Second},
			"ollama: no complete response within 1m30s — raise model_settings.timeout", llms.ErrCodeTimeout},
		{"other errors on one line", errors.New("anthropic: failed to create message:\n  parse response: unexpected EOF"),
			"anthropic: failed to create message: parse response: unexpected EOF", ""},
		{"canceled", fmt.Errorf("openai: %w", context.Canceled), "openai: context canceled", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.want, Describe(tt.err))
			if tt.code != "" {
				var le *llms.Error
				assert.True(t, errors.As(tt.err, &le))
				assert.Equal(t, tt.code, le.Code)
			}
		})
	}
}

func TestOneLineBoundsLength(t *testing.T) {
	t.Parallel()
	got := oneLine(strings.Repeat("é ", 400))
	assert.Equal(t, 301, len([]rune(got)))
	assert.True(t, strings.HasSuffix(got, "…"))
	assert.NotContains(t, got, "\n")
}

func TestRedact(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "bad key [redacted]!", withoutKey("bad key sk-1234567890!", "sk-1234567890"))
	assert.Equal(t, "ollama is fine", withoutKey("ollama is fine", "ollama"), "short tokens are not secrets")
}

// Google's OpenAI-compatible endpoint, and its streaming methods, send an
// error as a list holding the error object: its message is the reason, not
// the list's JSON.
func TestGoogleErrorList(t *testing.T) {
	t.Parallel()
	invalid := `[{
  "error": {
    "code": 400,
    "message": "API key not valid. Please pass a valid API key.",
    "status": "INVALID_ARGUMENT",
    "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID", "domain": "googleapis.com",
      "metadata": {"service": "generativelanguage.googleapis.com"}}]
  }
}
]`
	srv := providertest.NewRecordedServer(t, providertest.Recorded{Status: http.StatusBadRequest, Body: invalid})
	m := chatModelAt(t, srv, "google:gemini-2.5-flash", spec.ModelSettings{})
	_, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("hi")})
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, "INVALID_ARGUMENT", e.Type)
	assert.Equal(t, "google: authentication failed (400): API key not valid. Please pass a valid API key. — check GOOGLE_API_KEY", Describe(err))
}

// Google refuses a key that is not valid with a 400 whose ErrorInfo says
// API_KEY_INVALID: it fails as an authentication failure that names the
// variable the key came from, as a 401 does.
func TestGoogleInvalidKeyNamesTheVariable(t *testing.T) {
	t.Parallel()
	invalid := `{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT",
 "details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID","domain":"googleapis.com",
  "metadata":{"service":"aiplatform.googleapis.com"}}]}}`
	for _, tt := range []struct{ ref, body, want string }{
		{"google:gemini-2.5-flash", "[" + invalid + "]",
			"google: authentication failed (400): API key not valid. Please pass a valid API key. — check GOOGLE_API_KEY"},
		{"google-vertex:gemini-2.5-flash", invalid,
			"google-vertex: authentication failed (400): API key not valid. Please pass a valid API key. — check GOOGLE_API_KEY"},
	} {
		srv := providertest.NewRecordedServer(t, providertest.Recorded{Status: http.StatusBadRequest, Body: tt.body})
		m := chatModelAt(t, srv, tt.ref, spec.ModelSettings{})
		_, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("hi")})
		require.Error(t, err)
		assert.Equal(t, tt.want, Describe(err))
		assert.True(t, llms.IsAuthenticationError(err), tt.ref)
		assert.Len(t, srv.Requests(), 1, "not retried")
	}
}
