//go:build unix

package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
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

func startStdio(t *testing.T, opts Options) *Capability {
	t.Helper()
	if opts.Command == nil {
		opts.Command = serverCommand()
	}
	if opts.Env == nil {
		opts.Env = serverEnvMap()
	}
	c, err := New(context.Background(), opts, capabilities.Setup{Dir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

func toolByName(t *testing.T, c *Capability, name string) capabilities.Tool {
	t.Helper()
	tools, err := c.Tools(context.Background())
	require.NoError(t, err)
	for _, tl := range tools {
		if tl.Name() == name {
			return tl
		}
	}
	t.Fatalf("no tool %s", name)
	return nil
}

// schemaOf is a definition's input schema as the client decodes it.
func schemaOf(t *testing.T, def *sdk.Tool) map[string]any {
	b, err := json.Marshal(def.InputSchema)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	return m
}

func TestToolsAreOfferedUnchanged(t *testing.T) {
	t.Parallel()
	c := startStdio(t, Options{})
	tools, err := c.Tools(context.Background())
	require.NoError(t, err)
	require.Len(t, tools, len(testTools))
	for _, def := range testTools {
		got := toolByName(t, c, def.Name)
		assert.Equal(t, def.Description, got.Description())
		assert.Equal(t, schemaOf(t, def), got.Parameters(), def.Name)
	}
	assert.True(t, capabilities.HintsOf(toolByName(t, c, "count")).ReadOnly, "readOnlyHint is kept")
	assert.False(t, capabilities.HintsOf(toolByName(t, c, "echo")).ReadOnly)
	assert.Equal(t, "mcp.test", c.ID(), "the default id of a command is its program name")
}

// A schema that JSON Schema allows but providers refuse as a function's
// parameters ("object schema missing properties", "input_schema.type:
// Field required") is given what they ask for, so that one tool of a server
// does not make every request of the run fail.
func TestLooseSchemasAreMadeWhatProvidersTake(t *testing.T) {
	t.Parallel()
	c := startStdio(t, Options{Env: serverEnvMap("MCP_TEST_LOOSE_SCHEMAS", "1")})
	query := map[string]any{"type": "string", "description": "query"}
	assert.Equal(t, map[string]any{"type": "object", "properties": map[string]any{}},
		toolByName(t, c, "bare").Parameters())
	assert.Equal(t, map[string]any{"type": "object", "properties": map[string]any{"q": query}},
		toolByName(t, c, "untyped").Parameters())
	assert.Equal(t, map[string]any{"type": "object", "properties": map[string]any{"q": query}, "required": []any{"q"},
		"$defs": map[string]any{"Args": map[string]any{"type": "object", "properties": map[string]any{"q": query}, "required": []any{"q"}}}},
		toolByName(t, c, "ref").Parameters(), "the root $ref is the definition it names")
	assert.Nil(t, toolByName(t, c, "none").Parameters(), "no schema: the runtime gives the empty one")
	// The server's own definitions are left as they were.
	assert.Equal(t, schemaOf(t, testTools[0]), toolByName(t, c, "echo").Parameters())
}

// A server that lists two tools of one name has one tool of that name, the
// first listed: a call names the tool, and the server answers it with the
// one it has. The other would read as a second capability's tool of the
// same name, which PrefixTools cannot tell apart.
func TestToolListedTwiceIsOfferedOnce(t *testing.T) {
	t.Parallel()
	c := startStdio(t, Options{Env: serverEnvMap("MCP_TEST_LIST_ECHO_TWICE", "1")})
	tools, err := c.Tools(context.Background())
	require.NoError(t, err)
	var echoes []string
	for _, tl := range tools {
		if tl.Name() == "echo" {
			echoes = append(echoes, tl.Description())
		}
	}
	assert.Equal(t, []string{"Echoes its text."}, echoes)
	out, err := call(t, c, "echo", `{"text": "once"}`, nil)
	require.NoError(t, err)
	assert.Equal(t, "once", out)
}

func TestReadOnlyWorkspace(t *testing.T) {
	t.Parallel()
	// A LocalWorkspace's env reaches the server: here it is what makes the
	// test binary serve.
	c, err := New(context.Background(), Options{Command: serverCommand()},
		capabilities.Setup{Dir: t.TempDir(), ReadOnly: true, Env: serverEnvMap()})
	require.NoError(t, err)
	defer c.Close()
	tools, err := c.Tools(context.Background())
	require.NoError(t, err)
	var names []string
	for _, tool := range tools {
		names = append(names, tool.Name())
	}
	assert.Equal(t, []string{"count"}, names, "only the tools the server marks readOnlyHint")
}

func TestAllowedTools(t *testing.T) {
	t.Parallel()
	c := startStdio(t, Options{AllowedTools: []string{"count", "echo"}})
	tools, err := c.Tools(context.Background())
	require.NoError(t, err)
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name())
	}
	assert.Equal(t, []string{"count", "echo"}, names, "filtered, in the order the server lists them (by name, for the Go SDK)")

	_, err = New(context.Background(), Options{Command: serverCommand(), Env: serverEnvMap(), AllowedTools: []string{"echo", "ehco"}}, capabilities.Setup{})
	var argErr *capabilities.ArgError
	require.ErrorAs(t, err, &argErr)
	assert.Equal(t, "allowed_tools", argErr.Option)
	assert.Contains(t, err.Error(), "allowed_tools names ehco, which MCP server mcp.test does not offer; it offers: big, count, echo, exit")
}

func call(t *testing.T, c *Capability, name, args string, l capabilities.Listener) (string, error) {
	t.Helper()
	ctx := capabilities.WithCall(context.Background(), capabilities.CallInfo{ID: "call-1", Tool: name})
	if l != nil {
		ctx = capabilities.WithListener(ctx, l)
	}
	return toolByName(t, c, name).Call(ctx, json.RawMessage(args))
}

func TestCallResults(t *testing.T) {
	t.Parallel()
	c := startStdio(t, Options{})

	out, err := call(t, c, "echo", `{"text": "héllo"}`, nil)
	require.NoError(t, err)
	assert.Equal(t, "héllo", out)

	_, err = call(t, c, "fail", `{}`, nil)
	msg, retry := capabilities.AsRetry(err)
	assert.True(t, retry, "isError is a correctable error: %v", err)
	assert.Equal(t, "the widget is jammed; pass force: true", msg)

	_, err = call(t, c, "picky", `{}`, nil)
	msg, retry = capabilities.AsRetry(err)
	assert.True(t, retry, "invalid params are correctable: %v", err)
	assert.Equal(t, "Invalid arguments: n is required", msg)

	out, err = call(t, c, "structured", `{}`, nil)
	require.NoError(t, err)
	assert.JSONEq(t, `{"answer": 42}`, out, "structured content stands in for missing text")

	var result *CallResultEvent
	out, err = call(t, c, "media", `{}`, func(_ context.Context, ev capabilities.Event) error {
		if r, ok := ev.(*CallResultEvent); ok {
			result = r
		}
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, strings.Join([]string{
		"a picture:",
		"[image/png image, 4 bytes not shown: only text reaches the model]",
		"[audio/wav audio, 4 bytes not shown: only text reaches the model]",
		"[resource file:///notes.md]\n# Notes",
		"[resource file:///a.bin (application/octet-stream), 3 bytes not shown: only text reaches the model]",
		"[resource link: file:///big.log (big.log): the whole log]",
	}, "\n"), out)
	require.NotNil(t, result)
	assert.Equal(t, []string{"image/png image, 4 bytes", "audio/wav audio, 4 bytes",
		"resource file:///a.bin (application/octet-stream), 3 bytes"}, result.Dropped)
}

func TestEventsAndVeto(t *testing.T) {
	t.Parallel()
	c := startStdio(t, Options{ID: "tester"})
	var kinds []string
	veto := func(_ context.Context, ev capabilities.Event) error {
		if req, ok := ev.(*CallRequestEvent); ok {
			req.Veto("counting is not allowed today")
		}
		b, err := capabilities.MarshalEvent(ev)
		require.NoError(t, err)
		kinds = append(kinds, string(b))
		return nil
	}
	out, err := call(t, c, "count", `{}`, veto)
	require.NoError(t, err)
	assert.Equal(t, "[count was not called: counting is not allowed today]", out)
	require.Len(t, kinds, 1, "a vetoed call has no result event")
	assert.JSONEq(t, `{"kind": "mcp.call_request", "server": "tester", "tool": "count", "tool_call_id": "call-1",
		"tool_name": "count", "arguments": {}, "vetoed": true, "veto_reason": "counting is not allowed today"}`, kinds[0])

	// The server never saw the vetoed call: its first real call counts 1.
	kinds = nil
	out, err = call(t, c, "count", `{}`, func(_ context.Context, ev capabilities.Event) error {
		b, _ := capabilities.MarshalEvent(ev)
		kinds = append(kinds, string(b))
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, "1", out)
	require.Len(t, kinds, 2)
	assert.JSONEq(t, `{"kind": "mcp.call_result", "server": "tester", "tool": "count", "tool_call_id": "call-1",
		"tool_name": "count", "is_error": false, "dropped": [], "chars": 1}`, kinds[1])

	// A listener that fails aborts the call before it is sent.
	boom := errors.New("listener down")
	_, err = call(t, c, "count", `{}`, func(context.Context, capabilities.Event) error { return boom })
	assert.ErrorIs(t, err, boom)
	out, err = call(t, c, "count", `{}`, nil)
	require.NoError(t, err)
	assert.Equal(t, "2", out)
}

func TestServerExitMidCallIsFatal(t *testing.T) {
	t.Parallel()
	c := startStdio(t, Options{})
	_, err := call(t, c, "exit", `{}`, nil)
	require.Error(t, err)
	_, retry := capabilities.AsRetry(err)
	assert.False(t, retry)
	assert.ErrorIs(t, err, ErrServerExited)
	assert.Contains(t, err.Error(), "MCP server mcp.test")
	assert.Contains(t, err.Error(), "exited during a call to exit (exit status 7)")
	assert.Contains(t, err.Error(), "fatal: the disk caught fire")

	_, err = call(t, c, "echo", `{"text": "x"}`, nil)
	assert.ErrorIs(t, err, ErrServerExited, "later calls fail the same way")
	require.NoError(t, c.Close())
	_, err = call(t, c, "echo", `{"text": "x"}`, nil)
	assert.ErrorIs(t, err, ErrClosed)
}

func TestStartFailures(t *testing.T) {
	t.Parallel()
	_, err := New(context.Background(), Options{Command: []string{"no-such-mcp-server-xyz", "--flag"}}, capabilities.Setup{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "MCP server no-such-mcp-server-xyz (no-such-mcp-server-xyz …) did not start")
	assert.Contains(t, err.Error(), "executable file not found")

	_, err = New(context.Background(), Options{Command: serverCommand(),
		Env: serverEnvMap("MCP_TEST_STDERR", "config.toml: no such file", "MCP_TEST_EXIT_AT_START", "3")}, capabilities.Setup{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "did not start: it exited before it was ready (exit status 3); the last lines of its stderr:\n  config.toml: no such file")

	start := time.Now()
	_, err = New(context.Background(), Options{Command: serverCommand(), Env: serverEnvMap("MCP_TEST_GARBAGE", "1")}, capabilities.Setup{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "MCP server mcp.test ("+os.Args[0]+") did not start: ")
	assert.NotContains(t, err.Error(), "exited", "agentspec stopped it; it did not exit")
	assert.Less(t, time.Since(start), 5*time.Second, "a failed start is not waited for")

	_, err = New(context.Background(), Options{Command: []string{"sleep", "30"}, Timeout: 0.3}, capabilities.Setup{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "MCP server sleep (sleep …) did not start: no answer within 300ms (the timeout option); it wrote nothing to stderr")

	_, err = New(context.Background(), Options{Command: serverCommand(), Cwd: "missing"}, capabilities.Setup{Dir: t.TempDir()})
	var argErr *capabilities.ArgError
	require.ErrorAs(t, err, &argErr)
	assert.Equal(t, "cwd", argErr.Option)
}

// alive reports whether pid is a live process (a zombie waiting for its
// parent to reap it is not).
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return !os.IsNotExist(err)
	}
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return len(fields) == 0 || fields[0] != "Z"
}

func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d outlived Close", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A server gets nothing of agentspec's environment but the inherited set
// and its env, also where agentspec's environment holds none of that set
// and the spec gives no env.
func TestServerEnvWithNothingToInherit(t *testing.T) {
	for _, k := range inheritedEnv {
		t.Setenv(k, "") // restored at the end
		require.NoError(t, os.Unsetenv(k))
	}
	t.Setenv("AGENTSPEC_TEST_PROVIDER_KEY", "sk-not-for-the-server")
	c, err := New(context.Background(), Options{Command: []string{os.Args[0], serverArg}}, capabilities.Setup{Dir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	out, err := call(t, c, "getenv", `{"name": "AGENTSPEC_TEST_PROVIDER_KEY"}`, nil)
	require.NoError(t, err)
	assert.Empty(t, out, "agentspec's environment reached the server")
}

// A command without a directory is looked up in the PATH the server is
// given (the entry's env, or the workspace's), as a shell or Python's
// subprocess looks it up, not only in agentspec's.
func TestCommandIsFoundInTheServersPath(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.Symlink(os.Args[0], filepath.Join(dir, "my-mcp-server")))
	path := dir + string(filepath.ListSeparator) + os.Getenv("PATH")
	c := startStdio(t, Options{Command: []string{"my-mcp-server"}, Env: serverEnvMap("PATH", path)})
	out, err := call(t, c, "echo", `{"text": "found"}`, nil)
	require.NoError(t, err)
	assert.Equal(t, "found", out)

	env := serverEnvMap("PATH", path)
	c, err = New(context.Background(), Options{Command: []string{"my-mcp-server"}}, capabilities.Setup{Dir: t.TempDir(), Env: env})
	require.NoError(t, err, "the workspace's PATH")
	c.Close()

	_, err = New(context.Background(), Options{Command: []string{"my-mcp-server"}, Env: serverEnvMap("PATH", t.TempDir())}, capabilities.Setup{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `MCP server my-mcp-server (my-mcp-server) did not start: exec: "my-mcp-server": executable file not found in $PATH`)
}

func TestCloseReapsTheServerAndItsChildren(t *testing.T) {
	t.Parallel()
	c := startStdio(t, Options{})
	out, err := call(t, c, "spawn", `{}`, nil)
	require.NoError(t, err)
	child, err := strconv.Atoi(out)
	require.NoError(t, err)
	server := c.PID()
	require.True(t, alive(server))
	require.True(t, alive(child))

	start := time.Now()
	require.NoError(t, c.Close())
	assert.Less(t, time.Since(start), graceTerm, "a server that exits on EOF is not waited for")
	waitGone(t, server)
	waitGone(t, child)
}

func TestCloseDuringACall(t *testing.T) {
	t.Parallel()
	c := startStdio(t, Options{})
	done := make(chan error, 1)
	go func() {
		_, err := call(t, c, "sleep", `{"ms": 60000}`, nil)
		done <- err
	}()
	time.Sleep(200 * time.Millisecond)
	require.NoError(t, c.Close())
	select {
	case err := <-done:
		assert.Error(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the call outlived Close")
	}
	waitGone(t, c.PID())
}

func TestTimeoutCancelsTheCall(t *testing.T) {
	t.Parallel()
	c := startStdio(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := toolByName(t, c, "sleep").Call(ctx, json.RawMessage(`{"ms": 60000}`))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, time.Since(start), 5*time.Second)
	// The session survives a cancelled call.
	out, err := call(t, c, "echo", `{"text": "still here"}`, nil)
	require.NoError(t, err)
	assert.Equal(t, "still here", out)
	// The local server was told, over the session still open, to cancel
	// the call.
	assert.Eventually(t, func() bool {
		out, err := call(t, c, "heard", `{}`, nil)
		return err == nil && out == "1"
	}, 10*time.Second, 20*time.Millisecond)
}

func TestHTTPStreamableAndSSE(t *testing.T) {
	t.Parallel()
	srv := testServer()
	mux := http.NewServeMux()
	streamable := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	sse := sdk.NewSSEHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	mux.Handle("/mcp", streamable)
	mux.Handle("/sse", sse)
	mux.Handle("/legacy", sse) // an SSE-only server at a URL that does not say so
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)

	for _, path := range []string{"/mcp", "/sse", "/legacy"} {
		t.Run(path, func(t *testing.T) {
			c, err := New(context.Background(), Options{
				URL:                ts.URL + path,
				Headers:            map[string]string{"X-Team": "core"},
				AuthorizationToken: "Bearer s3cret",
			}, capabilities.Setup{})
			require.NoError(t, err)
			defer c.Close()
			assert.Equal(t, "127.0.0.1-"+strings.TrimPrefix(path, "/"), c.ID())
			assert.Len(t, toolByName(t, c, "echo").Parameters()["properties"], 1)
			out, err := call(t, c, "echo", `{"text": "over http"}`, nil)
			require.NoError(t, err)
			assert.Equal(t, "over http", out)
			_, err = call(t, c, "fail", `{}`, nil)
			_, retry := capabilities.AsRetry(err)
			assert.True(t, retry)
			if path == "/mcp" { // the SSE transport gives handlers no headers
				out, err = call(t, c, "header", `{"name": "Authorization"}`, nil)
				require.NoError(t, err)
				assert.Equal(t, "Bearer s3cret", out)
				out, err = call(t, c, "header", `{"name": "X-Team"}`, nil)
				require.NoError(t, err)
				assert.Equal(t, "core", out)
			}
		})
	}

	c, err := New(context.Background(), Options{URL: "https://unused.invalid/mcp", Local: ts.URL + "/mcp"}, capabilities.Setup{})
	require.NoError(t, err, "local: URL is where agentspec connects")
	assert.Equal(t, "127.0.0.1-mcp", c.ID())
	c.Close()

	_, err = New(context.Background(), Options{URL: ts.URL + "/nothing-here"}, capabilities.Setup{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "MCP server 127.0.0.1-nothing-here ("+ts.URL+"/nothing-here) could not be reached")
	assert.Contains(t, err.Error(), "over streamable HTTP")
	assert.Contains(t, err.Error(), "over SSE")
}

// A streamable HTTP server that restarted answers the old session's
// requests with 404, upon which a client must start a new session (the
// transport's "session management"): the call is made again in it, as the
// server never saw it, with the spec's headers.
func TestNewSessionAfterTheHTTPServerRestarts(t *testing.T) {
	t.Parallel()
	var handler atomic.Pointer[http.Handler]
	restart := func() {
		srv := testServer()
		var h http.Handler = sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
		handler.Store(&h)
	}
	restart()
	var initializes atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if strings.Contains(string(body), `"method":"initialize"`) {
			initializes.Add(1)
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		(*handler.Load()).ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	c, err := New(context.Background(), Options{URL: ts.URL + "/mcp", AuthorizationToken: "Bearer s3cret"}, capabilities.Setup{})
	require.NoError(t, err)
	defer c.Close()
	out, err := call(t, c, "count", `{}`, nil)
	require.NoError(t, err)
	assert.Equal(t, "1", out)

	restart() // its sessions are gone, and its count starts again
	out, err = call(t, c, "count", `{}`, nil)
	require.NoError(t, err)
	assert.Equal(t, "1", out, "the call was made once, in the new session")
	out, err = call(t, c, "header", `{"name": "Authorization"}`, nil)
	require.NoError(t, err)
	assert.Equal(t, "Bearer s3cret", out)

	// Concurrent calls that all find the session gone share one new one.
	restart()
	initializes.Store(0)
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			_, err := call(t, c, "echo", `{"text": "x"}`, nil)
			errs <- err
		}()
	}
	for range 4 {
		require.NoError(t, <-errs)
	}
	assert.Equal(t, int64(1), initializes.Load())
}

// A Close while a call starts a new session with a remote server that
// restarted and does not answer its initialize ends that start at once:
// Close does not wait for the timeout option, the server sees the
// request dropped, and the calls waiting on the new session are told the
// capability is closed.
func TestCloseDuringANewSession(t *testing.T) {
	t.Parallel()
	srv := testServer()
	var handler atomic.Pointer[http.Handler]
	var h http.Handler = sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	handler.Store(&h)
	initializing := make(chan struct{}, 8)
	dropped := make(chan struct{}, 8)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		(*handler.Load()).ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	const timeout = 9 * time.Second
	c, err := New(context.Background(), Options{URL: ts.URL + "/mcp", Timeout: timeout.Seconds()}, capabilities.Setup{})
	require.NoError(t, err)
	defer c.Close()
	_, err = call(t, c, "echo", `{"text": "x"}`, nil)
	require.NoError(t, err)

	// Restarted: the old session is unknown (404), and a new one is never
	// answered.
	h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Mcp-Session-Id") != "" {
			http.Error(w, "session not found", http.StatusNotFound)
			return
		}
		_, _ = io.Copy(io.Discard, r.Body) // so that the server sees the client go
		initializing <- struct{}{}
		<-r.Context().Done()
		dropped <- struct{}{}
	})
	handler.Store(&h)
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			_, err := call(t, c, "echo", `{"text": "x"}`, nil)
			errs <- err
		}()
	}
	select {
	case <-initializing:
	case <-time.After(timeout):
		t.Fatal("no new session was started")
	}
	time.Sleep(100 * time.Millisecond) // the other call waits on the same new session
	start := time.Now()
	require.NoError(t, c.Close())
	assert.Less(t, time.Since(start), timeout/3, "Close waited for the new session's start")
	for range 2 {
		select {
		case err := <-errs:
			require.ErrorIs(t, err, ErrClosed)
			assert.Contains(t, err.Error(), "MCP server 127.0.0.1-mcp")
		case <-time.After(timeout / 3):
			t.Fatal("a call outlived Close")
		}
	}
	select {
	case <-dropped:
	case <-time.After(timeout / 3):
		t.Fatal("the new session's initialize was not given up")
	}
}

// unansweredInitialize is an HTTP server that reads every request and
// answers none, and tells dropped when a client gives one up.
func unansweredInitialize(t *testing.T) (url string, dropped chan struct{}) {
	dropped = make(chan struct{}, 8)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // so that the server sees the client go
		<-r.Context().Done()
		dropped <- struct{}{}
	}))
	t.Cleanup(ts.Close)
	return ts.URL + "/mcp", dropped
}

// A remote server that does not answer initialize within the timeout
// option fails the start then, every request of it dropped: the SDK,
// which tells the server it gave up on the initialize, is not waited for
// (5 seconds more, as the server does not answer that either). So too an
// interrupted start.
func TestUnansweredStartEndsWithItsTimeout(t *testing.T) {
	t.Parallel()
	const timeout = 2 * time.Second
	for _, interrupted := range []bool{false, true} {
		t.Run(map[bool]string{false: "timeout", true: "interrupted"}[interrupted], func(t *testing.T) {
			t.Parallel()
			url, dropped := unansweredInitialize(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if interrupted {
				time.AfterFunc(timeout/2, cancel)
			}
			start := time.Now()
			_, err := New(ctx, Options{URL: url, Timeout: timeout.Seconds()}, capabilities.Setup{})
			require.Error(t, err)
			assert.Less(t, time.Since(start), timeout+timeout, "the start waited for the SDK's cancellation")
			if interrupted {
				require.ErrorIs(t, err, context.Canceled)
			} else {
				assert.Contains(t, err.Error(), "no answer within 2s (the timeout option)")
			}
			select {
			case <-dropped:
			case <-time.After(timeout):
				t.Fatal("the initialize was not given up")
			}
		})
	}
}

// A Close while a call to a remote server is under way ends the call, which
// is cancelled on the server and returns ErrClosed, and Close does not wait
// for the server to answer it: a streamable HTTP server does not end the
// session (the DELETE) before its calls have returned.
func TestCloseDuringARemoteCall(t *testing.T) {
	t.Parallel()
	srv := testServer()
	mux := http.NewServeMux()
	mux.Handle("/mcp", sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	mux.Handle("/sse", sdk.NewSSEHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	for _, path := range []string{"/mcp", "/sse"} {
		t.Run(path, func(t *testing.T) {
			t.Parallel()
			c, err := New(context.Background(), Options{URL: ts.URL + path}, capabilities.Setup{})
			require.NoError(t, err)
			done := make(chan error, 1)
			go func() {
				_, err := call(t, c, "sleep", `{"ms": 60000}`, nil)
				done <- err
			}()
			time.Sleep(300 * time.Millisecond)
			start := time.Now()
			assert.NoError(t, c.Close())
			assert.Less(t, time.Since(start), closeWait/2, "Close waited for the call")
			select {
			case err := <-done:
				require.ErrorIs(t, err, ErrClosed)
				assert.Contains(t, err.Error(), "MCP server 127.0.0.1-"+strings.TrimPrefix(path, "/"))
			case <-time.After(closeWait):
				t.Fatal("the call outlived Close")
			}
		})
	}
}

// A Close while the tools of a remote server that announced they changed
// are listed again ends the listing, which returns ErrClosed, and Close does
// not wait for the server, which does not answer it.
func TestCloseDuringAListing(t *testing.T) {
	t.Parallel()
	srv := testServer()
	var lists atomic.Int64
	release := make(chan struct{})
	srv.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if method == "tools/list" && lists.Add(1) > 1 {
				select {
				case <-ctx.Done():
				case <-release:
				}
				return nil, errors.New("not listed")
			}
			return next(ctx, method, req)
		}
	})
	ts := httptest.NewServer(sdk.NewSSEHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	t.Cleanup(func() { close(release) }) // before the server closes, which waits for its handlers
	c, err := New(context.Background(), Options{URL: ts.URL + "/sse"}, capabilities.Setup{})
	require.NoError(t, err)
	version := c.ToolsVersion()
	_, err = call(t, c, "grow", `{}`, nil)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return c.ToolsVersion() != version }, 10*time.Second, 10*time.Millisecond)
	done := make(chan error, 1)
	go func() {
		_, err := c.Tools(context.Background())
		done <- err
	}()
	require.Eventually(t, func() bool { return lists.Load() > 1 }, 10*time.Second, 10*time.Millisecond)
	start := time.Now()
	assert.NoError(t, c.Close())
	assert.Less(t, time.Since(start), closeWait/2, "Close waited for the listing")
	select {
	case err := <-done:
		require.ErrorIs(t, err, ErrClosed)
		assert.Contains(t, err.Error(), "MCP server 127.0.0.1-sse")
	case <-time.After(closeWait):
		t.Fatal("the listing outlived Close")
	}
}

func TestInMemoryServer(t *testing.T) {
	// The capability over the SDK's in-memory transport, the way a Go
	// program embedding its own server would connect it.
	t.Parallel()
	st, ct := sdk.NewInMemoryTransports()
	ss, err := testServer().Connect(context.Background(), st, nil)
	require.NoError(t, err)
	defer ss.Close()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "t"}, nil).Connect(context.Background(), ct, nil)
	require.NoError(t, err)
	c := &Capability{id: "mem", where: "in memory", session: cs, allowed: []string{"echo"}}
	require.NoError(t, c.listTools(context.Background()))
	defer c.Close()
	out, err := call(t, c, "echo", `{"text": "in memory"}`, nil)
	require.NoError(t, err)
	assert.Equal(t, "in memory", out)
}

func TestOptionsChecks(t *testing.T) {
	t.Parallel()
	no := false
	cases := []struct {
		opts   Options
		option string
		msg    string
	}{
		{Options{URL: "http://x", Local: false}, "local", "local: false leaves only a provider-native server"},
		{Options{URL: "http://x", Local: "ftp://y"}, "local", `local must be true or an http:// or https:// URL, got "ftp://y"`},
		{Options{URL: "x"}, "url", `url must be an http:// or https:// URL, got "x"`},
		// A URL refused is shown as every message shows one: not its token.
		{Options{URL: "ws://h/mcp?token=s3cret"}, "url", `url must be an http:// or https:// URL, got "ws://h/mcp?…"`},
		{Options{URL: "http://x", Local: "ftp://u:s3cret@y/mcp/sk-4f9a0c7d2b"}, "local", `local must be true or an http:// or https:// URL, got "ftp://u:xxxxx@y/mcp/…"`},
		// Without its scheme, a host and port read as a scheme and the rest
		// as opaque: its segments are hidden as a path's are.
		{Options{URL: "mcp.example.com:443/mcp/sk-4f9a0c7d2b"}, "url", `url must be an http:// or https:// URL, got "mcp.example.com:443/mcp/…"`},
		{Options{Command: []string{""}}, "command", "the program name is empty"},
	}
	for _, tc := range cases {
		err := tc.opts.check()
		var argErr *capabilities.ArgError
		require.ErrorAs(t, err, &argErr, "%+v", tc.opts)
		assert.Equal(t, tc.option, argErr.Option)
		assert.Contains(t, err.Error(), tc.msg)
	}
	assert.NoError(t, (&Options{URL: "https://x/mcp", Native: &no, Local: true}).check())
}

// An env name exec cannot pass ("A=B" reached the server as A with the
// value "B=x"), or a value holding NUL (which failed the start), is an
// error of the options, as Shell and LocalWorkspace make it: nothing is
// started.
func TestEnvTheServerCannotBeGiven(t *testing.T) {
	t.Parallel()
	for _, env := range []map[string]string{{"MCP_TEST_PAIR=ONE": "two"}, {"": "x"}, {"MCP_TEST_PAIR": "a\x00b"}} {
		opts := Options{Command: serverCommand(), Env: serverEnvMap()}
		maps.Copy(opts.Env, env)
		c, err := New(context.Background(), opts, capabilities.Setup{Dir: t.TempDir()})
		if err == nil {
			out, err := call(t, c, "getenv", `{"name": "MCP_TEST_PAIR"}`, nil)
			c.Close()
			t.Errorf("env %q was taken: the server has MCP_TEST_PAIR=%q (%v)", env, out, err)
			continue
		}
		var argErr *capabilities.ArgError
		require.ErrorAs(t, err, &argErr, "%q: %v", env, err)
		assert.Equal(t, "env", argErr.Option)
	}
}

// A cwd that is not there is an error of the options, found by a check
// too (validate, agentspec mcp before it serves), as FileSystem's root_dir
// is: nothing is started.
func TestCheckFindsAMissingCwd(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, err := New(context.Background(), Options{Command: []string{"no-such-program"}, Cwd: "nope"}, capabilities.Setup{Dir: dir, CheckOnly: true})
	var argErr *capabilities.ArgError
	require.ErrorAs(t, err, &argErr)
	assert.Equal(t, "cwd", argErr.Option)
	assert.Contains(t, err.Error(), "nope: no such file or directory")

	c, err := New(context.Background(), Options{Command: []string{"no-such-program"}, Cwd: "."}, capabilities.Setup{Dir: dir, CheckOnly: true})
	require.NoError(t, err)
	assert.Equal(t, "no-such-program", c.ID())
}

func TestIDs(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "mcp.example.com-sse", defaultID("https://mcp.example.com/sse"))
	assert.Equal(t, "mcp.example.com", defaultID("https://mcp.example.com/"))
	assert.Equal(t, "mcp.example.com-mcp", defaultID("https://mcp.example.com/mcp/sk-4f9a2b7c1d"), "a token is not the id")
	assert.Equal(t, "mcp.example.com", defaultID("https://mcp.example.com/4f9a2b7c1d"))
	assert.Equal(t, "server-everything", commandID([]string{"npx", "-y", "@modelcontextprotocol/server-everything@2026.8.31"}))
	assert.Equal(t, "mcp-server-git", commandID([]string{"uvx", "mcp-server-git"}))
	assert.Equal(t, "server-everything", commandID([]string{"node", "/x/node_modules/@modelcontextprotocol/server-everything/dist/index.js", "stdio"}))
	assert.Equal(t, "weather", commandID([]string{"python3", "servers/weather.py"}))
	assert.Equal(t, "my-server", commandID([]string{"/opt/bin/my-server", "--stdio"}))
	assert.Equal(t, "https://u:xxxxx@h/p", redact.URL("https://u:pw@h/p"))
}

func TestTail(t *testing.T) {
	t.Parallel()
	tl := newTail(2)
	tl.Write([]byte("one\ntw"))
	tl.Write([]byte("o\n\nthree\nfour"))
	assert.Equal(t, []string{"three", "four"}, tl.lines())
}

func TestSchemaMatchesOptions(t *testing.T) {
	t.Parallel()
	var schema struct {
		AdditionalProperties bool                      `json:"additionalProperties"`
		Properties           map[string]map[string]any `json:"properties"`
	}
	require.NoError(t, json.Unmarshal([]byte(optionsSchema), &schema))
	assert.False(t, schema.AdditionalProperties)
	var keys, props []string
	typ := reflect.TypeFor[Options]()
	for i := range typ.NumField() {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		keys = append(keys, name)
	}
	for k, p := range schema.Properties {
		props = append(props, k)
		assert.NotEmpty(t, p["description"], k)
	}
	sort.Strings(keys)
	sort.Strings(props)
	assert.Equal(t, keys, props)
}

func TestRegistered(t *testing.T) {
	t.Parallel()
	typ, ok := capabilities.Default().Lookup(TypeName)
	require.True(t, ok)
	assert.Equal(t, "url", typ.Positional)
	// Built to be checked, it reaches no server (x.example does not resolve)
	// and says its tools are remote; native: true is accepted (the loader
	// warns it has no effect).
	c, err := capabilities.Default().New(context.Background(), TypeName, capabilities.Args{
		Options: json.RawMessage(`{"url": "https://x.example/mcp", "native": true}`), Setup: capabilities.Setup{CheckOnly: true}})
	require.NoError(t, err)
	r, ok := c.(capabilities.Remote)
	require.True(t, ok)
	assert.True(t, r.Remote())
	assert.Contains(t, typ.NoEffect, "native")
	_, err = capabilities.Default().New(context.Background(), TypeName, capabilities.Args{
		Options: json.RawMessage(`{"url": "ftp://x.example/mcp"}`), Setup: capabilities.Setup{CheckOnly: true}})
	var argErr *capabilities.ArgError
	require.ErrorAs(t, err, &argErr, "the options are still checked")
	assert.Equal(t, "url", argErr.Option)
}

// A local server runs in its cwd, and may change whatever is there: the
// capability says so, so that a boundary (a queue worker) judges the
// directory as it judges a FileSystem's root. A relative cwd resolves
// against the workspace, none is the workspace itself, and a link is
// judged by where it leads; a remote server reaches no path here.
func TestReachNamesTheServersDirectory(t *testing.T) {
	t.Parallel()
	ws, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	other, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	require.NoError(t, os.Mkdir(filepath.Join(ws, "sub"), 0o755))
	require.NoError(t, os.Symlink(other, filepath.Join(ws, "out")))
	for cwd, want := range map[string]string{
		"":    ws,
		"sub": filepath.Join(ws, "sub"),
		other: other,
		"out": other,
		"..":  filepath.Dir(ws),
	} {
		c, err := New(context.Background(), Options{Command: []string{"srv", "--token", "SECRET"}, Cwd: cwd},
			capabilities.Setup{Dir: ws, CheckOnly: true})
		require.NoError(t, err, cwd)
		assert.Equal(t, capabilities.Reach{Processes: []string{"srv"}, Paths: []capabilities.PathReach{{Path: want, Write: true}}},
			c.Reach(), "cwd %q", cwd)
	}
	c, err := New(context.Background(), Options{URL: "https://mcp.example.com/mcp"}, capabilities.Setup{Dir: ws, CheckOnly: true})
	require.NoError(t, err)
	assert.Empty(t, c.Reach().Paths)
}
