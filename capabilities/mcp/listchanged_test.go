//go:build unix

package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/capabilities"
)

// toolNames are the names of the tools c offers now.
func toolNames(t *testing.T, c *Capability) []string {
	t.Helper()
	tools, err := c.Tools(context.Background())
	require.NoError(t, err)
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name())
	}
	return names
}

// A tool a server adds once it is running, announcing it with
// notifications/tools/list_changed, is offered from then on and can be
// called: over stdio, over streamable HTTP at protocol 2026-07-28 (the
// announcement comes through subscriptions/listen), and over SSE.
func TestToolsAnnouncedLaterAreOffered(t *testing.T) {
	t.Parallel()
	for _, transport := range []string{"stdio", "streamable 2026-07-28", "sse"} {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			var c *Capability
			if transport == "stdio" {
				c = startStdio(t, Options{})
			} else {
				srv := testServer()
				// The SDK's handler speaks protocol 2026-07-28 only statelessly.
				var h http.Handler = sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, &sdk.StreamableHTTPOptions{Stateless: true})
				path := "/mcp"
				if transport == "sse" {
					h, path = sdk.NewSSEHandler(func(*http.Request) *sdk.Server { return srv }, nil), "/sse"
				}
				ts := httptest.NewServer(h)
				t.Cleanup(ts.Close)
				var err error
				c, err = New(context.Background(), Options{URL: ts.URL + path}, capabilities.Setup{})
				require.NoError(t, err)
				t.Cleanup(func() { c.Close() })
			}
			if transport == "streamable 2026-07-28" {
				require.Equal(t, "2026-07-28", c.currentSession().InitializeResult().ProtocolVersion)
			}
			require.NotContains(t, toolNames(t, c), "late")
			out, err := call(t, c, "grow", `{}`, nil)
			require.NoError(t, err)
			require.Equal(t, "grown", out)
			for deadline := time.Now().Add(10 * time.Second); !slices.Contains(toolNames(t, c), "late"); time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("the tool the server announced is not offered: %v", toolNames(t, c))
				}
			}
			out, err = call(t, c, "late", `{}`, nil)
			require.NoError(t, err)
			assert.Equal(t, "late answer", out)
		})
	}
}

// A server that announced its tools changed and exited before they were
// listed again fails the listing as a call to it fails: with its exit
// status and the last lines of its stderr.
func TestServerThatExitsBeforeItsToolsAreListedAgain(t *testing.T) {
	t.Parallel()
	c := startStdio(t, Options{})
	exit := toolByName(t, c, "exit") // taken now: asking for it later lists the tools again
	before := c.ToolsVersion()
	_, err := call(t, c, "grow", `{}`, nil)
	require.NoError(t, err)
	for deadline := time.Now().Add(10 * time.Second); c.ToolsVersion() == before; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the announcement never came")
		}
	}
	_, err = exit.Call(context.Background(), json.RawMessage(`{}`))
	require.ErrorIs(t, err, ErrServerExited)
	_, err = c.Tools(context.Background())
	require.ErrorIs(t, err, ErrServerExited)
	assert.Contains(t, err.Error(), "MCP server mcp.test ("+serverCommand()[0]+") exited (exit status 7); the last lines of its stderr:\n  fatal: the disk caught fire")
}

// A server at protocol 2026-07-28 that says its tools change but refuses
// the subscriptions/listen they would be announced on, with an HTTP error
// or a JSON-RPC one, is started all the same, and its tools are called:
// only what it would announce is not heard.
func TestServerThatRefusesSubscriptionsStarts(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"HTTP 404", "JSON-RPC error"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			srv := testServer()
			srv.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
				return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
					if how == "JSON-RPC error" && method == "subscriptions/listen" {
						return nil, errors.New("no subscriptions here")
					}
					return next(ctx, method, req)
				}
			})
			h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, &sdk.StreamableHTTPOptions{Stateless: true})
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				if how == "HTTP 404" && bytes.Contains(body, []byte(`"subscriptions/listen"`)) {
					http.Error(w, "not here", http.StatusNotFound)
					return
				}
				r.Body = io.NopCloser(bytes.NewReader(body))
				h.ServeHTTP(w, r)
			}))
			t.Cleanup(ts.Close)
			c, err := New(context.Background(), Options{URL: ts.URL + "/mcp"}, capabilities.Setup{})
			require.NoError(t, err)
			t.Cleanup(func() { c.Close() })
			require.Equal(t, "2026-07-28", c.currentSession().InitializeResult().ProtocolVersion)
			require.True(t, c.currentSession().InitializeResult().Capabilities.Tools.ListChanged)
			for _, text := range []string{"first", "second"} {
				out, err := call(t, c, "echo", `{"text": "`+text+`"}`, nil)
				require.NoError(t, err)
				assert.Equal(t, text, out)
			}
		})
	}
}
