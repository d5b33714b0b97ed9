//go:build unix

package mcpserve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/capabilities/mcp"
)

// upstream is an MCP server, reached over SSE, whose tools a test adds and
// removes while it is served on.
type upstream struct {
	srv *sdk.Server
	url string
}

func newUpstream(t *testing.T, tools ...string) *upstream {
	t.Helper()
	u := &upstream{srv: sdk.NewServer(&sdk.Implementation{Name: "upstream"}, nil)}
	for _, name := range tools {
		u.add(name, false)
	}
	ts := httptest.NewServer(sdk.NewSSEHandler(func(*http.Request) *sdk.Server { return u.srv }, nil))
	t.Cleanup(ts.Close)
	u.url = ts.URL + "/sse"
	return u
}

// add offers a tool named name that answers "NAME answers".
func (u *upstream) add(name string, readOnly bool) {
	u.srv.AddTool(&sdk.Tool{Name: name, Description: "upstream's " + name,
		InputSchema: map[string]any{"type": "object"}, Annotations: &sdk.ToolAnnotations{ReadOnlyHint: readOnly}},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: name + " answers"}}}, nil
		})
}

// capability builds the MCP capability of u, started in the background
// (as `agentspec mcp SPEC` starts it) or at once.
func (u *upstream) capability(t *testing.T, later bool) capabilities.Capability {
	t.Helper()
	if !later {
		c, err := mcp.New(context.Background(), mcp.Options{URL: u.url, ID: "up"}, capabilities.Setup{})
		require.NoError(t, err)
		return c
	}
	opts, err := json.Marshal(map[string]any{"url": u.url, "id": "up"})
	require.NoError(t, err)
	c, err := mcpRegistry(t).New(context.Background(), mcp.TypeName, capabilities.Args{Options: opts})
	require.NoError(t, err)
	return c
}

func callText(t *testing.T, cs *sdk.ClientSession, name string) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: map[string]any{}})
	require.NoError(t, err)
	return textOf(t, res), res.IsError
}

// The tools an MCP server of the spec adds or removes once it is served
// on (notifications/tools/list_changed) are served as they change: the
// client is sent list_changed, lists the new tools and calls them, and a
// call of a tool withdrawn is answered with an error result saying so. A
// tool that joins under the name of another capability's is not served,
// and the server's log says why.
func TestToolsAServerChangesAreServed(t *testing.T) {
	t.Parallel()
	for _, later := range []bool{false, true} {
		name, label := "at once", "up" // named by its id
		if later {
			name, label = "started later", "MCP up"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			up := newUpstream(t, "echo")
			srv, lc := serveLate(t, Options{}, plainCap{plainTool{"custom"}}, up.capability(t, later))
			if later {
				receive(t, lc.changed, "tools/list_changed as the server joins")
				assert.Equal(t, "MCP up is up: 1 tools join (echo)", receive(t, lc.notices, "notice"))
			}
			require.ElementsMatch(t, []string{"custom", "echo"}, toolNames(t, lc.cs))

			up.add("added", false)
			receive(t, lc.changed, "tools/list_changed once a tool was added")
			assert.ElementsMatch(t, []string{"custom", "echo", "added"}, toolNames(t, lc.cs))
			out, isErr := callText(t, lc.cs, "added")
			assert.False(t, isErr)
			assert.Equal(t, "added answers", out)
			assert.Equal(t, label+"'s tools changed: added joins", receive(t, lc.notices, "notice"))

			up.srv.RemoveTools("echo")
			receive(t, lc.changed, "tools/list_changed once a tool was removed")
			assert.ElementsMatch(t, []string{"custom", "added"}, toolNames(t, lc.cs))
			out, isErr = callText(t, lc.cs, "echo")
			assert.True(t, isErr)
			assert.Equal(t, "tool echo is no longer offered: "+label+" withdrew it", out)
			assert.Equal(t, label+"'s tools changed: echo is withdrawn", receive(t, lc.notices, "notice"))

			up.add("custom", false)
			assert.Equal(t, "tool custom of "+label+" is not served: another capability provides a tool of that name",
				receive(t, lc.notices, "notice"))
			assert.ElementsMatch(t, []string{"custom", "added"}, toolNames(t, lc.cs))
			out, _ = callText(t, lc.cs, "custom")
			assert.Equal(t, "custom", out, "the first capability keeps its name")
			var names []string
			for _, tl := range srv.Tools() {
				names = append(names, tl.Name())
			}
			assert.Equal(t, []string{"custom", "added"}, names)
		})
	}
}

// --read-only withholds a tool that joins later as it does one listed at
// the start.
func TestReadOnlyWithholdsToolsThatJoinLater(t *testing.T) {
	t.Parallel()
	up := newUpstream(t)
	up.add("look", true)
	srv, lc := serveLate(t, Options{ReadOnly: true}, up.capability(t, false))
	require.Equal(t, []string{"look"}, toolNames(t, lc.cs))

	up.add("change", false)
	assert.Equal(t, "up's tools changed: withheld by --read-only: change", receive(t, lc.notices, "notice"))
	up.add("peek", true)
	receive(t, lc.changed, "tools/list_changed once a read-only tool was added")
	assert.ElementsMatch(t, []string{"look", "peek"}, toolNames(t, lc.cs))
	assert.Equal(t, []string{"change"}, srv.Withheld())
	_, err := lc.cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "change", Arguments: map[string]any{}})
	require.Error(t, err, "a withheld tool is not called")
}

// changingCap is a capabilities.ToolsChanger that says nothing when its
// tools change (no ToolsChanged).
type changingCap struct {
	mu      sync.Mutex
	tools   []capabilities.Tool
	version uint64
}

func (c *changingCap) Tools(context.Context) ([]capabilities.Tool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.tools), nil
}

func (c *changingCap) ToolsVersion() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.version
}

func (c *changingCap) set(tools ...capabilities.Tool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tools = tools
	c.version++
}

// A capability whose tools change but that does not say when (a
// ToolsChanger without ToolsChanged) has them served as they are when a
// client next lists them, and a call of one that joined since is served.
func TestToolsChangedUnannouncedAreServedWhenListed(t *testing.T) {
	t.Parallel()
	c := &changingCap{tools: []capabilities.Tool{plainTool{"first"}}}
	_, cs := connect(t, Options{}, c)
	require.Equal(t, []string{"first"}, toolNames(t, cs))
	c.set(plainTool{"second"})
	assert.Equal(t, []string{"second"}, toolNames(t, cs))
	c.set(plainTool{"second"}, plainTool{"third"})
	out, isErr := callText(t, cs, "third")
	assert.False(t, isErr)
	assert.Equal(t, "custom", out)
	out, isErr = callText(t, cs, "first")
	assert.True(t, isErr)
	assert.Equal(t, "tool first is no longer offered: a capability withdrew it", out)
}

// Over streamable HTTP too, a client is told on its stream for
// notifications that the tools changed.
func TestToolsAServerChangesAreAnnouncedOverHTTP(t *testing.T) {
	t.Parallel()
	up := newUpstream(t, "echo")
	srv, err := New(context.Background(), []capabilities.Capability{up.capability(t, false)}, Options{})
	require.NoError(t, err)
	defer srv.Close()
	endpoint, stop, served := serveLoopback(t, srv)
	changed := make(chan struct{}, 8)
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test"}, &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { changed <- struct{}{} },
	}).Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: endpoint}, nil)
	require.NoError(t, err)
	require.Equal(t, []string{"echo"}, toolNames(t, cs))
	// A notification sent before the client has opened its stream for
	// them is lost: tools are added until one is announced.
	var name string
	for i := 0; ; i++ {
		name = fmt.Sprintf("added%d", i)
		up.add(name, false)
		select {
		case <-changed:
		case <-time.After(time.Second):
			require.Less(t, i, 10, "no tools/list_changed")
			continue
		}
		break
	}
	// The announcement may be of a tool added before.
	for deadline := time.Now().Add(10 * time.Second); !slices.Contains(toolNames(t, cs), name); time.Sleep(20 * time.Millisecond) {
		require.True(t, time.Now().Before(deadline), "%s is not listed", name)
	}
	out, isErr := callText(t, cs, name)
	assert.False(t, isErr)
	assert.Equal(t, name+" answers", out)
	require.NoError(t, cs.Close())
	stop()
	assert.NoError(t, waitFor(t, served, "Serve did not end"))
}

// failingCap is a changingCap whose next listings fail, as many as fails
// says.
type failingCap struct {
	changingCap
	fails int
}

func (c *failingCap) Tools(ctx context.Context) ([]capabilities.Tool, error) {
	c.mu.Lock()
	if c.fails > 0 {
		c.fails--
		c.mu.Unlock()
		return nil, fmt.Errorf("listing failed")
	}
	c.mu.Unlock()
	return c.changingCap.Tools(ctx)
}

// A capability whose tools could not be listed again after they changed
// is asked again when a client next lists the tools, or calls one not
// offered: the tools it offers once it answers are served, not only those
// of its next change.
func TestToolsListedAgainAfterAFailedListing(t *testing.T) {
	t.Parallel()
	c := &failingCap{changingCap: changingCap{tools: []capabilities.Tool{plainTool{"first"}}}}
	_, lc := serveLate(t, Options{}, c)
	require.Equal(t, []string{"first"}, toolNames(t, lc.cs))
	c.set(plainTool{"first"}, plainTool{"second"})
	c.mu.Lock()
	c.fails = 1
	c.mu.Unlock()
	assert.Equal(t, []string{"first"}, toolNames(t, lc.cs), "the tools served as they were")
	assert.Equal(t, "a capability: listing failed; the tools it offered are served as they were", receive(t, lc.notices, "notice"))
	c.mu.Lock()
	c.fails = 1
	c.mu.Unlock()
	assert.Equal(t, []string{"first"}, toolNames(t, lc.cs))
	assert.Empty(t, lc.notices, "the same failure is not told again")
	assert.Equal(t, []string{"first", "second"}, toolNames(t, lc.cs))

	c.set(plainTool{"first"}, plainTool{"second"}, plainTool{"third"})
	c.mu.Lock()
	c.fails = 1
	c.mu.Unlock()
	assert.Equal(t, []string{"first", "second"}, toolNames(t, lc.cs))
	receive(t, lc.notices, "notice")
	out, isErr := callText(t, lc.cs, "third")
	assert.False(t, isErr)
	assert.Equal(t, "custom", out)
}

// An MCP server whose tools could not be listed again once it announced
// they changed has them listed again a while later, and at once for a call
// of a tool it added: those it added are served, and clients told so.
func TestToolsAServerAddedAfterAFailedListingAreServed(t *testing.T) {
	t.Parallel()
	t.Run("listed again later", func(t *testing.T) {
		t.Parallel()
		up, fail := failingUpstream(t)
		srv, lc := serveLate(t, Options{}, up.capability(t, false))
		srv.relistRetry.Store(int64(100 * time.Millisecond))
		require.Equal(t, []string{"echo"}, toolNames(t, lc.cs))
		fail()
		up.add("added", false)
		assert.Contains(t, receive(t, lc.notices, "notice"), "the tools it offered are served as they were")
		assert.Equal(t, "up's tools changed: added joins", receive(t, lc.notices, "notice"))
		receive(t, lc.changed, "tools/list_changed once the tools were listed again")
		assert.ElementsMatch(t, []string{"echo", "added"}, toolNames(t, lc.cs))
	})
	t.Run("called", func(t *testing.T) {
		t.Parallel()
		up, fail := failingUpstream(t)
		_, lc := serveLate(t, Options{}, up.capability(t, false))
		require.Equal(t, []string{"echo"}, toolNames(t, lc.cs))
		fail()
		up.add("added", false)
		assert.Contains(t, receive(t, lc.notices, "notice"), "the tools it offered are served as they were")
		out, isErr := callText(t, lc.cs, "added")
		assert.False(t, isErr)
		assert.Equal(t, "added answers", out)
	})
}

// failingUpstream is an upstream offering echo whose next tools/list
// fails once fail is called.
func failingUpstream(t *testing.T) (*upstream, func()) {
	up := newUpstream(t, "echo")
	var fail sync.Mutex
	failing := false
	up.srv.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			fail.Lock()
			f := failing && method == "tools/list"
			failing = failing && !f
			fail.Unlock()
			if f {
				return nil, fmt.Errorf("busy")
			}
			return next(ctx, method, req)
		}
	})
	return up, func() {
		fail.Lock()
		failing = true
		fail.Unlock()
	}
}

// heldGETs is an HTTP client's transport that holds its GET requests
// until release is closed.
type heldGETs struct {
	getting chan struct{}
	release chan struct{}
}

func (h *heldGETs) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodGet {
		h.getting <- struct{}{}
		select {
		case <-h.release:
		case <-r.Context().Done():
			return nil, r.Context().Err()
		}
	}
	return http.DefaultTransport.RoundTrip(r)
}

// A streamable HTTP client told that the tools changed before it opened
// its GET stream, the one such announcements go on, is told once it has
// opened it. The SDK's client opens it once initialized, a change may come
// first, and the client would not list the tools again.
func TestToolsChangedBeforeTheClientsGETStreamAreAnnounced(t *testing.T) {
	t.Parallel()
	up := newUpstream(t, "echo")
	srv, err := New(context.Background(), []capabilities.Capability{up.capability(t, false)}, Options{})
	require.NoError(t, err)
	t.Cleanup(func() { srv.Close() })
	ts := httptest.NewServer(srv.Handler(""))
	t.Cleanup(ts.Close)
	type client struct {
		cs      *sdk.ClientSession
		changed chan struct{}
	}
	connect := func(hc *http.Client) client {
		c := client{changed: make(chan struct{}, 8)}
		var err error
		c.cs, err = sdk.NewClient(&sdk.Implementation{Name: "test"}, &sdk.ClientOptions{
			ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { c.changed <- struct{}{} },
		}).Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: ts.URL + "/mcp", HTTPClient: hc}, nil)
		if assert.NoError(t, err) {
			t.Cleanup(func() { c.cs.Close() })
		}
		return c
	}
	held := &heldGETs{getting: make(chan struct{}, 8), release: make(chan struct{})}
	connected := make(chan client, 1)
	go func() { connected <- connect(&http.Client{Transport: held}) }() // it waits for its GET
	receive(t, held.getting, "GET of the late client")
	// A second client, with its GET stream open, is told after the late
	// one (the server tells its sessions in turn, the oldest first): once
	// it has been, the late one has been told too, before its GET.
	other := connect(http.DefaultClient)
	up.add("added", false)
	receive(t, other.changed, "tools/list_changed on an open GET stream")
	close(held.release)
	late := receive(t, connected, "the late client's session")
	require.NotNil(t, late.cs)
	receive(t, late.changed, "tools/list_changed announced before the GET stream opened")
	assert.ElementsMatch(t, []string{"echo", "added"}, toolNames(t, late.cs))
}

// cutCalls is an HTTP client's transport that cuts the stream of a POST
// carrying a tools/call after its first event, and notes a GET resuming a
// stream.
type cutCalls struct {
	cut     chan struct{}
	resumed atomic.Bool
}

func (c *cutCalls) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodGet && r.Header.Get("Last-Event-ID") != "" {
		c.resumed.Store(true)
	}
	var isCall bool
	if r.Method == http.MethodPost && r.GetBody != nil {
		body, _ := r.GetBody()
		b, _ := io.ReadAll(body)
		isCall = bytes.Contains(b, []byte(`"tools/call"`))
	}
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err != nil || !isCall {
		return resp, err
	}
	resp.Body = &firstEventOnly{ReadCloser: resp.Body, cut: c.cut}
	return resp, nil
}

type firstEventOnly struct {
	io.ReadCloser
	cut  chan struct{}
	seen []byte
	done bool
}

func (f *firstEventOnly) Read(p []byte) (int, error) {
	if f.done {
		return 0, io.ErrUnexpectedEOF
	}
	n, err := f.ReadCloser.Read(p)
	f.seen = append(f.seen, p[:n]...)
	if i := bytes.Index(f.seen, []byte("\n\n")); i >= 0 {
		f.done = true
		f.ReadCloser.Close()
		f.cut <- struct{}{}
		keep := n - (len(f.seen) - (i + 2))
		return max(keep, 0), nil
	}
	return n, err
}

// slowTool answers after a while.
type slowTool struct{ plainTool }

func (slowTool) Call(ctx context.Context, _ json.RawMessage) (string, error) {
	select {
	case <-time.After(500 * time.Millisecond):
		return "late answer", nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// A call whose stream broke before its answer came is answered on the
// stream the client resumes (Last-Event-ID).
func TestCallStreamResumedAfterItBroke(t *testing.T) {
	t.Parallel()
	srv, err := New(context.Background(), []capabilities.Capability{plainCap{slowTool{plainTool{"slow"}}}}, Options{})
	require.NoError(t, err)
	t.Cleanup(func() { srv.Close() })
	ts := httptest.NewServer(srv.Handler(""))
	t.Cleanup(ts.Close)
	cut := &cutCalls{cut: make(chan struct{}, 4)}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test"}, nil).Connect(context.Background(),
		&sdk.StreamableClientTransport{Endpoint: ts.URL + "/mcp", HTTPClient: &http.Client{Transport: cut}}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { cs.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "slow", Arguments: map[string]any{}})
	require.NoError(t, err)
	receive(t, cut.cut, "the call's stream cut")
	assert.True(t, cut.resumed.Load(), "the answer came on the resumed stream")
	assert.Equal(t, "late answer", textOf(t, res))
}
