//go:build unix

package mcpserve

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/capabilities/filesystem"
	"github.com/agentspec/agentspec/capabilities/mcp"
)

// The slow MCP server: this test binary, started with slowServerEnv set,
// waits slowDelayEnv milliseconds before it serves one tool, slow_echo,
// over stdio (an npx package being fetched, in miniature), or, with
// slowExitEnv, writes to stderr and exits with that status.
const (
	slowServerEnv = "AGENTSPEC_MCPSERVE_SLOW_SERVER"
	slowDelayEnv  = "AGENTSPEC_MCPSERVE_SLOW_DELAY_MS"
	slowExitEnv   = "AGENTSPEC_MCPSERVE_SLOW_EXIT"
)

func TestMain(m *testing.M) {
	if os.Getenv(slowServerEnv) == "1" {
		slowServer()
	}
	os.Exit(m.Run())
}

func slowServer() {
	ms, _ := strconv.Atoi(os.Getenv(slowDelayEnv))
	time.Sleep(time.Duration(ms) * time.Millisecond)
	if code := os.Getenv(slowExitEnv); code != "" {
		fmt.Fprintln(os.Stderr, "cannot find package @example/slow-server")
		n, _ := strconv.Atoi(code)
		os.Exit(n)
	}
	srv := sdk.NewServer(&sdk.Implementation{Name: "slow"}, nil)
	type echoArgs struct {
		Text string `json:"text"`
	}
	sdk.AddTool(srv, &sdk.Tool{Name: "slow_echo", Description: "Echoes text."},
		func(_ context.Context, _ *sdk.CallToolRequest, a echoArgs) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "echo: " + a.Text}}}, nil, nil
		})
	if err := srv.Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
	os.Exit(0)
}

// mcpRegistry holds one type, MCP, built by the capability's own New.
func mcpRegistry(t *testing.T) *capabilities.Registry {
	t.Helper()
	reg := capabilities.NewRegistry()
	require.NoError(t, reg.Register(capabilities.Type{Name: mcp.TypeName, NoBaseOptions: true,
		New: func(ctx context.Context, args capabilities.Args) (capabilities.Capability, error) {
			var opts mcp.Options
			if err := args.Decode(&opts); err != nil {
				return nil, err
			}
			return mcp.New(ctx, opts, args.Setup)
		}}))
	late, err := StartingLater(reg)
	require.NoError(t, err)
	return late
}

// slowMCP builds, through StartingLater, the MCP capability of the slow
// server.
func slowMCP(t *testing.T, delay time.Duration, extraEnv ...string) capabilities.Capability {
	t.Helper()
	env := map[string]string{slowServerEnv: "1", slowDelayEnv: strconv.Itoa(int(delay / time.Millisecond))}
	for i := 0; i+1 < len(extraEnv); i += 2 {
		env[extraEnv[i]] = extraEnv[i+1]
	}
	opts, err := json.Marshal(map[string]any{"command": []string{os.Args[0]}, "env": env, "id": "slow", "timeout": 20})
	require.NoError(t, err)
	c, err := mcpRegistry(t).New(context.Background(), mcp.TypeName, capabilities.Args{Options: opts})
	require.NoError(t, err)
	return c
}

type lateClient struct {
	cs       *sdk.ClientSession
	changed  chan struct{}
	progress chan string
	notices  chan string
}

// serveLate serves caps with a client that records the list_changed and
// progress notifications it gets, and the server's notices.
func serveLate(t *testing.T, opts Options, caps ...capabilities.Capability) (*Server, *lateClient) {
	t.Helper()
	lc := &lateClient{changed: make(chan struct{}, 8), progress: make(chan string, 8), notices: make(chan string, 8)}
	opts.Notice = func(msg string) { lc.notices <- msg }
	srv, err := New(context.Background(), caps, opts)
	require.NoError(t, err)
	st, ct := sdk.NewInMemoryTransports()
	ss, err := srv.MCP().Connect(context.Background(), st, nil)
	require.NoError(t, err)
	lc.cs, err = sdk.NewClient(&sdk.Implementation{Name: "test"}, &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { lc.changed <- struct{}{} },
		ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
			lc.progress <- req.Params.Message
		},
	}).Connect(context.Background(), ct, nil)
	require.NoError(t, err)
	t.Cleanup(func() {
		lc.cs.Close()
		ss.Close()
		srv.Close()
	})
	return srv, lc
}

func toolNames(t *testing.T, cs *sdk.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	return names
}

func receive[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(8 * time.Second):
		t.Fatalf("no %s", what)
		panic("unreachable")
	}
}

// A server that takes a while to come up holds up nothing: the client is
// initialized and lists the FileSystem's tools at once; the slow server's
// tool joins with notifications/tools/list_changed.
func TestSlowServerJoinsLater(t *testing.T) {
	t.Parallel()
	const delay = 1500 * time.Millisecond
	start := time.Now()
	slow := slowMCP(t, delay)
	fs, _ := newFS(t, map[string]string{"a.txt": "a\n"})
	srv, lc := serveLate(t, Options{}, fs, slow)
	initialized := time.Since(start)

	names := toolNames(t, lc.cs)
	assert.Len(t, names, len(filesystem.AllToolNames), "the FileSystem's tools are there at once")
	assert.NotContains(t, names, "slow_echo", "listed before the slow server is up")
	assert.Less(t, initialized, delay, "initialize waited for the slow server")
	assert.Equal(t, []string{"MCP slow"}, srv.Starting())

	receive(t, lc.changed, "tools/list_changed notification")
	assert.Contains(t, toolNames(t, lc.cs), "slow_echo")
	assert.Equal(t, "MCP slow is up: 1 tools join (slow_echo)", receive(t, lc.notices, "notice"))
	assert.Empty(t, srv.Starting())
	res, err := lc.cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "slow_echo", Arguments: map[string]any{"text": "hi"}})
	require.NoError(t, err)
	assert.Equal(t, "echo: hi", res.Content[0].(*sdk.TextContent).Text)
}

// A call to a tool that is not there yet waits for the server starting,
// and says so in a progress notification.
func TestEarlyCallWaitsForSlowServer(t *testing.T) {
	t.Parallel()
	slow := slowMCP(t, time.Second)
	fs, _ := newFS(t, nil)
	_, lc := serveLate(t, Options{}, fs, slow)

	res, err := lc.cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "slow_echo", Arguments: map[string]any{"text": "early"},
		Meta: sdk.Meta{"progressToken": "p1"}})
	require.NoError(t, err)
	require.False(t, res.IsError, "%v", res.Content)
	assert.Equal(t, "echo: early", res.Content[0].(*sdk.TextContent).Text)
	assert.Equal(t, "tool slow_echo is not offered yet: waiting for MCP slow to start", receive(t, lc.progress, "progress notification"))

	// A name no server offers is unknown once every server is up, as without one.
	_, err = lc.cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "no_such_tool", Arguments: map[string]any{}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no_such_tool")
}

// A server that exits at start is reported, and a call to a tool that was
// waiting for it gets an error result naming it rather than waiting on.
func TestServerThatExitsAtStartIsReported(t *testing.T) {
	t.Parallel()
	slow := slowMCP(t, 200*time.Millisecond, slowExitEnv, "3")
	fs, _ := newFS(t, nil)
	srv, lc := serveLate(t, Options{}, fs, slow)

	res, err := lc.cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "slow_echo", Arguments: map[string]any{}})
	require.NoError(t, err)
	require.True(t, res.IsError)
	text := res.Content[0].(*sdk.TextContent).Text
	assert.True(t, strings.HasPrefix(text, "tool slow_echo is not offered: MCP slow: MCP server slow ("), text)
	assert.Contains(t, text, "did not start: it exited before it was ready (exit status 3)")
	assert.Contains(t, text, "cannot find package @example/slow-server")

	notice := receive(t, lc.notices, "notice")
	assert.True(t, strings.HasPrefix(notice, "MCP slow: MCP server slow ("), notice)
	assert.Contains(t, notice, "exit status 3")
	assert.Empty(t, srv.Starting())
	assert.Len(t, srv.Tools(), len(filesystem.AllToolNames))
}

// A server still starting when serving ends (SIGTERM, Ctrl-C: the context
// its start was given ends) is stopped, which is no failure of it: nothing
// is reported, and a call waiting for its tool is answered that the server
// is shutting down, since the call got "tool slow_echo is not offered: MCP
// slow: context canceled" as an error the model could correct and stderr
// said "MCP slow: context canceled".
func TestServerStillStartingWhenServingEndsIsNoFailure(t *testing.T) {
	t.Parallel()
	env := map[string]string{slowServerEnv: "1", slowDelayEnv: "60000"}
	opts, err := json.Marshal(map[string]any{"command": []string{os.Args[0]}, "env": env, "id": "slow", "timeout": 90})
	require.NoError(t, err)
	serving, stop := context.WithCancel(context.Background())
	defer stop()
	slow, err := mcpRegistry(t).New(serving, mcp.TypeName, capabilities.Args{Options: opts})
	require.NoError(t, err)
	_, lc := serveLate(t, Options{}, slow)

	called := make(chan error, 1)
	go func() {
		res, err := lc.cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "slow_echo", Arguments: map[string]any{},
			Meta: sdk.Meta{"progressToken": "p1"}})
		if err == nil {
			err = fmt.Errorf("answered with a result: %v", res.Content[0].(*sdk.TextContent).Text)
		}
		called <- err
	}()
	receive(t, lc.progress, "progress notification") // the call is waiting
	stop()
	err = receive(t, called, "answer")
	assert.ErrorContains(t, err, "the call was cancelled: the server is shutting down")
	select {
	case n := <-lc.notices:
		t.Errorf("a server stopped as serving ended was reported: %s", n)
	case <-time.After(500 * time.Millisecond):
	}
}

// Close does not wait for a server still starting: it stops it.
func TestCloseStopsAServerStillStarting(t *testing.T) {
	t.Parallel()
	slow := slowMCP(t, time.Minute)
	srv, err := New(context.Background(), []capabilities.Capability{slow}, Options{Notice: func(msg string) { t.Errorf("notice after Close: %s", msg) }})
	require.NoError(t, err)
	assert.Equal(t, []string{"MCP slow"}, srv.Starting())
	assert.NoError(t, srv.Close())
}

// --read-only applies to tools that join late too.
func TestReadOnlyWithholdsLateTools(t *testing.T) {
	t.Parallel()
	slow := slowMCP(t, 300*time.Millisecond)
	srv, lc := serveLate(t, Options{ReadOnly: true}, slow)
	assert.Equal(t, "MCP slow is up: no tools join; withheld by --read-only: slow_echo", receive(t, lc.notices, "notice"))
	assert.Equal(t, []string{"slow_echo"}, srv.Withheld())
	assert.Empty(t, toolNames(t, lc.cs))
}

// gate is a remote capability type whose start waits for its test to open
// the gate, so that what happens meanwhile is certain, not timed.
type gate struct {
	open  chan struct{}
	tool  string
	peers chan []capabilities.Capability
}

type gateCap struct {
	tools []capabilities.Tool
	peers chan []capabilities.Capability
}

func (g *gateCap) Tools(context.Context) ([]capabilities.Tool, error) { return g.tools, nil }
func (g *gateCap) Remote() bool                                       { return true }
func (g *gateCap) Peers(all []capabilities.Capability) error {
	g.peers <- all
	return nil
}

type gateTool struct{ name string }

func (t gateTool) Name() string                                        { return t.name }
func (gateTool) Description() string                                   { return "A tool behind a gate." }
func (gateTool) Parameters() map[string]any                            { return nil }
func (gateTool) Call(context.Context, json.RawMessage) (string, error) { return "through", nil }

func (g *gate) registry(t *testing.T) *capabilities.Registry {
	t.Helper()
	reg := capabilities.NewRegistry()
	require.NoError(t, reg.Register(capabilities.Type{Name: "Gate",
		New: func(ctx context.Context, args capabilities.Args) (capabilities.Capability, error) {
			if args.CheckOnly {
				return &gateCap{}, nil
			}
			select {
			case <-g.open:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return &gateCap{tools: []capabilities.Tool{gateTool{g.tool}}, peers: g.peers}, nil
		}}))
	late, err := StartingLater(reg, "Gate")
	require.NoError(t, err)
	return late
}

// The start happens after the tools are served, whatever the timing: the
// factory cannot finish before the gate opens. The capability then gets
// its peers, itself in the place of what stood for it, and of two
// capabilities offering the same name, the second to start is reported,
// not served.
func TestLateCapabilityGetsPeersAndCannotTakeANameTwice(t *testing.T) {
	t.Parallel()
	g := &gate{open: make(chan struct{}), tool: "gate_tool", peers: make(chan []capabilities.Capability, 2)}
	reg := g.registry(t)
	first, err := reg.New(context.Background(), "Gate", capabilities.Args{})
	require.NoError(t, err)
	second, err := reg.New(context.Background(), "Gate", capabilities.Args{})
	require.NoError(t, err)
	fs, _ := newFS(t, nil)
	all := []capabilities.Capability{fs, first, second}
	for _, c := range all[1:] {
		p, ok := capabilities.As[capabilities.Peered](c)
		require.True(t, ok)
		require.NoError(t, p.Peers(all))
	}
	srv, lc := serveLate(t, Options{}, all...)
	assert.Equal(t, []string{"Gate", "Gate"}, srv.Starting())
	assert.NotContains(t, toolNames(t, lc.cs), "gate_tool")

	close(g.open)
	for range 2 {
		peers := receive(t, g.peers, "peers")
		require.Len(t, peers, 3)
		assert.Same(t, fs, peers[0])
		started := 0 // itself; the other still stands for what it will be
		for _, p := range peers[1:] {
			if _, ok := p.(*gateCap); ok {
				started++
			}
		}
		assert.Equal(t, 1, started)
	}
	notices := []string{receive(t, lc.notices, "notice"), receive(t, lc.notices, "notice")}
	assert.ElementsMatch(t, []string{"Gate is up: 1 tools join (gate_tool)",
		`Gate: two capabilities provide a tool named "gate_tool"; a client could not tell them apart`}, notices)
	receive(t, lc.changed, "tools/list_changed notification")
	res, err := lc.cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "gate_tool", Arguments: map[string]any{}})
	require.NoError(t, err)
	assert.Equal(t, "through", res.Content[0].(*sdk.TextContent).Text)
}

// A call waits for the server that offers its tool, not for every server
// still starting.
func TestEarlyCallWaitsOnlyUntilItsToolJoins(t *testing.T) {
	t.Parallel()
	stuck := &gate{open: make(chan struct{}), tool: "stuck_tool"}
	second := &gate{open: make(chan struct{}), tool: "second_tool"}
	a, err := stuck.registry(t).New(context.Background(), "Gate", capabilities.Args{})
	require.NoError(t, err)
	b, err := second.registry(t).New(context.Background(), "Gate", capabilities.Args{})
	require.NoError(t, err)
	_, lc := serveLate(t, Options{}, a, b)
	t.Cleanup(func() { close(stuck.open) }) // before the session ends: a call still waiting would hold it

	done := make(chan *sdk.CallToolResult, 1)
	go func() {
		res, err := lc.cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "second_tool", Arguments: map[string]any{},
			Meta: sdk.Meta{"progressToken": "p"}})
		assert.NoError(t, err)
		done <- res
	}()
	assert.Equal(t, "tool second_tool is not offered yet: waiting for Gate, Gate to start", receive(t, lc.progress, "progress notification"))
	close(second.open)
	res := receive(t, done, "result")
	require.NotNil(t, res)
	assert.Equal(t, "through", res.Content[0].(*sdk.TextContent).Text)
}

// A call to a tool --read-only withheld does not wait for the servers still
// starting: none of them can offer a name already taken. It is unknown, as
// it is when nothing is starting.
func TestCallToAWithheldToolDoesNotWaitForLateServers(t *testing.T) {
	t.Parallel()
	stuck := &gate{open: make(chan struct{}), tool: "stuck_tool"}
	late, err := stuck.registry(t).New(context.Background(), "Gate", capabilities.Args{})
	require.NoError(t, err)
	fs, _ := newFS(t, nil)
	_, lc := serveLate(t, Options{ReadOnly: true}, fs, late)
	t.Cleanup(func() { close(stuck.open) })

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = lc.cs.CallTool(ctx, &sdk.CallToolParams{Name: "write_file", Arguments: map[string]any{"path": "a.txt", "content": "a"}})
	require.Error(t, err)
	assert.NoError(t, ctx.Err(), "the call waited for a server still starting")
	assert.Contains(t, err.Error(), `unknown tool "write_file"`)
}

// A server started in the background without an id is named by its
// default id (the program, or the package a runner runs), as in a run, so
// that two of them can be told apart.
func TestLateServerWithoutIDIsNamedByItsDefaultID(t *testing.T) {
	t.Parallel()
	opts, err := json.Marshal(map[string]any{"command": []string{os.Args[0]},
		"env": map[string]string{slowServerEnv: "1", slowDelayEnv: "300"}})
	require.NoError(t, err)
	slow, err := mcpRegistry(t).New(context.Background(), mcp.TypeName, capabilities.Args{Options: opts})
	require.NoError(t, err)
	srv, lc := serveLate(t, Options{}, slow)
	assert.Equal(t, []string{"MCP mcpserve.test"}, srv.Starting())
	assert.Equal(t, "MCP mcpserve.test is up: 1 tools join (slow_echo)", receive(t, lc.notices, "notice"))
}

// A client's subscriptions/listen (protocol 2026-07-28, for the
// notifications/tools/list_changed of late tools) is no call to answer
// before exiting: the server ends when stdin ends though the client did not
// cancel it first, as a client that just closes its end (agentspec's MCP
// capability, which closes a server's stdin to stop it) does not.
func TestStdioEndsThoughASubscriptionIsOpen(t *testing.T) {
	t.Parallel()
	fs, _ := newFS(t, map[string]string{"a.txt": "a\n"})
	srv, err := New(context.Background(), []capabilities.Capability{fs, slowMCP(t, time.Minute)}, Options{Notice: func(string) {}})
	require.NoError(t, err)
	defer srv.Close()
	toServer, clientOut := io.Pipe()
	clientIn, fromServer := io.Pipe()
	served := make(chan error, 1)
	go func() { served <- srv.ServeStdio(context.Background(), toServer, fromServer) }()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test"}, &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {},
	}).Connect(context.Background(), &sdk.IOTransport{Reader: clientIn, Writer: clientOut}, nil)
	require.NoError(t, err)
	require.Equal(t, "2026-07-28", cs.InitializeResult().ProtocolVersion)
	require.True(t, cs.InitializeResult().Capabilities.Tools.ListChanged)

	clientOut.Close() // the server's stdin ends
	select {
	case err := <-served:
		assert.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the server outlived its stdin, waiting to answer the subscription")
	}
	clientIn.Close()
	fromServer.Close()
}
