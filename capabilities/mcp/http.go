package mcp

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// connectHTTP reaches a remote server. A URL whose path ends in /sse names
// an HTTP+SSE server (the 2024-11-05 transport), as pydantic-ai reads it;
// any other URL is tried with streamable HTTP first and, when that fails,
// with SSE, as the specification's backwards-compatibility section says
// clients should.
//
// The SSE transport ties its event stream to the context it connects with,
// so it is given one that outlives start-up; cancel ends it.
//
// Every response body is bounded by guard (see MaxMessageBytes), and a
// call's request is noted for its cancellation (see cancelTransport).
func connectHTTP(ctx context.Context, client *sdk.Client, endpoint string, headers map[string]string, base http.RoundTripper, guard *bodyGuard) (_ *sdk.ClientSession, cancel context.CancelFunc, _ error) {
	u, err := url.Parse(endpoint)
	if err != nil {
		return nil, nil, err
	}
	hc := &http.Client{Transport: &cancelTransport{base: &boundTransport{guard: guard, base: &headerTransport{headers: headers, origin: origin(u), base: base}}}}
	sse := &sdk.SSEClientTransport{Endpoint: endpoint, HTTPClient: hc}
	life, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, cancel) // start-up's deadline still applies
	connectSSE := func() (*sdk.ClientSession, error) {
		s, err := client.Connect(life, sse, nil)
		if !stop() && err == nil { // start-up ended while connecting
			s.Close()
			return nil, ctx.Err()
		}
		return s, err
	}
	if isSSEPath(endpoint) {
		s, err := connectSSE()
		if err != nil {
			cancel()
			return nil, nil, fmt.Errorf("over SSE: %w", err)
		}
		return s, cancel, nil
	}
	streamable := &sdk.StreamableClientTransport{
		Endpoint:   endpoint,
		HTTPClient: hc,
		// The stream a server before protocol 2026-07-28 announces on (that
		// its tools changed) is not opened: the SDK ends the session when
		// the GET that opens it fails, or when, ended without an event id
		// (by a proxy's idle timeout, say), it cannot be opened again a few
		// times, which would end a long run for a convenience. A server at
		// 2026-07-28 announces on subscriptions/listen, which the SDK opens.
		DisableStandaloneSSE: true,
	}
	s, err := client.Connect(ctx, streamable, nil)
	if err == nil {
		stop()
		return s, cancel, nil
	}
	if ctx.Err() != nil {
		cancel()
		return nil, nil, err
	}
	s, sseErr := connectSSE()
	if sseErr != nil {
		cancel()
		return nil, nil, fmt.Errorf("over streamable HTTP: %v; over SSE: %v", err, sseErr)
	}
	return s, cancel, nil
}

func isSSEPath(endpoint string) bool {
	u, err := url.Parse(endpoint)
	return err == nil && strings.HasSuffix(strings.TrimRight(u.Path, "/"), "/sse")
}

// headerTransport adds the spec's headers (authorization_token among them)
// to every request to url's origin (scheme, host and port): not to another
// a redirect, or an SSE server's endpoint event, sends a request to, nor
// over plain http when url says https.
type headerTransport struct {
	headers map[string]string
	origin  string // url's
	base    http.RoundTripper
}

// origin is u's scheme, host and port, the port filled in for the scheme.
func origin(u *url.URL) string {
	scheme, port := strings.ToLower(u.Scheme), u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[scheme]
	}
	return scheme + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(t.headers) == 0 || origin(req.URL) != t.origin {
		return t.base.RoundTrip(req)
	}
	req = req.Clone(req.Context())
	for k, v := range t.headers {
		req.Header.Set(k, v)
	}
	return t.base.RoundTrip(req)
}

// abortTransport ends the requests it carries, and the reading of their
// responses, once abort ends: those of a session being started again that
// Close gave up on, among them what the SDK still sends once the start has
// failed (the notifications/cancelled of an initialize that was not
// answered, which it waits for).
type abortTransport struct {
	abort context.Context
	base  http.RoundTripper
}

func (t *abortTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancelCause(req.Context())
	stop := context.AfterFunc(t.abort, func() { cancel(context.Cause(t.abort)) })
	end := func() {
		stop()
		cancel(nil)
	}
	resp, err := t.base.RoundTrip(req.WithContext(ctx))
	if err != nil {
		end()
		return nil, err
	}
	resp.Body = &endingBody{ReadCloser: resp.Body, end: end}
	return resp, nil
}

// endingBody is a response body that calls end once closed.
type endingBody struct {
	io.ReadCloser
	end func()
}

func (b *endingBody) Close() error {
	err := b.ReadCloser.Close()
	b.end()
	return err
}
