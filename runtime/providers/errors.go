package providers

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tmc/langchaingo/llms"
)

// Error is a request that failed for good: the provider answered with an
// error status, or with an error in the body of a 200, or no answer came,
// even after the retries the failure allowed.
type Error struct {
	Provider   string
	StatusCode int    // 0 when no response arrived; 200 for an error in a successful answer
	Type       string // the provider's error type or code, e.g. "authentication_error"
	Message    string // the provider's message, or the transport failure; never holds the key
	Retries    int    // retries made before giving up
	// Code is the provider's error code when it has one beside the type,
	// e.g. "tool_use_failed".
	Code string
	// FailedGeneration is the model output a "tool_use_failed" error
	// quotes: the call the model wrote that the server could not parse.
	FailedGeneration string
	// Stream is set when the error arrived as an event inside a response
	// stream, after a successful status.
	Stream bool

	timeout time.Duration // set when an attempt ran out of time
	hint    string        // where to look after an authentication failure
	// badKey is set when a 400 says the key is not valid, as Google's do
	// (ErrorInfo reason API_KEY_INVALID).
	badKey bool
}

func (e *Error) Error() string {
	switch {
	case e.timeout > 0:
		return fmt.Sprintf("%s: no complete response within %s", e.Provider, e.timeout)
	case e.Stream:
		return fmt.Sprintf("%s: error in the response stream: %s", e.Provider, e.streamMessage())
	case e.StatusCode == 0:
		return e.Provider + ": " + e.Message
	default:
		return fmt.Sprintf("%s: HTTP %d: %s", e.Provider, e.StatusCode, e.message())
	}
}

// As lets langchaingo's classifiers (llms.IsRateLimitError,
// llms.IsAuthenticationError, ...) recognise the error.
func (e *Error) As(target any) bool {
	t, ok := target.(**llms.Error)
	if !ok {
		return false
	}
	*t = llms.NewError(e.code(), e.Provider, e.message())
	return true
}

func (e *Error) streamMessage() string {
	if e.Type != "" {
		return e.Type + ": " + e.message()
	}
	return e.message()
}

// ToolUseFailed reports whether the provider refused a response because the
// model wrote a tool call it could not parse (Groq's and other
// OpenAI-compatible servers' "tool_use_failed", Gemini's
// MALFORMED_FUNCTION_CALL, Bedrock's malformed_tool_use) or one to a
// function it was not offered (Gemini's UNEXPECTED_TOOL_CALL): a mistake
// the model can correct, not a failure of the request. It returns what the
// model wrote. The refusal comes as a 400, or, once a stream has begun
// (Groq checks the call only after generating it), as an error event
// inside the stream; Gemini's and Bedrock's are the finish or stop reason
// of a 200 or of its stream.
func (e *Error) ToolUseFailed() (string, bool) {
	if e.StatusCode != http.StatusBadRequest && e.StatusCode != http.StatusOK && !e.Stream {
		return "", false
	}
	if _, gemini := failedCallFinishes[e.Type]; !gemini && e.Code != "tool_use_failed" && e.Type != "tool_use_failed" {
		return "", false
	}
	return e.FailedGeneration, true
}

// inBand reports whether the error came inside a successful answer: an
// error event of a stream, or the error body of a 200.
func (e *Error) inBand() bool {
	return e.Stream || e.StatusCode == http.StatusOK
}

// retryableStream reports whether an error inside a successful answer means
// "try again", as the status codes retryableStatus accepts do, whether it
// names its kind by type or by a status as its code (OpenRouter's
// {"code": 502}).
func (e *Error) retryableStream() bool {
	switch e.Type {
	case "overloaded_error", "rate_limit_error", "api_error", "server_error", "internal_error", "service_unavailable",
		"rate_limit_exceeded", // the code of a failed Response's error
		// Bedrock's exception events
		"ThrottlingException", "ServiceUnavailableException", "InternalServerException", "ModelStreamErrorException":
		return true
	}
	status, err := strconv.Atoi(e.Code)
	return err == nil && retryableStatus(status)
}

// quotaSpent reports whether the error is OpenAI's insufficient_quota: the
// account has no quota or credit left, which no wait restores.
func (e *Error) quotaSpent() bool {
	return e.Type == "insufficient_quota" || e.Code == "insufficient_quota"
}

func (e *Error) code() llms.ErrorCode {
	if e.Stream {
		switch e.Type {
		case "rate_limit_error", "ThrottlingException":
			return llms.ErrCodeRateLimit
		case "invalid_request_error", "ValidationException":
			return llms.ErrCodeInvalidRequest
		}
		return llms.ErrCodeProviderUnavailable
	}
	switch s := e.StatusCode; {
	case e.timeout > 0 || s == http.StatusRequestTimeout:
		return llms.ErrCodeTimeout
	case s == 0 || s >= 500:
		return llms.ErrCodeProviderUnavailable
	case s == http.StatusUnauthorized || s == http.StatusForbidden || e.badKey:
		return llms.ErrCodeAuthentication
	case s == http.StatusNotFound:
		return llms.ErrCodeResourceNotFound
	case s == http.StatusTooManyRequests && strings.Contains(e.Type, "quota"):
		return llms.ErrCodeQuotaExceeded
	case s == http.StatusTooManyRequests:
		return llms.ErrCodeRateLimit
	case s >= 400:
		return llms.ErrCodeInvalidRequest
	}
	return llms.ErrCodeUnknown
}

func (e *Error) message() string {
	if e.Message != "" {
		return e.Message
	}
	return http.StatusText(e.StatusCode)
}

// Describe returns a one-line, user-facing reason for a failed model call,
// e.g. "anthropic: authentication failed (401): invalid x-api-key — check
// ANTHROPIC_API_KEY". It never includes the API key.
func Describe(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if !errors.As(err, &e) {
		return oneLine(err.Error())
	}
	if e.timeout > 0 {
		return fmt.Sprintf("%s: no complete response within %s — raise model_settings.timeout", e.Provider, e.timeout)
	}
	what, hint := "request failed", ""
	switch s := e.StatusCode; {
	case e.Stream:
		what = "error in the response stream"
	case s == 0:
		what = "cannot reach the API"
	case s == http.StatusUnauthorized || e.badKey:
		what, hint = "authentication failed", e.hint
	case s == http.StatusForbidden:
		what, hint = "permission denied", e.hint
	case s == http.StatusNotFound:
		what, hint = "not found", "check the model name and the base URL"
	case s == http.StatusTooManyRequests && e.quotaSpent():
		what = "out of quota or credit"
	case s == http.StatusTooManyRequests:
		what = "rate limited"
	case s >= 500:
		what = "provider unavailable"
	case s >= 400:
		what = "request rejected"
	}
	var b strings.Builder
	b.WriteString(e.Provider + ": " + what)
	if e.StatusCode != 0 {
		fmt.Fprintf(&b, " (%d)", e.StatusCode)
	}
	switch {
	case e.Retries == 1:
		b.WriteString(" after 1 retry")
	case e.Retries > 1:
		fmt.Fprintf(&b, " after %d retries", e.Retries)
	}
	if e.Stream {
		b.WriteString(": " + e.streamMessage())
	} else {
		b.WriteString(": " + e.message())
	}
	if hint != "" {
		b.WriteString(" — " + hint)
	}
	return b.String()
}

// statusError builds the Error for a final error response whose body (or its
// first part) is body.
func statusError(ep endpoint, status int, body []byte, retries int) *Error {
	body = firstOfList(body)
	typ, msg := parseErrorBody(body)
	var v struct {
		Error struct {
			Code             any    `json:"code"`
			FailedGeneration string `json:"failed_generation"`
			Details          []struct {
				Reason string `json:"reason"` // a google.rpc.ErrorInfo's
			} `json:"details"`
			Metadata struct {
				Raw          json.RawMessage `json:"raw"`
				ProviderName string          `json:"provider_name"`
			} `json:"metadata"`
		} `json:"error"`
	}
	decoded := json.Unmarshal(body, &v) == nil
	if decoded {
		msg = upstreamReason(msg, v.Error.Metadata.ProviderName, v.Error.Metadata.Raw)
	}
	e := &Error{
		Provider:   ep.provider,
		StatusCode: status,
		Type:       typ,
		Message:    oneLine(withoutKey(msg, ep.token)),
		Retries:    retries,
		hint:       hint(ep),
	}
	if decoded {
		if v.Error.Code != nil {
			e.Code = fmt.Sprint(v.Error.Code)
		}
		e.FailedGeneration = v.Error.FailedGeneration
		for _, d := range v.Error.Details {
			e.badKey = e.badKey || status == http.StatusBadRequest && d.Reason == "API_KEY_INVALID"
		}
	}
	return e
}

// firstOfList is the error object of a body that is a list of them, as
// Google's OpenAI-compatible endpoint and streaming methods send one
// ([{"error": {...}}]); any other body as it is.
func firstOfList(body []byte) []byte {
	var list []json.RawMessage
	if json.Unmarshal(body, &list) != nil || len(list) == 0 {
		return body
	}
	return list[0]
}

// upstreamReason adds to msg what a router relays from the provider behind
// it: OpenRouter's "Provider returned error" names that provider and keeps
// its error in metadata.raw, the upstream body as a string (or an object),
// whose message is the reason.
func upstreamReason(msg, provider string, raw json.RawMessage) string {
	var reason string
	if json.Unmarshal(raw, &reason) != nil {
		reason = string(raw)
	}
	reason = strings.TrimSpace(reason)
	if reason == "null" {
		reason = ""
	}
	if typ, m := parseErrorBody([]byte(reason)); m != reason {
		reason = m
		if _, numeric := strconv.Atoi(typ); typ != "" && numeric != nil {
			reason = typ + ": " + m
		}
	}
	if provider != "" {
		msg += " (" + provider + ")"
	}
	if reason != "" && reason != msg {
		msg += ": " + reason
	}
	return msg
}

// streamError builds the Error for an error event inside a stream, whose
// data is body (the same shapes as an error response's body).
func streamError(ep endpoint, body []byte, retries int) *Error {
	e := statusError(ep, 0, body, retries)
	e.Stream = true
	return e
}

// parseErrorBody reads the error shapes in the wild: OpenAI's and
// Anthropic's {"error": {"type", "message"}}, Ollama's {"error": "..."},
// vLLM's top-level {"type", "message"}, FastAPI's {"detail": "..."}.
func parseErrorBody(body []byte) (typ, msg string) {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Type    string          `json:"type"`
		Message string          `json:"message"`
		Detail  json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(body, &v) != nil {
		return "", string(body)
	}
	var inner struct {
		Type    string `json:"type"`
		Status  string `json:"status"` // Google's: INVALID_ARGUMENT, RESOURCE_EXHAUSTED, ...
		Code    any    `json:"code"`
		Message string `json:"message"`
	}
	var s string
	switch {
	case json.Unmarshal(v.Error, &inner) == nil && inner.Message != "":
		if inner.Type == "" {
			inner.Type = inner.Status
		}
		if inner.Type == "" && inner.Code != nil {
			inner.Type = fmt.Sprint(inner.Code)
		}
		return inner.Type, inner.Message
	case json.Unmarshal(v.Error, &s) == nil && s != "":
		return "", s
	case v.Message != "":
		return v.Type, v.Message
	case json.Unmarshal(v.Detail, &s) == nil && s != "":
		return "", s
	}
	return "", string(body)
}

// withoutKey removes the key from text a server may have echoed it in.
func withoutKey(text, secret string) string {
	if len(secret) < 8 || secret == placeholderToken {
		return text
	}
	return strings.ReplaceAll(text, secret, "[redacted]")
}

// oneLine collapses whitespace and bounds the length, so a provider's HTML
// error page or multi-line message fits one line of a terminal.
func oneLine(s string) string {
	const limit = 300
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= limit {
		return s
	}
	r := []rune(s)
	return string(r[:limit]) + "…"
}
