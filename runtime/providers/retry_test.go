package providers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/agentspec/agentspec/runtime/providers/providertest"
	"github.com/agentspec/agentspec/spec"
)

// retrying builds ref against a base URL with a policy that records its waits
// instead of sleeping, and collects what OnRetry is told.
type retrying struct {
	model   *Model
	sleeps  *sleeps
	mu      sync.Mutex
	retries []RetryInfo
}

func newRetrying(t *testing.T, ref string, settings spec.ModelSettings, getenv func(string) string, transport http.RoundTripper) *retrying {
	t.Helper()
	policy, s := instant()
	r := &retrying{sleeps: s}
	m, err := New(ref, settings, Options{
		Getenv:    getenv,
		Transport: transport,
		retry:     policy,
		OnRetry: func(info RetryInfo) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.retries = append(r.retries, info)
		},
	})
	require.NoError(t, err)
	r.model = m
	return r
}

func (r *retrying) told() []RetryInfo {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]RetryInfo(nil), r.retries...)
}

func TestRetryHonoursRetryAfter(t *testing.T) {
	t.Parallel()
	srv := providertest.NewOpenAIServer(t,
		providertest.Fail(http.StatusTooManyRequests, "Rate limit reached for gpt-4o").WithHeader("Retry-After", "2"),
		providertest.Text("ok"),
	)
	r := newRetrying(t, "openai:gpt-4o", spec.ModelSettings{BaseURL: srv.BaseURL()}, env("OPENAI_API_KEY", "sk-test"), nil)

	resp, err := r.model.GenerateContent(t.Context(), []llms.MessageContent{human("hi")}, llms.WithTools([]llms.Tool{readFileTool}))
	require.NoError(t, err)
	assert.Equal(t, "ok", text(resp))

	assert.Equal(t, []time.Duration{2 * time.Second}, r.sleeps.recorded())
	assert.Equal(t, []RetryInfo{{
		Provider: "openai", Attempt: 1, Max: 4, Delay: 2 * time.Second,
		StatusCode: http.StatusTooManyRequests, Reason: "Rate limit reached for gpt-4o",
	}}, r.told())
	assert.Equal(t, "openai: HTTP 429: Rate limit reached for gpt-4o; retry 1/4 in 2s", r.told()[0].String())

	reqs := srv.Requests()
	require.Len(t, reqs, 2)
	assert.Equal(t, reqs[0].Body, reqs[1].Body, "the retry resends the same body")
}

func TestRetryBacksOffOnServerErrors(t *testing.T) {
	t.Parallel()
	srv := providertest.NewAnthropicServer(t,
		providertest.Fail(http.StatusServiceUnavailable, "upstream connect error"),
		providertest.Fail(529, "Overloaded"),
		providertest.Text("ok"),
	)
	r := newRetrying(t, "anthropic:claude-sonnet-4-5", spec.ModelSettings{BaseURL: srv.URL}, env("ANTHROPIC_API_KEY", "sk-ant-test"), nil)

	resp, err := r.model.GenerateContent(t.Context(), []llms.MessageContent{human("hi")})
	require.NoError(t, err)
	assert.Equal(t, "ok", text(resp))

	waits := r.sleeps.recorded()
	require.Len(t, waits, 2)
	// Exponential with jitter over the upper half: [0.5s, 1s], then [1s, 2s].
	assert.GreaterOrEqual(t, waits[0], 500*time.Millisecond)
	assert.LessOrEqual(t, waits[0], time.Second)
	assert.GreaterOrEqual(t, waits[1], time.Second)
	assert.LessOrEqual(t, waits[1], 2*time.Second)
	assert.Equal(t, []int{503, 529}, []int{r.told()[0].StatusCode, r.told()[1].StatusCode})
	assert.Equal(t, 0, srv.Remaining())
}

func TestRetryGivesUp(t *testing.T) {
	t.Parallel()
	var replies []providertest.Reply
	for range 5 {
		replies = append(replies, providertest.Fail(http.StatusInternalServerError, "The server had an error"))
	}
	srv := providertest.NewOpenAIServer(t, replies...)
	r := newRetrying(t, "openai:gpt-4o", spec.ModelSettings{BaseURL: srv.BaseURL()}, env("OPENAI_API_KEY", "sk-test"), nil)

	_, err := r.model.GenerateContent(t.Context(), []llms.MessageContent{human("hi")})
	var perr *Error
	require.ErrorAs(t, err, &perr)
	assert.Equal(t, 500, perr.StatusCode)
	assert.Equal(t, 4, perr.Retries)
	assert.Len(t, srv.Requests(), 5, "the first attempt and four retries")
	assert.Equal(t, "openai: provider unavailable (500) after 4 retries: The server had an error", Describe(err))
	assert.True(t, llms.IsProviderUnavailableError(err))
}

func TestAuthenticationFailsAtOnce(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		start func(testing.TB, ...providertest.Reply) *providertest.Server
		ref   string
		env   []string
		base  func(*providertest.Server) string
		reply providertest.Reply
		want  string
	}{
		{
			name: "anthropic 401", start: providertest.NewAnthropicServer, ref: "anthropic:claude-sonnet-4-5",
			env: []string{"ANTHROPIC_API_KEY", "sk-ant-api03-secret"}, base: func(s *providertest.Server) string { return s.URL },
			reply: providertest.Fail(http.StatusUnauthorized, "invalid x-api-key"),
			want:  "anthropic: authentication failed (401): invalid x-api-key — check ANTHROPIC_API_KEY",
		},
		{
			name: "openai 401 echoing the key", start: providertest.NewOpenAIServer, ref: "openai:gpt-4o",
			env: []string{"OPENAI_API_KEY", "sk-proj-secret-123"}, base: (*providertest.Server).BaseURL,
			reply: providertest.Fail(http.StatusUnauthorized, "Incorrect API key provided: sk-proj-secret-123."),
			want:  "openai: authentication failed (401): Incorrect API key provided: [redacted]. — check OPENAI_API_KEY",
		},
		{
			name: "groq 403", start: providertest.NewOpenAIServer, ref: "groq:llama-3.3-70b-versatile",
			env: []string{"GROQ_API_KEY", "gsk-secret-123"}, base: (*providertest.Server).BaseURL,
			reply: providertest.Fail(http.StatusForbidden, "Access denied."),
			want:  "groq: permission denied (403): Access denied. — check GROQ_API_KEY",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := tt.start(t, tt.reply)
			r := newRetrying(t, tt.ref, spec.ModelSettings{BaseURL: tt.base(srv)}, env(tt.env...), nil)

			_, err := r.model.GenerateContent(t.Context(), []llms.MessageContent{human("hi")})
			require.Error(t, err)
			assert.Equal(t, tt.want, Describe(err))
			assert.NotContains(t, err.Error(), tt.env[1], "the key never appears in an error")
			assert.True(t, llms.IsAuthenticationError(err))
			assert.Len(t, srv.Requests(), 1)
			assert.Empty(t, r.sleeps.recorded())
		})
	}
}

// flaky fails its first n round trips with a refused connection.
type flaky struct {
	n    atomic.Int32
	base http.RoundTripper
}

func (f *flaky) RoundTrip(req *http.Request) (*http.Response, error) {
	if f.n.Add(-1) >= 0 {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	}
	return f.base.RoundTrip(req)
}

func TestRetryOnNetworkErrors(t *testing.T) {
	t.Parallel()
	srv := providertest.NewOpenAIServer(t, providertest.Text("ok"))
	f := &flaky{base: http.DefaultTransport}
	f.n.Store(2)
	r := newRetrying(t, "ollama:llama3.2", spec.ModelSettings{BaseURL: srv.BaseURL()}, env(), f)

	resp, err := r.model.GenerateContent(t.Context(), []llms.MessageContent{human("hi")})
	require.NoError(t, err)
	assert.Equal(t, "ok", text(resp))
	require.Len(t, r.told(), 2)
	assert.Equal(t, 0, r.told()[0].StatusCode)
	assert.Contains(t, r.told()[0].Reason, "connection refused")
}

func TestUnreachableServer(t *testing.T) {
	t.Parallel()
	// A port nothing listens on any more.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())

	r := newRetrying(t, "ollama:llama3.2", spec.ModelSettings{}, env("OLLAMA_HOST", addr), nil)
	_, err = r.model.GenerateContent(t.Context(), []llms.MessageContent{human("hi")})
	require.Error(t, err)
	assert.Len(t, r.sleeps.recorded(), 4)
	assert.Regexp(t, `^ollama: cannot reach the API after 4 retries: Post "http://127\.0\.0\.1:\d+/v1/chat/completions": .*connection refused$`, Describe(err))
}

// A request that got no answer is reported with its URL shown as a spec's
// errors show one: a path segment of the base URL that may be a token is
// "…", a password xxxxx (net/http's *** was shown before).
func TestUnreachableServerHidesTheBaseURLsSecrets(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())

	m := newModel(t, "openai:gpt-4o", spec.ModelSettings{BaseURL: "http://user:sk-secret@" + addr + "/v1/sk-4f9a0c7d2b"},
		env("OPENAI_API_KEY", "sk-key-1234567890"))
	_, err = m.GenerateContent(t.Context(), []llms.MessageContent{human("hi")})
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "sk-4f9a0c7d2b")
	assert.NotContains(t, err.Error(), "sk-secret")
	assert.Regexp(t, `^openai: Post "http://user:xxxxx@127\.0\.0\.1:\d+/v1/…/chat/completions": .*connection refused$`, err.Error())
}

func TestCancellationStopsRetrying(t *testing.T) {
	t.Parallel()
	srv := providertest.NewOpenAIServer(t,
		providertest.Fail(http.StatusServiceUnavailable, "busy"),
		providertest.Text("never sent"),
	)
	ctx, cancel := context.WithCancel(t.Context())
	policy, _ := instant()
	model, err := New("openai:gpt-4o", spec.ModelSettings{BaseURL: srv.BaseURL()}, Options{
		Getenv:  env("OPENAI_API_KEY", "sk-test"),
		retry:   policy,
		OnRetry: func(RetryInfo) { cancel() },
	})
	require.NoError(t, err)

	_, err = model.GenerateContent(ctx, []llms.MessageContent{human("hi")})
	require.ErrorIs(t, err, context.Canceled, "the openai client's flattened message does not hide the cause")
	assert.Len(t, srv.Requests(), 1)
}

func TestAttemptTimeout(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		_, _ = io.Copy(io.Discard, r.Body) // lets the server notice the client hanging up
		select {                           // never answers
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) }) // runs first: cleanups run last-in first-out
	r := newRetrying(t, "anthropic:claude-sonnet-4-5", spec.ModelSettings{BaseURL: srv.URL, Timeout: 50 * time.Millisecond},
		env("ANTHROPIC_API_KEY", "sk-ant-test"), nil)

	_, err := r.model.GenerateContent(t.Context(), []llms.MessageContent{human("hi")})
	require.Error(t, err)
	assert.Equal(t, "anthropic: no complete response within 50ms — raise model_settings.timeout", Describe(err))
	assert.True(t, llms.IsTimeoutError(err))
	assert.Empty(t, r.told(), "a request that used its whole time is not retried")
	assert.LessOrEqual(t, calls.Load(), int32(1))
}

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name   string
		header http.Header
		want   time.Duration
		ok     bool
	}{
		{"absent", http.Header{}, 0, false},
		{"seconds", http.Header{"Retry-After": {"3"}}, 3 * time.Second, true},
		{"fractional seconds", http.Header{"Retry-After": {"0.25"}}, 250 * time.Millisecond, true},
		{"http date", http.Header{"Retry-After": {now.Add(7 * time.Second).Format(http.TimeFormat)}}, 7 * time.Second, true},
		{"http date in the past", http.Header{"Retry-After": {now.Add(-time.Minute).Format(http.TimeFormat)}}, 0, true},
		{"milliseconds win", http.Header{"Retry-After-Ms": {"1500"}, "Retry-After": {"2"}}, 1500 * time.Millisecond, true},
		{"garbage", http.Header{"Retry-After": {"soon"}}, 0, false},
		{"negative", http.Header{"Retry-After": {"-1"}}, 0, false},
		{"seconds beyond a duration", http.Header{"Retry-After": {"1e300"}}, math.MaxInt64, true},
		{"milliseconds beyond a duration", http.Header{"Retry-After-Ms": {"1e300"}}, math.MaxInt64, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := retryAfter(tt.header, now)
			assert.Equal(t, tt.ok, ok)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestRetryAfterIsCapped(t *testing.T) {
	t.Parallel()
	srv := providertest.NewOpenAIServer(t,
		providertest.Fail(http.StatusTooManyRequests, "quota window").WithHeader("Retry-After", "3600"),
		providertest.Text("ok"),
	)
	r := newRetrying(t, "openai:gpt-4o", spec.ModelSettings{BaseURL: srv.BaseURL()}, env("OPENAI_API_KEY", "sk-test"), nil)
	_, err := r.model.GenerateContent(t.Context(), []llms.MessageContent{human("hi")})
	require.NoError(t, err)
	assert.Equal(t, []time.Duration{defaultRetry.maxRetryAfter}, r.sleeps.recorded())
}

func TestBackoffBounds(t *testing.T) {
	t.Parallel()
	p := defaultRetry
	for n := range 40 {
		ceiling := p.ceiling
		if n < 30 {
			ceiling = min(p.base<<n, p.ceiling)
		}
		for range 50 {
			d := p.backoff(n)
			require.GreaterOrEqual(t, d, ceiling/2, "retry %d", n)
			require.LessOrEqual(t, d, ceiling, "retry %d", n)
		}
	}
}

func TestTransient(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"refused", &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, true},
		{"reset", syscall.ECONNRESET, true},
		{"cut short", fmt.Errorf("reading: %w", io.ErrUnexpectedEOF), true},
		{"no such host", &net.DNSError{Err: "no such host", Name: "api.example.invalid", IsNotFound: true}, false},
		{"dns timeout", &net.DNSError{Err: "timeout", Name: "api.example.com", IsTimeout: true}, true},
		{"replay mismatch", ErrReplay, false},
		{"http2 stream reset", errors.New(`Post "https://api.example.com/v1/chat/completions": stream error: stream ID 5; INTERNAL_ERROR; received from peer`), true},
		{"http2 goaway", errors.New("http2: server sent GOAWAY and closed the connection; LastStreamID=1, ErrCode=NO_ERROR, debug=\"\""), true},
		{"http2 protocol error", errors.New("stream error: stream ID 5; PROTOCOL_ERROR; received from peer"), false},
		{"anything else", errors.New("x509: certificate signed by unknown authority"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.want, transient(tt.err))
		})
	}
}

// deadlines is a transport that keeps the deadline each request's context
// carries, then sends it.
type deadlines struct {
	mu  sync.Mutex
	got []time.Duration // the time left at the request's start
}

func (d *deadlines) RoundTrip(r *http.Request) (*http.Response, error) {
	deadline, ok := r.Context().Deadline()
	d.mu.Lock()
	if ok {
		d.got = append(d.got, time.Until(deadline))
	} else {
		d.got = append(d.got, 0)
	}
	d.mu.Unlock()
	return http.DefaultTransport.RoundTrip(r)
}

func (d *deadlines) left() []time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]time.Duration(nil), d.got...)
}

// A non-streamed Messages request is bounded by model_settings.timeout, not
// by the 10 minutes anthropic-sdk-go gives a request that sets none; and
// the SDK's refusal of a non-streamed max_tokens it guesses would take
// longer than its default does not apply once a timeout is set.
func TestAnthropicNonStreamedTimeout(t *testing.T) {
	t.Parallel()
	t.Run("a timeout above ten minutes bounds the attempt", func(t *testing.T) {
		t.Parallel()
		srv := providertest.NewAnthropicServer(t, providertest.Text("ok"))
		tr := &deadlines{}
		m := newRetrying(t, "anthropic:claude-sonnet-4-5", spec.ModelSettings{BaseURL: srv.URL, Timeout: 30 * time.Minute},
			env("ANTHROPIC_API_KEY", "sk-ant-test"), tr).model
		resp, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("hi")})
		require.NoError(t, err)
		assert.Equal(t, "ok", text(resp))
		left := tr.left()
		require.Len(t, left, 1)
		assert.Greater(t, left[0], 29*time.Minute, "the attempt has the spec's 30 minutes")
		assert.LessOrEqual(t, left[0], 30*time.Minute)
	})
	t.Run("the longest timeout", func(t *testing.T) {
		t.Parallel()
		srv := providertest.NewAnthropicServer(t, providertest.Text("ok"))
		m := newRetrying(t, "anthropic:claude-sonnet-4-5", spec.ModelSettings{BaseURL: srv.URL, Timeout: math.MaxInt64},
			env("ANTHROPIC_API_KEY", "sk-ant-test"), nil).model
		resp, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("hi")})
		require.NoError(t, err)
		assert.Equal(t, "ok", text(resp))
	})
	t.Run("a large max_tokens is sent", func(t *testing.T) {
		t.Parallel()
		srv := providertest.NewAnthropicServer(t, providertest.Text("ok"))
		m := newRetrying(t, "anthropic:claude-opus-4-0", spec.ModelSettings{BaseURL: srv.URL, MaxTokens: 32000},
			env("ANTHROPIC_API_KEY", "sk-ant-test"), nil).model
		resp, err := m.GenerateContent(t.Context(), []llms.MessageContent{human("hi")})
		require.NoError(t, err)
		assert.Equal(t, "ok", text(resp))
		reqs := srv.Requests()
		require.Len(t, reqs, 1)
		assert.EqualValues(t, 32000, reqs[0].JSON()["max_tokens"])
	})
}

// The retry decision follows the official SDKs': a server's x-should-retry
// wins over the status, and 408 and 409 are retried; a 429 that says the
// quota is spent fails at once, since no retry can succeed.
func TestRetryDecision(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		first   providertest.Reply
		retried bool
	}{
		{"408", providertest.Fail(http.StatusRequestTimeout, "Request timed out"), true},
		{"409", providertest.Fail(http.StatusConflict, "Conflict"), true},
		{"x-should-retry true on a 400", providertest.Fail(http.StatusBadRequest, "Please retry").WithHeader("X-Should-Retry", "true"), true},
		{"x-should-retry false on a 500", providertest.Fail(http.StatusInternalServerError, "Internal server error").WithHeader("X-Should-Retry", "false"), false},
		{"x-should-retry false on a 529", providertest.Fail(529, "Overloaded").WithHeader("x-should-retry", "false"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			replies := []providertest.Reply{tc.first}
			if tc.retried {
				replies = append(replies, providertest.Text("ok"))
			}
			srv := providertest.NewAnthropicServer(t, replies...)
			r := newRetrying(t, "anthropic:claude-sonnet-4-5", spec.ModelSettings{BaseURL: srv.URL}, env("ANTHROPIC_API_KEY", "sk-ant-test"), nil)
			resp, err := r.model.GenerateContent(t.Context(), []llms.MessageContent{human("hi")})
			if tc.retried {
				require.NoError(t, err)
				assert.Equal(t, "ok", text(resp))
				assert.Len(t, r.told(), 1)
			} else {
				require.Error(t, err)
				assert.Empty(t, r.told())
			}
			assert.Len(t, srv.Requests(), len(replies))
		})
	}

	t.Run("insufficient_quota", func(t *testing.T) {
		t.Parallel()
		srv := providertest.NewRecordedServer(t, providertest.Recorded{Status: http.StatusTooManyRequests,
			Body: `{"error":{"message":"You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`})
		r := newRetrying(t, "openai:gpt-4o", spec.ModelSettings{BaseURL: srv.URL + "/v1"}, env("OPENAI_API_KEY", "sk-test"), nil)
		_, err := r.model.GenerateContent(t.Context(), []llms.MessageContent{human("hi")})
		var perr *Error
		require.ErrorAs(t, err, &perr)
		assert.Equal(t, "insufficient_quota", perr.Type)
		assert.Equal(t, 0, perr.Retries)
		assert.Equal(t, "openai: out of quota or credit (429): You exceeded your current quota, please check your plan and billing details. "+
			"For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.", Describe(err))
		assert.Empty(t, r.told())
		assert.Len(t, srv.Requests(), 1)
	})
}

// A response whose headers came in time but whose body, streamed or not,
// is still arriving when the attempt's time is up fails as a timeout that
// names model_settings.timeout, as one that got no headers does.
func TestTimeoutWhileReadingTheBody(t *testing.T) {
	t.Parallel()
	const started = `event: message_start
data: {"type":"message_start","message":{"id":"m","type":"message","role":"assistant","model":"c","content":[],"stop_reason":null,"usage":{"input_tokens":1,"output_tokens":1}}}`
	tests := []struct {
		ref, key, base string // base is appended to the server's URL
		stream         bool
		start          string // what is sent before the server stalls
	}{
		{"anthropic:claude-sonnet-4-5", "ANTHROPIC_API_KEY", "", true, started + "\n\n"},
		{"anthropic:claude-sonnet-4-5", "ANTHROPIC_API_KEY", "", false, `{"id":"m","type":"mess`},
		{"openai:gpt-4o", "OPENAI_API_KEY", "/v1", true,
			`data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"Hel"},"finish_reason":null}]}` + "\n\n"},
		{"openai-responses:gpt-5", "OPENAI_API_KEY", "/v1", false, `{"id":"resp_1","object":"resp`},
		{"google-vertex:gemini-2.5-flash", "GOOGLE_API_KEY", "", true,
			`data: {"candidates":[{"content":{"role":"model","parts":[{"text":"Hel"}]}}]}` + "\n\n"},
		{"bedrock:us.anthropic.claude-sonnet-4-5-20250929-v1:0", "AWS_BEARER_TOKEN_BEDROCK", "", false, `{"output":{"mess`},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s stream=%v", tt.ref, tt.stream), func(t *testing.T) {
			t.Parallel()
			release := make(chan struct{})
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				if tt.stream {
					w.Header().Set("Content-Type", "text/event-stream")
				} else {
					w.Header().Set("Content-Type", "application/json")
				}
				w.WriteHeader(http.StatusOK)
				_, _ = io.WriteString(w, tt.start)
				w.(http.Flusher).Flush()
				select { // the rest never comes
				case <-r.Context().Done():
				case <-release:
				}
			}))
			t.Cleanup(srv.Close)
			t.Cleanup(func() { close(release) })
			r := newRetrying(t, tt.ref, spec.ModelSettings{BaseURL: srv.URL + tt.base, Timeout: 100 * time.Millisecond},
				env(tt.key, "test-key", "AWS_REGION", "us-east-1"), nil)
			var opts []llms.CallOption
			if tt.stream {
				opts = append(opts, llms.WithStreamingFunc(func(context.Context, []byte) error { return nil }))
			}
			_, err := r.model.GenerateContent(t.Context(), []llms.MessageContent{human("hi")}, opts...)
			require.Error(t, err)
			provider, _, _ := strings.Cut(tt.ref, ":")
			assert.Equal(t, provider+": no complete response within 100ms — raise model_settings.timeout", Describe(err))
			assert.True(t, llms.IsTimeoutError(err))
		})
	}
}

// Google says how long to wait in the body of a 429, as a RetryInfo's
// retryDelay, rather than in a Retry-After header: the retry waits that
// long, on Vertex AI and through the OpenAI-compatible endpoint alike.
func TestRetryHonoursGoogleRetryDelay(t *testing.T) {
	t.Parallel()
	exhausted := `{"error":{"code":429,"message":"You exceeded your current quota. Please retry in 37.2s.","status":"RESOURCE_EXHAUSTED",
 "details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":"generativelanguage.googleapis.com/generate_content_free_tier_requests"}]},
  {"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"37s"}]}}`
	tests := []struct {
		ref, key, base, exhausted, ok string
	}{
		{"google-vertex:gemini-2.5-flash", "GOOGLE_API_KEY", "", exhausted,
			`{"candidates":[{"content":{"role":"model","parts":[{"text":"ok"}]},"finishReason":"STOP"}]}`},
		{"google:gemini-2.5-flash", "GOOGLE_API_KEY", "/v1", "[" + exhausted + "]",
			`{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.ref, func(t *testing.T) {
			t.Parallel()
			srv := providertest.NewRecordedServer(t, providertest.Recorded{Status: http.StatusTooManyRequests, Body: tt.exhausted},
				providertest.Recorded{Body: tt.ok})
			r := newRetrying(t, tt.ref, spec.ModelSettings{BaseURL: srv.URL + tt.base}, env(tt.key, "test-key"), nil)
			resp, err := r.model.GenerateContent(t.Context(), []llms.MessageContent{human("hi")})
			require.NoError(t, err)
			assert.Equal(t, "ok", resp.Choices[0].Content)
			assert.Equal(t, []time.Duration{37 * time.Second}, r.sleeps.recorded())
		})
	}
}

// A connection the server went away from for a fault of the connection
// itself (GOAWAY with PROTOCOL_ERROR, FLOW_CONTROL_ERROR, ...) is not
// retried, as a stream it resets for one is not: a new connection would
// meet it again. One it went away from as it shut down, or failed, or
// asked to be spared load, is; the debug text, the server's own, decides
// nothing.
func TestHTTP2GoAwayForAFaultIsNotRetried(t *testing.T) {
	t.Parallel()
	goaway := func(code, debug string) error {
		return fmt.Errorf(`Post "https://api.example.com/v1/chat/completions": %w`,
			fmt.Errorf("http2: server sent GOAWAY and closed the connection; LastStreamID=3, ErrCode=%s, debug=%q", code, debug))
	}
	for code, want := range map[string]bool{
		"NO_ERROR": true, "INTERNAL_ERROR": true, "ENHANCE_YOUR_CALM": true,
		"PROTOCOL_ERROR": false, "FLOW_CONTROL_ERROR": false, "FRAME_SIZE_ERROR": false,
		"COMPRESSION_ERROR": false, "HTTP_1_1_REQUIRED": false,
	} {
		assert.Equal(t, want, transient(goaway(code, "")), code)
	}
	assert.False(t, transient(goaway("PROTOCOL_ERROR", "x, ErrCode=NO_ERROR")))
	assert.False(t, transient(goaway("PROTOCOL_ERROR", "stream error: ; INTERNAL_ERROR")))
}

// An HTTP/2 stream the server resets as failed (what a proxy in front of
// an API sends when the server behind it failed) is retried, as the same
// failure on HTTP/1.1, a connection cut before the answer, is.
func TestRetryAfterHTTP2StreamReset(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if calls.Add(1) == 1 {
			panic(http.ErrAbortHandler) // resets the stream with INTERNAL_ERROR
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"c","object":"chat.completion","created":1,"model":"m",`+
			`"choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`)
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	r := newRetrying(t, "openai:gpt-4o", spec.ModelSettings{BaseURL: srv.URL + "/v1"}, env("OPENAI_API_KEY", "sk-test"), srv.Client().Transport)
	resp, err := r.model.GenerateContent(t.Context(), []llms.MessageContent{human("hi")})
	require.NoError(t, err)
	assert.Equal(t, "ok", resp.Choices[0].Content)
	assert.Equal(t, int32(2), calls.Load())
	require.Len(t, r.told(), 1)
	assert.Contains(t, r.told()[0].Reason, "INTERNAL_ERROR")
}
