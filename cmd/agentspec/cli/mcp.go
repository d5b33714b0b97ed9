package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/capabilities/filesystem"
	"github.com/agentspec/agentspec/internal/text"
	"github.com/agentspec/agentspec/runtime"
	"github.com/agentspec/agentspec/runtime/mcpserve"
	"github.com/agentspec/agentspec/spec"
)

// tokenEnv names the variable that holds the bearer token of --http.
const tokenEnv = "AGENTSPEC_MCP_TOKEN"

type mcpFlags struct {
	vars      []string
	root      string
	workspace string
	readOnly  bool
	events    string
	http      string
	tokenFile string
	noAuth    bool
}

func newMCPCmd() *cobra.Command {
	var f mcpFlags
	cmd := &cobra.Command{
		Use:   "mcp [SPEC [--var k=v]... | --root DIR] [--workspace DIR] [--read-only] [--events FILE] [--http ADDR [--token-file FILE | --no-auth]]",
		Short: "Serve a spec's tools to MCP clients, over stdio or HTTP",
		Annotations: map[string]string{
			signalEndsCleanly: "yes", // SIGTERM is how a server is stopped
			secondSignalLeaves: "the calls under way are not waited for, MCP servers the tools started are " +
				"left to exit as their input closes, and Shell commands run with sandbox: off go on",
		},
		Long: `Mcp serves tools over the Model Context Protocol, so that MCP clients (editors, desktop
assistants, other agent runtimes) can call them. With SPEC it serves the tools of the spec's
capabilities, built as a run builds them (relative paths resolve against --workspace, default
the current directory; {{name}} placeholders in their options are filled from --var). The
spec's own MCP servers start in the background: the other tools are served at once, and a
server's tools join when it is up (clients hear of it through notifications/tools/list_changed;
a call made earlier waits for it). Without SPEC it serves one FileSystem at --root (default
".") with all ten tools, like "agentspec tool".

Names, descriptions and input schemas are exactly what "agentspec run" offers a model, and
results are the same text. An error the model could correct is a result with isError set
(its text without run's "Error: " prefix); a fatal error is a JSON-RPC error, whose message
shows "…" for any path outside what the capabilities reach, the whole error going to stderr.

--read-only offers only the tools that change nothing (FileSystem's read tools, MCP tools
marked readOnlyHint, custom tools whose Hints() say so, behind any wrapper); otherwise changes
land as in a run. --events FILE writes every event (tool calls and results, FileSystem and MCP
events) as JSON lines; over HTTP each event of a call has "session_id", the Mcp-Session-Id of
the client session that made it.

By default the server speaks over stdin and stdout and ends when stdin ends, once it has
answered the calls it read before the end. --http ADDR serves streamable HTTP instead (every
path; e.g. http://127.0.0.1:8080/mcp). An ADDR without a host (":8080") listens on loopback
only. --http needs a bearer token, from $` + tokenEnv + ` or the first line of --token-file,
which clients present as "Authorization: Bearer TOKEN"; --no-auth serves without one, on a
loopback ADDR only. A request whose Origin header is not the server's own (http://ADDR, or
localhost, 127.0.0.1 or [::1] with its port) is refused with 403, whatever its token: it comes
from a web page. SIGTERM or Ctrl-C shuts down cleanly: the calls under way are given 5 seconds
to finish and be answered, then those still under way are cancelled, answered with an
error; a second signal during that shutdown ends it at once (130 or 143). Exit status: 0
after a clean end, 1 when serving failed (an --http address in use included), 2 a usage or
spec error (an --http ADDR that is not HOST:PORT, :PORT or PORT included).`,
		Args:                  cobra.MaximumNArgs(1),
		DisableFlagsInUseLine: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runMCP(cmd, f, args)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.root, "root", ".", "without SPEC: root_dir of the FileSystem served")
	fl.StringVar(&f.workspace, "workspace", "", "with SPEC: directory relative capability paths resolve against")
	addCapabilityVarFlag(cmd, &f.vars)
	fl.BoolVar(&f.readOnly, "read-only", false, "offer only the tools that change nothing")
	fl.StringVar(&f.events, "events", "", "write every event to this file as JSON lines")
	fl.StringVar(&f.http, "http", "", "serve streamable HTTP on this address instead of stdio (loopback unless a host is given)")
	fl.StringVar(&f.tokenFile, "token-file", "", "with --http: file whose first line is the bearer token clients must present")
	fl.BoolVar(&f.noAuth, "no-auth", false, "with --http on loopback: serve without a bearer token")
	return cmd
}

func runMCP(cmd *cobra.Command, f mcpFlags, args []string) error {
	ctx := cmd.Context()
	stderr := cmd.ErrOrStderr()
	if len(args) == 1 && cmd.Flags().Changed("root") {
		return exitWith(exitUsage, errors.New("--root and SPEC cannot be used together: the spec says where its roots are"))
	}
	if len(args) == 1 {
		if err := notStdin("mcp", "SPEC", args[0], "save the spec to a file"); err != nil {
			return err
		}
	}
	if len(args) == 0 && cmd.Flags().Changed("var") {
		return exitWith(exitUsage, errors.New("--var fills the placeholders of SPEC's capabilities; without SPEC there is none"))
	}
	if len(args) == 0 && cmd.Flags().Changed("workspace") {
		return exitWith(exitUsage, errors.New("--workspace only applies with SPEC; without one, --root is the FileSystem's root"))
	}
	if f.http == "" && f.tokenFile != "" {
		return exitWith(exitUsage, errors.New("--token-file only applies with --http"))
	}
	if f.http == "" && f.noAuth {
		return exitWith(exitUsage, errors.New("--no-auth only applies with --http"))
	}
	token, err := bearerToken(f.tokenFile)
	if err != nil {
		return exitWith(exitUsage, err)
	}
	switch {
	case f.http == "":
	case token != "" && f.noAuth:
		return exitWith(exitUsage, fmt.Errorf("--no-auth and a bearer token (from $%s or --token-file) cannot be used together", tokenEnv))
	case token == "" && !f.noAuth:
		// Any local process, and any web page a browser opens, can reach
		// a loopback port: serving without a token is said, not assumed.
		return exitWith(exitUsage, fmt.Errorf("--http needs a bearer token: set $%s or give --token-file FILE "+
			"(clients then send \"Authorization: Bearer TOKEN\"), or pass --no-auth to serve without one on loopback", tokenEnv))
	}
	// The address is taken before anything else is made (the events file,
	// the spec's MCP servers): one refused, or in use, leaves nothing done.
	// One in use is good, and may be free later: serving failed, it was
	// not misused.
	var ln net.Listener
	if f.http != "" {
		if ln, err = mcpserve.Listen(f.http, token); err != nil {
			code := exitFailure
			if errors.Is(err, mcpserve.ErrAddress) {
				code = exitUsage
			}
			return exitWith(code, fmt.Errorf("--http: %w", err))
		}
		defer ln.Close()
	}

	if os.Getenv("GOGC") == "" {
		// The SDK allocates fresh decoding buffers for every message; with
		// the small heap of a tool server, the default GC target collected
		// every few calls. Measured with internal/mcpbench
		// (scripts/bench-mcp.sh: read_file of a 2 KB file over stdio, 8
		// block pairs of 300 calls, three runs each way, interleaved, with
		// GOGC=100 set for the default): median 3361 calls/s against 2366
		// through the minimal client, 1752 against 1295 through the Go
		// SDK's; the p50 latency barely moves (0.235 against 0.239 ms).
		debug.SetGCPercent(400)
	}
	opts := mcpserve.Options{Name: "agentspec", Version: version(), ReadOnly: f.readOnly}
	// The events log and the spec are agentspec's: the tools served may not
	// rewrite them, as a run's tools may not rewrite its own.
	var own []string
	if f.events != "" {
		if abs, err := filepath.Abs(f.events); err == nil {
			own = append(own, abs)
		}
	}

	var caps []capabilities.Capability
	if len(args) == 1 {
		s, err := loadSpecFile(specLoader(""), args[0])
		if err != nil {
			return specError(specsInDirectory(args[0], err))
		}
		if s, err = withCapabilityVars(s, f.vars); err != nil {
			return err
		}
		dir, err := workspaceDir(f.workspace)
		if err != nil {
			return exitWith(exitUsage, err)
		}
		// The spec's MCP servers start in the background: one fetched by
		// npx on first use takes longer than a client waits for initialize.
		var types []string
		for _, c := range s.Capabilities {
			types = append(types, c.Name)
		}
		reg, err := mcpserve.StartingLater(capabilities.Default(), types...)
		if err != nil {
			return exitWith(exitFailure, err)
		}
		own = append(own, runtime.SpecFiles(s)...)
		setup := capabilities.Setup{Dir: dir, Transport: capabilityTransport(ctx), Protected: capabilities.NewProtected(own...)}
		if caps, err = spec.Instantiate(ctx, s, reg, setup); err != nil {
			return specError(err)
		}
		if f.http != "" {
			// Each HTTP client builds the spec's capabilities of its own,
			// the MCP servers aside, which all share.
			sessReg, err := mcpserve.ForSessions(capabilities.Default(), types...)
			if err != nil {
				closeCapabilities(caps)
				return exitWith(exitFailure, err)
			}
			opts.Session = func(ctx context.Context) ([]capabilities.Capability, error) {
				return spec.Instantiate(ctx, s, sessReg, setup)
			}
		}
		for _, w := range spec.CapabilityWarnings(s, caps) {
			fmt.Fprintln(cmd.ErrOrStderr(), text.Visible(w.Error()))
		}
	} else {
		wd, err := os.Getwd()
		if err != nil {
			return exitWith(exitFailure, err)
		}
		fsOpts := filesystem.Options{RootDir: f.root, Tools: filesystem.AllToolNames, ProtectedFiles: own}
		c, err := filesystem.New(fsOpts, wd)
		if err != nil {
			return exitWith(exitUsage, fmt.Errorf("--root: %w", err))
		}
		caps = []capabilities.Capability{c}
		if f.http != "" {
			opts.Session = func(context.Context) ([]capabilities.Capability, error) {
				c, err := filesystem.New(fsOpts, wd)
				if err != nil {
					return nil, err
				}
				return []capabilities.Capability{c}, nil
			}
		}
	}
	// Notices come from the start-ups of the spec's servers, and follow
	// the line that says what is served.
	var (
		stderrMu  sync.Mutex
		announced bool
		held      []string
	)
	opts.Notice = func(msg string) {
		stderrMu.Lock()
		defer stderrMu.Unlock()
		line := fmt.Sprintf("agentspec mcp: %s\n", text.Visible(msg))
		if !announced {
			held = append(held, line)
			return
		}
		fmt.Fprint(stderr, line)
	}
	announce := func(format string, args ...any) {
		stderrMu.Lock()
		defer stderrMu.Unlock()
		fmt.Fprintf(stderr, format, args...)
		for _, line := range held {
			fmt.Fprint(stderr, line)
		}
		announced = true
	}
	// The events file is made once what is served is known, as run makes
	// its own once the spec has loaded: a spec or option that is refused
	// leaves an earlier log as it was.
	if f.events != "" {
		file, err := runtime.CreateEventsFile(f.events)
		if err != nil {
			closeCapabilities(caps)
			return exitWith(exitUsage, fmt.Errorf("--events: %w", err))
		}
		defer file.Close()
		// Unbuffered: a server runs for long, and its log is read while it does.
		opts.Listener = runtime.JSONLines(file)
	}
	srv, err := mcpserve.New(ctx, caps, opts)
	if err != nil {
		return exitWith(exitUsage, err)
	}
	defer srv.Close()

	// The names are what the capabilities say, an MCP server's among them.
	var names []string
	for _, t := range srv.Tools() {
		names = append(names, text.Visible(t.Name()))
	}
	what := fmt.Sprintf("%d tools (%s)", len(names), strings.Join(names, ", "))
	if w := srv.Withheld(); len(w) > 0 {
		what += fmt.Sprintf("; withheld by --read-only: %s", text.Visible(strings.Join(w, ", ")))
	}
	if late := srv.Starting(); len(late) > 0 {
		what += fmt.Sprintf("; starting: %s (their tools join when they are up)", text.Visible(strings.Join(late, ", ")))
	}

	if f.http == "" {
		// A client gone with its end of stdout makes the next answer's
		// write fail, rather than kill agentspec with SIGPIPE before it
		// has stopped what it started. (Notify, not Ignore: the processes
		// the tools start keep SIGPIPE's default.)
		sigpipe := make(chan os.Signal, 1)
		signal.Notify(sigpipe, syscall.SIGPIPE)
		defer signal.Stop(sigpipe)
		announce("agentspec mcp: serving %s over stdio\n", what)
		if err := srv.ServeStdio(ctx, cmd.InOrStdin(), cmd.OutOrStdout()); err != nil {
			return exitWith(exitFailure, err)
		}
		return nil
	}
	auth := ", bearer token required"
	if f.noAuth {
		auth = ", without a bearer token (--no-auth)"
	}
	announce("agentspec mcp: serving %s on http://%s/mcp%s\n", what, ln.Addr(), auth)
	if err := srv.Serve(ctx, ln, token); err != nil {
		return exitWith(exitFailure, err)
	}
	return nil
}

// bearerToken reads the token from --token-file, else $AGENTSPEC_MCP_TOKEN.
func bearerToken(file string) (string, error) {
	if file == "" {
		return strings.TrimSpace(os.Getenv(tokenEnv)), nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("--token-file: %w", err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	token := strings.TrimSpace(line)
	if token == "" {
		return "", fmt.Errorf("--token-file %s: the first line is empty", file)
	}
	return token, nil
}
