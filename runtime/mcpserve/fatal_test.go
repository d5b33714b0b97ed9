package mcpserve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/runtime"
)

// failingTool fails fatally with err.
type failingTool struct {
	plainTool
	err error
}

func (f failingTool) Call(context.Context, json.RawMessage) (string, error) { return "", f.err }

// A call that failed fatally is answered with a JSON-RPC error that names
// no path of the server's machine outside what the capabilities reach (a
// FileSystem's root): the client is not told where agentspec keeps its
// events, its state or its programs. The whole error is in the call's
// ToolResult event and in the server's log (Notice).
func TestFatalErrorsShowNoPathsOfTheServer(t *testing.T) {
	t.Parallel()
	fsCap, root := newFS(t, map[string]string{"a.txt": "a\n"})
	inRoot := filepath.Join(root, "a.txt")
	state := filepath.Join(t.TempDir(), "agentspec state", "index")
	broken := fmt.Errorf("copying %s: %w", inRoot, &fs.PathError{Op: "open", Path: state, Err: syscall.EACCES})

	var (
		mu      sync.Mutex
		notices []string
		results []runtime.ToolResult
	)
	_, cs := connect(t, Options{
		Listener: func(_ context.Context, ev capabilities.Event) error {
			mu.Lock()
			defer mu.Unlock()
			if r, ok := ev.(runtime.ToolResult); ok {
				results = append(results, r)
			}
			return nil
		},
		Notice: func(line string) {
			mu.Lock()
			defer mu.Unlock()
			notices = append(notices, line)
		},
	}, fsCap, plainCap{failingTool{plainTool{"index"}, broken}})

	_, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "index"})
	var rpcErr *jsonrpc.Error
	require.ErrorAs(t, err, &rpcErr)
	assert.Equal(t, int64(jsonrpc.CodeInternalError), rpcErr.Code)
	assert.Equal(t, "copying "+inRoot+": open …: permission denied", rpcErr.Message, "a path in the root is the client's to see")
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, results, 1)
	assert.Equal(t, runtime.ToolFatal, results[0].Status)
	assert.Equal(t, broken.Error(), results[0].Message, "the event has it whole")
	assert.Equal(t, []string{"index (call mcp-1) failed: " + broken.Error()}, notices)
}

// A listener that fails, as JSONLines does once its file is closed, names
// the events file, which is the server's own.
func TestFatalListenerErrorShowsNoEventsFile(t *testing.T) {
	t.Parallel()
	fsCap, _ := newFS(t, map[string]string{"a.txt": "a\n"})
	events := filepath.Join(t.TempDir(), "events.jsonl")
	f, err := os.Create(events)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	var notices []string
	_, cs := connect(t, Options{Listener: runtime.JSONLines(f), Notice: func(line string) { notices = append(notices, line) }}, fsCap)
	_, err = cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "a.txt"}})
	var rpcErr *jsonrpc.Error
	require.ErrorAs(t, err, &rpcErr)
	assert.Equal(t, "event listener (run.tool_call): writing events: write …: file already closed", rpcErr.Message)
	require.Len(t, notices, 1)
	assert.Contains(t, notices[0], events, "the server's log names it")
}

func TestWithoutPaths(t *testing.T) {
	t.Parallel()
	roots := []string{"/srv/project", "/data/shared/"}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{errors.New("the events disk is full"), "the events disk is full"},
		{errors.New("open /home/me/.agentspec/state.db: permission denied"), "open …: permission denied"},
		{errors.New("open /srv/project/a.txt: input/output error"), "open /srv/project/a.txt: input/output error"},
		{errors.New("open /srv/project: is a directory"), "open /srv/project: is a directory"},
		{errors.New("open /srv/project2/a.txt: no such file"), "open …: no such file"},
		{errors.New("open /srv/project/../../etc/passwd: denied"), "open …: denied"},
		{errors.New("read /data/shared/x and /data/other/y."), "read /data/shared/x and …."},
		{errors.New(`file "/home/me/my notes.md" is locked`), `file "…" is locked`},
		{errors.New("file '/home/me/x' (/opt/tool/bin/rg) failed"), "file '…' (…) failed"},
		{errors.New("exec: /usr/bin/rg: not found; dir=/tmp/x"), "exec: …: not found; dir=…"},
		{errors.New("roots /srv/project,/home/me/x;/opt/y"), "roots /srv/project,…;…"},
		{errors.New("tried [/home/me/a]/etc/b and {/srv/project/c}<…>/etc/d"), "tried […]… and {/srv/project/c}<…>…"},
		{errors.New(`Post "http://127.0.0.1:9/mcp/x": dial tcp: refused`), `Post "http://127.0.0.1:9/mcp/x": dial tcp: refused`},
		{errors.New("read and/or write / both"), "read and/or write / both"},
		{errors.New(`open C:\Users\me\x.txt: denied`), `open …: denied`},
		{errors.New(`open C:/Users/me/x.txt: denied`), `open …: denied`},
		{errors.New(`open \\server\share\me\x.txt: denied`), `open …: denied`},
		{errors.New("open file:///home/me/x.txt: denied"), "open file://…: denied"},
		{errors.New(`load "file:///home/me/my%20notes.md": denied`), `load "file://…": denied`},
		{errors.New("open file://localhost/home/me/x.txt: denied"), "open file://…: denied"},
		{errors.New("open FILE://server/share/x.txt: denied"), "open FILE://…: denied"},
		{errors.New("open file:///srv/project/a%20b.txt: denied"), "open file:///srv/project/a%20b.txt: denied"},
		{errors.New("open file://localhost/srv/project/a.txt: denied"), "open file://localhost/srv/project/a.txt: denied"},
		{errors.New("root_dir:/home/me/x: not a directory"), "root_dir:…: not a directory"},
		{errors.New("source:file:///home/me/x: gone"), "source:file://…: gone"},
		{errors.New("config root_dir:/srv/project/x, state:/var/lib/x."), "config root_dir:/srv/project/x, state:…."},
		{errors.New(`Get "https://h/x/y": see http://h:8080/z`), `Get "https://h/x/y": see http://h:8080/z`},
		{fmt.Errorf("saving: %w", &fs.PathError{Op: "write", Path: "/home/me/my state/x", Err: syscall.ENOSPC}),
			"saving: write …: no space left on device"},
		{fmt.Errorf("moving: %w", &os.LinkError{Op: "rename", Old: "/srv/project/a b", New: "/var/tmp/a b", Err: syscall.EXDEV}),
			"moving: rename /srv/project/a b …: invalid cross-device link"},
		{errors.Join(errors.New("one"), &fs.PathError{Op: "stat", Path: "/x y/z", Err: syscall.ENOENT}),
			"one\nstat …: no such file or directory"},
		{fmt.Errorf("in /srv/project/a: %w", &fs.PathError{Op: "stat", Path: "/", Err: syscall.EACCES}),
			"in /srv/project/a: stat /: permission denied"},
		{fmt.Errorf("copying /srv/project/tmp/a: %w", &fs.PathError{Op: "open", Path: "/srv", Err: syscall.EACCES}),
			"copying /srv/project/tmp/a: open …: permission denied"},
		{fmt.Errorf("copying /srv/project/tmp/a: %w", &fs.PathError{Op: "open", Path: "/tmp", Err: syscall.EACCES}),
			"copying /srv/project/tmp/a: open …: permission denied"},
		{fmt.Errorf("state:%s: %w", "/home/me/x", &fs.PathError{Op: "open", Path: "/home/me/x", Err: syscall.EACCES}),
			"state:…: open …: permission denied"},
	} {
		assert.Equal(t, tc.want, withoutPaths(tc.err, roots), tc.err.Error())
	}
}

// A session's own capabilities may reach paths the server's do not (a
// client's directory of its own): a fatal error of that session's call
// shows them, as they are its client's to see, and still hides the rest.
func TestFatalErrorsShowTheSessionsOwnPaths(t *testing.T) {
	t.Parallel()
	shared, _ := newFS(t, map[string]string{"a.txt": "a\n"})
	state := filepath.Join(t.TempDir(), "state")
	inRoot := make(chan string, 1)
	srv, err := New(context.Background(), []capabilities.Capability{shared, plainCap{failingTool{plainTool{"index"}, errors.New("not built")}}}, Options{
		Session: func(context.Context) ([]capabilities.Capability, error) {
			own, root := newFS(t, map[string]string{"b.txt": "b\n"})
			inRoot <- filepath.Join(root, "b.txt")
			broken := fmt.Errorf("indexing %s: %w", filepath.Join(root, "b.txt"), &fs.PathError{Op: "open", Path: state, Err: syscall.EACCES})
			return []capabilities.Capability{own, plainCap{failingTool{plainTool{"index"}, broken}}}, nil
		},
	})
	require.NoError(t, err)
	defer srv.Close()
	endpoint, cancel, served := serveLoopback(t, srv)
	cs := dialHTTP(t, endpoint, "")
	_, err = cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "index"})
	cs.Close()
	cancel()
	require.NoError(t, <-served)
	var rpcErr *jsonrpc.Error
	require.ErrorAs(t, err, &rpcErr)
	assert.Equal(t, "indexing "+<-inRoot+": open …: permission denied", rpcErr.Message)
}
