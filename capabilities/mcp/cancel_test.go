//go:build unix

package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/runtime"
	"github.com/agentspec/agentspec/runtime/script"
	"github.com/agentspec/agentspec/spec"
)

// heardServer is a remote test server that notes the calls it starts,
// those that end cancelled, and the cancellations it is sent, as they come
// over HTTP: its session may close before it reads the last of them.
type heardServer struct {
	srv     *sdk.Server
	started chan struct{} // gets a value as a tools/call starts
	mu      sync.Mutex
	heard   []string // the requestId of each notifications/cancelled
	cut     int      // calls that ended cancelled
}

func newHeardServer() *heardServer {
	h := &heardServer{srv: testServer(), started: make(chan struct{}, 16)}
	h.srv.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if method != "tools/call" {
				return next(ctx, method, req)
			}
			h.started <- struct{}{}
			res, err := next(ctx, method, req)
			if errors.Is(err, context.Canceled) {
				h.mu.Lock()
				h.cut++
				h.mu.Unlock()
			}
			return res, err
		}
	})
	return h
}

// wrap notes the notifications/cancelled next is sent.
func (h *heardServer) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if msg, err := jsonrpc.DecodeMessage(body); err == nil {
			if req, ok := msg.(*jsonrpc.Request); ok && req.Method == "notifications/cancelled" {
				var p sdk.CancelledParams
				_ = json.Unmarshal(req.Params, &p)
				id, _ := json.Marshal(p.RequestID)
				h.mu.Lock()
				h.heard = append(h.heard, string(id))
				h.mu.Unlock()
			}
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		next.ServeHTTP(w, r)
	})
}

// counts are the cancellations heard and the calls cut short so far.
func (h *heardServer) counts() (heard, cut int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.heard), h.cut
}

// A call the run gives up on (Ctrl-C, the run's deadline) is cancelled on a
// remote server too: it is sent notifications/cancelled before the call
// returns, so that the Close the run makes next does not cut it off and
// leave the server working on.
func TestInterruptedCallIsCancelledOnTheRemoteServer(t *testing.T) {
	t.Parallel()
	h := newHeardServer()
	mux := http.NewServeMux()
	mux.Handle("/mcp", h.wrap(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return h.srv }, nil)))
	mux.Handle("/sse", h.wrap(sdk.NewSSEHandler(func(*http.Request) *sdk.Server { return h.srv }, nil)))
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)

	for _, path := range []string{"/mcp", "/sse"} {
		t.Run(path, func(t *testing.T) {
			c, err := New(context.Background(), Options{URL: ts.URL + path}, capabilities.Setup{})
			require.NoError(t, err)
			heardBefore, cutBefore := h.counts()
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				_, err := toolByName(t, c, "sleep").Call(ctx, json.RawMessage(`{"ms": 60000}`))
				done <- err
			}()
			select {
			case <-h.started:
			case <-time.After(20 * time.Second):
				t.Fatal("the call never reached the server")
			}
			cancel()
			select {
			case err := <-done:
				require.ErrorIs(t, err, context.Canceled)
			case <-time.After(20 * time.Second):
				t.Fatal("the call outlived its context")
			}
			require.NoError(t, c.Close()) // at once, as the run closes its capabilities
			heard, _ := h.counts()
			assert.Equal(t, heardBefore+1, heard, "the server was not told the call was cancelled")
			assert.Eventually(t, func() bool { _, cut := h.counts(); return cut > cutBefore }, 10*time.Second, 10*time.Millisecond,
				"the server worked on")
			heard, _ = h.counts()
			assert.Equal(t, heardBefore+1, heard, "the server was told twice")
		})
	}
}

// A call to a local server given up on, its read_timeout passed or its
// context ended (Ctrl-C, the run's deadline), is cancelled on the server
// before the call returns, so that the Close that ends the run next (or
// agentspec tool) does not leave the server, never told, working on:
// agentspec mcp, for one, answers the calls it read before its stdin ended,
// and a command its Shell runs with sandbox off is in no group the server's
// stop reaches.
func TestGivenUpCallIsCancelledOnTheLocalServer(t *testing.T) {
	t.Parallel()
	for _, way := range []string{"read_timeout", "context"} {
		t.Run(way, func(t *testing.T) {
			t.Parallel()
			heard := filepath.Join(t.TempDir(), "heard")
			opts := Options{Env: serverEnvMap("MCP_TEST_HEARD_FILE", heard)}
			if way == "read_timeout" {
				opts.ReadTimeout = 0.3
			}
			c := startStdio(t, opts)
			ctx := context.Background()
			if way == "context" {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, 300*time.Millisecond)
				defer cancel()
			}
			_, err := toolByName(t, c, "sleep").Call(ctx, json.RawMessage(`{"ms": 60000}`))
			require.Error(t, err)
			require.NoError(t, c.Close()) // at once, as agentspec tool and an interrupted run close it
			told, _ := os.ReadFile(heard)
			assert.Equal(t, "cancelled\n", string(told), "the server was not told the call was cancelled, or was told twice")
		})
	}
}

// Once told, the server is not told again by the SDK, while the session
// goes on.
func TestLocalServerIsToldOnce(t *testing.T) {
	t.Parallel()
	c := startStdio(t, Options{ReadTimeout: 0.3})
	_, err := toolByName(t, c, "sleep").Call(context.Background(), json.RawMessage(`{"ms": 60000}`))
	_, retry := capabilities.AsRetry(err)
	require.True(t, retry, "%v", err)
	time.Sleep(cancelWait + 500*time.Millisecond) // room for the SDK's own, were it sent
	out, err := call(t, c, "heard", `{}`, nil)
	require.NoError(t, err)
	assert.Equal(t, "1", out)
}

// Ctrl-C during a run's call to a remote server: the run ends interrupted,
// and the server, told to cancel the call, stops working on it.
func TestInterruptedRunCancelsTheRemoteCall(t *testing.T) {
	t.Parallel()
	h := newHeardServer()
	ts := httptest.NewServer(h.wrap(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return h.srv }, nil)))
	t.Cleanup(ts.Close)
	doc := fmt.Sprintf("model: openai:gpt-4.1\ncapabilities:\n  - MCP: {url: %q}\n", ts.URL+"/mcp")
	s, err := (&spec.Loader{}).Load("agent.yaml", []byte(doc))
	require.NoError(t, err)
	model := script.New(script.Calls(script.Call("sleep", map[string]any{"ms": 60000})), script.Say("never"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-h.started:
			cancel() // Ctrl-C while the server works
		case <-ctx.Done():
		}
	}()
	_, err = runtime.Run(ctx, s, runtime.WithModel(model, runtime.DialectOpenAI), runtime.WithWorkspace(t.TempDir()))
	require.ErrorIs(t, err, runtime.ErrInterrupted)
	heard, _ := h.counts()
	assert.Equal(t, 1, heard, "the server was not told the call was cancelled")
	assert.Eventually(t, func() bool { _, cut := h.counts(); return cut == 1 }, 10*time.Second, 10*time.Millisecond,
		"the server worked on")
	heard, _ = h.counts()
	assert.Equal(t, 1, heard, "the server was told twice")
}

// A server speaking a protocol version whose requests carry their method
// and name in headers (Mcp-Method, Mcp-Name, from 2026-07-28) refuses a
// message whose headers say another: the cancellation agentspec sends is
// made with its own, not those of the call it cancels, so that the server
// takes it, once.
func TestCancellationCarriesItsOwnMethodHeader(t *testing.T) {
	t.Parallel()
	h := newHeardServer()
	var mu sync.Mutex
	var answers []string // the status of each notifications/cancelled of the call, with its Mcp-Method and Mcp-Name
	var callID any       // the tools/call's id
	var cancelled []any  // the requestId each notifications/cancelled names, answers' entries among them
	inner := h.wrap(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return h.srv }, &sdk.StreamableHTTPOptions{Stateless: true}))
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		rec := &statusRecorder{ResponseWriter: w}
		inner.ServeHTTP(rec, r)
		if msg, err := jsonrpc.DecodeMessage(body); err == nil {
			req, ok := msg.(*jsonrpc.Request)
			mu.Lock()
			switch {
			case ok && req.Method == "tools/call":
				callID = req.ID.Raw()
			case ok && req.Method == "notifications/cancelled":
				// The session's subscriptions/listen is cancelled too, as
				// the session closes.
				var p struct {
					RequestID any `json:"requestId"`
				}
				_ = json.Unmarshal(req.Params, &p)
				cancelled = append(cancelled, p.RequestID)
				answers = append(answers, fmt.Sprintf("%d %s %q", rec.status, r.Header.Get("Mcp-Method"), r.Header.Get("Mcp-Name")))
			}
			mu.Unlock()
		}
	}))
	t.Cleanup(ts.Close)

	c, err := New(context.Background(), Options{URL: ts.URL + "/mcp"}, capabilities.Setup{})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-h.started:
			cancel()
		case <-time.After(20 * time.Second):
		}
	}()
	_, err = toolByName(t, c, "sleep").Call(ctx, json.RawMessage(`{"ms": 1500}`))
	require.ErrorIs(t, err, context.Canceled)
	require.NoError(t, c.Close())
	time.Sleep(cancelWait + 500*time.Millisecond) // room for the SDK's own, were it sent
	mu.Lock()
	defer mu.Unlock()
	var ofTheCall []string
	for i, id := range cancelled {
		if fmt.Sprint(id) == fmt.Sprint(callID) {
			ofTheCall = append(ofTheCall, answers[i])
		}
	}
	assert.Equal(t, []string{`202 notifications/cancelled ""`}, ofTheCall)
}

// statusRecorder notes the status a handler answers with.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// The cancellation keeps the call's session, version and authorization
// headers, and says what it is itself.
func TestCancelHeader(t *testing.T) {
	t.Parallel()
	call := http.Header{}
	for k, v := range map[string]string{
		"Mcp-Session-Id": "s", "Mcp-Protocol-Version": "2026-07-28", "Authorization": "Bearer t",
		"Mcp-Method": "tools/call", "Mcp-Name": "sleep", "Mcp-Param-Region": "eu",
	} {
		call.Set(k, v)
	}
	assert.Equal(t, http.Header{
		"Mcp-Session-Id": {"s"}, "Mcp-Protocol-Version": {"2026-07-28"}, "Authorization": {"Bearer t"},
		"Mcp-Method": {"notifications/cancelled"},
	}, cancelHeader(call))
	assert.Equal(t, "tools/call", call.Get("Mcp-Method"), "the call's own header is left as it was")
	assert.Empty(t, cancelHeader(http.Header{"Mcp-Session-Id": {"s"}}).Get("Mcp-Method"), "none before 2026-07-28")
}
