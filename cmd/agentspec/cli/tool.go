package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/capabilities/filesystem"
	"github.com/agentspec/agentspec/internal/suggest"
	"github.com/agentspec/agentspec/internal/text"
	"github.com/agentspec/agentspec/spec"
)

type toolFlags struct {
	spec          string
	root          string
	workspace     string
	cancelChanges string
	output        string
	vars          []string
}

func newToolCmd() *cobra.Command {
	var f toolFlags
	cmd := &cobra.Command{
		Use:   "tool [--spec FILE [--var k=v]... [--workspace DIR] | --root DIR] [--cancel-changes REASON] [-o json] TOOL [ARGS_JSON | -]",
		Short: "Call one tool by hand, as a run would",
		Long: `Tool calls one tool the way a run calls it, events included, and prints what the model would see.

Without --spec it offers one FileSystem capability at --root (default ".") with all ten tools.
With --spec it offers the tools of that spec's capabilities (no model needed); relative paths
in their options resolve against --workspace (default: the current directory), and their
{{name}} placeholders are filled from --var, as a run fills them.

ARGS_JSON is one JSON object of arguments; "-" reads it from stdin; absent means {}.
--cancel-changes REASON cancels every file change request with REASON, so a write shows what
it would change without changing anything.

Output: the tool's text on stdout and errors on stderr, or with --output json (-o json) exactly
one object {"tool", "ok", "retry", "output", "error", "events"} on stdout for the call made; a
usage or spec error makes none, and prints nothing there.
Exit status: 0 success (a cancelled change is a success), 3 an error the model could correct,
1 a fatal error, 2 a usage or spec error.`,
		Args:                  cobra.RangeArgs(1, 2),
		DisableFlagsInUseLine: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runTool(cmd, f, args)
		},
		// A shell completes TOOL with the names of the tools offered.
		ValidArgsFunction: func(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			if f.spec != "" {
				return completeSpecTools(cmd, f.spec, f.workspace), cobra.ShellCompDirectiveNoFileComp
			}
			tools, closeTools, err := toolsFor(cmd, f)
			if err != nil {
				return nil, cobra.ShellCompDirectiveError
			}
			defer closeTools()
			names := make([]string, len(tools))
			for i, t := range tools {
				names[i] = t.Name()
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.spec, "spec", "", "offer the tools of this spec's capabilities")
	fl.StringVar(&f.root, "root", ".", "root_dir of the FileSystem offered when there is no --spec")
	fl.StringVar(&f.workspace, "workspace", "", "with --spec: directory relative capability paths resolve against")
	addCapabilityVarFlag(cmd, &f.vars)
	fl.StringVar(&f.cancelChanges, "cancel-changes", "", "cancel every file change request with this reason (empty: the default reason)")
	addOutputFlag(fl, &f.output, formatText, "text: the tool's output; json: one object describing the call")
	return cmd
}

// toolReport is what --output json prints.
type toolReport struct {
	Tool   string            `json:"tool"`
	OK     bool              `json:"ok"`
	Retry  bool              `json:"retry"`
	Output string            `json:"output"`
	Error  *string           `json:"error"` // null on success
	Events []json.RawMessage `json:"events"`
}

func runTool(cmd *cobra.Command, f toolFlags, args []string) error {
	if f.spec != "" && cmd.Flags().Changed("root") {
		return exitWith(exitUsage, errors.New("--root and --spec cannot be used together: the spec says where its roots are"))
	}
	if f.spec == "" && cmd.Flags().Changed("var") {
		return exitWith(exitUsage, errors.New("--var fills the placeholders of --spec's capabilities; without --spec there is none"))
	}
	if f.spec == "" && cmd.Flags().Changed("workspace") {
		return exitWith(exitUsage, errors.New("--workspace only applies with --spec; without one, --root is the FileSystem's root"))
	}
	if err := checkOutput(f.output); err != nil {
		return exitWith(exitUsage, err)
	}
	if err := notStdin("tool", "--spec", f.spec, "save the spec to a file"); err != nil {
		return err
	}
	cancel := cmd.Flags().Changed("cancel-changes")
	ctx := cmd.Context()
	tools, closeTools, err := toolsFor(cmd, f)
	if err != nil {
		return err
	}
	closeTools = sync.OnceFunc(closeTools)
	defer closeTools()
	name := args[0]
	tool, ok := findTool(tools, name)
	if !ok {
		names := make([]string, 0, len(tools))
		for _, t := range tools {
			names = append(names, t.Name())
		}
		if len(names) == 0 {
			return exitWith(exitUsage, fmt.Errorf("unknown tool %q: the spec's capabilities offer no tools", name))
		}
		sort.Strings(names)
		// The names are the capabilities', an MCP server's among them, and
		// the message is printed keeping its newlines.
		return exitWith(exitUsage, fmt.Errorf("unknown tool %q%s; available: %s", name, suggest.DidYouMean(name, names), text.Visible(strings.Join(names, ", "))))
	}
	raw, err := toolArgs(cmd.InOrStdin(), args[1:])
	if err != nil {
		return exitWith(exitUsage, err)
	}

	report := toolReport{Tool: name, Events: []json.RawMessage{}}
	var listenerErr error
	listener := func(_ context.Context, ev capabilities.Event) error {
		if cancel {
			if c, ok := ev.(interface{ Cancel(string) }); ok {
				c.Cancel(f.cancelChanges)
			}
		}
		b, err := capabilities.MarshalEvent(ev)
		if err != nil {
			listenerErr = err
			return err
		}
		report.Events = append(report.Events, b)
		return nil
	}
	ctx = capabilities.WithListener(ctx, listener)
	ctx = capabilities.WithCall(ctx, capabilities.CallInfo{ID: "cli", Tool: name})
	out, callErr := tool.Call(ctx, raw)
	// The call's end is the end of a run: what the capabilities report as
	// they close (a background command killed) belongs with its events.
	closeTools()
	if callErr == nil && listenerErr != nil {
		callErr = listenerErr
	}

	code := exitOK
	switch msg, retry := capabilities.AsRetry(callErr); {
	case callErr == nil:
		report.OK, report.Output = true, out
	case retry:
		report.Retry, report.Error = true, &msg
		code = exitToolRetry
	default:
		msg := callErr.Error()
		report.Error = &msg
		code = exitFailure
	}

	if f.output == formatJSON {
		enc := json.NewEncoder(cmd.OutOrStdout())
		enc.SetEscapeHTML(false)
		if err := enc.Encode(report); err != nil {
			return exitWith(exitFailure, err)
		}
	} else if report.OK {
		stdout := cmd.OutOrStdout()
		if isTerminal(stdout) {
			// Shown to a person: a file's escape codes are shown, not
			// obeyed. Piped, the output is the tool's text as it is.
			out = text.VisibleLines(out)
		}
		fmt.Fprint(stdout, out)
		if out != "" && !strings.HasSuffix(out, "\n") {
			fmt.Fprintln(stdout)
		}
	} else {
		fmt.Fprintln(cmd.ErrOrStderr(), text.VisibleLines(*report.Error))
	}
	if code != exitOK {
		return exitWith(code, nil)
	}
	return nil
}

// toolsFor returns the tools offered, those of --spec or one FileSystem at
// --root with every tool, and a function that closes their capabilities.
func toolsFor(cmd *cobra.Command, f toolFlags) ([]capabilities.Tool, func(), error) {
	if f.spec != "" {
		return specTools(cmd, f.spec, f.workspace, f.vars)
	}
	wd, err := os.Getwd()
	if err != nil {
		return nil, nil, exitWith(exitFailure, err)
	}
	c, err := filesystem.New(filesystem.Options{RootDir: f.root, Tools: filesystem.AllToolNames}, wd)
	if err != nil {
		return nil, nil, exitWith(exitUsage, fmt.Errorf("--root: %w", err))
	}
	tools, err := c.Tools(cmd.Context())
	if err != nil {
		c.Close()
		return nil, nil, exitWith(exitFailure, err)
	}
	return tools, func() { c.Close() }, nil
}

func findTool(tools []capabilities.Tool, name string) (capabilities.Tool, bool) {
	for _, t := range tools {
		if t.Name() == name {
			return t, true
		}
	}
	return nil, false
}

// toolArgs reads the call's arguments: absent means {}, "-" reads stdin. They
// must be one JSON object.
func toolArgs(stdin io.Reader, args []string) (json.RawMessage, error) {
	if len(args) == 0 {
		return json.RawMessage("{}"), nil
	}
	data := []byte(args[0])
	if args[0] == "-" {
		var err error
		if data, err = io.ReadAll(stdin); err != nil {
			return nil, fmt.Errorf("reading arguments from stdin: %w", err)
		}
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(data, &obj); err != nil || obj == nil {
		// JSON of another kind is named in JSON's words, not Go's types.
		var kind *json.UnmarshalTypeError
		switch {
		case err == nil:
			err = errors.New("found null")
		case errors.As(err, &kind) && kind.Value == "bool":
			err = errors.New("found a boolean")
		case errors.As(err, &kind) && kind.Value == "array":
			err = errors.New("found an array")
		case errors.As(err, &kind):
			err = fmt.Errorf("found a %s", kind.Value)
		}
		return nil, fmt.Errorf("ARGS_JSON must be one JSON object, e.g. '{\"path\": \"notes.md\"}': %v", err)
	}
	return json.RawMessage(data), nil
}

// completeSpecTools names the tools of a spec's capabilities for a shell's
// completion, built only to be checked: a key press starts no MCP server and
// reaches no network, so the tools of a remote capability are not offered.
func completeSpecTools(cmd *cobra.Command, file, workspace string) []string {
	s, err := loadSpecFile(specLoader(""), file)
	if err != nil {
		return nil
	}
	dir, err := workspaceDir(workspace)
	if err != nil {
		return nil
	}
	caps, err := spec.Instantiate(cmd.Context(), s, capabilities.Default(), capabilities.Setup{Dir: dir, CheckOnly: true})
	if err != nil {
		return nil
	}
	var names []string
	for _, c := range caps {
		if r, ok := capabilities.As[capabilities.Remote](c); ok && r.Remote() {
			continue
		}
		if ts, err := c.Tools(cmd.Context()); err == nil {
			for _, t := range ts {
				names = append(names, t.Name())
			}
		}
	}
	closeCapabilities(caps)
	return names
}

// closeCapabilities closes every capability of caps that can be closed,
// behind any wrapper, as a run does when it ends.
func closeCapabilities(caps []capabilities.Capability) {
	_ = capabilities.CloseAll(caps) // done with them: nothing to report to
}
