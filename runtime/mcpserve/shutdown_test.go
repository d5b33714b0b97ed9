package mcpserve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/capabilities"
)

// heldTool is a tool whose calls go on until their context ends or the
// test releases them: a Shell command, a remote MCP tool still working.
type heldTool struct {
	name      string        // "held" unless set
	started   chan struct{} // a value for each call started
	cancelled chan struct{} // a value for each call whose context ended
	release   chan struct{} // closed: the calls under way return "done"
	freed     sync.Once
}

func newHeldTool(t *testing.T) *heldTool {
	g := &heldTool{started: make(chan struct{}, 16), cancelled: make(chan struct{}, 16), release: make(chan struct{})}
	t.Cleanup(g.free)
	return g
}

// free releases the calls, now and later.
func (g *heldTool) free() { g.freed.Do(func() { close(g.release) }) }

func (g *heldTool) Name() string {
	if g.name == "" {
		return "held"
	}
	return g.name
}
func (g *heldTool) Description() string        { return "waits at a held" }
func (g *heldTool) Parameters() map[string]any { return nil }
func (g *heldTool) Call(ctx context.Context, _ json.RawMessage) (string, error) {
	g.started <- struct{}{}
	select {
	case <-ctx.Done():
		g.cancelled <- struct{}{}
		return "", ctx.Err()
	case <-g.release:
		return "done", nil
	}
}

func waitFor[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(30 * time.Second):
		t.Fatal(what)
	}
	var zero T
	return zero
}

// stdioSession serves srv over real pipes with ctx, initializes, and
// returns a function writing a line to the server, its answers, and the
// result of ServeStdio.
func stdioSession(t *testing.T, ctx context.Context, srv *Server) (send func(string), answers <-chan map[string]any, done <-chan error) {
	t.Helper()
	send, lines, done := stdioLines(t, ctx, srv, "2025-06-18")
	got := make(chan map[string]any, 16)
	go func() {
		for line := range lines {
			var m map[string]any
			if json.Unmarshal([]byte(line), &m) == nil {
				got <- m
			}
		}
	}()
	return send, got, done
}

// servePipes runs srv.ServeStdio with ctx on real pipes, as under an MCP
// client, and returns the client's ends and what ServeStdio returns.
func servePipes(t *testing.T, ctx context.Context, srv *Server) (toServer, fromServer *os.File, served <-chan error) {
	t.Helper()
	inR, inW, err := os.Pipe()
	require.NoError(t, err)
	outR, outW, err := os.Pipe()
	require.NoError(t, err)
	t.Cleanup(func() { inR.Close(); inW.Close(); outR.Close(); outW.Close() })
	done := make(chan error, 1)
	go func() { done <- srv.ServeStdio(ctx, inR, outW) }()
	return inW, outR, done
}

// stdioLines is stdioSession's, with the lines the server writes, on the
// protocol version given.
func stdioLines(t *testing.T, ctx context.Context, srv *Server, protocol string) (send func(string), lines <-chan string, done <-chan error) {
	t.Helper()
	inW, outR, served := servePipes(t, ctx, srv)
	got := make(chan string, 16)
	go func() {
		defer close(got)
		r := bufio.NewReader(outR)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			got <- strings.TrimSuffix(line, "\n")
		}
	}()
	send = func(line string) {
		_, err := inW.WriteString(line + "\n")
		require.NoError(t, err)
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + protocol + `","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	waitFor(t, got, "initialize was not answered")
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return send, got, served
}

// When serving over stdio ends (SIGTERM, Ctrl-C) a call under way is given
// a grace to finish, then cancelled, and ServeStdio returns: it does not
// wait for a call that may never end (a long Shell command, a remote
// tool), which kept `agentspec mcp` running until a second signal killed
// it with the capabilities unclosed.
func TestStdioShutdownCancelsACallUnderWay(t *testing.T) {
	t.Parallel()
	srv, held := heldServer(t)
	defer srv.Close()
	srv.grace = 100 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	send, answers, done := stdioSession(t, ctx, srv)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"held","arguments":{}}}`)
	waitFor(t, held.started, "the call did not start")
	cancel()
	assert.NoError(t, waitFor(t, done, "ServeStdio waited for a call that does not end"))
	waitFor(t, held.cancelled, "the call was not cancelled")
	answer := waitFor(t, answers, "the cancelled call was not answered")
	assert.EqualValues(t, 2, answer["id"])
	assert.Equal(t, "the call was cancelled: the server is shutting down", answer["error"].(map[string]any)["message"])
}

// A call that ends within the grace is answered as usual.
func TestStdioShutdownAnswersACallThatEndsInTime(t *testing.T) {
	t.Parallel()
	srv, held := heldServer(t)
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	send, answers, done := stdioSession(t, ctx, srv)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"held","arguments":{}}}`)
	waitFor(t, held.started, "the call did not start")
	cancel()
	held.free()
	assert.NoError(t, waitFor(t, done, "ServeStdio did not end"))
	answer := waitFor(t, answers, "the call was not answered")
	assert.EqualValues(t, 2, answer["id"])
	assert.Contains(t, answer, "result")
	assert.Empty(t, held.cancelled)
}

// When Serve's context ends (SIGTERM, Ctrl-C) a call under way is given
// the grace, then cancelled and answered with an error saying so, and
// Serve returns once it has returned, the sessions closed: no tool runs on
// after Serve, and the capabilities Close then closes are not in use. A
// client that merely keeps its stream for notifications open does not hold
// the shutdown.
func TestServeShutdownCancelsACallUnderWay(t *testing.T) {
	t.Parallel()
	srv, held := heldServer(t)
	defer srv.Close()
	srv.grace = 100 * time.Millisecond
	endpoint, cancel, served := serveLoopback(t, srv)
	idle, busy := dialHTTP(t, endpoint, ""), dialHTTP(t, endpoint, "")
	t.Cleanup(func() { idle.Close(); busy.Close() })
	_, err := idle.ListTools(context.Background(), nil)
	require.NoError(t, err)
	called := make(chan error, 1)
	go func() {
		_, err := busy.CallTool(context.Background(), &sdk.CallToolParams{Name: "held"})
		called <- err
	}()
	waitFor(t, held.started, "the call did not start")
	cancel()
	assert.NoError(t, waitFor(t, served, "Serve did not end"))
	select {
	case <-held.cancelled:
	default:
		t.Fatal("the call still runs after Serve returned")
	}
	assert.ErrorContains(t, waitFor(t, called, "the call was not answered"), "the call was cancelled: the server is shutting down")
	for ss := range srv.MCP().Sessions() {
		t.Errorf("session %s is still open after Serve returned", ss.ID())
	}
}

// A call that ends within the grace is answered; the client idle beside
// it, whose stream for notifications stays open, does not hold Serve until
// the grace has passed.
func TestServeShutdownAnswersACallThatEndsInTime(t *testing.T) {
	t.Parallel()
	srv, held := heldServer(t)
	defer srv.Close()
	srv.grace = time.Hour
	endpoint, cancel, served := serveLoopback(t, srv)
	idle, busy := dialHTTP(t, endpoint, ""), dialHTTP(t, endpoint, "")
	t.Cleanup(func() { idle.Close(); busy.Close() })
	_, err := idle.ListTools(context.Background(), nil)
	require.NoError(t, err)
	called := make(chan *sdk.CallToolResult, 1)
	go func() {
		res, err := busy.CallTool(context.Background(), &sdk.CallToolParams{Name: "held"})
		assert.NoError(t, err)
		called <- res
	}()
	waitFor(t, held.started, "the call did not start")
	cancel()
	held.free()
	res := waitFor(t, called, "the call was not answered")
	require.NotNil(t, res)
	assert.Equal(t, "done", textOf(t, res))
	assert.NoError(t, waitFor(t, served, "Serve waited for the idle client"))
	assert.Empty(t, held.cancelled)
}

// A client that ends its session (DELETE) while a call is under way has
// the call cancelled: no one is left to answer, and the DELETE is answered
// at once rather than once the call ends, which may be never.
func TestHTTPSessionEndCancelsItsCalls(t *testing.T) {
	t.Parallel()
	held := newHeldTool(t)
	other := newHeldTool(t)
	other.name = "other"
	srv, err := New(context.Background(), []capabilities.Capability{plainCap{held, other}}, Options{})
	require.NoError(t, err)
	defer srv.Close()
	ts := httptest.NewServer(srv.Handler("s3cret"))
	defer ts.Close()
	leaving, staying := dialHTTP(t, ts.URL+"/mcp", "s3cret"), dialHTTP(t, ts.URL+"/mcp", "s3cret")
	defer staying.Close()
	defer leaving.Close()
	// Before the Closes, which wait for the calls.
	defer held.free()
	defer other.free()
	go leaving.CallTool(context.Background(), &sdk.CallToolParams{Name: "held"})
	waitFor(t, held.started, "the call did not start")
	stayed := make(chan error, 1)
	go func() {
		_, err := staying.CallTool(context.Background(), &sdk.CallToolParams{Name: "other"})
		stayed <- err
	}()
	waitFor(t, other.started, "the other session's call did not start")

	// The DELETE a client sends to end its session at once (the
	// TypeScript SDK's terminateSession; the Go SDK's Close waits for its
	// calls first).
	ended := make(chan int, 1)
	go func() {
		req, err := http.NewRequest(http.MethodDelete, ts.URL+"/mcp", nil)
		if !assert.NoError(t, err) {
			return
		}
		req.Header.Set("Authorization", "Bearer s3cret")
		req.Header.Set("Mcp-Session-Id", leaving.ID())
		resp, err := http.DefaultClient.Do(req)
		if assert.NoError(t, err) {
			resp.Body.Close()
			ended <- resp.StatusCode
		}
	}()
	waitFor(t, held.cancelled, "the ended session's call was not cancelled")
	assert.Equal(t, http.StatusNoContent, waitFor(t, ended, "the session's end was not answered"))
	assert.Empty(t, other.cancelled, "another session's call goes on")
	other.free()
	assert.NoError(t, waitFor(t, stayed, "the other session's call was not answered"))
}

// A call the client cancels (notifications/cancelled) stops, and is not
// answered, as MCP asks of the receiver of a cancellation: a client that
// has forgotten the id reports an answer to it as an error (the
// TypeScript SDK's "Received a response for an unknown message ID").
func TestStdioCancelledCallIsNotAnswered(t *testing.T) {
	t.Parallel()
	srv, held := heldServer(t)
	defer srv.Close()
	send, answers, _ := stdioSession(t, context.Background(), srv)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"held","arguments":{}}}`)
	waitFor(t, held.started, "the call did not start")
	send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2,"reason":"the user pressed Esc"}}`)
	waitFor(t, held.cancelled, "the call was not cancelled")
	send(`{"jsonrpc":"2.0","id":3,"method":"ping"}`)
	assert.EqualValues(t, 3, waitFor(t, answers, "the ping was not answered")["id"], "the cancelled call is not answered")

	// In a batch (protocol 2025-03-26), it is left out of the batch's answer.
	sendRaw, got, _ := stdioLines(t, context.Background(), srv, "2025-03-26")
	sendRaw(`[{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"held","arguments":{}}},{"jsonrpc":"2.0","id":5,"method":"ping"}]`)
	waitFor(t, held.started, "the batch's call did not start")
	sendRaw(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":4}}`)
	waitFor(t, held.cancelled, "the batch's call was not cancelled")
	assert.Equal(t, `[{"jsonrpc":"2.0","id":5,"result":{}}]`, waitFor(t, got, "the batch was not answered"))
}

// A connection left idle between requests is closed after a while, as
// the reading of a request's headers is: a peer that has not the token,
// refused with 401, could otherwise hold connections open for ever, as
// many as the process may have.
func TestServeClosesIdleConnections(t *testing.T) {
	t.Parallel()
	srv, held := heldServer(t)
	defer srv.Close()
	srv.idle = 100 * time.Millisecond
	ln, err := Listen("127.0.0.1:0", "s3cret")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go srv.Serve(ctx, ln, "s3cret")
	conn, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	_, err = io.WriteString(conn, "POST /mcp HTTP/1.1\r\nHost: "+ln.Addr().String()+"\r\nContent-Length: 0\r\n\r\n")
	require.NoError(t, err)
	r := bufio.NewReader(conn)
	resp, err := http.ReadResponse(r, nil)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(30*time.Second)))
	_, err = r.ReadByte()
	assert.ErrorIs(t, err, io.EOF, "the server closes the idle connection")

	// A call's stream, and the client's for notifications, are requests
	// under way: a call longer than that is answered. The client keeps no
	// connection between requests: one the server closed as idle just as
	// the client sent a request on it would fail that request, as it does
	// with any HTTP server, and the short idle time here makes that likely.
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test"}, nil).Connect(context.Background(),
		&sdk.StreamableClientTransport{Endpoint: "http://" + ln.Addr().String() + "/mcp",
			HTTPClient: &http.Client{Transport: bearerNoKeepAlive{"s3cret"}}}, nil)
	require.NoError(t, err)
	defer cs.Close()
	defer held.free()
	called := make(chan *sdk.CallToolResult, 1)
	go func() {
		res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "held"})
		assert.NoError(t, err)
		called <- res
	}()
	waitFor(t, held.started, "the call did not start")
	time.Sleep(5 * srv.idle)
	held.free()
	res := waitFor(t, called, "the call was not answered")
	require.NotNil(t, res)
	assert.Equal(t, "done", textOf(t, res))
}

// bearerNoKeepAlive is bearer over connections each used for one request.
type bearerNoKeepAlive struct{ token string }

var noKeepAlive = &http.Transport{DisableKeepAlives: true}

func (b bearerNoKeepAlive) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return noKeepAlive.RoundTrip(r)
}

// serveLoopback serves srv over HTTP on a loopback port until the returned
// cancel is called; served gets what Serve returned.
func serveLoopback(t *testing.T, srv *Server) (endpoint string, cancel context.CancelFunc, served chan error) {
	t.Helper()
	ln, err := Listen("127.0.0.1:0", "")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	served = make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln, "") }()
	return "http://" + ln.Addr().String() + "/mcp", cancel, served
}

// dialHTTP connects a go-sdk client to the streamable HTTP endpoint, with
// the bearer token when there is one; the caller closes the session.
func dialHTTP(t *testing.T, endpoint, token string) *sdk.ClientSession {
	t.Helper()
	tr := &sdk.StreamableClientTransport{Endpoint: endpoint}
	if token != "" {
		tr.HTTPClient = &http.Client{Transport: bearer{token}}
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test"}, nil).Connect(context.Background(), tr, nil)
	require.NoError(t, err)
	return cs
}

// heldServer is a Server offering a held tool (see newHeldTool); the test
// closes it.
func heldServer(t *testing.T) (*Server, *heldTool) {
	t.Helper()
	held := newHeldTool(t)
	srv, err := New(context.Background(), []capabilities.Capability{plainCap{held}}, Options{})
	require.NoError(t, err)
	return srv, held
}

// A call the client cancels over HTTP is not answered either: its POST's
// stream ends without the answer. The client here keeps reading that
// stream after it cancels (keptStreams), as a client that does not end its
// request on cancelling does, so what the server sent on it is seen.
func TestHTTPCancelledCallIsNotAnswered(t *testing.T) {
	t.Parallel()
	srv, held := heldServer(t)
	defer srv.Close()
	endpoint, _, _ := serveLoopback(t, srv)
	kept := &keptStreams{ended: make(chan string, 16)}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test"}, nil).Connect(context.Background(),
		&sdk.StreamableClientTransport{Endpoint: endpoint, HTTPClient: &http.Client{Transport: kept}}, nil)
	require.NoError(t, err)
	defer cs.Close()

	ctx, cancel := context.WithCancel(context.Background())
	called := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "held"})
		called <- err
	}()
	waitFor(t, held.started, "the call did not start")
	cancel()
	assert.ErrorIs(t, waitFor(t, called, "the call did not return"), context.Canceled)
	waitFor(t, held.cancelled, "the call was not cancelled")
	stream := waitFor(t, kept.ended, "the call's stream did not end")
	assert.NotContains(t, stream, `"result"`, "the cancelled call is answered")
	assert.NotContains(t, stream, `"error"`, "the cancelled call is answered")

	// The session goes on: another call is answered on its stream.
	held.free()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "held"})
	require.NoError(t, err)
	assert.Equal(t, "done", textOf(t, res))
	assert.Contains(t, waitFor(t, kept.ended, "the second call's stream did not end"), `"result"`)
}

// keptStreams is a client's transport that keeps a POST carrying a
// tools/call going after the client has let it go, whether it had its
// answer's headers by then or not, and sends ended all that the server
// sent on its stream once that ends.
type keptStreams struct{ ended chan string }

func (k *keptStreams) RoundTrip(r *http.Request) (*http.Response, error) {
	var body []byte
	if r.Body != nil {
		var err error
		if body, err = io.ReadAll(r.Body); err != nil {
			return nil, err
		}
		r.Body.Close()
	}
	out := r.Clone(context.WithoutCancel(r.Context()))
	out.Body = io.NopCloser(bytes.NewReader(body))
	call := r.Method == http.MethodPost && bytes.Contains(body, []byte(`"tools/call"`))
	type answer struct {
		resp *http.Response
		err  error
	}
	got := make(chan answer, 1)
	go func() {
		resp, err := http.DefaultTransport.RoundTrip(out)
		got <- answer{resp, err}
	}()
	// keep reads the stream, on to w until a write to it fails.
	keep := func(stream io.ReadCloser, w io.WriteCloser) {
		var all bytes.Buffer
		_, _ = io.Copy(io.MultiWriter(&all, &writeOn{w: w}), stream)
		stream.Close()
		w.Close()
		k.ended <- all.String()
	}
	select {
	case a := <-got:
		if a.err != nil || !call {
			return a.resp, a.err
		}
		pr, pw := io.Pipe()
		go keep(a.resp.Body, pw)
		a.resp.Body = pr
		return a.resp, nil
	case <-r.Context().Done():
		go func() {
			a := <-got
			if a.err == nil && call {
				_, pw := io.Pipe()
				pw.Close() // no one reads it
				keep(a.resp.Body, pw)
			} else if a.err == nil {
				a.resp.Body.Close()
			}
		}()
		return nil, r.Context().Err()
	}
}

// writeOn writes to w until a write fails, then takes the rest unwritten.
type writeOn struct {
	w      io.Writer
	failed bool
}

func (o *writeOn) Write(p []byte) (int, error) {
	if !o.failed {
		if _, err := o.w.Write(p); err != nil {
			o.failed = true
		}
	}
	return len(p), nil
}
