package capabilities

import (
	"context"
	"net/http"
)

// Remote is implemented by a capability whose tools live behind the network
// (an MCP server's): listing them means connecting. `agentspec validate`
// builds such a capability but does not ask for its tools, so it checks
// their names only when the run does. It is optional, discovered by type
// assertion.
type Remote interface {
	Remote() bool
}

type checkOnlyKey struct{}

// WithoutConnecting returns a context in which capabilities are built to be
// checked, not used: a capability whose tools live behind the network checks
// its options but neither starts nor reaches a server, and reports Remote.
// `agentspec validate` builds capabilities so.
func WithoutConnecting(ctx context.Context) context.Context {
	return context.WithValue(ctx, checkOnlyKey{}, true)
}

// Connecting reports whether capabilities built with ctx are to be used, as
// opposed to WithoutConnecting.
func Connecting(ctx context.Context) bool {
	only, _ := ctx.Value(checkOnlyKey{}).(bool)
	return !only
}

type transportKey struct{}

// WithHTTPTransport returns a context in which capabilities built from it
// reach their remote servers (an MCP server named by url) through rt: a
// proxy, a transport with the organisation's trust roots, or, in a test, a
// local server standing in for the spec's host. Without it they use
// http.DefaultTransport.
func WithHTTPTransport(ctx context.Context, rt http.RoundTripper) context.Context {
	return context.WithValue(ctx, transportKey{}, rt)
}

// HTTPTransport returns the transport WithHTTPTransport put in ctx, or
// http.DefaultTransport.
func HTTPTransport(ctx context.Context) http.RoundTripper {
	if rt, ok := ctx.Value(transportKey{}).(http.RoundTripper); ok && rt != nil {
		return rt
	}
	return http.DefaultTransport
}
