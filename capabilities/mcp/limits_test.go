//go:build unix

package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/capabilities"
)

// endlessEvent writes one SSE data line that never ends, until the client
// hangs up or hostileCap bytes are written (so that a client that reads on
// regardless still gets an answer), and returns how many bytes it wrote.
func endlessEvent(w http.ResponseWriter, prefix string) int64 {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	n, _ := io.WriteString(w, prefix+"data: ")
	written := int64(n)
	chunk := bytes.Repeat([]byte("a"), 64<<10)
	rc := http.NewResponseController(w)
	for written < hostileCap {
		n, err := w.Write(chunk)
		written += int64(n)
		if err != nil || rc.Flush() != nil {
			break
		}
	}
	return written
}

// hostileCap is where a hostile server gives up: far more than a client
// that stops at MaxMessageBytes lets it write.
const hostileCap = 32 * MaxMessageBytes

// wroteAtMost is how much a server may have written when the client stopped
// reading at MaxMessageBytes: that, and what the sockets' buffers hold.
const wroteAtMost = 3 * MaxMessageBytes

func TestEndlessSSEEventOverStreamableHTTP(t *testing.T) {
	t.Parallel()
	var written atomic.Int64
	served := make(chan struct{})
	streamable := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return testServer() }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Method == http.MethodPost && bytes.Contains(body, []byte(`"tools/call"`)) {
			written.Store(endlessEvent(w, ""))
			close(served)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		streamable.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)

	c, err := New(context.Background(), Options{URL: ts.URL + "/mcp"}, "")
	require.NoError(t, err)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // only so that a failure ends
	defer cancel()
	_, err = toolByName(t, c, "echo").Call(ctx, json.RawMessage(`{"text": "x"}`))
	select {
	case <-served:
	case <-ctx.Done():
		t.Fatal("the server is still writing")
	}
	assert.Less(t, written.Load(), int64(wroteAtMost), "the client stopped reading at the bound")
	require.ErrorIs(t, err, ErrMessageTooLarge)
	_, retry := capabilities.AsRetry(err)
	assert.False(t, retry, "a message over the bound is fatal")
	assert.Contains(t, err.Error(), "MCP server 127.0.0.1-mcp ("+ts.URL+"/mcp): calling echo: the MCP server sent a message larger than the limit: an SSE event over 10 MiB")

	_, err = toolByName(t, c, "echo").Call(ctx, json.RawMessage(`{"text": "x"}`))
	assert.ErrorIs(t, err, ErrMessageTooLarge, "later calls fail the same way")
}

func TestEndlessSSEEventOverSSE(t *testing.T) {
	t.Parallel()
	var written atomic.Int64
	served := make(chan struct{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		written.Store(endlessEvent(w, "event: endpoint\ndata: /messages\n\n"))
		close(served)
	}))
	t.Cleanup(ts.Close)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := New(ctx, Options{URL: ts.URL + "/sse"}, "")
	select {
	case <-served:
	case <-ctx.Done():
		t.Fatal("the server is still writing")
	}
	assert.Less(t, written.Load(), int64(wroteAtMost), "the client stopped reading at the bound")
	require.ErrorIs(t, err, ErrMessageTooLarge)
	assert.Contains(t, err.Error(), "MCP server 127.0.0.1-sse ("+ts.URL+"/sse) could not be reached: the MCP server sent a message larger than the limit: an SSE event over 10 MiB")
}

func TestLargeJSONResponse(t *testing.T) {
	t.Parallel()
	streamable := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return testServer() }, &sdk.StreamableHTTPOptions{JSONResponse: true})
	ts := httptest.NewServer(streamable)
	t.Cleanup(ts.Close)
	c, err := New(context.Background(), Options{URL: ts.URL + "/mcp"}, "")
	require.NoError(t, err)
	defer c.Close()

	out, err := call(t, c, "big", `{"bytes": 1000}`, nil)
	require.NoError(t, err, "a JSON response under the bound is read")
	assert.Len(t, out, 1000)
	_, err = call(t, c, "big", fmt.Sprintf(`{"bytes": %d}`, MaxMessageBytes), nil)
	require.ErrorIs(t, err, ErrMessageTooLarge)
	assert.Contains(t, err.Error(), "a response body over 10 MiB")
}

func TestResultOverTheBoundIsARetry(t *testing.T) {
	t.Parallel()
	c := startStdio(t, Options{})
	out, err := call(t, c, "big", fmt.Sprintf(`{"bytes": %d}`, MaxResultBytes), nil)
	require.NoError(t, err)
	assert.Len(t, out, MaxResultBytes)

	var result *CallResultEvent
	_, err = call(t, c, "big", fmt.Sprintf(`{"bytes": %d}`, MaxResultBytes+1), func(_ context.Context, ev capabilities.Event) error {
		if r, ok := ev.(*CallResultEvent); ok {
			result = r
		}
		return nil
	})
	msg, retry := capabilities.AsRetry(err)
	require.True(t, retry, "%v", err)
	assert.Equal(t, "The result of big is 1048577 bytes of text, more than the 1048576 (1 MiB) a tool result may have. Call it so that it returns less.", msg)
	require.NotNil(t, result, "the result event says what the server sent")
	assert.Equal(t, MaxResultBytes+1, result.Chars)
}

func TestReadTimeout(t *testing.T) {
	t.Parallel()
	c := startStdio(t, Options{ReadTimeout: 0.2})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // only so that a failure ends
	defer cancel()
	_, err := toolByName(t, c, "sleep").Call(ctx, json.RawMessage(`{"ms": 600000}`))
	msg, retry := capabilities.AsRetry(err)
	require.True(t, retry, "%v", err)
	assert.Equal(t, "Timed out after 0.2 seconds waiting for MCP server mcp.test to answer; the call was cancelled.", msg)

	out, err := call(t, c, "echo", `{"text": "still here"}`, nil)
	require.NoError(t, err, "the session survives a call that timed out")
	assert.Equal(t, "still here", out)

	assert.Equal(t, DefaultReadTimeout, (&Capability{}).callTimeout())
}
