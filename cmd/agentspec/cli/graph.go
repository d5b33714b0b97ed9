package cli

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentspec/agentspec/pipeline"
)

func newGraphCmd() *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "graph PIPELINE",
		Short: "Print a pipeline's steps and their dependencies as a graph",
		Long: `Graph loads a pipeline file and checks it statically (every step's spec, every reference
against the output_schema it names, the graph), without building capabilities or calling a
model, then prints its graph on stdout: a node per step, with the step's name and its spec
file, and an edge from each step to every step that depends on it.
A fan-out step is drawn as a stack and says what it iterates over, the item's name and how
many items run at once ("for each file in steps.triage.output.files, at most 4 at once"); a
step with when: says its condition; an edge written in needs: alone, along which no data
flows, is dashed.

--output (-o) chooses the format:
  mermaid  a Mermaid flowchart (the default), which GitHub renders in a ` + "```mermaid" + ` block
  dot      Graphviz: agentspec graph -o dot pipeline.yaml | dot -Tsvg > pipeline.svg
  json     {"name", "steps": [{"name", "spec", "deps", "needs", "for_each", "when"}], "order"}:
           spec is null for an inline spec, for_each and when null for a step without them,
           needs left out when empty, and order runs every step after its deps.

Exit status: 0 when the graph is printed, 2 when the pipeline does not load (each problem is
reported as FILE:LINE:COL: message on stderr, as validate reports it) and on usage errors.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !slices.Contains(pipeline.GraphFormats, format) {
				return exitWith(exitUsage, fmt.Errorf("--output must be one of %s, not %q",
					strings.Join(pipeline.GraphFormats, ", "), format))
			}
			if err := notStdin("graph", "PIPELINE", args[0], "save the pipeline to a file"); err != nil {
				return err
			}
			p, err := (&pipeline.Loader{}).LoadFile(args[0])
			if err != nil {
				return specError(pipelinesInDirectory(args[0], err))
			}
			return pipeline.WriteGraph(cmd.OutOrStdout(), p, format)
		},
	}
	cmd.Flags().StringVarP(&format, "output", "o", pipeline.GraphFormats[0],
		"the graph's format: "+strings.Join(pipeline.GraphFormats, ", "))
	_ = cmd.RegisterFlagCompletionFunc("output", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return pipeline.GraphFormats, cobra.ShellCompDirectiveNoFileComp
	})
	return cmd
}
