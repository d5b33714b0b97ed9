//go:build unix

package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"maps"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/internal/childproc/childproctest"
)

// The in-repo MCP server the capability is tested against: the test binary
// itself, started with serverEnv set, serving testServer over stdio. It is a
// real process speaking the real protocol through the official SDK.
const serverEnvVar = "AGENTSPEC_MCP_TEST_SERVER"

// serverArg makes the test binary the server as serverEnvVar does, for a
// server started without env.
const serverArg = "-agentspec-mcp-test-server"

// The parts the test binary plays in TestServerCannotReadAgentspecsEnvironment
// (child_linux_test.go): a server that reads its parent's environment and
// memory, and the process that starts it.
const (
	readerEnvVar       = "AGENTSPEC_MCP_TEST_READER"
	readerParentEnvVar = "AGENTSPEC_MCP_TEST_READER_PARENT"
)

func TestMain(m *testing.M) {
	if os.Getenv(readerParentEnvVar) != "" {
		readerParent()
	}
	if os.Getenv(serverEnvVar) == "1" || slices.Contains(os.Args[1:], serverArg) {
		if marker := os.Getenv(readerEnvVar); marker != "" {
			childproctest.ReadParent(os.Stderr, marker)
		}
		if os.Getenv("MCP_TEST_STDERR") != "" {
			fmt.Fprintln(os.Stderr, os.Getenv("MCP_TEST_STDERR"))
		}
		if os.Getenv("MCP_TEST_GARBAGE") != "" { // a program that is no MCP server
			fmt.Println("Listening on port 8080")
			time.Sleep(time.Minute)
		}
		if code := os.Getenv("MCP_TEST_EXIT_AT_START"); code != "" {
			n, _ := strconv.Atoi(code)
			os.Exit(n)
		}
		srv := testServer()
		if os.Getenv("MCP_TEST_LIST_ECHO_TWICE") != "" {
			srv.AddReceivingMiddleware(listEchoTwice)
		}
		if os.Getenv("MCP_TEST_LOOSE_SCHEMAS") != "" {
			srv.AddReceivingMiddleware(listLooseSchemas)
		}
		if f := os.Getenv("MCP_TEST_HEARD_FILE"); f != "" {
			srv.AddReceivingMiddleware(noteCancellations(f))
		}
		// StdioTransport's connection over a stdin the freeze tool stops.
		transport := &sdk.IOTransport{Reader: serverStdin, Writer: nopCloser{os.Stdout}}
		if err := srv.Run(context.Background(), transport); err != nil {
			log.Fatal(err)
		}
		os.Exit(0)
	}
	capabilities.MustRegister(Type()) // the tests' specs name MCP
	os.Exit(m.Run())
}

// readerParent starts the server in reader mode and prints the lines it
// wrote to stderr (what it could read of this process), then exits.
func readerParent() {
	c, err := New(context.Background(), Options{Command: serverCommand(),
		Env: serverEnvMap(readerEnvVar, readerParentEnvVar)}, capabilities.Setup{})
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	// The server wrote before it answered initialize, but its stderr is
	// copied by a goroutine of its own, which may not have caught up.
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if slices.ContainsFunc(c.proc.stderr.lines(), func(l string) bool { return strings.HasPrefix(l, "mem: ") }) {
			break
		}
	}
	fmt.Println(strings.Join(c.proc.stderr.lines(), "\n"))
	c.Close()
	os.Exit(0)
}

// noteCancellations appends a line to file for every notifications/cancelled
// the server reads, which a test can read once the server is gone.
func noteCancellations(file string) sdk.Middleware {
	return func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if method == "notifications/cancelled" {
				if f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600); err == nil {
					fmt.Fprintln(f, "cancelled")
					f.Close()
				}
			}
			return next(ctx, method, req)
		}
	}
}

// serverCommand is the command of the in-repo server.
func serverCommand() []string { return []string{os.Args[0]} }

func serverEnvMap(extra ...string) map[string]string {
	env := map[string]string{serverEnvVar: "1"}
	for i := 0; i+1 < len(extra); i += 2 {
		env[extra[i]] = extra[i+1]
	}
	return env
}

func object(props map[string]any, required ...string) map[string]any {
	if required == nil {
		required = []string{}
	}
	if props == nil {
		props = map[string]any{}
	}
	return map[string]any{"type": "object", "properties": props, "required": required}
}

func str(desc string) map[string]any { return map[string]any{"type": "string", "description": desc} }

// testTools are the server's tool definitions; the tests compare what the
// model is offered against them.
var testTools = []*sdk.Tool{
	{Name: "echo", Description: "Echoes its text.", InputSchema: object(map[string]any{"text": str("what to echo")}, "text")},
	{Name: "fail", Description: "Always fails, as a tool result.", InputSchema: object(nil)},
	{Name: "picky", Description: "Refuses its arguments with a protocol error.", InputSchema: object(nil)},
	{Name: "media", Description: "Returns one content item of each kind.", InputSchema: object(nil)},
	{Name: "structured", Description: "Returns structured content only.", InputSchema: object(nil)},
	{Name: "count", Description: "Counts its calls.", InputSchema: object(nil),
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
	{Name: "sleep", Description: "Sleeps for ms milliseconds, or until cancelled.",
		InputSchema: object(map[string]any{"ms": map[string]any{"type": "integer"}}, "ms")},
	{Name: "exit", Description: "Exits the server process mid-call.", InputSchema: object(nil)},
	{Name: "spawn", Description: "Starts a long-lived child process and returns its pid.", InputSchema: object(nil)},
	{Name: "header", Description: "Returns an HTTP request header.", InputSchema: object(map[string]any{"name": str("header")}, "name")},
	{Name: "getenv", Description: "Returns an environment variable of the server.", InputSchema: object(map[string]any{"name": str("variable")}, "name")},
	{Name: "freeze", Description: "Stops reading stdin after this call, until a byte comes through $MCP_TEST_THAW, or for good.",
		InputSchema: object(nil)},
	{Name: "big", Description: "Returns bytes bytes of text.",
		InputSchema: object(map[string]any{"bytes": map[string]any{"type": "integer"}}, "bytes")},
	{Name: "heard", Description: "Returns how many notifications/cancelled the server has read.", InputSchema: object(nil)},
	{Name: "grow", Description: "Adds the tool late to the server's tools, which it announces.", InputSchema: object(nil)},
}

// lateTool is the tool grow adds.
var lateTool = &sdk.Tool{Name: "late", Description: "Joins when grow is called.", InputSchema: object(nil)}

// listEchoTwice makes a server list a second tool named echo, after the
// others, as a server that breaks the names' uniqueness would.
func listEchoTwice(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		res, err := next(ctx, method, req)
		if l, ok := res.(*sdk.ListToolsResult); ok && err == nil {
			l.Tools = append(l.Tools, &sdk.Tool{Name: "echo", Description: "Another echo.", InputSchema: object(nil)})
		}
		return res, err
	}
}

// looseSchemas are input schemas servers send that JSON Schema allows but
// providers refuse as a function's parameters, by the tool name that lists
// each: no properties (what the Go SDK tells a tool without input to give),
// no type, a $ref at the root (a pydantic model's), none at all.
var looseSchemas = map[string]any{
	"bare":    map[string]any{"type": "object"},
	"untyped": map[string]any{"properties": map[string]any{"q": str("query")}},
	"ref": map[string]any{"$ref": "#/$defs/Args", "$defs": map[string]any{
		"Args": object(map[string]any{"q": str("query")}, "q"),
	}},
	"none": nil,
}

// listLooseSchemas makes a server list a tool of each of looseSchemas,
// after the others.
func listLooseSchemas(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		res, err := next(ctx, method, req)
		if l, ok := res.(*sdk.ListToolsResult); ok && err == nil {
			for _, name := range slices.Sorted(maps.Keys(looseSchemas)) {
				l.Tools = append(l.Tools, &sdk.Tool{Name: name, InputSchema: looseSchemas[name]})
			}
		}
		return res, err
	}
}

// serverStdin is the server's stdin as its session reads it.
var serverStdin = &freezableStdin{}

// freezableStdin is stdin, whose reading the freeze tool stops: the Read
// after the call waits, as a server that no longer reads its requests does,
// until a test thaws it through the FIFO $MCP_TEST_THAW names, or without
// one until the process is killed; the one under way as it froze holds
// what it read until then too, so that no request written after the call
// is answered. What the client writes meanwhile fills the pipe, and nothing
// but the test can undo that, as a SIGCONT undid a stop by SIGSTOP.
type freezableStdin struct {
	frozen atomic.Bool
}

func (s *freezableStdin) Read(p []byte) (int, error) {
	if s.frozen.Load() {
		waitForThaw()
		s.frozen.Store(false)
	}
	n, err := os.Stdin.Read(p)
	if s.frozen.Load() {
		waitForThaw()
		s.frozen.Store(false)
	}
	return n, err
}

func (s *freezableStdin) Close() error { return os.Stdin.Close() }

// waitForThaw returns once the FIFO $MCP_TEST_THAW names has been opened
// to write and a byte written or the FIFO closed; without it, never.
func waitForThaw() {
	if path := os.Getenv("MCP_TEST_THAW"); path != "" {
		if f, err := os.Open(path); err == nil { // returns once the test opens it to write
			_, _ = f.Read(make([]byte, 1))
			f.Close()
			return
		}
	}
	// A read from a pipe nothing writes to waits in the poller, so the
	// runtime does not take the server, all of whose goroutines then wait,
	// for deadlocked.
	r, w, err := os.Pipe()
	if err != nil {
		select {}
	}
	_, _ = r.Read(make([]byte, 1))
	runtime.KeepAlive(w)
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

func text(s string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
}

func testServer() *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "agentspec-test", Version: "1"}, nil)
	var calls, cancellations atomic.Int64
	s.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if method == "notifications/cancelled" {
				cancellations.Add(1)
			}
			return next(ctx, method, req)
		}
	})
	handlers := map[string]sdk.ToolHandler{
		"echo": func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var a struct{ Text string }
			if err := json.Unmarshal(req.Params.Arguments, &a); err != nil {
				return nil, err
			}
			return text(a.Text), nil
		},
		"fail": func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			r := text("the widget is jammed; pass force: true")
			r.IsError = true
			return r, nil
		},
		"picky": func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Invalid arguments: n is required"}
		},
		"media": func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{
				&sdk.TextContent{Text: "a picture:"},
				&sdk.ImageContent{MIMEType: "image/png", Data: []byte{0x89, 'P', 'N', 'G'}},
				&sdk.AudioContent{MIMEType: "audio/wav", Data: []byte("RIFF")},
				&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "file:///notes.md", MIMEType: "text/markdown", Text: "# Notes"}},
				&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "file:///a.bin", MIMEType: "application/octet-stream", Blob: []byte{1, 2, 3}}},
				&sdk.ResourceLink{URI: "file:///big.log", Name: "big.log", Description: "the whole log"},
			}}, nil
		},
		"structured": func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{}, StructuredContent: map[string]any{"answer": 42}}, nil
		},
		"count": func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return text(strconv.FormatInt(calls.Add(1), 10)), nil
		},
		"sleep": func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var a struct{ MS int }
			_ = json.Unmarshal(req.Params.Arguments, &a)
			select {
			case <-time.After(time.Duration(a.MS) * time.Millisecond):
				return text("slept"), nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		},
		"exit": func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			fmt.Fprintln(os.Stderr, "fatal: the disk caught fire")
			os.Exit(7)
			return nil, nil
		},
		"spawn": func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			child := exec.Command("sleep", "300")
			if err := child.Start(); err != nil {
				return nil, err
			}
			go child.Wait()
			return text(strconv.Itoa(child.Process.Pid)), nil
		},
		"getenv": func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var a struct{ Name string }
			_ = json.Unmarshal(req.Params.Arguments, &a)
			return text(os.Getenv(a.Name)), nil
		},
		"freeze": func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			serverStdin.frozen.Store(true)
			return text("frozen"), nil
		},
		"big": func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var a struct{ Bytes int }
			_ = json.Unmarshal(req.Params.Arguments, &a)
			return text(strings.Repeat("x", a.Bytes)), nil
		},
		"grow": func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			s.AddTool(lateTool, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				return text("late answer"), nil
			})
			return text("grown"), nil
		},
		"heard": func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return text(strconv.FormatInt(cancellations.Load(), 10)), nil
		},
		"header": func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var a struct{ Name string }
			_ = json.Unmarshal(req.Params.Arguments, &a)
			if req.Extra == nil || req.Extra.Header == nil {
				return text(""), nil
			}
			return text(req.Extra.Header.Get(a.Name)), nil
		},
	}
	for _, t := range testTools {
		s.AddTool(t, handlers[t.Name])
	}
	return s
}
