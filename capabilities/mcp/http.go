package mcp

import (
	"context"
	"fmt"
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
func connectHTTP(ctx context.Context, client *sdk.Client, endpoint string, headers map[string]string) (*sdk.ClientSession, error) {
	hc := &http.Client{Transport: &headerTransport{headers: headers, base: http.DefaultTransport}}
	sse := &sdk.SSEClientTransport{Endpoint: endpoint, HTTPClient: hc}
	if isSSEPath(endpoint) {
		s, err := client.Connect(ctx, sse, nil)
		if err != nil {
			return nil, fmt.Errorf("over SSE: %w", err)
		}
		return s, nil
	}
	streamable := &sdk.StreamableClientTransport{
		Endpoint:   endpoint,
		HTTPClient: hc,
		// agentspec neither lists nor reacts to what a server announces on
		// its own; the stream would only hold a connection open.
		DisableStandaloneSSE: true,
	}
	s, err := client.Connect(ctx, streamable, nil)
	if err == nil {
		return s, nil
	}
	if ctx.Err() != nil {
		return nil, err
	}
	s, sseErr := client.Connect(ctx, sse, nil)
	if sseErr != nil {
		return nil, fmt.Errorf("over streamable HTTP: %v; over SSE: %v", err, sseErr)
	}
	return s, nil
}

func isSSEPath(endpoint string) bool {
	u, err := url.Parse(endpoint)
	return err == nil && strings.HasSuffix(strings.TrimRight(u.Path, "/"), "/sse")
}

// headerTransport adds the spec's headers (authorization_token among them)
// to every request.
type headerTransport struct {
	headers map[string]string
	base    http.RoundTripper
}

func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(t.headers) == 0 {
		return t.base.RoundTrip(req)
	}
	req = req.Clone(req.Context())
	for k, v := range t.headers {
		req.Header.Set(k, v)
	}
	return t.base.RoundTrip(req)
}
