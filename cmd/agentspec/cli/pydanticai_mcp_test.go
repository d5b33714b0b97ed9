package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// exampleServers stands in for the MCP servers the ported specs name at
// example.com, so that those specs run unchanged and offline: real MCP
// servers (the official SDK's, over SSE and over streamable HTTP) behind
// one local TLS listener, reached through cli.WithHTTPTransport.
// The transport dials nothing but that listener, so a host the test does not
// serve fails instead of reaching the network.
//
//	mcp.example.com/sse    SSE; tools "search" and "drop_table"
//	api1.example.com/      streamable HTTP; tool "lookup"
//	api2.example.com/      streamable HTTP; tool "lookup"
func exampleServers(t *testing.T) context.Context {
	t.Helper()
	server := func(name string, tools ...string) *sdk.Server {
		s := sdk.NewServer(&sdk.Implementation{Name: name, Version: "1"}, nil)
		for _, tool := range tools {
			s.AddTool(&sdk.Tool{
				Name:        tool,
				Description: "The " + tool + " tool of " + name + ".",
				InputSchema: map[string]any{
					"type":       "object",
					"properties": map[string]any{"query": map[string]any{"type": "string"}},
					"required":   []string{"query"},
				},
			}, func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				var args struct{ Query string }
				if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
					return nil, err
				}
				text := fmt.Sprintf("%s %s: %s", name, tool, args.Query)
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}}, nil
			})
		}
		return s
	}
	search := server("mcp.example.com", "search", "drop_table")
	api1, api2 := server("api1.example.com", "lookup"), server("api2.example.com", "lookup")
	// The servers answer to their example.com names on a loopback
	// listener, which is what the SDK's DNS-rebinding guard refuses.
	sse := &sdk.SSEOptions{DisableLocalhostProtection: true}
	streamable := &sdk.StreamableHTTPOptions{DisableLocalhostProtection: true}
	handlers := map[string]http.Handler{
		"mcp.example.com":  sdk.NewSSEHandler(func(*http.Request) *sdk.Server { return search }, sse),
		"api1.example.com": sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return api1 }, streamable),
		"api2.example.com": sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return api2 }, streamable),
	}
	ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h, ok := handlers[r.Host]
		if !ok {
			http.Error(w, "no such host here: "+r.Host, http.StatusBadGateway)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)

	tr := ts.Client().Transport.(*http.Transport).Clone()
	tr.TLSClientConfig = tr.TLSClientConfig.Clone()
	// The test certificate is issued to example.com; the hosts are its
	// subdomains, all served by this one listener.
	tr.TLSClientConfig.ServerName = "example.com"
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if err != nil || !strings.HasSuffix(host, ".example.com") {
			return nil, fmt.Errorf("the test serves example.com only, not %s", addr)
		}
		var d net.Dialer
		return d.DialContext(ctx, "tcp", ts.Listener.Addr().String())
	}
	t.Cleanup(tr.CloseIdleConnections)
	return WithHTTPTransport(context.Background(), tr)
}
