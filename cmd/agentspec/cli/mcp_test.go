package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	goruntime "runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/capabilities/filesystem"
	"github.com/agentspec/agentspec/internal/npmtest"
)

func mcpWorkspace(t *testing.T) string {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.md"), []byte("# Notes\nthe answer is 42\n"), 0o644))
	return dir
}

func TestMCPOverStdioSubprocess(t *testing.T) {
	t.Parallel()
	bin := agentspecBinary(t)
	dir := mcpWorkspace(t)
	events := filepath.Join(t.TempDir(), "events.jsonl")
	cmd := exec.Command(bin, "mcp", "--root", dir, "--events", events)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	client := sdk.NewClient(&sdk.Implementation{Name: "test"}, nil)
	cs, err := client.Connect(context.Background(), &sdk.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err)

	fs, err := filesystem.New(filesystem.Options{RootDir: dir, Tools: filesystem.AllToolNames}, "")
	require.NoError(t, err)
	defer fs.Close()
	want, _ := fs.Tools(context.Background())
	res, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	require.Len(t, res.Tools, len(want))
	got := map[string]*sdk.Tool{}
	for _, tl := range res.Tools {
		got[tl.Name] = tl
	}
	for _, w := range want {
		require.Contains(t, got, w.Name())
		assert.Equal(t, w.Description(), got[w.Name()].Description)
		wb, _ := json.Marshal(w.Parameters())
		gb, _ := json.Marshal(got[w.Name()].InputSchema)
		assert.JSONEq(t, string(wb), string(gb))
	}

	call, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "write_file", Arguments: map[string]any{"path": "out.txt", "content": "written over MCP\n"}})
	require.NoError(t, err)
	require.False(t, call.IsError, "%v", call.Content)
	b, err := os.ReadFile(filepath.Join(dir, "out.txt"))
	require.NoError(t, err)
	assert.Equal(t, "written over MCP\n", string(b))

	require.NoError(t, cs.Close()) // stdin ends: the server must exit cleanly
	assert.Equal(t, 0, cmd.ProcessState.ExitCode(), stderr.String())
	assert.Contains(t, stderr.String(), "agentspec mcp: serving 10 tools (read_file, write_file")
	log, err := os.ReadFile(events)
	require.NoError(t, err)
	assert.Contains(t, string(log), `{"kind":"run.tool_call","id":"mcp-1","name":"write_file"`)
	assert.Contains(t, string(log), `"kind":"file_system.file_written"`)
}

// A client that goes away closing its end of the server's stdout (it
// crashed, or was killed) ends the session as the end of stdin does, with
// status 0 once the capabilities are closed: the answer written to no one
// killed agentspec with SIGPIPE, so nothing it had started was stopped.
func TestMCPOverStdioClientGone(t *testing.T) {
	t.Parallel()
	if goruntime.GOOS == "windows" {
		t.Skip("SIGPIPE is unix's")
	}
	bin := agentspecBinary(t)
	cmd := exec.Command(bin, "mcp", "--root", mcpWorkspace(t))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	in, err := cmd.StdinPipe()
	require.NoError(t, err)
	outR, outW, err := os.Pipe()
	require.NoError(t, err)
	cmd.Stdout = outW
	require.NoError(t, cmd.Start())
	defer cmd.Process.Kill()
	outW.Close()
	_, err = io.WriteString(in, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`+"\n")
	require.NoError(t, err)
	line, err := bufio.NewReader(outR).ReadString('\n')
	require.NoError(t, err)
	require.Contains(t, line, `"serverInfo"`)
	require.NoError(t, outR.Close()) // the client is gone
	_, err = io.WriteString(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"+
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"notes.md"}}}`+"\n")
	require.NoError(t, err)
	require.NoError(t, in.Close())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		assert.NoError(t, err, "%s", stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatal("the server did not end")
	}
}

// The --events log and the spec served are agentspec's: a client's tools
// may not rewrite them, as a run's tools may not, with SPEC or --root.
func TestMCPProtectsItsOwnFiles(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"root", "spec"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			dir := mcpWorkspace(t)
			events := filepath.Join(dir, "events.jsonl")
			specFile := filepath.Join(dir, "agent.yaml")
			require.NoError(t, os.WriteFile(specFile, []byte("capabilities:\n  - FileSystem: {root_dir: .}\n"), 0o644))
			args := []string{"mcp", "--root", dir, "--events", events}
			if mode == "spec" {
				args = []string{"mcp", specFile, "--workspace", dir, "--events", events}
			}
			cs, err := sdk.NewClient(&sdk.Implementation{Name: "test"}, nil).Connect(context.Background(),
				&sdk.CommandTransport{Command: exec.Command(agentspecBinary(t), args...)}, nil)
			require.NoError(t, err)
			defer cs.Close()
			files := []string{"events.jsonl"}
			if mode == "spec" {
				files = append(files, "agent.yaml")
			}
			for _, name := range files {
				before, err := os.ReadFile(filepath.Join(dir, name))
				require.NoError(t, err)
				res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "write_file",
					Arguments: map[string]any{"path": name, "content": "rewritten\n"}})
				require.NoError(t, err)
				require.True(t, res.IsError, name)
				assert.Contains(t, res.Content[0].(*sdk.TextContent).Text, "is protected", name)
				after, err := os.ReadFile(filepath.Join(dir, name))
				require.NoError(t, err)
				if name != "events.jsonl" { // the log grows with the calls
					assert.Equal(t, string(before), string(after), name)
				}
				assert.NotContains(t, string(after), "rewritten\n", name)
			}
		})
	}
}

var listening = regexp.MustCompile(`on (http://\S+/mcp)`)

// startHTTPMCP starts agentspec with args, an "mcp --http" command line, and
// returns the endpoint it says it listens on and that first line of its
// stderr; the server gets SIGTERM when the test ends.
func startHTTPMCP(t *testing.T, args ...string) (endpoint, line string) {
	t.Helper()
	cmd := exec.Command(agentspecBinary(t), args...)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	line, err = bufio.NewReader(stderr).ReadString('\n')
	require.NoError(t, err)
	m := listening.FindStringSubmatch(line)
	require.NotNil(t, m, line)
	return m[1], line
}

func TestMCPOverHTTPAndSIGTERM(t *testing.T) {
	t.Parallel()
	bin := agentspecBinary(t)
	dir := mcpWorkspace(t)
	specFile := filepath.Join(dir, "agent.yaml")
	require.NoError(t, os.WriteFile(specFile, []byte("capabilities:\n  - FileSystem: {root_dir: .}\n"), 0o644))
	cmd := exec.Command(bin, "mcp", specFile, "--workspace", dir, "--read-only", "--http", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "AGENTSPEC_MCP_TOKEN=t0ken")
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	defer cmd.Process.Kill()
	line, err := bufio.NewReader(stderr).ReadString('\n')
	require.NoError(t, err)
	m := listening.FindStringSubmatch(line)
	require.NotNil(t, m, line)
	assert.Contains(t, line, "withheld by --read-only: write_file, edit_file, create_directory")
	assert.Contains(t, line, "bearer token required")

	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test"}, nil).Connect(context.Background(),
		&sdk.StreamableClientTransport{Endpoint: m[1], HTTPClient: httpClientWithToken("t0ken")}, nil)
	require.NoError(t, err)
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "search_files", Arguments: map[string]any{"pattern": "answer"}})
	require.NoError(t, err)
	assert.Contains(t, res.Content[0].(*sdk.TextContent).Text, "notes.md:2:the answer is 42")
	cs.Close()

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		assert.NoError(t, err, "SIGTERM is a clean end")
	case <-time.After(10 * time.Second):
		t.Fatal("the server did not stop on SIGTERM")
	}
}

// --no-auth serves on loopback without a token; a request from a web page
// (another Origin) is refused all the same.
func TestMCPOverHTTPWithoutAuth(t *testing.T) {
	t.Parallel()
	endpoint, line := startHTTPMCP(t, "mcp", "--root", mcpWorkspace(t), "--http", "127.0.0.1:0", "--no-auth")
	assert.Contains(t, line, ", without a bearer token (--no-auth)")

	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test"}, nil).Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: endpoint}, nil)
	require.NoError(t, err)
	res, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	assert.Len(t, res.Tools, 10)
	cs.Close()

	req, err := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	require.NoError(t, err)
	req.Header.Set("Origin", "http://attacker.example")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
}

func TestMCPUsageErrors(t *testing.T) {
	t.Parallel()
	tokenFile := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte("t0ken\n"), 0o600))
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"mcp", "agent.yaml", "--root", "."}, "--root and SPEC cannot be used together"},
		{[]string{"mcp", "--workspace", "."}, "--workspace only applies with SPEC"},
		{[]string{"mcp", "--token-file", "x"}, "--token-file only applies with --http"},
		{[]string{"mcp", "--http", "0.0.0.0:0", "--no-auth"}, "reachable beyond this machine; set a bearer token"},
		{[]string{"mcp", "--http", "127.0.0.1:0"}, `--http needs a bearer token: set $AGENTSPEC_MCP_TOKEN or give --token-file FILE (clients then send "Authorization: Bearer TOKEN"), or pass --no-auth to serve without one on loopback`},
		{[]string{"mcp", "--http", ":0"}, "--http needs a bearer token"},
		{[]string{"mcp", "--no-auth"}, "--no-auth only applies with --http"},
		{[]string{"mcp", "--http", ":0", "--no-auth", "--token-file", tokenFile}, "--no-auth and a bearer token (from $AGENTSPEC_MCP_TOKEN or --token-file) cannot be used together"},
	} {
		var out, errOut strings.Builder
		// A server that started anyway ends with the context, exit 0.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		code := Main(ctx, tc.args, strings.NewReader(""), &out, &errOut)
		cancel()
		assert.Equal(t, exitUsage, code, tc.args)
		assert.Contains(t, errOut.String(), tc.msg)
	}
}

// The official TypeScript SDK's client, from npm, against `agentspec mcp`.
func TestMCPWithTheTypeScriptClient(t *testing.T) {
	if testing.Short() {
		t.Skip("installs and runs node")
	}
	npmDir, err := npmtest.Install()
	if err != nil {
		t.Skipf("the TypeScript MCP SDK is not available: %v", err)
	}
	bin := agentspecBinary(t)
	dir := mcpWorkspace(t)
	script := filepath.Join(t.TempDir(), "client.mjs")
	require.NoError(t, os.WriteFile(script, []byte(tsClient), 0o644))
	sdkDir := filepath.Join(npmDir, "node_modules", "@modelcontextprotocol", "sdk", "dist", "esm")
	cmd := exec.Command("node", script)
	cmd.Env = append(os.Environ(), "SDK_DIR="+sdkDir, "AGENTSPEC="+bin, "ROOT="+dir)
	out, err := cmd.Output()
	var stderr string
	if ee, ok := err.(*exec.ExitError); ok {
		stderr = string(ee.Stderr)
	}
	require.NoError(t, err, stderr)
	var report struct {
		Tools  []string
		Read   string
		Write  string
		Search string
		Errors []string
	}
	require.NoError(t, json.Unmarshal(out, &report), string(out))
	assert.Contains(t, report.Tools, "read_file")
	assert.Contains(t, report.Tools, "search_files")
	assert.Contains(t, report.Read, "the answer is 42")
	assert.Contains(t, report.Write, "hello.txt")
	assert.Contains(t, report.Search, "hello.txt:1:hello from node")
	assert.Equal(t, []string{"read_file"}, report.Errors, "a missing file is an isError result")
	b, err := os.ReadFile(filepath.Join(dir, "hello.txt"))
	require.NoError(t, err)
	assert.Equal(t, "hello from node\n", string(b))
}

const tsClient = `
const { Client } = await import(process.env.SDK_DIR + "/client/index.js");
const { StdioClientTransport } = await import(process.env.SDK_DIR + "/client/stdio.js");
const transport = new StdioClientTransport({ command: process.env.AGENTSPEC, args: ["mcp", "--root", process.env.ROOT] });
const client = new Client({ name: "agentspec-test", version: "1.0.0" });
await client.connect(transport);
const text = (r) => r.content.map((c) => c.text).join("\n");
const tools = (await client.listTools()).tools.map((t) => t.name);
const errors = [];
const read = await client.callTool({ name: "read_file", arguments: { path: "notes.md" } });
const write = await client.callTool({ name: "write_file", arguments: { path: "hello.txt", content: "hello from node\n" } });
const search = await client.callTool({ name: "search_files", arguments: { pattern: "hello" } });
const missing = await client.callTool({ name: "read_file", arguments: { path: "missing.md" } });
for (const [name, r] of [["read_file", missing], ["write_file", write], ["search_files", search]]) if (r.isError) errors.push(name);
if (read.isError) errors.push("read");
console.log(JSON.stringify({ Tools: tools, Read: text(read), Write: text(write), Search: text(search), Errors: errors }));
await client.close();
`

type tokenTransport string

func (tk tokenTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(tk))
	return http.DefaultTransport.RoundTrip(r)
}

func httpClientWithToken(token string) *http.Client {
	return &http.Client{Transport: tokenTransport(token)}
}

// Both ways at once: a spec whose MCP capability is `agentspec mcp --root`,
// served by `agentspec mcp SPEC`, called by the SDK client.
func TestMCPReExportsAnMCPCapability(t *testing.T) {
	t.Parallel()
	bin := agentspecBinary(t)
	dir := mcpWorkspace(t)
	specFile := filepath.Join(t.TempDir(), "agent.yaml")
	cmdJSON, _ := json.Marshal([]string{bin, "mcp", "--root", dir})
	require.NoError(t, os.WriteFile(specFile, []byte(fmt.Sprintf("model: test\ncapabilities:\n  - MCP: {command: %s, id: inner}\n", cmdJSON)), 0o644))

	// validate checks the form and starts nothing; tools starts the server.
	var out, errOut strings.Builder
	require.Equal(t, exitOK, Main(context.Background(), []string{"validate", specFile}, strings.NewReader(""), &out, &errOut), errOut.String())
	out.Reset()
	require.Equal(t, exitOK, Main(context.Background(), []string{"tools", specFile, "--format", "json"}, strings.NewReader(""), &out, &errOut), errOut.String())
	var listed []struct{ Name string }
	require.NoError(t, json.Unmarshal([]byte(out.String()), &listed))
	assert.Len(t, listed, 10)

	cmd := exec.Command(bin, "mcp", specFile, "--read-only")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	changed := make(chan struct{}, 1)
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test"}, &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { notify(changed) },
	}).Connect(context.Background(), &sdk.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err)
	// The inner server starts in the background; its tools join when it is up.
	names := joinedToolNames(t, cs, changed)
	assert.ElementsMatch(t, filesystem.ReadOnlyToolNames, names, "readOnlyHint crosses both hops")

	call, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "nope.md"}})
	require.NoError(t, err)
	require.True(t, call.IsError)
	text := call.Content[0].(*sdk.TextContent).Text
	assert.NotContains(t, text, "Error:", "no prefix is added on either hop")
	assert.Contains(t, text, "nope.md")
	call, err = cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "notes.md"}})
	require.NoError(t, err)
	assert.Contains(t, call.Content[0].(*sdk.TextContent).Text, "the answer is 42")
	require.NoError(t, cs.Close())
	assert.Equal(t, 0, cmd.ProcessState.ExitCode(), stderr.String())
}

func TestValidateMCPStartsNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	bad := filepath.Join(dir, "bad.yaml")
	require.NoError(t, os.WriteFile(good, []byte("model: test\ncapabilities:\n  - MCP: {command: [no-such-program-anywhere]}\n  - MCP: {url: https://mcp.example.com/sse, native: true}\n"), 0o644))
	require.NoError(t, os.WriteFile(bad, []byte("capabilities:\n  - MCP: {command: [x], url: 'https://x'}\n  - MCP: {url: 'https://x', env: {A: b}}\n  - MCP: {}\n"), 0o644))
	var out, errOut strings.Builder
	assert.Equal(t, exitOK, Main(context.Background(), []string{"validate", good}, strings.NewReader(""), &out, &errOut), errOut.String())
	assert.Equal(t, good+":4:45: warning: capabilities[1].MCP.native: has no effect in agentspec: agentspec connects to the server itself "+
		"and offers its tools as its own; it does not also hand the server to the provider\n", errOut.String())
	errOut.Reset()
	assert.Equal(t, exitFailure, Main(context.Background(), []string{"validate", bad}, strings.NewReader(""), &out, &errOut))
	assert.Equal(t, bad+`:2:25: capabilities[0].MCP: option "url" is not allowed here
`+bad+`:3:29: capabilities[1].MCP: option "env" is not allowed here
`+bad+`:4:10: capabilities[2].MCP: missing required option "url"
`, errOut.String())
}

func notify(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

func listToolNames(t *testing.T, cs *sdk.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	return names
}

// joinedToolNames lists the tools once a server started in the background
// has joined: at once if it already has, else after the list_changed
// notification that says it did.
func joinedToolNames(t *testing.T, cs *sdk.ClientSession, changed <-chan struct{}) []string {
	t.Helper()
	if names := listToolNames(t, cs); len(names) > 0 {
		return names
	}
	select {
	case <-changed:
	case <-time.After(20 * time.Second):
		t.Fatal("no notifications/tools/list_changed")
	}
	return listToolNames(t, cs)
}

// A spec's MCP server that takes a while to come up (an npx package being
// fetched) holds up nothing: initialize is answered and the FileSystem's
// tools are listed while it starts; its tools join with
// notifications/tools/list_changed; a call to one of them made early waits,
// saying why; a server that exits at start is reported on stderr and in the
// result of a call that could only have been its.
func TestMCPAnswersBeforeASlowServerIsUp(t *testing.T) {
	t.Parallel()
	bin := agentspecBinary(t)
	dir := mcpWorkspace(t)
	const delay = 2 * time.Second
	slow, _ := json.Marshal([]string{"sh", "-c", fmt.Sprintf("sleep %g; exec \"$0\" mcp --root \"$1\"", delay.Seconds()), bin, dir})
	broken, _ := json.Marshal([]string{"sh", "-c", "echo 'npm error 404 @example/broken-server' >&2; exit 3"})
	specFile := filepath.Join(t.TempDir(), "agent.yaml")
	require.NoError(t, os.WriteFile(specFile, []byte(fmt.Sprintf(`capabilities:
  - FileSystem: {root_dir: %q, tools: [read_file]}
  - MCP: {command: %s, id: slow, allowed_tools: [search_files]}
  - MCP: {command: %s, id: broken}
`, dir, slow, broken)), 0o644))

	cmd := exec.Command(bin, "mcp", specFile)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	changed := make(chan struct{}, 1)
	progress := make(chan string, 4)
	start := time.Now()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test"}, &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { notify(changed) },
		ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
			progress <- req.Params.Message
		},
	}).Connect(context.Background(), &sdk.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err)
	defer cs.Close()
	initialized := time.Since(start)
	assert.Equal(t, []string{"read_file"}, listToolNames(t, cs), "listed before the slow server is up")
	assert.Less(t, initialized, delay, "initialize waited for the slow server")

	call, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "search_files", Arguments: map[string]any{"pattern": "answer"},
		Meta: sdk.Meta{"progressToken": 1}})
	require.NoError(t, err)
	require.False(t, call.IsError, "%v", call.Content)
	assert.Contains(t, call.Content[0].(*sdk.TextContent).Text, "notes.md:2:the answer is 42")
	select {
	case msg := <-progress:
		assert.Regexp(t, `^tool search_files is not offered yet: waiting for MCP (slow|slow, MCP broken|broken, MCP slow) to start$`, msg)
	case <-time.After(5 * time.Second):
		t.Fatal("no progress notification while the call waited")
	}
	assert.ElementsMatch(t, []string{"read_file", "search_files"}, joinedToolNames(t, cs, changed))

	call, err = cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "fetch_package", Arguments: map[string]any{}})
	require.NoError(t, err)
	require.True(t, call.IsError)
	text := call.Content[0].(*sdk.TextContent).Text
	assert.Contains(t, text, "tool fetch_package is not offered: MCP broken: MCP server broken (sh …) did not start: it exited before it was ready (exit status 3)")
	assert.Contains(t, text, "npm error 404")

	var got []string
	for line := range lines {
		got = append(got, line)
		if len(got) == 3 {
			break
		}
	}
	require.Len(t, got, 3)
	assert.Equal(t, "agentspec mcp: serving 1 tools (read_file); starting: MCP slow, MCP broken (their tools join when they are up) over stdio", got[0])
	assert.Contains(t, got[1:], "agentspec mcp: MCP slow is up: 1 tools join (search_files)")
	assert.True(t, strings.HasPrefix(got[1], "agentspec mcp: MCP broken: MCP server broken (sh …) did not start") ||
		strings.HasPrefix(got[2], "agentspec mcp: MCP broken: MCP server broken (sh …) did not start"), "%q", got)
}

// A spec or address agentspec mcp refuses leaves the --events file of an earlier
// session as it was: the file is made only once what is served is known.
func TestMCPRefusedSpecKeepsTheEventsLog(t *testing.T) {
	t.Parallel()
	bin := agentspecBinary(t)
	dir := t.TempDir()
	events := filepath.Join(dir, "events.jsonl")
	earlier := `{"kind":"run.tool_call","id":"mcp-1","name":"read_file"}` + "\n"
	require.NoError(t, os.WriteFile(events, []byte(earlier), 0o644))
	for name, body := range map[string]string{
		"unknown.yaml": "model: test\ncapabilities:\n  - FileSystm: {}\n",
		"options.yaml": "model: test\ncapabilities:\n  - FileSystem: {root_dir: missing}\n",
	} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644))
		cmd := exec.Command(bin, "mcp", filepath.Join(dir, name), "--workspace", dir, "--events", events)
		out, err := cmd.CombinedOutput()
		assert.Equal(t, 2, exitCode(t, err), "%s: %s", name, out)
		log, err := os.ReadFile(events)
		require.NoError(t, err)
		assert.Equal(t, earlier, string(log), "%s: the earlier log is kept", name)
	}
	// So does an address it cannot serve on, which is known before the
	// spec's capabilities are built: one refused is a usage error, one in
	// use a failure to serve, whose message names it.
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	_, port, err := net.SplitHostPort(busy.Addr().String())
	require.NoError(t, err)
	spec := filepath.Join(dir, "good.yaml")
	require.NoError(t, os.WriteFile(spec, []byte("capabilities:\n  - FileSystem: {root_dir: .}\n"), 0o644))
	for addr, status := range map[string]int{"0.0.0.0:0": 2, "nonsense": 2, "127.0.0.1:65536": 2, busy.Addr().String(): 1, ":" + port: 1} {
		cmd := exec.Command(bin, "mcp", spec, "--workspace", dir, "--events", events, "--http", addr, "--no-auth")
		out, err := cmd.CombinedOutput()
		assert.Equal(t, status, exitCode(t, err), "%s: %s", addr, out)
		assert.Contains(t, string(out), "--http: ", addr)
		if status == 1 {
			assert.Equal(t, "agentspec: --http: cannot listen on "+busy.Addr().String()+": address already in use\n", string(out), addr)
		}
		log, err := os.ReadFile(events)
		require.NoError(t, err)
		assert.Equal(t, earlier, string(log), "%s: the earlier log is kept", addr)
	}
}

// Two clients of one server over HTTP, with --root or a spec, each have a
// FileSystem of their own: a change one made to a file the other read is
// a Conflict for the other's write, as a change by any other process is,
// and is not overwritten unseen.
func TestMCPOverHTTPSessionsDoNotShareWhatTheySaw(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"root", "spec"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			dir := mcpWorkspace(t)
			args := []string{"mcp", "--root", dir}
			if mode == "spec" {
				specFile := filepath.Join(t.TempDir(), "agent.yaml")
				require.NoError(t, os.WriteFile(specFile, []byte("capabilities:\n  - FileSystem: {root_dir: .}\n"), 0o644))
				args = []string{"mcp", specFile, "--workspace", dir}
			}
			endpoint, _ := startHTTPMCP(t, append(args, "--http", "127.0.0.1:0", "--no-auth")...)

			dial := func() *sdk.ClientSession {
				cs, err := sdk.NewClient(&sdk.Implementation{Name: "test"}, nil).Connect(context.Background(),
					&sdk.StreamableClientTransport{Endpoint: endpoint}, nil)
				require.NoError(t, err)
				return cs
			}
			call := func(cs *sdk.ClientSession, name string, args map[string]any) *sdk.CallToolResult {
				t.Helper()
				res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
				require.NoError(t, err)
				require.Len(t, res.Content, 1)
				return res
			}
			a, b := dial(), dial()
			defer a.Close()
			defer b.Close()
			call(a, "read_file", map[string]any{"path": "notes.md"})
			call(b, "read_file", map[string]any{"path": "notes.md"})
			require.False(t, call(b, "write_file", map[string]any{"path": "notes.md", "content": "B's\n"}).IsError)
			res := call(a, "write_file", map[string]any{"path": "notes.md", "content": "A's\n"})
			assert.True(t, res.IsError, "A never saw B's change")
			assert.Contains(t, res.Content[0].(*sdk.TextContent).Text, "Conflict: file 'notes.md' was changed on disk since you last read it")
			data, err := os.ReadFile(filepath.Join(dir, "notes.md"))
			require.NoError(t, err)
			assert.Equal(t, "B's\n", string(data))
		})
	}
}
