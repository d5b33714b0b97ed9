package mcpserve

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/runtime"
)

// cancelWatch is a held tool's Server whose events (as --events writes
// them) and Notice lines (stderr) a test reads.
type cancelWatch struct {
	srv     *Server
	held    *heldTool
	log     lockedBuffer
	mu      sync.Mutex
	notices []string
}

func newCancelWatch(t *testing.T) *cancelWatch {
	t.Helper()
	w := &cancelWatch{held: newHeldTool(t)}
	srv, err := New(context.Background(), []capabilities.Capability{plainCap{w.held}}, Options{
		Listener: runtime.JSONLines(&w.log),
		Notice: func(line string) {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.notices = append(w.notices, line)
		},
	})
	require.NoError(t, err)
	w.srv = srv
	return w
}

// result waits for the run.tool_result event of the call id.
func (w *cancelWatch) result(t *testing.T, id string) map[string]any {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		w.log.mu.Lock()
		empty := w.log.b.Len() == 0
		w.log.mu.Unlock()
		if empty {
			continue
		}
		for _, ev := range w.log.lines(t) {
			if ev["kind"] == "run.tool_result" && ev["id"] == id {
				return ev
			}
		}
	}
	t.Fatalf("no run.tool_result for %s", id)
	return nil
}

func (w *cancelWatch) stderr() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.notices, "\n")
}

// assertCancelled checks that the call id, which its client cancelled, is
// recorded as cancelled, not as the server's failure, and is not reported
// on stderr as one.
func (w *cancelWatch) assertCancelled(t *testing.T, id, why string) {
	t.Helper()
	ev := w.result(t, id)
	assert.Equal(t, string(runtime.ToolCancelled), ev["status"], "%v", ev)
	assert.Equal(t, why, ev["message"])
	assert.NotContains(t, w.stderr(), "failed", "a cancelled call is not the server's failure")
	assert.NotContains(t, w.stderr(), "context canceled")
}

// cancelCall makes a call of the held tool in cs, cancels it once it has
// started, and checks that it is cancelled and recorded so, as the call id.
func (w *cancelWatch) cancelCall(t *testing.T, cs *sdk.ClientSession, id string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	called := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "held"})
		called <- err
	}()
	waitFor(t, w.held.started, "the call did not start")
	cancel()
	assert.ErrorIs(t, waitFor(t, called, "the call did not return"), context.Canceled)
	waitFor(t, w.held.cancelled, "the call was not cancelled")
	w.assertCancelled(t, id, "cancelled by the client")
}

// A call its client cancels (notifications/cancelled) is recorded with
// status cancelled, since it is not the server's failure: it was recorded
// fatal, and stderr said `held (call mcp-1) failed: context canceled`.
func TestStdioCancelledCallIsRecordedCancelled(t *testing.T) {
	t.Parallel()
	w := newCancelWatch(t)
	defer w.srv.Close()
	inW, outR, served := servePipes(t, context.Background(), w.srv)
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test"}, nil).Connect(context.Background(),
		&sdk.IOTransport{Reader: outR, Writer: inW}, nil)
	require.NoError(t, err)

	w.cancelCall(t, cs, "mcp-1")

	// The session goes on, and a call that ends is ok.
	w.held.free()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "held"})
	require.NoError(t, err)
	assert.Equal(t, "done", textOf(t, res))
	assert.Equal(t, string(runtime.ToolOK), w.result(t, "mcp-2")["status"])
	require.NoError(t, cs.Close())
	assert.NoError(t, waitFor(t, served, "ServeStdio did not end"))
}

// Over streamable HTTP too, and for a session its client ends (DELETE),
// whose calls are cancelled as notifications/cancelled would.
func TestHTTPCancelledCallIsRecordedCancelled(t *testing.T) {
	t.Parallel()
	w := newCancelWatch(t)
	defer w.srv.Close()
	endpoint, _, _ := serveLoopback(t, w.srv)
	cs := dialHTTP(t, endpoint, "")
	defer cs.Close()
	defer w.held.free() // before Close, which waits for the calls

	w.cancelCall(t, cs, "mcp-1")

	leaving := dialHTTP(t, endpoint, "")
	defer leaving.Close()
	go leaving.CallTool(context.Background(), &sdk.CallToolParams{Name: "held"})
	waitFor(t, w.held.started, "the second call did not start")
	req, err := http.NewRequest(http.MethodDelete, endpoint, nil)
	require.NoError(t, err)
	req.Header.Set("Mcp-Session-Id", leaving.ID())
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	waitFor(t, w.held.cancelled, "the ended session's call was not cancelled")
	w.assertCancelled(t, "mcp-2", "cancelled: the client ended the session")
}

// A call cut off when serving ends (SIGTERM, Ctrl-C, its grace passed) is
// recorded as cancelled by the server's shutdown, and stderr says so: it
// was recorded fatal with the tool's "context canceled", and stderr said
// the call failed so, though the client is told the server was shutting
// down.
func TestShutdownRecordsTheCallsItCancels(t *testing.T) {
	t.Parallel()
	w := newCancelWatch(t)
	defer w.srv.Close()
	w.srv.grace = 100 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	send, answers, done := stdioSession(t, ctx, w.srv)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"held","arguments":{}}}`)
	waitFor(t, w.held.started, "the call did not start")
	cancel()
	assert.NoError(t, waitFor(t, done, "ServeStdio did not end"))
	answer := waitFor(t, answers, "the cancelled call was not answered")
	assert.Equal(t, "the call was cancelled: the server is shutting down", answer["error"].(map[string]any)["message"])
	ev := w.result(t, "mcp-1")
	assert.Equal(t, string(runtime.ToolCancelled), ev["status"], "%v", ev)
	assert.Equal(t, "cancelled: the server is shutting down", ev["message"])
	assert.Contains(t, w.stderr(), "held (call mcp-1) cancelled: the server is shutting down")
	assert.NotContains(t, w.stderr(), "context canceled")
}

// A client that cancels a call and closes stdin straight after, as
// agentspec's MCP capability does when it gives up on a call and the run
// ends, has the call recorded cancelled by it, and nothing on stderr: the
// SDK cancels a call it is told of from a goroutine of its own, while the
// end of stdin cancels the calls under way at once with io.EOF as cause,
// so the call was recorded fatal (`held (call mcp-1) failed: context
// canceled`) whenever the end won.
func TestStdioCallCancelledAsTheInputEndsIsRecordedCancelled(t *testing.T) {
	t.Parallel()
	w := newCancelWatch(t)
	defer w.srv.Close()
	inW, outR, served := servePipes(t, context.Background(), w.srv)
	go io.Copy(io.Discard, outR)
	_, err := inW.WriteString(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n" +
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"held","arguments":{}}}` + "\n")
	require.NoError(t, err)
	waitFor(t, w.held.started, "the call did not start")
	_, err = inW.WriteString(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}` + "\n")
	require.NoError(t, err)
	require.NoError(t, inW.Close())
	assert.NoError(t, waitFor(t, served, "ServeStdio did not end"))
	w.assertCancelled(t, "mcp-1", "cancelled by the client")
}

// A call its client cancels over HTTP, at a protocol whose call streams
// can be resumed (before 2026-07-28), has what was kept of its stream let
// go: it is never answered, so a resumption of it is of no use, and what
// was kept of it (the priming event, progress, the answer the SDK still
// writes) was held until the session closed.
func TestHTTPCancelledCallKeepsNoEvents(t *testing.T) {
	t.Parallel()
	srv, held := heldServer(t)
	defer srv.Close()
	defer held.free() // before Close, which waits for the calls
	events := newEventStore()
	hs := httptest.NewServer(srv.httpHandler("", nil, events))
	defer hs.Close()
	primed := &primingOfCalls{ids: make(chan string, 4)}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test"}, nil).Connect(context.Background(),
		&sdk.StreamableClientTransport{Endpoint: hs.URL, HTTPClient: &http.Client{Transport: primed}},
		&sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	require.NoError(t, err)
	defer cs.Close()

	ctx, cancel := context.WithCancel(context.Background())
	called := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "held"})
		called <- err
	}()
	stream := waitFor(t, primed.ids, "the call's stream was not primed")
	waitFor(t, held.started, "the call did not start")
	got, err := storedAfter(t, events, cs.ID(), stream, -1)
	require.NoError(t, err)
	require.Len(t, got, 1, "the priming event is kept while the call is under way")
	cancel()
	assert.ErrorIs(t, waitFor(t, called, "the call did not return"), context.Canceled)
	waitFor(t, held.cancelled, "the call was not cancelled")
	got, err = storedAfter(t, events, cs.ID(), stream, -1)
	require.NoError(t, err, "a resumption the SDK would refuse with a 400, ending the session")
	assert.Empty(t, got, "what was kept of the cancelled call's stream")

	// A call that ends has its stream kept, answer and all.
	held.free()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "held"})
	require.NoError(t, err)
	assert.Equal(t, "done", textOf(t, res))
	stream = waitFor(t, primed.ids, "the second call's stream was not primed")
	got, err = storedAfter(t, events, cs.ID(), stream, 0)
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Contains(t, got[0], `"done"`)
}

// primingOfCalls is a client's transport that sends ids the id of the
// stream of each POST carrying a tools/call, read from the priming event
// that starts it (ID_0), before the client reads the stream.
type primingOfCalls struct{ ids chan string }

func (p *primingOfCalls) RoundTrip(r *http.Request) (*http.Response, error) {
	var body []byte
	if r.Body != nil {
		var err error
		if body, err = io.ReadAll(r.Body); err != nil {
			return nil, err
		}
		r.Body.Close()
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err != nil || r.Method != http.MethodPost || !bytes.Contains(body, []byte(`"tools/call"`)) {
		return resp, err
	}
	br := bufio.NewReader(resp.Body)
	var read bytes.Buffer
	for {
		line, err := br.ReadString('\n')
		read.WriteString(line)
		if id, ok := strings.CutPrefix(strings.TrimSpace(line), "id:"); ok {
			stream, _, _ := strings.Cut(strings.TrimSpace(id), "_")
			p.ids <- stream
			break
		}
		if err != nil {
			break
		}
	}
	resp.Body = readCloser{io.MultiReader(&read, br), resp.Body}
	return resp, nil
}

// The calls of a long-lived session that are answered on their POST's
// stream leave nothing in the index by which a cancellation finds a call's
// stream: a cancellation of an answered call has nothing to let go, and the
// index grew with every call until the session closed, which looked through
// every session's calls.
func TestHTTPAnsweredCallsLeaveNoIndex(t *testing.T) {
	t.Parallel()
	srv, held := heldServer(t)
	defer srv.Close()
	held.free()
	events := newEventStore()
	hs := httptest.NewServer(srv.httpHandler("", nil, events))
	defer hs.Close()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test"}, nil).Connect(context.Background(),
		&sdk.StreamableClientTransport{Endpoint: hs.URL}, &sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	require.NoError(t, err)
	defer cs.Close()
	for range 5 {
		res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "held"})
		require.NoError(t, err)
		assert.Equal(t, "done", textOf(t, res))
	}
	// The handler notes the POST's end after the client has read the answer.
	deadline := time.Now().Add(5 * time.Second)
	for {
		events.mu.Lock()
		n := 0
		for _, calls := range events.calls.stream {
			n += len(calls)
		}
		events.mu.Unlock()
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d answered calls are still in the index", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
