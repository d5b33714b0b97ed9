package pipeline

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"cel.dev/cel-go/cel"
)

// Condition is a step's when: a CEL expression (cel.dev/cel-go) whose
// {{references}} stand for the values they name, type-checked against their
// schemas when the pipeline loads: a reference to an array of files is a
// CEL list, to an integer a CEL int, and an expression that is not a
// boolean, or applies an operator to the wrong types, is an error at the
// when's position. A reference whose schema says nothing is dyn.
type Condition struct {
	refs []*Ref // the when's references, in order; the i-th is the CEL variable _ri
	prg  cel.Program
}

// compileCondition compiles and type-checks t; msg says what is wrong.
func compileCondition(t *Template) (_ *Condition, msg string) {
	var (
		expr  strings.Builder
		decls []cel.EnvOption
		cond  = &Condition{}
	)
	for _, p := range t.Parts {
		if p.Ref == nil {
			expr.WriteString(p.Literal)
			continue
		}
		name := "_r" + strconv.Itoa(len(cond.refs))
		cond.refs = append(cond.refs, p.Ref)
		decls = append(decls, cel.Variable(name, celType(p.Ref.Type, 0)))
		fmt.Fprintf(&expr, "(%s)", name)
	}
	env, err := cel.NewEnv(decls...)
	if err != nil {
		return nil, "when: " + err.Error()
	}
	ast, iss := env.Compile(expr.String())
	if iss.Err() != nil {
		return nil, "when is not a valid expression: " + celMessage(iss.Err())
	}
	if out := ast.OutputType(); !out.IsExactType(cel.BoolType) && !out.IsExactType(cel.DynType) {
		return nil, fmt.Sprintf("when must be true or false, and this expression is of type %s", out)
	}
	if cond.prg, err = env.Program(ast); err != nil {
		return nil, "when: " + err.Error()
	}
	return cond, ""
}

// Refs returns the condition's references, in order: Eval takes their
// values in this order.
func (c *Condition) Refs() []*Ref { return c.refs }

// Eval evaluates the condition with the values of its references (JSON
// values as encoding/json decodes them, numbers as float64 or json.Number).
func (c *Condition) Eval(values []any) (bool, error) {
	if len(values) != len(c.refs) {
		return false, fmt.Errorf("when: %d values for %d references", len(values), len(c.refs))
	}
	vars := make(map[string]any, len(values))
	for i, v := range values {
		vars["_r"+strconv.Itoa(i)] = celValue(v, c.refs[i].Type, 0)
	}
	out, _, err := c.prg.Eval(vars)
	if err != nil {
		return false, fmt.Errorf("when: %w", err)
	}
	b, ok := out.Value().(bool)
	if !ok {
		return false, fmt.Errorf("when gave %v, not true or false", out.Value())
	}
	return b, nil
}

// maxDepth bounds how deep a type is described to CEL; deeper is dyn.
const maxDepth = 16

// celType is the CEL type of a value of type t.
func celType(t Type, depth int) *cel.Type {
	if depth > maxDepth {
		return cel.DynType
	}
	switch {
	case t.Is("boolean"):
		return cel.BoolType
	case t.Is("integer"):
		return cel.IntType
	case t.Is("number"):
		return cel.DoubleType
	case t.Is("string"):
		return cel.StringType
	case t.Is("null"):
		return cel.NullType
	case t.Is("array"):
		items, _ := t.Items()
		return cel.ListType(celType(items, depth+1))
	case t.Is("object"):
		return cel.MapType(cel.StringType, cel.DynType)
	}
	return cel.DynType
}

// celValue is v as CEL takes a value of type t: integers as int64 where t
// says integer, other numbers as float64, or as int64 when whole where t
// says nothing.
func celValue(v any, t Type, depth int) any {
	switch v := v.(type) {
	case json.Number:
		if f, err := v.Float64(); err == nil {
			return celNumber(f, t)
		}
		return v.String()
	case float64:
		return celNumber(v, t)
	case []any:
		items, _ := t.Items()
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = celValue(e, items, depth+1)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = celValue(e, Type{}, depth+1)
		}
		return out
	}
	return v
}

func celNumber(f float64, t Type) any {
	whole := f == math.Trunc(f) && math.Abs(f) < 1<<53
	switch {
	case t.Is("integer") && whole:
		return int64(f)
	case t.Is("number"):
		return f
	case whole:
		return int64(f)
	}
	return f
}

// celMessage is a CEL error's first line without its "ERROR: <input>:L:C:"
// prefix, whose columns count in the expression as rewritten, not as
// written.
func celMessage(err error) string {
	msg, _, _ := strings.Cut(err.Error(), "\n")
	msg = strings.TrimPrefix(msg, "ERROR: ")
	if rest, ok := strings.CutPrefix(msg, "<input>:"); ok {
		if i := strings.Index(rest, ": "); i >= 0 {
			msg = rest[i+2:]
		}
	}
	return strings.ReplaceAll(msg, "(_r", "(")
}
