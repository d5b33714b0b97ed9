package mcpserve

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/runtime"
)

// lockedBuffer is a bytes.Buffer safe for the concurrent writes of calls.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) lines(t *testing.T) []map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for line := range strings.SplitSeq(strings.TrimSpace(l.b.String()), "\n") {
		var ev map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &ev), line)
		out = append(out, ev)
	}
	return out
}

// Every event of a call over HTTP, the capabilities' own included, says
// which session made it (session_id, the Mcp-Session-Id its client
// sends), so that the calls of two clients can be told apart in one
// events file; a call over stdio has no session id, and no such field.
func TestEventsOfHTTPCallsNameTheirSession(t *testing.T) {
	t.Parallel()
	fsCap, _ := newFS(t, map[string]string{"a.txt": "a\n"})
	var log lockedBuffer
	sessions := map[string]string{} // call id -> SessionIDFrom, as a Go listener sees it
	var mu sync.Mutex
	jsonl := runtime.JSONLines(&log)
	srv, err := New(context.Background(), []capabilities.Capability{fsCap}, Options{
		Listener: func(ctx context.Context, ev capabilities.Event) error {
			if c, ok := ev.(runtime.ToolCall); ok {
				id, _ := runtime.SessionIDFrom(ctx)
				mu.Lock()
				sessions[c.ID] = id
				mu.Unlock()
			}
			return jsonl(ctx, ev)
		},
	})
	require.NoError(t, err)
	defer srv.Close()
	endpoint, cancel, served := serveLoopback(t, srv)
	a, b := dialHTTP(t, endpoint, ""), dialHTTP(t, endpoint, "")
	for _, cs := range []*sdk.ClientSession{a, b} {
		res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "a.txt"}})
		require.NoError(t, err)
		require.False(t, res.IsError)
	}
	a.Close()
	b.Close()
	cancel()
	require.NoError(t, <-served)

	want := map[string]string{"mcp-1": a.ID(), "mcp-2": b.ID()}
	require.NotEmpty(t, a.ID())
	require.NotEqual(t, a.ID(), b.ID())
	events := log.lines(t)
	require.Len(t, events, 6)
	for _, ev := range events {
		call, _ := ev["id"].(string)
		if call == "" {
			call, _ = ev["tool_call_id"].(string)
		}
		require.Contains(t, want, call, "%v", ev)
		assert.Equal(t, want[call], ev["session_id"], "%v", ev)
	}
	assert.Equal(t, want, sessions)

	// Over stdio (here the SDK's in-memory transport), no session.
	var stdioLog lockedBuffer
	fsCap, _ = newFS(t, map[string]string{"a.txt": "a\n"})
	_, cs := connect(t, Options{Listener: runtime.JSONLines(&stdioLog)}, fsCap)
	_, err = cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "a.txt"}})
	require.NoError(t, err)
	for _, ev := range stdioLog.lines(t) {
		assert.NotContains(t, ev, "session_id")
	}
}

// builtEvent is what a session's capability emits while it is built.
type builtEvent struct{}

func (builtEvent) Kind() string { return "test.built" }

// An event a session's capabilities emit while they are built is the
// session's, not the call's that happened to be first: its context names
// the session, and no call.
func TestEventsOfBuildingASessionNameNoCall(t *testing.T) {
	t.Parallel()
	fsCap, _ := newFS(t, map[string]string{"a.txt": "a\n"})
	type seen struct {
		call    capabilities.CallInfo
		hasCall bool
		session string
	}
	var (
		mu    sync.Mutex
		built []seen
	)
	srv, err := New(context.Background(), []capabilities.Capability{fsCap}, Options{
		Listener: func(ctx context.Context, ev capabilities.Event) error {
			if _, ok := ev.(builtEvent); ok {
				call, hasCall := capabilities.CallFrom(ctx)
				session, _ := runtime.SessionIDFrom(ctx)
				mu.Lock()
				built = append(built, seen{call, hasCall, session})
				mu.Unlock()
			}
			return nil
		},
		Session: func(ctx context.Context) ([]capabilities.Capability, error) {
			if err := capabilities.Emit(ctx, builtEvent{}); err != nil {
				return nil, err
			}
			own, _ := newFS(t, map[string]string{"a.txt": "a\n"})
			return []capabilities.Capability{own}, nil
		},
	})
	require.NoError(t, err)
	defer srv.Close()
	endpoint, cancel, served := serveLoopback(t, srv)
	cs := dialHTTP(t, endpoint, "")
	_, err = cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "a.txt"}})
	require.NoError(t, err)
	cs.Close()
	cancel()
	require.NoError(t, <-served)

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, built, 1)
	assert.False(t, built[0].hasCall, "named call %v", built[0].call)
	assert.Equal(t, cs.ID(), built[0].session)
}
