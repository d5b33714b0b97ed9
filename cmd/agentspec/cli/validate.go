package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/internal/text"
	"github.com/agentspec/agentspec/runtime"
	"github.com/agentspec/agentspec/runtime/script"
	"github.com/agentspec/agentspec/spec"
)

func newValidateCmd() *cobra.Command {
	var (
		format    string
		vars      []string
		workspace string
		verbose   bool
		model     string
	)
	cmd := &cobra.Command{
		Use:   "validate FILE|-...",
		Short: "Check agent specs and pipeline files, as run would before its first request",
		Long: `Validate checks each spec file (.yaml, .yml or .json) against the JSON Schema composed
from every registered capability type, then everything "agentspec run" would refuse before
its first model request, without making one: a missing model, a script model's file that is
missing or invalid, settings the provider cannot take, capabilities that cannot be built in
the workspace (--workspace, default the current directory), and two capabilities offering
tools of the same name. With --var, the instructions' {{name}} placeholders must match the
variables given, as for run; without it, a capability whose options use a placeholder is not
built, and a warning says so. Every problem is reported as FILE:LINE:COL: message on stderr;
keys accepted without effect (instrument, end_strategy, defer_loading, an MCP entry's native)
are reported as warnings, which do not make a spec invalid. Exit status: 0 when all files are
valid, 1 when any is not, 2 on usage errors and when a file cannot be read (missing, a
directory, no permission).

FILE - reads a spec from stdin, named <stdin> in messages; its relative paths resolve from the
current directory. -v ends with a one-line summary: "2 of 3 files valid: 4 problems, 0 warnings".

A pipeline file (steps: at its top level) is checked as a pipeline: its keys, every
{{reference}} against the step it names and that step's output_schema, each step's vars
against its spec's placeholders, for_each, when and the graph; then each step's spec as a
spec is checked (--var does not apply: a pipeline's vars fill them, and a capability whose
options use a placeholder is built per job, when they have values). A scripted model's file
(turns: at its top level, and none of a spec's keys: no model:, instructions:, ...) is checked
as a script, as a run checks the script its spec names, so that every YAML file of a folder can
be given at once.

With --output json (-o json), a JSON document describing every file is written to stdout instead:
{"valid", "files": [{"file", "valid", "problems", "warnings"}]}, and with -v, after them, the
summary as "summary": {"files", "valid", "problems", "warnings"}, each a count.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(format); err != nil {
				return exitWith(exitUsage, err)
			}
			parsed, err := parseVars(vars)
			if err != nil {
				return exitWith(exitUsage, err)
			}
			if len(vars) == 0 {
				parsed = nil // no --var: placeholders are not checked
			}
			dir, err := workspaceDir(workspace)
			if err != nil {
				return exitWith(exitUsage, err)
			}
			if countOf(args, stdinArg) > 1 {
				return exitWith(exitUsage, errors.New("- (the spec on stdin) can be given only once"))
			}
			results := make([]fileResult, 0, len(args))
			invalid, unreadable := false, false
			for _, file := range args {
				r, readable := validateFile(cmd.Context(), cmd.InOrStdin(), file, parsed, dir, model)
				invalid = invalid || !r.Valid
				unreadable = unreadable || !readable
				results = append(results, r)
			}
			if format == "json" {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				report := struct {
					Valid   bool         `json:"valid"`
					Files   []fileResult `json:"files"`
					Summary *summary     `json:"summary,omitempty"`
				}{Valid: !invalid, Files: results}
				if verbose {
					sum := summarize(results)
					report.Summary = &sum
				}
				if err := enc.Encode(report); err != nil {
					return exitWith(exitFailure, err)
				}
			} else {
				printProblems(cmd.ErrOrStderr(), results)
				if verbose {
					fmt.Fprintln(cmd.ErrOrStderr(), summarize(results).String())
				}
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
	addOutputFlag(cmd.Flags(), &format, formatText, "text (problems on stderr) or json (a report on stdout)")
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "end with a summary: files valid, problems, warnings (on stderr; with -o json, in the report)")
	cmd.Flags().StringArrayVar(&vars, "var", nil, varUsage("check the instructions' placeholders against this variable"))
	cmd.Flags().StringVar(&workspace, "workspace", "", "directory relative capability paths resolve against (default: current directory)")
	cmd.Flags().StringVar(&model, "model", "", modelFlagUsage+"; checked as the spec's own would be")
	return cmd
}

type fileResult struct {
	File     string    `json:"file"`
	Valid    bool      `json:"valid"`
	Problems []problem `json:"problems"`
	Warnings []problem `json:"warnings"`
}

type problem struct {
	File    string `json:"file"`
	Line    int    `json:"line,omitempty"`
	Column  int    `json:"column,omitempty"`
	Message string `json:"message"`
}

// validateFile loads file and checks it as a run would, minus the network.
// vars is nil when no --var was given. readable is false when the file
// itself could not be read.
func validateFile(ctx context.Context, stdin io.Reader, file string, vars map[string]string, workspace, model string) (r fileResult, readable bool) {
	if isPipelineFile(file) {
		return validatePipeline(ctx, file, workspace, model), true
	}
	if data, ok := readScriptFile(file); ok {
		return validateScript(file, data), true
	}
	s, err := loadSpec(stdin, file, model)
	if file == stdinArg {
		file = spec.Stdin
	}
	r = fileResult{File: file, Valid: true, Problems: []problem{}, Warnings: []problem{}}
	var list spec.Errors
	readable = err == nil || errors.As(err, &list)
	if err == nil {
		for _, w := range s.Warnings {
			r.Warnings = append(r.Warnings, problemOf(w))
		}
		if vars != nil {
			err = checkVars(s, vars)
		} else {
			for _, n := range s.TemplatedCapabilityNotes("--var NAME=VALUE gives their values") {
				r.Warnings = append(r.Warnings, problemOf(n))
			}
		}
	}
	if err == nil {
		opts := []runtime.Option{runtime.WithWorkspace(workspace), runtime.WithListener(func(_ context.Context, ev capabilities.Event) error {
			if w, ok := ev.(runtime.CapabilityWarning); ok {
				r.Warnings = append(r.Warnings, problem{File: w.File, Line: w.Line, Column: w.Column, Message: w.Message})
			}
			return nil
		})}
		if vars != nil {
			opts = append(opts, runtime.WithVars(vars))
		}
		if strings.TrimSpace(s.Model) == "" {
			// pydantic-ai takes the model at run time: a spec without one
			// is valid, and everything but the model is checked.
			r.Warnings = append(r.Warnings, problem{File: file, Line: 1, Column: 1, Message: noModelNote})
			offline := *s
			offline.Model = "test"
			s = &offline
		}
		err = runtime.Check(ctx, s, opts...)
	}
	if err == nil {
		return r, true
	}
	r.Valid = false
	if errors.As(err, &list) {
		for _, e := range list {
			r.Problems = append(r.Problems, problemOf(e))
		}
		return r, readable
	}
	// An unreadable file, or a problem without a position: the file names it.
	msg := strings.TrimPrefix(err.Error(), file+": ")
	if st, serr := os.Stat(file); !readable && serr == nil && st.IsDir() {
		msg += "; to check the specs in it, name them: agentspec validate " + filepath.Join(file, "*.yaml")
	}
	r.Problems = append(r.Problems, problem{File: file, Message: msg})
	return r, readable
}

// validateScript checks a scripted model's file as a run checks the one
// its spec names.
func validateScript(file string, data []byte) fileResult {
	r := fileResult{File: file, Valid: true, Problems: []problem{}, Warnings: []problem{}}
	_, err := script.Parse(file, data)
	if err == nil {
		return r
	}
	r.Valid = false
	var list script.Errors
	if !errors.As(err, &list) {
		r.Problems = append(r.Problems, problem{File: file, Message: err.Error()})
		return r
	}
	for _, e := range list {
		r.Problems = append(r.Problems, problem{File: e.File, Line: e.Line, Column: e.Col, Message: e.Msg})
	}
	return r
}

// noModelNote is validate's note on a spec that names no model.
const noModelNote = "note: the spec names no model; give it at run time: agentspec run --model PROVIDER:NAME"

func problemOf(e *spec.Error) problem {
	return problem{File: e.Pos.File, Line: e.Pos.Line, Column: e.Pos.Col, Message: e.Msg}
}

func printProblems(w io.Writer, results []fileResult) {
	for _, r := range results {
		for _, p := range slices.Concat(r.Problems, r.Warnings) {
			pos := spec.Position{File: p.File, Line: p.Line, Col: p.Column}
			fmt.Fprintf(w, "%s: %s\n", text.Visible(pos.String()), text.VisibleLines(p.Message))
		}
	}
}

func countOf(list []string, s string) int {
	n := 0
	for _, v := range list {
		if v == s {
			n++
		}
	}
	return n
}

// summary is -v's summary: how many files, how many of them valid, and
// their problems and warnings in all.
type summary struct {
	Files    int `json:"files"`
	Valid    int `json:"valid"`
	Problems int `json:"problems"`
	Warnings int `json:"warnings"`
}

func summarize(results []fileResult) summary {
	sum := summary{Files: len(results)}
	for _, r := range results {
		if r.Valid {
			sum.Valid++
		}
		sum.Problems += len(r.Problems)
		sum.Warnings += len(r.Warnings)
	}
	return sum
}

// String is -v's line: "2 of 3 files valid: 4 problems, 1 warning".
func (s summary) String() string {
	files := plural(s.Files, "file")
	if s.Files == 1 {
		files = "1 file"
	}
	return fmt.Sprintf("%d of %s valid: %s, %s", s.Valid, files, plural(s.Problems, "problem"), plural(s.Warnings, "warning"))
}
