package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/internal/text"
	"github.com/agentspec/agentspec/pipeline"
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
the tools of each step, in the order the steps run. A capability whose options use a step's
vars is built with their values where the pipeline gives them as text; where a var takes its
value from a reference (the item, a step's output), each job builds the capability with its
own value, and here it is built with the var as written in that value's place, nothing
started or reached (or, where it refuses that, with the workspace, "."), and its tools
listed with a warning that says so. One that cannot be listed so (an MCP server, whose
tools only the server it starts knows) is named as not listed, in text and in -o json's
"not_listed". A capability whose
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
	cmd.Flags().StringArrayVar(vars, "var", nil, varUsage("fill a {{name}} placeholder of the capabilities' options"))
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
// the order the steps run (stepTools).
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
		// NotListed are the capabilities built per job whose tools
		// could not be listed here.
		NotListed []string `json:"not_listed,omitempty"`
	}
	var docs []stepDoc
	out := cmd.OutOrStdout()
	for i, st := range p.Order {
		tools, notListed, closeTools, err := stepTools(cmd, st, dir)
		if err != nil {
			return err
		}
		if format == "json" {
			docs = append(docs, stepDoc{st.Name, toolDocs(tools), notListed})
		} else {
			if i > 0 {
				fmt.Fprintln(out)
			}
			fmt.Fprintf(out, "step %s:\n", text.Visible(st.Name))
			if len(tools) > 0 || len(notListed) == 0 {
				err = printTools(out, tools, "    ")
			}
			if len(notListed) > 0 {
				if len(tools) > 0 {
					fmt.Fprintln(out)
				}
				fmt.Fprintf(out, "    (not listed: %s, built per job)\n", text.Visible(strings.Join(notListed, ", ")))
			}
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

// stepTools builds the capabilities of a pipeline step and returns their
// tools in spec order, the labels of those it could not list, and a
// function that closes what it built. A capability whose options use a var
// the pipeline file gives a value (vars: {path: src/a.go}) is built with
// it, as every job builds it. One whose var takes its value from a
// reference (an item's, a step's output) is built per job, with that
// job's value: it is built here, without starting or reaching anything
// (capabilities.Setup.CheckOnly), with the var as the file writes it in
// the value's place ({{file}}), or with the workspace (".") where it
// refuses that (perJobTools), and its tools listed with a warning that
// says so; one whose tools live behind a server, or that neither builds,
// is not listed, and a warning says why.
func stepTools(cmd *cobra.Command, st *pipeline.Step, dir string) ([]capabilities.Tool, []string, func(), error) {
	s := st.Spec
	vars, perJob := st.VarsAsWritten()
	byJob := make([]bool, len(s.Capabilities)) // capability i uses a value each job gives
	for i, c := range s.Capabilities {
		byJob[i] = slices.ContainsFunc(c.Placeholders(), func(name string) bool { return slices.Contains(perJob, name) })
	}
	// Each call makes a copy of its own: the loader saw that vars fills
	// every placeholder.
	fixed, err := s.WithCapabilityVars(vars)
	if err != nil {
		return nil, nil, nil, specError(err)
	}
	if !slices.Contains(byJob, true) {
		tools, closeAll, err := builtTools(cmd, fixed, dir)
		return tools, nil, closeAll, err
	}
	var kept []spec.Capability
	for i, c := range fixed.Capabilities {
		if !byJob[i] {
			kept = append(kept, c)
		}
	}
	fixed.Capabilities = kept
	fixedTools, closeFixed, err := eachTools(cmd, fixed, setupIn(cmd, fixed, dir), true)
	if err != nil {
		return nil, nil, nil, err
	}
	jobTools, inWorkspace, closeJob := perJobTools(cmd, s, vars, perJob, byJob, dir)
	closeAll := func() { closeFixed(); closeJob() }
	var (
		tools     []capabilities.Tool
		notListed []string
		each      [][]capabilities.Tool
		k         int // the index in fixed
	)
	for i, c := range s.Capabilities {
		if !byJob[i] {
			each = append(each, fixedTools[k])
			k++
			continue
		}
		each = append(each, nil)
		what := "not built here: its options use " + braced(c.Placeholders()) + " (built per job, with the step's vars)"
		if jobTools[i] != nil {
			each[i] = jobTools[i]
			var written, names []string
			for _, name := range c.Placeholders() {
				if slices.Contains(perJob, name) {
					written = append(written, "{{"+name+"}} as vars writes it, "+vars[name])
					names = append(names, name)
				}
			}
			what = "built per job, with the step's vars: listed as built with " + strings.Join(written, "; ")
			if inWorkspace[i] {
				what = "built per job, with the step's vars: listed as built with . (the workspace) for " + braced(names) +
					", which it refuses as vars writes them"
			}
		} else {
			notListed = append(notListed, capabilityLabel(c))
		}
		w := &spec.Error{Pos: c.Pos, Msg: "warning: " + capabilityLabel(c) + ": " + what}
		fmt.Fprintln(cmd.ErrOrStderr(), text.Visible(w.Error()))
	}
	for _, ts := range each {
		tools = append(tools, ts...)
	}
	if err := distinctTools(s, each); err != nil {
		closeAll()
		return nil, nil, nil, err
	}
	return tools, notListed, closeAll, nil
}

// perJobTools are the tools of the capabilities of s that byJob marks,
// built with vars, each at its index (nil for one that could not be
// listed), with a function that closes what it built. They are built to be
// checked (capabilities.Setup.CheckOnly), nothing started or reached: what
// a job would start is named by values only the job knows. A value as
// written may be one a capability refuses (a root_dir of {{file}}): when
// the capabilities do not build together, each is built on its own, beside
// those whose values are known, and one that refuses the values of perJob
// as written is built with the workspace, ".", for each; inWorkspace tells
// which were.
func perJobTools(cmd *cobra.Command, s *spec.Spec, vars map[string]string, perJob []string, byJob []bool, dir string) (each [][]capabilities.Tool, inWorkspace []bool, closeAll func()) {
	build := func(only int, vars map[string]string) ([][]capabilities.Tool, func(), bool) {
		filled, err := s.WithCapabilityVars(vars) // a copy of its own
		if err != nil {
			return nil, nil, false
		}
		var kept []spec.Capability
		var at []int // the index in s of each of kept
		for i, c := range filled.Capabilities {
			if only < 0 || i == only || !byJob[i] {
				kept, at = append(kept, c), append(at, i)
			}
		}
		filled.Capabilities = kept
		setup := setupIn(cmd, filled, dir)
		setup.CheckOnly = true
		built, closeBuilt, err := eachTools(cmd, filled, setup, false)
		if err != nil {
			return nil, nil, false
		}
		each := make([][]capabilities.Tool, len(s.Capabilities))
		for k, i := range at {
			if byJob[i] {
				each[i] = built[k]
			}
		}
		return each, closeBuilt, true
	}
	inWorkspace = make([]bool, len(s.Capabilities))
	if each, closeAll, ok := build(-1, vars); ok {
		return each, inWorkspace, closeAll
	}
	dotted := maps.Clone(vars)
	for _, name := range perJob {
		dotted[name] = "."
	}
	each = make([][]capabilities.Tool, len(s.Capabilities))
	var closers []func()
	for i := range s.Capabilities {
		if !byJob[i] {
			continue
		}
		one, closeOne, ok := build(i, vars)
		if !ok {
			one, closeOne, ok = build(i, dotted)
			inWorkspace[i] = ok
		}
		if ok {
			each[i] = one[i]
			closers = append(closers, closeOne)
		}
	}
	return each, inWorkspace, func() {
		for _, c := range closers {
			c()
		}
	}
}

// braced writes names as placeholders: {{a}}, {{b}}.
func braced(names []string) string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = "{{" + n + "}}"
	}
	return strings.Join(out, ", ")
}

// capabilityLabel names the entry c as its spec's errors do:
// capabilities[0].FileSystem.
func capabilityLabel(c spec.Capability) string {
	var b strings.Builder
	for _, t := range strings.Split(strings.TrimPrefix(c.Pointer, "/"), "/") {
		t = strings.NewReplacer("~1", "/", "~0", "~").Replace(t)
		if t != "" && strings.Trim(t, "0123456789") == "" {
			b.WriteString("[" + t + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(t)
	}
	return b.String()
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
	s, err := loadSpecFile(specLoader(""), file)
	if err != nil {
		return nil, nil, specError(specsInDirectory(file, err))
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
	each, closeAll, err := eachTools(cmd, s, setupIn(cmd, s, dir), true)
	if err != nil {
		return nil, nil, err
	}
	if err := distinctTools(s, each); err != nil {
		closeAll()
		return nil, nil, err
	}
	var tools []capabilities.Tool
	for _, ts := range each {
		tools = append(tools, ts...)
	}
	return tools, closeAll, nil
}

// setupIn is how the capabilities of s are built in dir, as in a run: the
// spec's own files are not the tools' to change.
func setupIn(cmd *cobra.Command, s *spec.Spec, dir string) capabilities.Setup {
	return capabilities.Setup{Dir: dir, Transport: capabilityTransport(cmd.Context()), Protected: capabilities.NewProtected(runtime.SpecFiles(s)...)}
}

// eachTools builds the capabilities of s as setup says and returns the
// tools of each, in spec order, with a function that closes them. A
// capability whose tools live behind a server is not asked for them when
// it was built to be checked (setup.CheckOnly): its entry is nil. warn
// prints what the capabilities warn of.
func eachTools(cmd *cobra.Command, s *spec.Spec, setup capabilities.Setup, warn bool) ([][]capabilities.Tool, func(), error) {
	caps, err := spec.Instantiate(cmd.Context(), s, capabilities.Default(), setup)
	if err != nil {
		return nil, nil, specError(err)
	}
	closeAll := func() { closeCapabilities(caps) }
	// As a run and `agentspec mcp` do: a Shell with its sandbox off says
	// so at every call.
	if warn {
		for _, w := range spec.CapabilityWarnings(s, caps) {
			fmt.Fprintln(cmd.ErrOrStderr(), text.Visible(w.Error()))
		}
	}
	each := make([][]capabilities.Tool, len(caps))
	for i, c := range caps {
		if r, ok := capabilities.As[capabilities.Remote](c); ok && setup.CheckOnly && r.Remote() {
			continue
		}
		ts, err := c.Tools(cmd.Context())
		if err != nil {
			closeAll()
			return nil, nil, exitWith(exitFailure, err)
		}
		if ts == nil {
			ts = []capabilities.Tool{}
		}
		each[i] = ts
	}
	return each, closeAll, nil
}

// distinctTools refuses two capabilities of s offering a tool of the same
// name; each are their tools, in spec order.
func distinctTools(s *spec.Spec, each [][]capabilities.Tool) error {
	seen := map[string]string{} // tool name -> capability that offers it
	for i, ts := range each {
		for _, t := range ts {
			if other, dup := seen[t.Name()]; dup {
				return exitWith(exitUsage, fmt.Errorf("%s: tool %q is offered by both %s and %s; a model could not tell them apart",
					s.Capabilities[i].Pos, t.Name(), other, s.Capabilities[i].Name))
			}
			seen[t.Name()] = s.Capabilities[i].Name
		}
	}
	return nil
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
