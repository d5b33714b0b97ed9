package runtime

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/spec"
)

// placeholder matches {{name}} and {{ name }}. Anything else between double
// braces is left as written.
var placeholder = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`\{\{\s*([A-Za-z_][A-Za-z0-9_.-]*)\s*\}\}`)
})

// MissingVarError is returned when the instructions use a variable no value
// was given for. It is reported before any request is made.
type MissingVarError struct {
	Names []string // in order of first use
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
	var names []string
	for _, m := range placeholder().FindAllStringSubmatch(strings.Join(instructions, "\n\n"), -1) {
		if !slices.Contains(names, m[1]) {
			names = append(names, m[1])
		}
	}
	return names
}

// RenderInstructions joins the spec's instructions with blank lines and fills
// their {{var}} placeholders from vars. Every missing variable is named in one
// *MissingVarError.
func RenderInstructions(instructions []string, vars map[string]string) (string, error) {
	text := strings.Join(instructions, "\n\n")
	var missing []string
	seen := map[string]bool{}
	out := placeholder().ReplaceAllStringFunc(text, func(m string) string {
		name := placeholder().FindStringSubmatch(m)[1]
		if v, ok := vars[name]; ok {
			return v
		}
		if !seen[name] {
			seen[name] = true
			missing = append(missing, name)
		}
		return m
	})
	if len(missing) > 0 {
		return "", &MissingVarError{Names: missing}
	}
	return out, nil
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
		if in, ok := c.(capabilities.Instructable); ok {
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
var errNoModel = errors.New("no model: the spec has no model key (e.g. model: openai:gpt-4o, or model: test to run offline)")

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
