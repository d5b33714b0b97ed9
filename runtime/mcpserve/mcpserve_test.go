package mcpserve

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/capabilities/filesystem"
	"github.com/agentspec/agentspec/capabilities/prefixtools"
	"github.com/agentspec/agentspec/runtime"
)

func newFS(t testing.TB, files map[string]string) (*filesystem.Capability, string) {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
	}
	c, err := filesystem.New(filesystem.Options{RootDir: dir, Tools: filesystem.AllToolNames}, "")
	require.NoError(t, err)
	return c, dir
}

// connect serves caps and returns an SDK client session over the SDK's
// in-memory transports.
func connect(t *testing.T, opts Options, caps ...capabilities.Capability) (*Server, *sdk.ClientSession) {
	t.Helper()
	srv, err := New(context.Background(), caps, opts)
	require.NoError(t, err)
	st, ct := sdk.NewInMemoryTransports()
	ss, err := srv.MCP().Connect(context.Background(), st, nil)
	require.NoError(t, err)
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test"}, nil).Connect(context.Background(), ct, nil)
	require.NoError(t, err)
	t.Cleanup(func() {
		cs.Close()
		ss.Close()
		srv.Close()
	})
	return srv, cs
}

func jsonOf(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

func textOf(t *testing.T, res *sdk.CallToolResult) string {
	t.Helper()
	require.Len(t, res.Content, 1)
	return res.Content[0].(*sdk.TextContent).Text
}

func TestToolsAreWhatARunOffers(t *testing.T) {
	t.Parallel()
	fs, _ := newFS(t, nil)
	tools, err := fs.Tools(context.Background())
	require.NoError(t, err)
	_, cs := connect(t, Options{}, fs)
	res, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	require.Len(t, res.Tools, len(tools))
	listed := map[string]*sdk.Tool{}
	for _, lt := range res.Tools {
		listed[lt.Name] = lt
	}
	for _, want := range tools {
		got, ok := listed[want.Name()]
		require.True(t, ok, want.Name())
		assert.Equal(t, want.Description(), got.Description)
		assert.JSONEq(t, jsonOf(t, want.Parameters()), jsonOf(t, got.InputSchema), want.Name())
	}
	assert.True(t, listed["read_file"].Annotations.ReadOnlyHint)
	assert.False(t, *listed["read_file"].Annotations.OpenWorldHint, "files under one root are a closed domain")
	write := listed["write_file"].Annotations
	assert.False(t, write.ReadOnlyHint)
	assert.True(t, *write.DestructiveHint, "write_file replaces what is there")
	assert.False(t, *listed["create_directory"].Annotations.DestructiveHint, "create_directory only adds")
}

func TestResultsAreARunsText(t *testing.T) {
	t.Parallel()
	fs, _ := newFS(t, map[string]string{"notes.md": "# Notes\nline two\n"})
	direct, _ := newFS(t, map[string]string{"notes.md": "# Notes\nline two\n"})
	defer direct.Close()
	var events []string
	var results []runtime.ToolResult
	_, cs := connect(t, Options{Listener: func(_ context.Context, ev capabilities.Event) error {
		events = append(events, ev.Kind())
		if r, ok := ev.(runtime.ToolResult); ok {
			results = append(results, r)
		}
		return nil
	}}, fs)

	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "notes.md"}})
	require.NoError(t, err)
	assert.False(t, res.IsError)
	tools, _ := direct.Tools(context.Background())
	var want string
	for _, tl := range tools {
		if tl.Name() == "read_file" {
			want, err = tl.Call(context.Background(), json.RawMessage(`{"path": "notes.md"}`))
			require.NoError(t, err)
		}
	}
	assert.Equal(t, want, textOf(t, res))
	assert.Equal(t, []string{"run.tool_call", "file_system.file_read", "run.tool_result"}, events)
	require.Len(t, results, 1)
	assert.Equal(t, want, results[0].Text, "the result's text is in its event, as in a run")

	res, err = cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "missing.md"}})
	require.NoError(t, err)
	assert.True(t, res.IsError)
	assert.Contains(t, textOf(t, res), "missing.md")
	assert.NotContains(t, textOf(t, res), "Error: ", "the flag says it is an error; no prefix")

	res, err = cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "read_file", Arguments: json.RawMessage(`[1]`)})
	if err == nil { // the SDK client may refuse a non-object itself
		assert.True(t, res.IsError)
		assert.Equal(t, "the arguments of read_file are not a JSON object", textOf(t, res))
	}

	_, err = cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "nope"})
	assert.ErrorContains(t, err, `unknown tool "nope"`)
}

func TestFatalErrorsAreProtocolErrors(t *testing.T) {
	t.Parallel()
	fs, _ := newFS(t, map[string]string{"a.txt": "a\n"})
	_, cs := connect(t, Options{Listener: func(context.Context, capabilities.Event) error {
		return fmt.Errorf("the events disk is full")
	}}, fs)
	_, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "a.txt"}})
	var rpcErr *jsonrpc.Error
	require.ErrorAs(t, err, &rpcErr)
	assert.Equal(t, int64(jsonrpc.CodeInternalError), rpcErr.Code)
	assert.Contains(t, rpcErr.Message, "the events disk is full")
}

func TestReadOnlyOffersNoChangingTool(t *testing.T) {
	t.Parallel()
	fs, _ := newFS(t, nil)
	srv, cs := connect(t, Options{ReadOnly: true}, fs)
	res, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	var names []string
	for _, lt := range res.Tools {
		names = append(names, lt.Name)
	}
	assert.ElementsMatch(t, filesystem.ReadOnlyToolNames, names)
	assert.ElementsMatch(t, []string{"write_file", "edit_file", "create_directory"}, srv.Withheld())
	_, err = cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "write_file", Arguments: map[string]any{"path": "x", "content": "y"}})
	assert.ErrorContains(t, err, `unknown tool "write_file"`)
}

type plainTool struct{ name string }

func (p plainTool) Name() string               { return p.name }
func (p plainTool) Description() string        { return "a custom tool" }
func (p plainTool) Parameters() map[string]any { return nil }
func (p plainTool) Call(context.Context, json.RawMessage) (string, error) {
	return "custom", nil
}

type plainCap []capabilities.Tool

func (p plainCap) Tools(context.Context) ([]capabilities.Tool, error) { return p, nil }

type roTool struct{ plainTool }

func (roTool) Hints() capabilities.Hints { return capabilities.Hints{ReadOnly: true} }

// userWrapper is a wrapper a Go user might write: it forwards nothing but
// Tools, and unwraps.
type userWrapper struct{ inner capabilities.Capability }

func (u userWrapper) Tools(ctx context.Context) ([]capabilities.Tool, error) {
	return u.inner.Tools(ctx)
}
func (u userWrapper) Unwrap() capabilities.Capability { return u.inner }

// TestReadOnlyThroughWrappers: the read-only filter asks each tool's hints,
// so a FileSystem behind PrefixTools, or behind a wrapper of one's own,
// offers its read tools as it does unwrapped.
func TestReadOnlyThroughWrappers(t *testing.T) {
	t.Parallel()
	fs, _ := newFS(t, nil)
	docs, _ := newFS(t, nil)
	srv, cs := connect(t, Options{ReadOnly: true}, prefixtools.New("src", fs), userWrapper{prefixtools.New("docs", docs)})
	res, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	var names, want []string
	for _, lt := range res.Tools {
		names = append(names, lt.Name)
		assert.True(t, lt.Annotations.ReadOnlyHint, lt.Name)
	}
	for _, prefix := range []string{"src_", "docs_"} {
		for _, n := range filesystem.ReadOnlyToolNames {
			want = append(want, prefix+n)
		}
	}
	assert.ElementsMatch(t, want, names)
	assert.ElementsMatch(t, []string{"src_write_file", "src_edit_file", "src_create_directory",
		"docs_write_file", "docs_edit_file", "docs_create_directory"}, srv.Withheld())
}

func TestCustomTools(t *testing.T) {
	t.Parallel()
	caps := plainCap{plainTool{"clock"}, roTool{plainTool{"peek"}}}
	srv, cs := connect(t, Options{ReadOnly: true}, caps)
	assert.Equal(t, []string{"clock"}, srv.Withheld(), "nothing says clock is harmless")
	res, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	require.Len(t, res.Tools, 1)
	assert.JSONEq(t, `{"type": "object", "properties": {}}`, jsonOf(t, res.Tools[0].InputSchema), "as a run sends a tool without parameters")

	_, err = New(context.Background(), []capabilities.Capability{plainCap{plainTool{"x"}}, plainCap{plainTool{"x"}}}, Options{})
	assert.ErrorContains(t, err, `two capabilities provide a tool named "x"`)
}

func TestConcurrentCalls(t *testing.T) {
	t.Parallel()
	fs, dir := newFS(t, map[string]string{"shared.txt": "0\n", "out/keep.txt": ""})
	_, cs := connect(t, Options{}, fs)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 16 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "write_file",
				Arguments: map[string]any{"path": fmt.Sprintf("out/%d.txt", i), "content": fmt.Sprintf("file %d\n", i)}})
			if err == nil && res.IsError {
				err = fmt.Errorf("write %d: %s", i, res.Content[0].(*sdk.TextContent).Text)
			}
			errs <- err
		}()
		go func() {
			defer wg.Done()
			res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "shared.txt"}})
			if err == nil && res.IsError {
				err = fmt.Errorf("read: %s", res.Content[0].(*sdk.TextContent).Text)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		assert.NoError(t, err)
	}
	for i := range 16 {
		b, err := os.ReadFile(filepath.Join(dir, "out", fmt.Sprintf("%d.txt", i)))
		require.NoError(t, err)
		assert.Equal(t, fmt.Sprintf("file %d\n", i), string(b))
	}
}

type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

func TestHTTPWithToken(t *testing.T) {
	t.Parallel()
	fs, _ := newFS(t, map[string]string{"a.txt": "over http\n"})
	srv, err := New(context.Background(), []capabilities.Capability{fs}, Options{})
	require.NoError(t, err)
	defer srv.Close()
	ts := httptest.NewServer(srv.Handler("s3cret"))
	defer ts.Close()

	client := sdk.NewClient(&sdk.Implementation{Name: "test"}, nil)
	cs, err := client.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: ts.URL + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{"s3cret"}}}, nil)
	require.NoError(t, err)
	defer cs.Close()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "a.txt"}})
	require.NoError(t, err)
	assert.Contains(t, textOf(t, res), "over http")

	_, err = client.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: ts.URL + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{"wrong"}}}, nil)
	assert.Error(t, err)
	resp, err := http.Post(ts.URL+"/mcp", "application/json", nil)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)

	// The scheme's name is matched without regard to case, as HTTP's are;
	// the token is matched exactly, and nothing else stands for it.
	ping := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	for auth, want := range map[string]int{
		"bearer s3cret": http.StatusOK, "BEARER s3cret": http.StatusOK, "Bearer s3cret": http.StatusOK,
		"Bearer S3CRET": http.StatusUnauthorized, "Bearer  s3cret": http.StatusUnauthorized, "Bearers3cret": http.StatusUnauthorized,
		"Basic s3cret": http.StatusUnauthorized, "s3cret": http.StatusUnauthorized, "Bearer s3cret x": http.StatusUnauthorized,
	} {
		req, err := http.NewRequest(http.MethodPost, ts.URL+"/mcp", strings.NewReader(ping))
		require.NoError(t, err)
		req.Header.Set("Authorization", auth)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, want, resp.StatusCode, auth)
	}
}

func TestListen(t *testing.T) {
	t.Parallel()
	ln, err := Listen(":0", "")
	require.NoError(t, err)
	host, _, _ := netSplit(ln.Addr().String())
	assert.Equal(t, "127.0.0.1", host, "no host means loopback")
	ln.Close()

	_, err = Listen("0.0.0.0:0", "")
	assert.ErrorContains(t, err, "reachable beyond this machine; set a bearer token")
	ln, err = Listen("0.0.0.0:0", "t")
	require.NoError(t, err)
	ln.Close()
	_, err = Listen("nonsense", "")
	assert.ErrorContains(t, err, "expected HOST:PORT, :PORT or PORT")
	assert.ErrorIs(t, err, ErrAddress)
}

// An address that is good but cannot be listened on (in use) is not the
// caller's mistake, as a malformed one is: its error is no ErrAddress,
// and names the address.
func TestListenRefusalsAreNotFailures(t *testing.T) {
	t.Parallel()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	_, port, _ := netSplit(busy.Addr().String())
	for _, addr := range []string{busy.Addr().String(), ":" + port, port} {
		_, err := Listen(addr, "")
		require.Error(t, err, addr)
		assert.NotErrorIs(t, err, ErrAddress, addr)
		assert.Equal(t, "cannot listen on "+busy.Addr().String()+": address already in use", err.Error(), addr)
		assert.ErrorIs(t, err, syscall.EADDRINUSE, addr)
	}
	for _, addr := range []string{"nonsense", "127.0.0.1:65536", "127.0.0.1:-1", "127.0.0.1:no-such-service", "0.0.0.0:0", "h:1:2"} {
		_, err := Listen(addr, "")
		assert.ErrorIs(t, err, ErrAddress, addr)
	}
}

func netSplit(addr string) (string, string, error) { return net.SplitHostPort(addr) }

// serveOverPipes runs ServeStdio on real pipes, as under an MCP client, and
// returns the client's ends.
func serveOverPipes(t *testing.T, ctx context.Context) (toServer *os.File, fromServer *bufio.Reader, done <-chan error) {
	t.Helper()
	fs, _ := newFS(t, map[string]string{"a.txt": "alpha\n"})
	srv, err := New(context.Background(), []capabilities.Capability{fs}, Options{})
	require.NoError(t, err)
	t.Cleanup(func() { srv.Close() })
	in, out, done := servePipes(t, ctx, srv)
	return in, bufio.NewReader(out), done
}

func TestStdioPipesWithBatches(t *testing.T) {
	t.Parallel()
	in, out, done := serveOverPipes(t, context.Background())
	send := func(s string) {
		_, err := in.WriteString(s + "\n")
		require.NoError(t, err)
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	line, err := out.ReadString('\n')
	require.NoError(t, err)
	assert.Contains(t, line, `"protocolVersion":"2025-03-26"`)
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`[{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"a.txt"}}},` +
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"nope.txt"}}}]`)
	line, err = out.ReadString('\n')
	require.NoError(t, err)
	var batch []struct {
		ID     int `json:"id"`
		Result struct {
			IsError bool `json:"isError"`
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"result"`
	}
	require.NoError(t, json.Unmarshal([]byte(line), &batch), line)
	require.Len(t, batch, 2, "one array answers the batch")
	byID := map[int]bool{batch[0].ID: batch[0].Result.IsError, batch[1].ID: batch[1].Result.IsError}
	assert.Equal(t, map[int]bool{2: false, 3: true}, byID)

	require.NoError(t, in.Close()) // EOF is a clean end
	select {
	case err := <-done:
		assert.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("ServeStdio did not end at EOF")
	}
}

func TestStdioPipesEndWithTheContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	_, _, done := serveOverPipes(t, ctx)
	time.Sleep(50 * time.Millisecond)
	cancel() // SIGTERM, while the server waits for input
	select {
	case err := <-done:
		assert.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("ServeStdio did not end with its context")
	}
}

// scriptedRequests is what `printf ... | agentspec mcp` sends: a whole
// session written at once, then the end of the input.
const scriptedRequests = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"a.txt"}}}
`

// checkScriptedAnswers reads the two answers to scriptedRequests.
func checkScriptedAnswers(t *testing.T, out *bufio.Reader) {
	t.Helper()
	byID := map[int]string{}
	for range 2 {
		line, err := out.ReadString('\n')
		if !assert.NoError(t, err) {
			break
		}
		var m struct {
			ID int `json:"id"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &m), line)
		byID[m.ID] = line
	}
	assert.Contains(t, byID[1], `"serverInfo"`)
	assert.Contains(t, byID[2], "alpha", "the call read before the input ended is answered")
}

func TestStdioAnswersCallsReadBeforeTheInputEnds(t *testing.T) {
	t.Parallel()
	t.Run("pipe", func(t *testing.T) {
		t.Parallel()
		in, out, done := serveOverPipes(t, context.Background())
		_, err := in.WriteString(scriptedRequests)
		require.NoError(t, err)
		require.NoError(t, in.Close())
		select {
		case err := <-done:
			assert.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Fatal("ServeStdio did not end at EOF")
		}
		checkScriptedAnswers(t, out)
	})
	t.Run("reader", func(t *testing.T) {
		t.Parallel()
		fs, _ := newFS(t, map[string]string{"a.txt": "alpha\n"})
		srv, err := New(context.Background(), []capabilities.Capability{fs}, Options{})
		require.NoError(t, err)
		defer srv.Close()
		var out strings.Builder
		require.NoError(t, srv.ServeStdio(context.Background(), strings.NewReader(scriptedRequests), &out))
		checkScriptedAnswers(t, bufio.NewReader(strings.NewReader(out.String())))
	})
}

// A reader that is not a pipe, such as a terminal, is still left when the
// context ends, though its Read never returns.
func TestStdioReaderEndsWithTheContext(t *testing.T) {
	t.Parallel()
	fs, _ := newFS(t, nil)
	srv, err := New(context.Background(), []capabilities.Capability{fs}, Options{})
	require.NoError(t, err)
	defer srv.Close()
	block, unblock := io.Pipe()
	defer unblock.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.ServeStdio(ctx, struct{ io.Reader }{block}, io.Discard) }()
	time.Sleep(50 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		assert.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("ServeStdio did not end with its context")
	}
}

func TestHTTPRefusesAForeignHostOnLoopback(t *testing.T) {
	t.Parallel()
	fs, _ := newFS(t, nil)
	srv, err := New(context.Background(), []capabilities.Capability{fs}, Options{})
	require.NoError(t, err)
	defer srv.Close()
	ts := httptest.NewServer(srv.Handler(""))
	defer ts.Close()
	req, err := http.NewRequest(http.MethodPost, ts.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	require.NoError(t, err)
	req.Host = "attacker.example"
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusForbidden, resp.StatusCode, "DNS rebinding protection")
}

func TestStdioPipesConcurrentCalls(t *testing.T) {
	t.Parallel()
	in, out, done := serveOverPipes(t, context.Background())
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test"}, nil).Connect(context.Background(),
		&sdk.IOTransport{Reader: io.NopCloser(out), Writer: in}, nil)
	require.NoError(t, err)
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "a.txt"}})
			if assert.NoError(t, err) {
				assert.Contains(t, textOf(t, res), "alpha")
			}
		})
	}
	wg.Wait()
	require.NoError(t, cs.Close())
	select {
	case err := <-done:
		assert.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("ServeStdio did not end when the client closed")
	}
}

// A request with an Origin that is not the server's own comes from a web
// page a browser let reach this address: it is refused with 403 before the
// token is looked at. The server's own origin, by its address or a name of
// loopback on the same port, and no Origin at all, go on to the token.
func TestHTTPRefusesAnotherOrigin(t *testing.T) {
	t.Parallel()
	fs, _ := newFS(t, nil)
	srv, err := New(context.Background(), []capabilities.Capability{fs}, Options{})
	require.NoError(t, err)
	defer srv.Close()
	ts := httptest.NewServer(srv.Handler("s3cret"))
	defer ts.Close()
	u, err := url.Parse(ts.URL)
	require.NoError(t, err)
	port := u.Port()
	other := strconv.Itoa(mustAtoi(t, port) + 1)

	post := func(token string, origins ...string) int {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, ts.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		for _, o := range origins {
			req.Header.Add("Origin", o)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, origin := range []string{
		"http://attacker.example:" + port, // DNS rebinding: a foreign name for this address
		"http://attacker.example",
		"https://127.0.0.1:" + port,
		"http://127.0.0.1:" + other,
		"http://localhost:" + other,
		"http://10.1.2.3:" + port,
		"null",
		"http://127.0.0.1:" + port + "/path",
		"not a url",
	} {
		assert.Equal(t, http.StatusForbidden, post("", origin), "%s without a token: refused for its origin first", origin)
		assert.Equal(t, http.StatusForbidden, post("s3cret", origin), "%s with the token", origin)
	}
	assert.Equal(t, http.StatusForbidden, post("s3cret", ts.URL, "http://attacker.example"), "two origins")
	for _, origin := range []string{ts.URL, "http://localhost:" + port, "http://LOCALHOST:" + port, "http://[::1]:" + port, ""} {
		var origins []string
		if origin != "" {
			origins = []string{origin}
		}
		assert.Equal(t, http.StatusUnauthorized, post("", origins...), "%q: own origin, on to the token", origin)
		assert.Equal(t, http.StatusOK, post("s3cret", origins...), "%q: own origin with the token", origin)
	}
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	require.NoError(t, err)
	return n
}

// Two clients of one server over HTTP each see their own FileSystem: a
// file one changed since the other read it is a Conflict for the other's
// write, as a change by any other process is, rather than taken for what
// the other was shown; and a session's capabilities are closed when it
// ends.
func TestHTTPSessionsHaveTheirOwnCapabilities(t *testing.T) {
	t.Parallel()
	fs, dir := newFS(t, map[string]string{"a.txt": "one\n"})
	var (
		mu    sync.Mutex
		built []*closeSpy
	)
	srv, err := New(context.Background(), []capabilities.Capability{fs}, Options{
		Session: func(context.Context) ([]capabilities.Capability, error) {
			c, err := filesystem.New(filesystem.Options{RootDir: dir, Tools: filesystem.AllToolNames}, "")
			if err != nil {
				return nil, err
			}
			spy := &closeSpy{Capability: c, closed: make(chan struct{})}
			mu.Lock()
			built = append(built, spy)
			mu.Unlock()
			return []capabilities.Capability{spy}, nil
		},
	})
	require.NoError(t, err)
	defer srv.Close()
	ts := httptest.NewServer(srv.Handler("s3cret"))
	defer ts.Close()
	dial := func() *sdk.ClientSession { return dialHTTP(t, ts.URL+"/mcp", "s3cret") }
	call := func(cs *sdk.ClientSession, name string, args map[string]any) *sdk.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
		require.NoError(t, err)
		return res
	}
	a, b := dial(), dial()
	defer a.Close()
	assert.Contains(t, textOf(t, call(a, "read_file", map[string]any{"path": "a.txt"})), "one")
	assert.Contains(t, textOf(t, call(b, "read_file", map[string]any{"path": "a.txt"})), "one")
	assert.False(t, call(b, "write_file", map[string]any{"path": "a.txt", "content": "B's\n"}).IsError)

	res := call(a, "write_file", map[string]any{"path": "a.txt", "content": "A's\n"})
	assert.True(t, res.IsError, "A never saw B's change")
	assert.Contains(t, textOf(t, res), "Conflict: file 'a.txt' was changed on disk since you last read it")
	data, err := os.ReadFile(filepath.Join(dir, "a.txt"))
	require.NoError(t, err)
	assert.Equal(t, "B's\n", string(data), "B's change is not overwritten unseen")

	mu.Lock()
	require.Len(t, built, 2, "one FileSystem per session")
	bs := built[1]
	mu.Unlock()
	require.NoError(t, b.Close())
	select {
	case <-bs.closed:
	case <-time.After(10 * time.Second):
		t.Fatal("the ended session's FileSystem was not closed")
	}
}

// closeSpy tells when its capability is closed.
type closeSpy struct {
	capabilities.Capability
	once   sync.Once
	closed chan struct{}
}

func (c *closeSpy) Unwrap() capabilities.Capability { return c.Capability }

func (c *closeSpy) Close() error {
	c.once.Do(func() { close(c.closed) })
	return c.Capability.(io.Closer).Close()
}

// A capability closed once it had started, before a join asked for it (the
// server closed just as it came up), is found closed, and not started
// without an error, which had the join ask a nil capability for its tools.
func TestLaterClosedOnceStarted(t *testing.T) {
	t.Parallel()
	l := startLater(context.Background(), "MCP quick", noTools{}, func(context.Context) (capabilities.Capability, error) {
		return noTools{}, nil
	})
	<-l.done
	require.NoError(t, l.Close())
	c, err := l.started(context.Background())
	assert.Nil(t, c)
	assert.ErrorIs(t, err, errClosedOnceUp)
}
