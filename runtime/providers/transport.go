package providers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/internal/redact"
)

// RetryInfo describes a retry about to happen, after a failed attempt.
type RetryInfo struct {
	Provider   string
	Attempt    int           // 1 for the first retry
	Max        int           // retries allowed
	Delay      time.Duration // the wait before the retry
	StatusCode int           // the status that caused it; 0 for a network failure
	Reason     string        // one line: the provider's message or the network error
}

func (r RetryInfo) String() string {
	reason := r.Reason
	if r.StatusCode != 0 {
		reason = fmt.Sprintf("HTTP %d: %s", r.StatusCode, reason)
	}
	return fmt.Sprintf("%s: %s; retry %d/%d in %s", r.Provider, reason, r.Attempt, r.Max, r.Delay.Round(time.Millisecond))
}

// retryPolicy bounds the retries of one request.
type retryPolicy struct {
	max           int           // retries after the first attempt
	base          time.Duration // backoff before the first retry, doubled for each next one
	ceiling       time.Duration // longest backoff
	maxRetryAfter time.Duration // longest wait a server's Retry-After can ask for
	sleep         func(ctx context.Context, d time.Duration) error
}

var defaultRetry = retryPolicy{
	max:           4,
	base:          time.Second,
	ceiling:       30 * time.Second,
	maxRetryAfter: time.Minute,
	sleep:         sleep,
}

// backoff is the wait before retry n (0-based): exponential, with jitter over
// its upper half so concurrent clients spread out without retrying at once.
func (p retryPolicy) backoff(n int) time.Duration {
	d := p.ceiling
	if n < 30 {
		d = min(p.base<<n, p.ceiling)
	}
	half := d / 2
	return half + rand.N(half+1)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// retryAfter reads the wait a server asks for: OpenAI's retry-after-ms, or
// Retry-After in seconds or as an HTTP date.
func retryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 {
			return capabilities.Seconds(ms / 1000), true
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 {
		return capabilities.Seconds(s), true // a wait beyond a Duration is the longest
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// retryDelay reads the wait Google asks for in an error body (the
// OpenAI-compatible endpoint's list of one included): the retryDelay of a
// google.rpc.RetryInfo among the error's details, a protobuf duration
// ("37s", "1.5s"). Google sends no Retry-After header.
func retryDelay(body []byte) (time.Duration, bool) {
	var v struct {
		Error struct {
			Details []struct {
				Type       string `json:"@type"`
				RetryDelay string `json:"retryDelay"`
			} `json:"details"`
		} `json:"error"`
	}
	if json.Unmarshal(firstOfList(body), &v) != nil {
		return 0, false
	}
	for _, d := range v.Error.Details {
		if !strings.HasSuffix(d.Type, "/google.rpc.RetryInfo") || !strings.HasSuffix(d.RetryDelay, "s") {
			continue
		}
		if n, err := time.ParseDuration(d.RetryDelay); err == nil && n >= 0 {
			return n, true
		}
	}
	return 0, false
}

// retryableStatus: rate limits, a request timeout or conflict, and the
// server errors that mean "try again" (529 is Anthropic's "overloaded"), as
// the official SDKs retry them.
func retryableStatus(status int) bool {
	switch status {
	case http.StatusRequestTimeout, http.StatusConflict, http.StatusTooManyRequests,
		http.StatusInternalServerError, http.StatusBadGateway,
		http.StatusServiceUnavailable, http.StatusGatewayTimeout, 529:
		return true
	}
	return false
}

// shouldRetry decides whether a failed status is worth another attempt:
// the server's x-should-retry wins, as in the official SDKs; else a
// retryable status, but for OpenAI's insufficient_quota 429, which no retry
// ends.
func shouldRetry(status int, h http.Header, failure *Error) bool {
	switch strings.ToLower(strings.TrimSpace(h.Get("X-Should-Retry"))) {
	case "true":
		return true
	case "false":
		return false
	}
	if failure.quotaSpent() {
		return false
	}
	return retryableStatus(status)
}

// transient reports whether a transport error is worth another attempt: the
// connection was refused, reset or cut, or a dial or handshake timed out.
// A host that does not exist, a bad certificate or a replay mismatch is not.
func transient(err error) bool {
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return dns.IsTimeout || dns.IsTemporary
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.ECONNABORTED) || errors.Is(err, syscall.EPIPE) {
		return true
	}
	var op *net.OpError
	if errors.As(err, &op) {
		return true
	}
	if http2Transient(err.Error()) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// http2Transient reports whether an error's text is an HTTP/2 failure
// worth another attempt, which net/http's HTTP/2 client reports by types of
// its own that cannot be matched: a stream the server reset as failed or
// refused ("stream error: stream ID 3; INTERNAL_ERROR; received from
// peer"), as a proxy does when the server behind it failed, or a
// connection that was lost, or that the server went away from as it shut
// down, failed or asked to be spared load ("http2: server sent GOAWAY and
// closed the connection; LastStreamID=1, ErrCode=NO_ERROR, debug=..."). A
// fault of the stream or the connection itself (PROTOCOL_ERROR,
// FLOW_CONTROL_ERROR, ...) would be met again. Only the fields net/http
// writes decide: the GOAWAY's debug text, which comes last, is the
// server's own.
func http2Transient(msg string) bool {
	if i := strings.Index(msg, "http2: server sent GOAWAY and closed the connection; "); i >= 0 {
		_, after, ok := strings.Cut(msg[i:], ", ErrCode=")
		code, _, _ := strings.Cut(after, ",")
		return ok && (code == "NO_ERROR" || code == "INTERNAL_ERROR" || code == "ENHANCE_YOUR_CALM")
	}
	if i := strings.Index(msg, "stream error: stream ID "); i >= 0 {
		fields := strings.SplitN(msg[i:], "; ", 3)
		return len(fields) >= 2 && (fields[1] == "INTERNAL_ERROR" || fields[1] == "REFUSED_STREAM")
	}
	return strings.Contains(msg, "http2: client connection lost")
}

// newTransport is the default transport: bounded dials and TLS handshakes.
// It sets no response-header timeout: a non-streaming completion sends its
// headers only once the whole answer is generated, so the wait for headers is
// bounded by the attempt's deadline (the request timeout), which also covers
// reading the body.
func newTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	t.TLSHandshakeTimeout = 15 * time.Second
	return t
}

// errAttemptTimeout is the cause of an attempt's context when its time is up.
var errAttemptTimeout = errors.New("attempt timed out")

// doer is the HTTP client the SDK clients call (their HTTPClient
// interface). It sends a request as often as the retry policy allows, each
// attempt bounded by the timeout.
type doer struct {
	ep      endpoint
	client  *http.Client
	timeout time.Duration
	headers map[string]string
	retry   retryPolicy
	onRetry func(RetryInfo)
	// sign, when set, signs each attempt (AWS SigV4), headers included.
	sign func(r *http.Request, body []byte) error
}

// Do sends req. A success (status below 400) returns the response; anything
// else returns an error: *Error for a provider or network failure, the
// context's error when it is done, and replay errors unchanged.
func (d *doer) Do(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	body, err := readBody(req)
	if err != nil {
		return nil, fmt.Errorf("%s: reading the request body: %w", d.ep.provider, err)
	}
	for retries := 0; ; retries++ {
		resp, err := d.attempt(req, body)
		if err == nil && resp.StatusCode < 400 {
			return resp, nil
		}
		if ctx.Err() != nil {
			if resp != nil {
				resp.Body.Close()
			}
			return nil, ctx.Err()
		}

		var (
			failure   *Error
			retryable bool
			wait      time.Duration
			asked     bool
		)
		if err != nil {
			if failure, retryable, err = d.transportFailure(err, retries); failure == nil {
				return nil, err
			}
		} else {
			errBody, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
			failure = statusError(d.ep, resp.StatusCode, errBody, retries)
			retryable = shouldRetry(resp.StatusCode, resp.Header, failure)
			wait, asked = retryAfter(resp.Header, time.Now())
			if !asked {
				wait, asked = retryDelay(errBody)
			}
		}
		if !retryable || retries >= d.retry.max {
			return nil, failure
		}
		if asked {
			wait = min(wait, d.retry.maxRetryAfter)
		} else {
			wait = d.retry.backoff(retries)
		}
		if d.onRetry != nil {
			d.onRetry(RetryInfo{
				Provider: d.ep.provider, Attempt: retries + 1, Max: d.retry.max, Delay: wait,
				StatusCode: failure.StatusCode, Reason: failure.message(),
			})
		}
		if err := d.retry.sleep(ctx, wait); err != nil {
			return nil, err
		}
	}
}

// bound is the longest Do can take: every attempt's timeout, the longest
// wait before each retry, and a minute to spare, saturated at the longest
// duration.
func (d *doer) bound() time.Duration {
	total := time.Minute
	add := func(x time.Duration, n int) {
		for range n {
			if total > math.MaxInt64-x {
				total = math.MaxInt64
				return
			}
			total += x
		}
	}
	add(d.timeout, d.retry.max+1)
	add(max(d.retry.ceiling, d.retry.maxRetryAfter), d.retry.max)
	return total
}

// attempt sends one copy of req with body, under its own timeout that lasts
// until the response body is closed.
func (d *doer) attempt(req *http.Request, body []byte) (*http.Response, error) {
	ctx, cancel := context.WithTimeoutCause(req.Context(), d.timeout, errAttemptTimeout)
	r := req.Clone(ctx)
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	r.ContentLength = int64(len(body))
	for k, v := range d.headers {
		r.Header.Set(k, v)
	}
	if d.sign != nil {
		if err := d.sign(r, body); err != nil {
			cancel()
			return nil, err
		}
	}
	resp, err := d.client.Do(r)
	if err != nil {
		// A transport timeout of the same length may win the race against
		// the deadline by a hair; past the deadline, the attempt's time is up
		// whichever error came first.
		deadline, _ := ctx.Deadline()
		timedOut := errors.Is(context.Cause(ctx), errAttemptTimeout) ||
			req.Context().Err() == nil && !time.Now().Before(deadline)
		cancel()
		if timedOut {
			return nil, errAttemptTimeout
		}
		return nil, err
	}
	resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

// transportFailure classifies an attempt that got no response. A nil *Error
// means err is not the provider's doing and is returned as is.
func (d *doer) transportFailure(err error, retries int) (*Error, bool, error) {
	if errors.Is(err, ErrReplay) {
		// Unwrapped from *url.Error, which the openai client would flatten
		// into "network error: failed to reach API server".
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, false, err
	}
	if errors.Is(err, errAttemptTimeout) {
		return &Error{Provider: d.ep.provider, Retries: retries, timeout: d.timeout}, false, nil
	}
	msg := err.Error()
	var ue *url.Error
	if errors.As(err, &ue) {
		// The request's URL as messages show one (see redact.URL), since
		// the base URL it starts with may hold a token in its path.
		shown := *ue
		shown.URL = redact.URL(ue.URL)
		msg = strings.Replace(msg, ue.Error(), shown.Error(), 1)
	}
	return &Error{
		Provider: d.ep.provider,
		Message:  oneLine(withoutKey(msg, d.ep.token)),
		Retries:  retries,
	}, transient(err), nil
}

func readBody(req *http.Request) ([]byte, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return nil, nil
	}
	defer req.Body.Close()
	return io.ReadAll(req.Body)
}

type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c *cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}

// withStreamRetries runs send, again while it fails with an error inside a
// successful answer (an error event of a stream, the error body of a 200)
// that means "try again", as far as the retry policy allows; a failed
// status was already retried by Do.
func (d *doer) withStreamRetries(ctx context.Context, send func(retries int) error) error {
	for retries := 0; ; retries++ {
		err := send(retries)
		var e *Error
		if err == nil || !errors.As(err, &e) || !e.inBand() {
			return err
		}
		if !e.retryableStream() || retries >= d.retry.max || ctx.Err() != nil {
			e.Retries = retries
			return err
		}
		wait := d.retry.backoff(retries)
		if d.onRetry != nil {
			d.onRetry(RetryInfo{Provider: d.ep.provider, Attempt: retries + 1, Max: d.retry.max, Delay: wait, Reason: e.streamMessage()})
		}
		if err := d.retry.sleep(ctx, wait); err != nil {
			return err
		}
	}
}
