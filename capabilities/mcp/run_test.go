//go:build unix

package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tmc/langchaingo/llms"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/internal/npmtest"
	"github.com/agentspec/agentspec/runtime"
	"github.com/agentspec/agentspec/runtime/script"
	"github.com/agentspec/agentspec/spec"
)

// loadSpec loads a spec whose MCP entry starts the in-repo server.
func loadSpec(t *testing.T, extra string) *spec.Spec {
	t.Helper()
	cmd, _ := json.Marshal(serverCommand())
	doc := fmt.Sprintf("model: openai:gpt-4.1\ncapabilities:\n  - MCP: {command: %s, env: {%s: \"1\"}}\n%s", cmd, serverEnvVar, extra)
	s, err := (&spec.Loader{}).Load("agent.yaml", []byte(doc))
	require.NoError(t, err)
	return s
}

// toolResults returns the contents of the tool results the model was sent.
func toolResults(m *script.Model) []string {
	var out []string
	reqs := m.Requests()
	last := reqs[len(reqs)-1]
	for _, msg := range last.Messages {
		for _, p := range msg.Parts {
			if r, ok := p.(llms.ToolCallResponse); ok {
				out = append(out, r.Content)
			}
		}
	}
	return out
}

func TestRunWithAStdioServer(t *testing.T) {
	t.Parallel()
	s := loadSpec(t, "tool_timeout: 0.5\n")
	model := script.New(
		script.Calls(
			script.Call("echo", map[string]any{"text": "from the server"}),
			script.Call("fail", map[string]any{}),
			script.Call("sleep", map[string]any{"ms": 60000}),
		),
		script.Say("done"),
	)
	var kinds []string
	res, err := runtime.Run(context.Background(), s,
		runtime.WithModel(model, runtime.DialectOpenAI),
		runtime.WithWorkspace(t.TempDir()),
		runtime.WithListener(func(_ context.Context, ev capabilities.Event) error {
			kinds = append(kinds, ev.Kind())
			return nil
		}))
	require.NoError(t, err)
	assert.Equal(t, "done", res.Output)
	assert.Equal(t, []string{
		"from the server",
		"Error: the widget is jammed; pass force: true",
		"Error: Timed out after 0.5 seconds.",
	}, toolResults(model))
	assert.Equal(t, []string{
		"run.model_request", "run.model_response",
		"run.tool_call", "mcp.call_request", "mcp.call_result", "run.tool_result",
		"run.tool_call", "mcp.call_request", "mcp.call_result", "run.tool_result",
		"run.retry",
		"run.tool_call", "mcp.call_request", "run.tool_result", // timed out: no result from the server
		"run.retry",
		"run.model_request", "run.model_response", "run.end",
	}, kinds)
}

// parentOf returns the parent pid of pid, from /proc.
func parentOf(t *testing.T, pid int) int {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	require.NoError(t, err)
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	ppid, err := strconv.Atoi(fields[1])
	require.NoError(t, err)
	return ppid
}

func TestInterruptedRunLeavesNoProcess(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc to find the server's pid")
	}
	s := loadSpec(t, "")
	model := script.New(
		script.Calls(script.Call("spawn", map[string]any{})),
		script.Calls(script.Call("sleep", map[string]any{"ms": 60000})),
		script.Say("never"),
	)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var child, server int
	_, err := runtime.Run(ctx, s,
		runtime.WithModel(model, runtime.DialectOpenAI),
		runtime.WithWorkspace(t.TempDir()),
		runtime.WithListener(func(_ context.Context, ev capabilities.Event) error {
			if e, ok := ev.(*CallRequestEvent); ok && e.Tool == "sleep" {
				time.AfterFunc(200*time.Millisecond, cancel) // Ctrl-C while the server works
			}
			return nil
		}))
	require.ErrorIs(t, err, runtime.ErrInterrupted)
	results := toolResults(model)
	require.NotEmpty(t, results)
	child, err = strconv.Atoi(results[0])
	require.NoError(t, err, "spawn returned %q", results[0])
	// The child is alive or already reaped; its parent was the server when
	// it was alive, which the run killed: both must be gone.
	if alive(child) {
		server = parentOf(t, child)
	}
	waitGone(t, child)
	if server > 1 {
		waitGone(t, server)
	}
}

// A real third-party server: the official "everything" server from npm.
func TestRunWithTheEverythingServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts node")
	}
	dir, err := npmtest.Install()
	if err != nil {
		t.Skipf("the npm MCP servers are not available: %v", err)
	}
	everything := npmtest.Bin(dir, "server-everything/dist/index.js")
	c, err := New(context.Background(), Options{Command: []string{"node", everything, "stdio"},
		AllowedTools: []string{"echo", "get-sum", "get-tiny-image"}}, capabilities.Setup{Dir: t.TempDir()})
	require.NoError(t, err)
	pid := c.PID()
	defer func() {
		require.NoError(t, c.Close())
		waitGone(t, pid)
	}()
	tools, err := c.Tools(context.Background())
	require.NoError(t, err)
	require.Len(t, tools, 3)

	out, err := call(t, c, "echo", `{"message": "hi"}`, nil)
	require.NoError(t, err)
	assert.Equal(t, "Echo: hi", out)
	out, err = call(t, c, "get-sum", `{"a": 2, "b": 40}`, nil)
	require.NoError(t, err)
	assert.Contains(t, out, "42")
	_, err = call(t, c, "echo", `{"wrong": 1}`, nil)
	_, retry := capabilities.AsRetry(err)
	assert.True(t, retry, "a validation error is correctable: %v", err)
	var dropped []string
	out, err = call(t, c, "get-tiny-image", `{}`, func(_ context.Context, ev capabilities.Event) error {
		if r, ok := ev.(*CallResultEvent); ok {
			dropped = r.Dropped
		}
		return nil
	})
	require.NoError(t, err)
	assert.Contains(t, out, "image/png image")
	require.Len(t, dropped, 1)
	assert.Contains(t, dropped[0], "image/png image")
}

func TestRunWithAnHTTPServer(t *testing.T) {
	t.Parallel()
	srv := testServer()
	ts := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	doc := fmt.Sprintf("model: openai:gpt-4.1\ncapabilities:\n  - MCP: {url: %q, allowed_tools: [echo, fail]}\n", ts.URL+"/mcp")
	s, err := (&spec.Loader{}).Load("agent.yaml", []byte(doc))
	require.NoError(t, err)
	model := script.New(
		script.Calls(script.Call("echo", map[string]any{"text": "over streamable HTTP"}), script.Call("fail", map[string]any{})),
		script.Say("done"),
	)
	res, err := runtime.Run(context.Background(), s, runtime.WithModel(model, runtime.DialectOpenAI), runtime.WithWorkspace(t.TempDir()))
	require.NoError(t, err)
	assert.Equal(t, "done", res.Output)
	assert.Equal(t, []string{"over streamable HTTP", "Error: the widget is jammed; pass force: true"}, toolResults(model))
}

func TestServerDeathEndsTheRun(t *testing.T) {
	t.Parallel()
	s := loadSpec(t, "")
	model := script.New(script.Calls(script.Call("exit", map[string]any{})), script.Say("never"))
	_, err := runtime.Run(context.Background(), s, runtime.WithModel(model, runtime.DialectOpenAI), runtime.WithWorkspace(t.TempDir()))
	require.ErrorIs(t, err, ErrServerExited)
	assert.Contains(t, err.Error(), "tool exit: the MCP server exited: MCP server mcp.test")
	assert.Contains(t, err.Error(), "(exit status 7); the last lines of its stderr:\n  fatal: the disk caught fire")
	assert.Equal(t, 1, model.Remaining(), "the model is not asked again")
}
