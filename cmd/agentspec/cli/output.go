package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Output formats of --output.
const (
	formatText = "text"
	formatJSON = "json"
)

// addOutputFlag registers the one spelling every command uses for its
// format, --output/-o text|json, with the spellings earlier releases took
// (--format FORMAT, --json) kept as hidden aliases of it.
func addOutputFlag(fl *pflag.FlagSet, format *string, def, usage string) {
	fl.StringVarP(format, "output", "o", def, usage)
	fl.StringVar(format, "format", def, "")
	_ = fl.MarkHidden("format")
	fl.Var(jsonAlias{format}, "json", "")
	fl.Lookup("json").NoOptDefVal = "true"
	_ = fl.MarkHidden("json")
}

// checkOutput rejects a format that is neither text nor json. A format
// "utput" (or "utput=..."), which is how the flags read -output, is told
// as the long name given one dash.
func checkOutput(format string) error {
	switch format {
	case "", formatText, formatJSON:
		return nil
	}
	if rest, ok := strings.CutPrefix("o"+format, "output"); ok && (rest == "" || rest[0] == '=') {
		return fmt.Errorf("-o%s is read as -o %s: did you mean --output%s? a flag's name takes two dashes", format, format, rest)
	}
	return fmt.Errorf("--output must be text or json, not %q", format)
}

// jsonAlias is --json: a boolean that sets the format.
type jsonAlias struct{ format *string }

func (a jsonAlias) String() string { return "false" }
func (a jsonAlias) Type() string   { return "bool" }
func (a jsonAlias) IsBoolFlag() bool {
	return true
}

func (a jsonAlias) Set(v string) error {
	switch v {
	case "true", "1":
		*a.format = formatJSON
	case "false", "0":
		*a.format = formatText
	default:
		return fmt.Errorf("--json takes no value, not %q", v)
	}
	return nil
}

// completeOutputs offers text and json when a shell completes --output, on
// every command under root that has one and offers nothing else for it.
func completeOutputs(root *cobra.Command) {
	formats := func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return []string{formatText, formatJSON}, cobra.ShellCompDirectiveNoFileComp
	}
	for _, c := range root.Commands() {
		if c.Flags().Lookup("output") != nil {
			if _, ok := c.GetFlagCompletionFunc("output"); !ok {
				_ = c.RegisterFlagCompletionFunc("output", formats)
			}
		}
		completeOutputs(c)
	}
}
