package cli

import (
	"strings"

	"github.com/spf13/cobra"
)

// completeVars offers the variable names of the file a command's first
// argument names when a shell completes --var, each as "name=", on every
// command under root that has the flag: a pipeline's inputs, or the
// placeholders of a spec's instructions, description and capability
// options. Loading the file only reads and checks it: nothing is started.
func completeVars(root *cobra.Command) {
	vars := func(_ *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
		if len(args) == 0 || args[0] == stdinArg {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var offers []string
		for _, name := range varNames(args[0]) {
			if strings.HasPrefix(name, prefix) {
				offers = append(offers, name+"=")
			}
		}
		return offers, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
	}
	for _, c := range root.Commands() {
		if c.Flags().Lookup("var") != nil {
			if _, ok := c.GetFlagCompletionFunc("var"); !ok {
				_ = c.RegisterFlagCompletionFunc("var", vars)
			}
		}
		completeVars(c)
	}
}

// varNames are the names --var may set for the spec or pipeline at path,
// or none when it does not load.
func varNames(path string) []string {
	if isPipelineFile(path) {
		p, err := loadPipeline(path, "")
		if err != nil {
			return nil
		}
		return p.InputNames()
	}
	s, err := specLoader("").LoadFile(path)
	if err != nil {
		return nil
	}
	return s.VarNames()
}
