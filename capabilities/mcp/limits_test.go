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
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/internal/redact"
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

	c, err := New(context.Background(), Options{URL: ts.URL + "/mcp"}, capabilities.Setup{})
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
	_, err := New(ctx, Options{URL: ts.URL + "/sse"}, capabilities.Setup{})
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
	c, err := New(context.Background(), Options{URL: ts.URL + "/mcp"}, capabilities.Setup{})
	require.NoError(t, err)
	defer c.Close()

	out, err := call(t, c, "big", `{"bytes": 1000}`, nil)
	require.NoError(t, err, "a JSON response under the bound is read")
	assert.Len(t, out, 1000)
	_, err = call(t, c, "big", fmt.Sprintf(`{"bytes": %d}`, MaxMessageBytes), nil)
	require.ErrorIs(t, err, ErrMessageTooLarge)
	assert.Contains(t, err.Error(), "a response body over 10 MiB")
}

// A local server's message over the bound ends the run as a remote one's
// does, saying so: the server is not said to have exited, as it was of the
// SIGPIPE the SDK's own bound (16 MiB) brought it.
func TestLargeLineFromALocalServer(t *testing.T) {
	t.Parallel()
	c := startStdio(t, Options{})
	_, err := call(t, c, "big", fmt.Sprintf(`{"bytes": %d}`, MaxMessageBytes), nil)
	require.ErrorIs(t, err, ErrMessageTooLarge)
	_, retry := capabilities.AsRetry(err)
	assert.False(t, retry)
	assert.Contains(t, err.Error(), "MCP server mcp.test ("+os.Args[0]+"): calling big: the MCP server sent a message larger than the limit: a line over 10 MiB")
	assert.NotContains(t, err.Error(), "exited")
	_, err = call(t, c, "echo", `{"text": "x"}`, nil)
	assert.ErrorIs(t, err, ErrMessageTooLarge, "the server is not spoken to again")
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

// A timeout or read_timeout longer than a time.Duration holds, which the
// schema allows, waits: it does not become a negative duration that ends
// the server's start, or each call, at once.
func TestTimeoutsBeyondADurationWait(t *testing.T) {
	t.Parallel()
	c := startStdio(t, Options{Timeout: 1e10, ReadTimeout: 1e300})
	out, err := call(t, c, "echo", `{"text": "answered"}`, nil)
	require.NoError(t, err)
	assert.Equal(t, "answered", out)
}

// bigEcho is an echo whose request is larger than a pipe's buffer (64 KiB
// on Linux): a server that stops reading leaves its write unfinished.
var bigEcho = json.RawMessage(`{"text": "` + strings.Repeat("x", 1<<20) + `"}`)

// A server that stops reading its stdin leaves a request larger than the
// pipe unwritten: the call still ends at its read timeout, as a call the
// server does not answer does, and Close still stops the server.
func TestCallToAServerThatStoppedReadingEndsAtTheReadTimeout(t *testing.T) {
	t.Parallel()
	c := startStdio(t, Options{ReadTimeout: 0.5})
	out, err := call(t, c, "freeze", `{}`, nil)
	require.NoError(t, err)
	require.Equal(t, "frozen", out)

	echo := toolByName(t, c, "echo")
	done := make(chan error, 1)
	go func() {
		_, err := echo.Call(context.Background(), bigEcho)
		done <- err
	}()
	select {
	case err := <-done:
		msg, retry := capabilities.AsRetry(err)
		require.True(t, retry, "%v", err)
		assert.Equal(t, "Timed out after 0.5 seconds waiting for MCP server mcp.test to answer; the call was cancelled.", msg)
	case <-time.After(20 * time.Second): // only so that a failure ends
		t.Fatal("the call outlived its read timeout")
	}
	closeAndReap(t, c)
}

// A call whose run is interrupted while its request is being written to a
// server that stopped reading ends at once, as any interrupted call does.
// Until the server reads that request, later calls are refused without
// being sent; once it has, they go through, after it and whole.
func TestInterruptedCallToAServerThatStoppedReading(t *testing.T) {
	t.Parallel()
	thaw := filepath.Join(t.TempDir(), "thaw")
	require.NoError(t, syscall.Mkfifo(thaw, 0o600))
	c := startStdio(t, Options{Env: serverEnvMap("MCP_TEST_THAW", thaw)})
	out, err := call(t, c, "freeze", `{}`, nil)
	require.NoError(t, err)
	require.Equal(t, "frozen", out)

	// The run is interrupted as the request's write begins.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stdin := c.proc.stdin
	stdin.mu.Lock()
	stdin.w = cancelOnWrite{stdin.w, cancel}
	stdin.mu.Unlock()
	echo := toolByName(t, c, "echo")
	done := make(chan error, 1)
	go func() {
		_, err := echo.Call(ctx, bigEcho)
		done <- err
	}()
	select {
	case err := <-done:
		require.ErrorIs(t, err, context.Canceled)
		_, retry := capabilities.AsRetry(err)
		assert.False(t, retry, "an interrupted run is reported as such")
	case <-time.After(20 * time.Second): // only so that a failure ends
		t.Fatal("the call outlived its run's context")
	}

	stuck := stdin.stuck()
	require.NotNil(t, stuck, "the request is still being written")
	_, err = call(t, c, "echo", `{"text": "next"}`, nil)
	msg, retry := capabilities.AsRetry(err)
	require.True(t, retry, "%v", err)
	assert.Equal(t, "echo was not called: MCP server mcp.test has stopped reading its requests, and one an earlier call gave up on "+
		"is still waiting to be sent to it. Its tools can be called again once it reads that one.", msg)

	// The server reads again: the rest of the request, then the next one.
	thawed := make(chan error, 1)
	go func() {
		f, err := os.OpenFile(thaw, os.O_WRONLY, 0) // returns once the server opens it to read
		if err == nil {
			_, err = f.Write([]byte{1})
			f.Close()
		}
		thawed <- err
	}()
	select {
	case err := <-thawed:
		require.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("the server never waited to be thawed")
	}
	select {
	case <-stuck:
	case <-time.After(20 * time.Second):
		t.Fatal("the request was never written")
	}
	out, err = call(t, c, "echo", `{"text": "next"}`, nil)
	require.NoError(t, err)
	assert.Equal(t, "next", out)
	closeAndReap(t, c)
}

// A call to a server that stops reading once its request is written whole
// ends at its read timeout, and its notifications/cancelled, which the full
// pipe will not take, is left to be written: the model is told the server
// has not been told, later calls are refused at once as they are behind a
// request not yet taken (they would wait behind it, the read timeout each),
// and Close still stops the server.
func TestCancellationStuckInAFullPipe(t *testing.T) {
	t.Parallel()
	c := startStdio(t, Options{ReadTimeout: 0.5})
	out, err := call(t, c, "freeze", `{}`, nil)
	require.NoError(t, err)
	require.Equal(t, "frozen", out)

	// The pipe fills just after the call's request is written whole.
	stdin := c.proc.stdin
	stdin.mu.Lock()
	stdin.w = &fillAfterCall{WriteCloser: stdin.w}
	stdin.mu.Unlock()
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		_, err := toolByName(t, c, "echo").Call(context.Background(), json.RawMessage(`{"text": "never read"}`))
		done <- err
	}()
	select {
	case err := <-done:
		msg, retry := capabilities.AsRetry(err)
		require.True(t, retry, "%v", err)
		assert.Equal(t, "Timed out after 0.5 seconds waiting for MCP server mcp.test to answer; it has stopped reading its requests, "+
			"so it could not yet be told that the call was cancelled.", msg)
		assert.Less(t, time.Since(start), 500*time.Millisecond+cancelWait+5*time.Second, "the call outlived its bounds")
	case <-time.After(20 * time.Second): // only so that a failure ends
		t.Fatal("the call outlived its read timeout and the cancellation's wait")
	}

	require.NotNil(t, stdin.stuck(), "the cancellation still being written is not noted")
	refused := make(chan error, 1)
	go func() {
		_, err := call(t, c, "echo", `{"text": "next"}`, nil)
		refused <- err
	}()
	select {
	case err := <-refused:
		msg, retry := capabilities.AsRetry(err)
		require.True(t, retry, "%v", err)
		assert.Equal(t, "echo was not called: MCP server mcp.test has stopped reading its requests, and the cancellation of an earlier call "+
			"is still waiting to be sent to it. Its tools can be called again once it reads that one.", msg)
	case <-time.After(20 * time.Second):
		t.Fatal("a later call was sent behind the cancellation")
	}
	closeAndReap(t, c)
}

// fillAfterCall fills the pipe once a tools/call request has been written
// to it, as a server that stopped reading leaves it for what comes next;
// the newlines are blank space to a JSON decoder.
type fillAfterCall struct {
	io.WriteCloser
	once sync.Once
}

func (w *fillAfterCall) Write(b []byte) (int, error) {
	n, err := w.WriteCloser.Write(b)
	if bytes.Contains(b, []byte(`"tools/call"`)) {
		w.once.Do(func() {
			filled := make(chan struct{})
			go func() {
				// Blocks once the pipe is full, until Close closes it.
				close(filled)
				_, _ = w.WriteCloser.Write(bytes.Repeat([]byte("\n"), 1<<20))
			}()
			<-filled
		})
	}
	return n, err
}

// cancelOnWrite cancels a context as a write begins.
type cancelOnWrite struct {
	io.WriteCloser
	cancel context.CancelFunc
}

func (w cancelOnWrite) Write(b []byte) (int, error) {
	w.cancel()
	return w.WriteCloser.Write(b)
}

// closeAndReap closes c, whose local server must then be gone.
func closeAndReap(t *testing.T, c *Capability) {
	t.Helper()
	pid := c.PID()
	closed := make(chan error, 1)
	go func() { closed <- c.Close() }()
	select {
	case err := <-closed:
		require.NoError(t, err)
	case <-time.After(20 * time.Second): // only so that a failure ends
		t.Fatal("Close did not return")
	}
	waitGone(t, pid)
}

func TestSecretsStayOutOfMessagesAndEvents(t *testing.T) {
	t.Parallel()
	const secret = "s3cr3t-t0ken-4242"
	srv := testServer()
	mux := http.NewServeMux()
	mux.Handle("/mcp", sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	mux.Handle("/mcp/"+secret+"/tools", sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)

	var events []string
	listen := func(_ context.Context, ev capabilities.Event) error {
		b, err := capabilities.MarshalEvent(ev)
		require.NoError(t, err)
		events = append(events, string(b))
		return nil
	}

	c, err := New(context.Background(), Options{URL: ts.URL + "/mcp?token=" + secret}, capabilities.Setup{})
	require.NoError(t, err)
	defer c.Close()
	_, err = call(t, c, "echo", `{"text": "x"}`, listen)
	require.NoError(t, err)
	require.Len(t, events, 2)
	// A token in the path, as some services give a server's URL.
	inPath, err := New(context.Background(), Options{URL: ts.URL + "/mcp/" + secret + "/tools"}, capabilities.Setup{})
	require.NoError(t, err)
	defer inPath.Close()
	assert.Equal(t, "127.0.0.1-tools", inPath.ID())
	assert.Equal(t, []string{ts.URL + "/mcp/…/tools"}, inPath.Reach().Network)
	_, err = call(t, inPath, "echo", `{"text": "x"}`, listen)
	require.NoError(t, err)
	require.Len(t, events, 4)
	ts.Close() // the server goes away: the next call fails, naming it
	_, err = call(t, c, "echo", `{"text": "x"}`, listen)
	require.Error(t, err)
	errs := []string{err.Error()}
	assert.Contains(t, err.Error(), "("+ts.URL+"/mcp?…)")
	_, err = call(t, inPath, "echo", `{"text": "x"}`, listen)
	require.Error(t, err)
	errs = append(errs, err.Error())
	assert.Contains(t, err.Error(), "("+ts.URL+"/mcp/…/tools)")

	cases := []Options{
		{URL: "http://127.0.0.1:1/mcp?token=" + secret},
		{URL: "http://user:" + secret + "@127.0.0.1:1/mcp"},
		{URL: "http://127.0.0.1:1/mcp", Local: "http://127.0.0.1:1/mcp?key=" + secret},
		{URL: "http://127.0.0.1:1/mcp/" + secret},
		{URL: "http://127.0.0.1:1/mcp", Local: "http://127.0.0.1:1/" + secret + "/mcp"},
		{Command: []string{"no-such-mcp-server-xyz", "--api-key", secret}},
		{Command: []string{"no-such-mcp-server-xyz", "--api-key=" + secret}},
		{Command: append(serverCommand(), "--api-key", secret),
			Env: serverEnvMap("MCP_TEST_STDERR", "refused: "+secret, "MCP_TEST_EXIT_AT_START", "3")},
		{Command: serverCommand(),
			Env: serverEnvMap("API_KEY", secret, "MCP_TEST_STDERR", "bad key "+secret, "MCP_TEST_EXIT_AT_START", "3")},
	}
	for _, opts := range cases {
		_, err := New(context.Background(), opts, capabilities.Setup{})
		require.Error(t, err, "%+v", opts)
		errs = append(errs, err.Error())
	}
	for _, e := range append(errs, events...) {
		assert.NotContains(t, e, secret)
	}
	assert.Contains(t, errs[5], "MCP server 127.0.0.1-mcp (http://127.0.0.1:1/mcp/…) could not be reached")
	assert.Contains(t, errs[7], "(no-such-mcp-server-xyz …) did not start")
	assert.Contains(t, errs[9], "the last lines of its stderr:\n  refused: …")
	assert.Equal(t, "mcp-server-git", commandID([]string{"uvx", "--from", "git+https://example.com/mcp-server-git?token=" + secret, "mcp-server-git"}))
}

func TestRedactURL(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]string{
		"https://h/mcp":                "https://h/mcp",
		"https://h/mcp?token=x":        "https://h/mcp?…",
		"https://h/mcp?":               "https://h/mcp?…",
		"https://h/mcp#frag":           "https://h/mcp",
		"https://u:pw@h/p":             "https://u:xxxxx@h/p",
		"https://u:pw@h/p?a=1&b=2#top": "https://u:xxxxx@h/p?…",
		"http://h:8080/sse?key=" + strings.Repeat("k", 40): "http://h:8080/sse?…",
		// A path segment that is not a word or a version may be a token.
		"https://h/mcp/sk-live-4f9a2b7c/sse":                    "https://h/mcp/…/sse",
		"https://h/api/mcp/s/NjI1ZjdlYzQtMmU0Zi00/mcp":          "https://h/api/mcp/s/…/mcp",
		"https://h/6f1c9b52-0d2e-4c4e-9b1a-3f2d8e7a6b5c/github": "https://h/…/github",
		"https://h/mcp/QkXwTrPzLmNvBcHdYeUa":                    "https://h/mcp/…",
		"https://h/mcp/" + strings.Repeat("k", 40):              "https://h/mcp/…",
		"https://h/mcp/tok%2Fen?x=1":                            "https://h/mcp/…?…",
		"https://h/v1/@acme/server-everything/mcp/":             "https://h/v1/@acme/server-everything/mcp/",
		"https://u:pw@h/mcp/abc123def456":                       "https://u:xxxxx@h/mcp/…",
		// No scheme: host:port/... is a scheme and an opaque part.
		"localhost:8080/mcp/sk-live-4f9a2b7c": "localhost:8080/mcp/…",
		"h:sk-live-4f9a2b7c@host/mcp?x=1":     "h:…/mcp?…",
		"h:123456/mcp":                        "h:…/mcp", // no port is six digits long
		"h:8080":                              "h:8080",
	} {
		assert.Equal(t, want, redact.URL(raw), raw)
	}
}

// The spec's headers and token go to the host of url only: a redirect to
// another host, or an SSE server that names an endpoint elsewhere, does not
// take them along (Go's client drops Authorization on such a redirect
// itself).
func TestHeadersStayWithTheURLsHost(t *testing.T) {
	t.Parallel()
	srv := testServer()
	var elsewhere atomic.Pointer[string] // what the other host was sent
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if got := r.Header.Get("Authorization") + r.Header.Get("X-Api-Key"); got != "" {
			elsewhere.Store(&got)
		}
		sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, &sdk.StreamableHTTPOptions{Stateless: true}).ServeHTTP(w, r)
	}))
	t.Cleanup(other.Close)
	// The same server by another name: localhost, where url says 127.0.0.1.
	otherURL := strings.Replace(other.URL, "127.0.0.1", "localhost", 1)
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, otherURL+"/mcp", http.StatusTemporaryRedirect)
	}))
	t.Cleanup(redirect.Close)

	c, err := New(context.Background(), Options{URL: redirect.URL + "/mcp", AuthorizationToken: "Bearer s3cret-token",
		Headers: map[string]string{"X-Api-Key": "k3y-value"}}, capabilities.Setup{})
	require.NoError(t, err)
	defer c.Close()
	_, err = call(t, c, "echo", `{"text": "hi"}`, nil)
	require.NoError(t, err)
	if got := elsewhere.Load(); got != nil {
		t.Errorf("redirected: the token or a header went to another host: %q", *got)
	}

	// The same host name on another port is another server.
	portRedirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/mcp", http.StatusTemporaryRedirect)
	}))
	t.Cleanup(portRedirect.Close)
	c, err = New(context.Background(), Options{URL: portRedirect.URL + "/mcp", AuthorizationToken: "Bearer s3cret-token"}, capabilities.Setup{})
	require.NoError(t, err)
	defer c.Close()
	_, err = call(t, c, "echo", `{"text": "hi"}`, nil)
	require.NoError(t, err)
	if got := elsewhere.Load(); got != nil {
		t.Errorf("redirected to another port: the token went to another server: %q", *got)
	}

	// An SSE server whose endpoint event names the other host.
	sse := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "event: endpoint\ndata: %s/mcp\n\n", otherURL)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	t.Cleanup(sse.Close)
	c, err = New(context.Background(), Options{URL: sse.URL + "/sse", AuthorizationToken: "Bearer s3cret-token",
		Headers: map[string]string{"X-Api-Key": "k3y-value"}, Timeout: 2}, capabilities.Setup{})
	if err == nil {
		c.Close()
	}
	if got := elsewhere.Load(); got != nil {
		t.Errorf("over SSE: the token or a header went to another host: %q", *got)
	}
}

// A remote server that stops answering, the call's request and the
// cancellation of it, and the session's end, alike: the call ends at its
// read timeout and the cancellation's wait, and Close within its own bound.
func TestRemoteServerThatStopsAnswering(t *testing.T) {
	t.Parallel()
	for _, path := range []string{"/mcp", "/sse"} {
		t.Run(path, func(t *testing.T) {
			t.Parallel()
			srv := testServer()
			var h http.Handler = sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
			if path == "/sse" {
				h = sdk.NewSSEHandler(func(*http.Request) *sdk.Server { return srv }, nil)
			}
			release := make(chan struct{})
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				if r.Method == http.MethodDelete || bytes.Contains(body, []byte(`"tools/call"`)) || bytes.Contains(body, []byte(`"notifications/cancelled"`)) {
					select { // no answer
					case <-r.Context().Done():
					case <-release:
					}
					return
				}
				r.Body = io.NopCloser(bytes.NewReader(body))
				h.ServeHTTP(w, r)
			}))
			t.Cleanup(ts.Close)
			t.Cleanup(func() { close(release) }) // before ts.Close, which waits for the handlers
			c, err := New(context.Background(), Options{URL: ts.URL + path, ReadTimeout: 0.5}, capabilities.Setup{})
			require.NoError(t, err)

			start := time.Now()
			done := make(chan error, 1)
			go func() {
				_, err := toolByName(t, c, "echo").Call(context.Background(), json.RawMessage(`{"text": "unanswered"}`))
				done <- err
			}()
			select {
			case err := <-done:
				msg, retry := capabilities.AsRetry(err)
				require.True(t, retry, "%v", err)
				assert.Equal(t, "Timed out after 0.5 seconds waiting for MCP server 127.0.0.1-"+path[1:]+" to answer; the call was cancelled.", msg)
				assert.Less(t, time.Since(start), 500*time.Millisecond+cancelWait+5*time.Second)
			case <-time.After(30 * time.Second): // only so that a failure ends
				t.Fatal("the call outlived its read timeout and the cancellation's wait")
			}
			closed := make(chan error, 1)
			start = time.Now()
			go func() { closed <- c.Close() }()
			select {
			case <-closed:
				assert.Less(t, time.Since(start), closeWait+5*time.Second)
			case <-time.After(30 * time.Second):
				t.Fatal("Close outlived its bound")
			}
		})
	}
}

// A server that announced its tools changed while it had stopped reading
// is not asked for them then, and its tools stay as they were; once it
// reads again, ToolsVersion moves on, so that whoever took the tools it
// was given for those of the announcement lists them again.
func TestToolsAnnouncedWhileStuckAreListedOnceTheServerReads(t *testing.T) {
	t.Parallel()
	thaw := filepath.Join(t.TempDir(), "thaw")
	require.NoError(t, syscall.Mkfifo(thaw, 0o600))
	c := startStdio(t, Options{Env: serverEnvMap("MCP_TEST_THAW", thaw)})
	// Taken now: asking for them later lists the tools again.
	echo, grow, freeze := toolByName(t, c, "echo"), toolByName(t, c, "grow"), toolByName(t, c, "freeze")
	before := c.ToolsVersion()
	_, err := grow.Call(context.Background(), json.RawMessage(`{}`))
	require.NoError(t, err)
	for deadline := time.Now().Add(10 * time.Second); c.ToolsVersion() == before; time.Sleep(20 * time.Millisecond) {
		require.True(t, time.Now().Before(deadline), "the announcement never came")
	}
	out, err := freeze.Call(context.Background(), json.RawMessage(`{}`))
	require.NoError(t, err)
	require.Equal(t, "frozen", out)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stdin := c.proc.stdin
	stdin.mu.Lock()
	stdin.w = cancelOnWrite{stdin.w, cancel}
	stdin.mu.Unlock()
	_, err = echo.Call(ctx, bigEcho)
	require.ErrorIs(t, err, context.Canceled)
	stuck := stdin.stuck()
	require.NotNil(t, stuck, "the request is still being written")

	// As a run or `agentspec mcp` does: the version, then the tools.
	version := c.ToolsVersion()
	assert.NotContains(t, toolNames(t, c), "late", "not asked while it does not read")

	thawed := make(chan error, 1)
	go func() {
		f, err := os.OpenFile(thaw, os.O_WRONLY, 0)
		if err == nil {
			_, err = f.Write([]byte{1})
			f.Close()
		}
		thawed <- err
	}()
	select {
	case err := <-thawed:
		require.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("the server never waited to be thawed")
	}
	select {
	case <-stuck:
	case <-time.After(20 * time.Second):
		t.Fatal("the request was never written")
	}
	for deadline := time.Now().Add(10 * time.Second); c.ToolsVersion() == version; time.Sleep(20 * time.Millisecond) {
		require.True(t, time.Now().Before(deadline), "ToolsVersion stayed as it was when the tools were not listed")
	}
	assert.Contains(t, toolNames(t, c), "late")
	closeAndReap(t, c)
}
