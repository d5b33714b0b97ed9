package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentspec/agentspec/spec"
)

func init() { addCommand(newValidateCmd) }

func newValidateCmd() *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "validate FILE...",
		Short: "Check agent specs against the schema",
		Long: `Validate checks each spec file (.yaml, .yml or .json) against the JSON Schema composed
from every registered capability type, and reports every problem as FILE:LINE:COL: message
on stderr. Exit status: 0 when all files are valid, 1 when any is not, 2 on usage errors
and when a file cannot be read (missing, a directory, no permission).

With --format json, a JSON document describing every file is written to stdout instead.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch format {
			case "text", "json":
			default:
				return exitWith(exitUsage, fmt.Errorf("--format must be text or json, not %q", format))
			}
			results := make([]fileResult, 0, len(args))
			invalid, unreadable := false, false
			for _, file := range args {
				r, readable := validateFile(file)
				invalid = invalid || !r.Valid
				unreadable = unreadable || !readable
				results = append(results, r)
			}
			if format == "json" {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				if err := enc.Encode(struct {
					Valid bool         `json:"valid"`
					Files []fileResult `json:"files"`
				}{!invalid, results}); err != nil {
					return exitWith(exitFailure, err)
				}
			} else {
				printProblems(cmd.ErrOrStderr(), results)
			}
			switch {
			case unreadable:
				return exitWith(exitUsage, nil) // a file that is not there is a usage error
			case invalid:
				return exitWith(exitFailure, nil)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "output format: text (problems on stderr) or json (a report on stdout)")
	return cmd
}

type fileResult struct {
	File     string    `json:"file"`
	Valid    bool      `json:"valid"`
	Problems []problem `json:"problems"`
}

type problem struct {
	File    string `json:"file"`
	Line    int    `json:"line,omitempty"`
	Column  int    `json:"column,omitempty"`
	Message string `json:"message"`
}

// validateFile loads file and reports its problems; readable is false when
// the file itself could not be read.
func validateFile(file string) (r fileResult, readable bool) {
	r = fileResult{File: file, Valid: true, Problems: []problem{}}
	_, err := spec.LoadFile(file)
	if err == nil {
		return r, true
	}
	r.Valid = false
	var list spec.Errors
	if errors.As(err, &list) {
		for _, e := range list {
			r.Problems = append(r.Problems, problem{File: e.Pos.File, Line: e.Pos.Line, Column: e.Pos.Col, Message: e.Msg})
		}
		return r, true
	}
	// An unreadable file: the error already names it.
	r.Problems = append(r.Problems, problem{File: file, Message: strings.TrimPrefix(err.Error(), file+": ")})
	return r, false
}

func printProblems(w io.Writer, results []fileResult) {
	for _, r := range results {
		for _, p := range r.Problems {
			pos := spec.Position{File: p.File, Line: p.Line, Col: p.Column}
			fmt.Fprintf(w, "%s: %s\n", pos, p.Message)
		}
	}
}
