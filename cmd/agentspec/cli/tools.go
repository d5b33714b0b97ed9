package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/internal/text"
	"github.com/agentspec/agentspec/runtime"
	"github.com/agentspec/agentspec/spec"
)

func newToolsCmd() *cobra.Command {
	var (
		format    string
		workspace string
		vars      []string
	)
	cmd := &cobra.Command{
		Use:   "tools SPEC|PIPELINE",
		Short: "List the tools a spec gives the model",
		Long: `Tools loads SPEC, builds its capabilities as a run would (relative paths in their options
resolve against --workspace, default the current directory) and lists every tool the model
is offered, with its description and the JSON Schema of its parameters; for a pipeline file,
the tools of each step, in the order the steps run (a capability whose options use the
step's vars is built per job, and left out with a warning). A capability whose
options use {{name}} placeholders is built with them filled from --var, as run fills them;
without a value for each, the spec is refused.

Exit status: 0 when the tools are listed, 1 when a capability, once built, fails to list its
tools (its Go Tools method returns an error), 2 on usage errors and for a spec or pipeline
that does not load or whose capabilities cannot be built (an MCP server that did not start,
say), whose problems are printed as FILE:LINE:COL lines, or that offers one tool name twice.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(format); err != nil {
				return exitWith(exitUsage, err)
			}
			if err := notStdin("tools", "SPEC", args[0], "save the spec to a file"); err != nil {
				return err
			}
			if isPipelineFile(args[0]) {
				if len(vars) > 0 {
					return exitWith(exitUsage, errors.New("--var does not apply to a pipeline: its steps' vars fill their specs"))
				}
				return pipelineTools(cmd, args[0], workspace, format)
			}
			tools, closeTools, err := specTools(cmd, args[0], workspace, vars)
			if err != nil {
				return err
			}
			defer closeTools()
			out := cmd.OutOrStdout()
			if format == "json" {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(toolDocs(tools))
			}
			return printTools(out, tools, "")
		},
	}
	addOutputFlag(cmd.Flags(), &format, formatText, "output format: text or json")
	cmd.Flags().StringVar(&workspace, "workspace", "", "directory relative capability paths resolve against (default: current directory)")
	addCapabilityVarFlag(cmd, &vars)
	return cmd
}

// addCapabilityVarFlag adds --var to a command that builds a spec's
// capabilities without running it.
func addCapabilityVarFlag(cmd *cobra.Command, vars *[]string) {
	cmd.Flags().StringArrayVar(vars, "var", nil, "fill a {{name}} placeholder of the capabilities' options: --var name=value (repeatable)")
}

// withCapabilityVars returns s with its capabilities' placeholders filled
// from --var flags, as a run fills them: a placeholder without a value is a
// spec error, since the capability would be built with the placeholder's
// text as its value (a denied pattern "{{hide}}" that hides nothing).
func withCapabilityVars(s *spec.Spec, flags []string) (*spec.Spec, error) {
	vars, err := parseVars(flags)
	if err != nil {
		return nil, exitWith(exitUsage, err)
	}
	filled, err := s.WithCapabilityVars(vars)
	if err != nil {
		return nil, specError(withVarFlags(err))
	}
	return filled, nil
}

// toolDoc is a tool as tools -o json lists it.
type toolDoc struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Parameters  map[string]any `json:"parameters"`
}

func toolDocs(tools []capabilities.Tool) []toolDoc {
	docs := make([]toolDoc, 0, len(tools))
	for _, t := range tools {
		docs = append(docs, toolDoc{t.Name(), t.Description(), t.Parameters()})
	}
	return docs
}

// pipelineTools is `agentspec tools PIPELINE`: the tools of each step, in
// the order the steps run. A capability whose options use a step's vars is
// built per job, with their values: it is left out here, and a warning at
// its position says so.
func pipelineTools(cmd *cobra.Command, file, workspace, format string) error {
	p, err := loadPipeline(file, "")
	if err != nil {
		return specError(err)
	}
	dir, err := workspaceDir(workspace)
	if err != nil {
		return exitWith(exitUsage, err)
	}
	type stepDoc struct {
		Step  string    `json:"step"`
		Tools []toolDoc `json:"tools"`
	}
	var docs []stepDoc
	out := cmd.OutOrStdout()
	for i, st := range p.Order {
		for _, n := range st.Spec.TemplatedCapabilityNotes("built per job, with the step's vars") {
			fmt.Fprintln(cmd.ErrOrStderr(), text.Visible(n.Error()))
		}
		tools, closeTools, err := builtTools(cmd, st.Spec.WithoutTemplatedCapabilities(), dir)
		if err != nil {
			return err
		}
		if format == "json" {
			docs = append(docs, stepDoc{st.Name, toolDocs(tools)})
		} else {
			if i > 0 {
				fmt.Fprintln(out)
			}
			fmt.Fprintf(out, "step %s:\n", text.Visible(st.Name))
			err = printTools(out, tools, "    ")
		}
		closeTools()
		if err != nil {
			return err
		}
	}
	if format == "json" {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(docs)
	}
	return nil
}

// printTools lists tools for a person, or says "(no tools)", after pad.
// Their names, descriptions and schemas are whatever their capability (an
// MCP server among them) says, so anything in them a terminal would act on
// is shown escaped.
func printTools(out io.Writer, tools []capabilities.Tool, pad string) error {
	if len(tools) == 0 {
		fmt.Fprintln(out, pad+"(no tools)")
	}
	for i, t := range tools {
		if i > 0 {
			fmt.Fprintln(out)
		}
		name := text.Visible(t.Name())
		params, err := json.MarshalIndent(t.Parameters(), "    ", "  ")
		if err != nil {
			return exitWith(exitFailure, fmt.Errorf("tool %s: parameters: %w", name, err))
		}
		fmt.Fprintf(out, "%s\n    %s\n    parameters: %s\n", name,
			indent(text.VisibleLines(t.Description()), "    "), text.VisibleLines(string(params)))
	}
	return nil
}

// specTools loads a spec, builds its capabilities and returns their tools in
// spec order, with a function that closes the capabilities. Errors are
// exitErrors: spec problems exit 2 with FILE:LINE:COL lines.
func specTools(cmd *cobra.Command, file, workspace string, vars []string) ([]capabilities.Tool, func(), error) {
	s, err := specLoader("").LoadFile(file)
	if err != nil {
		return nil, nil, specError(err)
	}
	if s, err = withCapabilityVars(s, vars); err != nil {
		return nil, nil, err
	}
	dir, err := workspaceDir(workspace)
	if err != nil {
		return nil, nil, exitWith(exitUsage, err)
	}
	return builtTools(cmd, s, dir)
}

// builtTools builds the capabilities of s in dir and returns their tools in
// spec order, with a function that closes the capabilities.
func builtTools(cmd *cobra.Command, s *spec.Spec, dir string) ([]capabilities.Tool, func(), error) {
	// As in a run, the spec's own files are not the tools' to change.
	caps, err := spec.Instantiate(cmd.Context(), s, capabilities.Default(),
		capabilities.Setup{Dir: dir, Transport: capabilityTransport(cmd.Context()), Protected: capabilities.NewProtected(runtime.SpecFiles(s)...)})
	if err != nil {
		return nil, nil, specError(err)
	}
	closeAll := func() { closeCapabilities(caps) }
	// As a run and `agentspec mcp` do: a Shell with its sandbox off says
	// so at every call.
	for _, w := range spec.CapabilityWarnings(s, caps) {
		fmt.Fprintln(cmd.ErrOrStderr(), text.Visible(w.Error()))
	}
	var tools []capabilities.Tool
	seen := map[string]string{} // tool name -> capability that offers it
	for i, c := range caps {
		ts, err := c.Tools(cmd.Context())
		if err != nil {
			closeAll()
			return nil, nil, exitWith(exitFailure, err)
		}
		for _, t := range ts {
			if other, dup := seen[t.Name()]; dup {
				closeAll()
				return nil, nil, exitWith(exitUsage, fmt.Errorf("%s: tool %q is offered by both %s and %s; a model could not tell them apart",
					s.Capabilities[i].Pos, t.Name(), other, s.Capabilities[i].Name))
			}
			seen[t.Name()] = s.Capabilities[i].Name
		}
		tools = append(tools, ts...)
	}
	return tools, closeAll, nil
}

// specError turns a loader error into a usage exit whose message lists every
// FILE:LINE:COL problem on its own line.
func specError(err error) error {
	return exitWith(exitUsage, err)
}

func workspaceDir(dir string) (string, error) {
	if dir == "" {
		return os.Getwd()
	}
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("--workspace %s does not exist", dir)
	case err != nil:
		return "", fmt.Errorf("--workspace: %w", err)
	case !st.IsDir():
		return "", fmt.Errorf("--workspace %s is not a directory", dir)
	}
	return dir, nil
}

func indent(s, prefix string) string {
	return strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n"+prefix)
}
