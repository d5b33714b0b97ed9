package runtime

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/spec"
)

// MissingVarError is returned when the instructions use a variable no value
// was given for. It is reported before any request is made.
type MissingVarError struct {
	Names []string // in order of first use
	// Problems are the same names as spec problems, each at the first
	// place the spec's file writes it, with its Var set: nil when the
	// instructions have no place there (a Spec built in Go, instructions
	// given alone to RenderInstructions).
	Problems spec.Errors
}

// Unwrap gives the Problems, so that whoever prints spec problems at their
// places (errors.As with a spec.Errors) prints these there.
func (e *MissingVarError) Unwrap() error {
	if len(e.Problems) == 0 {
		return nil
	}
	return e.Problems
}

func (e *MissingVarError) Error() string {
	quoted := make([]string, len(e.Names))
	for i, n := range e.Names {
		quoted[i] = fmt.Sprintf("%q", n)
	}
	noun := "variable"
	if len(e.Names) > 1 {
		noun = "variables"
	}
	return fmt.Sprintf("instructions use %s %s, but no value was given", noun, strings.Join(quoted, ", "))
}

// Placeholders returns the names of the {{var}} placeholders the
// instructions use, each once, in order of first use: the variables a run of
// them needs values for.
func Placeholders(instructions []string) []string {
	return spec.Placeholders(instructions...)
}

// UnknownVarError is returned by CheckVars for values given for variables
// the spec has no placeholder for (in its instructions, its description or
// its capabilities' options): a misspelt name, most likely, and
// with a cache, a key of its own for the same run.
type UnknownVarError struct {
	Names        []string // the values' names, sorted
	Placeholders []string // the placeholders the spec has, in order of first use
}

func (e *UnknownVarError) Error() string {
	noun := "variable"
	if len(e.Names) > 1 {
		noun = "variables"
	}
	return fmt.Sprintf("%s %s: %s", noun, strings.Join(e.Names, ", "), e.Detail())
}

// Detail is the error without the names it starts with, for a program that
// names the values its own way (the CLI's --var flags).
func (e *UnknownVarError) Detail() string {
	have := "it has none"
	if len(e.Placeholders) > 0 {
		have = "it has " + braced(e.Placeholders, ", ")
	}
	noun := "placeholder"
	if len(e.Names) > 1 {
		noun = "placeholders"
	}
	// The spec's: the instructions', the description's and the
	// capabilities' options'.
	return fmt.Sprintf("the spec has no %s %s; %s", braced(e.Names, " or "), noun, have)
}

// braced writes names as {{a}}, {{b}}.
func braced(names []string, sep string) string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = "{{" + n + "}}"
	}
	return strings.Join(out, sep)
}

// CheckVars matches vars with the placeholders of the spec's instructions
// and of its capabilities' options (spec.Spec.WithCapabilityVars):
// each value needs a placeholder (an *UnknownVarError otherwise) and each
// placeholder a value (a *MissingVarError). The description is a template
// too, as in pydantic-ai; it is not sent to the model, so its placeholders
// may be given values but need none. Check runs it when given WithVars; Run
// refuses missing values only.
func CheckVars(s *spec.Spec, vars map[string]string) error {
	if s == nil {
		return errors.New("runtime: nil spec")
	}
	names := s.VarNames()
	var unknown []string
	for name := range vars {
		if !slices.Contains(names, name) {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return &UnknownVarError{Names: unknown, Placeholders: names}
	}
	if _, err := renderInstructions(s, vars); err != nil {
		return err
	}
	_, err := s.WithCapabilityVars(vars)
	return err
}

// RenderInstructions joins the spec's instructions with blank lines and fills
// their {{var}} placeholders from vars. Every missing variable is named in one
// *MissingVarError.
func RenderInstructions(instructions []string, vars map[string]string) (string, error) {
	text := strings.Join(instructions, "\n\n")
	var missing []string
	budget := spec.MaxFilled
	out, err := spec.FillPlaceholders(text, vars, func(name string) {
		if !slices.Contains(missing, name) {
			missing = append(missing, name)
		}
	}, &budget)
	if err != nil {
		return "", fmt.Errorf("instructions: %w", err)
	}
	if len(missing) > 0 {
		return "", &MissingVarError{Names: missing}
	}
	return out, nil
}

// renderInstructions is RenderInstructions of the spec's instructions,
// each placeholder without a value placed where the spec writes it
// (MissingVarError.Problems) when the file writes every one of them.
func renderInstructions(s *spec.Spec, vars map[string]string) (string, error) {
	out, err := RenderInstructions(s.Instructions, vars)
	var missing *MissingVarError
	if !errors.As(err, &missing) {
		return out, err
	}
	problems := make(spec.Errors, 0, len(missing.Names))
	for _, name := range missing.Names {
		at, ok := s.InstructionPlaceholderAt(name)
		if !ok {
			return "", err // all at their places, or none: none is left unsaid
		}
		problems = append(problems, &spec.Error{Pos: at, Var: name,
			Msg: fmt.Sprintf("instructions use variable %q, but no value was given", name)})
	}
	missing.Problems = problems
	return "", err
}

// systemPrompt composes the system message: the rendered instructions, what
// the capabilities add, and how to format the final answer when there is an
// output schema.
func systemPrompt(instructions string, caps []capabilities.Capability, schema *outputSchema) string {
	var sections []string
	if s := strings.TrimSpace(instructions); s != "" {
		sections = append(sections, s)
	}
	for _, c := range caps {
		if in, ok := capabilities.As[capabilities.Instructable](c); ok {
			if s := strings.TrimSpace(in.Instructions()); s != "" {
				sections = append(sections, s)
			}
		}
	}
	if schema != nil {
		sections = append(sections, schema.instructions())
	}
	return strings.Join(sections, "\n\n")
}

// errNoModel is returned when neither the spec nor the options name a model.
var errNoModel = errors.New("no model: the spec has no model key (e.g. model: openai:gpt-4o, or model: test to run offline), and none was given at run time (--model)")

// noModelError is errNoModel, as a spec error at the top of the file when
// the spec was loaded from one: the spec is what lacks the key.
func noModelError(s *spec.Spec) error {
	if s.File == "" {
		return errNoModel
	}
	pos := s.Position("")
	if pos.Line == 0 {
		pos.Line, pos.Col = 1, 1
	}
	return spec.Errors{{Pos: pos, Msg: errNoModel.Error()}}
}
