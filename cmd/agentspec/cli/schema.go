package cli

import (
	"github.com/spf13/cobra"

	"github.com/agentspec/agentspec/spec"
)

func newSchemaCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "schema",
		Short: "Print the JSON Schema of agent specs and pipeline files",
		Long: `Schema prints the JSON Schema that agent specs and pipeline files (steps: at their top level)
are validated against, composed from every registered capability type. Point an editor at it
for completion and inline errors, e.g. with a first line
"# yaml-language-server: $schema=agentspec.schema.json" in agent.yaml or pipeline.yaml.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			doc, err := new(spec.Loader).Schema()
			if err != nil {
				return exitWith(exitFailure, err)
			}
			out := cmd.OutOrStdout()
			if _, err := out.Write(doc); err != nil {
				return exitWith(exitFailure, err)
			}
			if len(doc) > 0 && doc[len(doc)-1] != '\n' {
				_, err = out.Write([]byte{'\n'})
			}
			return err
		},
	}
}
