package pipeline

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"cel.dev/cel-go/cel"
	celast "cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/operators"
	"cel.dev/cel-go/common/types"

	"github.com/agentspec/agentspec/spec"
)

// Condition is a step's when: a CEL expression (cel.dev/cel-go) whose
// {{references}} stand for the values they name, type-checked against their
// schemas when the pipeline loads: a reference to an array of files is a
// CEL list, to an integer a CEL int, and an expression that is not a
// boolean is an error at the when's position, one that applies an operator
// to the wrong types at the operator's, a member taken from an object
// typed by its property's schema there too. A reference whose schema says
// nothing is dyn.
//
// A value that may be absent (a property its schema does not require, an
// input that is not required and has no default) or null (its schema allows
// null) is of a nullable type, null when absent. It may be compared (==,
// != and in, with null or anything) and asked has() of anywhere; any other
// use must be where the expression has tested it, or the when is an error
// when the pipeline loads: "{{steps.a.output.count}} > 0" is refused,
// "{{steps.a.output.count}} != null && {{steps.a.output.count}} > 0" is
// not. A member taken from an object that its schema does not require
// ({{steps.a.output}}.count) is no key of the map when absent, so any use of
// it, a comparison too, must be where the expression has tested it:
// "has({{steps.a.output}}.count) && {{steps.a.output}}.count > 0". A
// reference written inside a string literal ('{{...}}', which is that
// text, never the value) is an error too.
type Condition struct {
	refs []*Ref // the when's references, each text once, in order: Eval takes their values
	vars []int  // for each occurrence of a reference, its CEL variable _ri: the index in refs
	prg  cel.Program

	// Where the when is written, for the errors of its evaluation: label
	// names it (steps.b.when), start is where it starts, and at is where
	// each of the expression's nodes is, as far as CEL tells. label is ""
	// when the place is not known.
	label string
	start spec.Position
	at    map[int64]spec.Position
	// occur is each occurrence of a reference, by variable, ident the node
	// of each variable, and parent each node's: a reference's value that
	// fails the when is told at the occurrence that failed, which need not
	// be its first.
	occur  []*Ref
	ident  []int64
	parent map[int64]int64
}

// condError is what is wrong with a when; at is the reference it is about,
// nil for the whole expression; offset, when at is nil, is where in the
// when's text the expression goes wrong (CEL's location), -1 when nowhere
// in particular.
type condError struct {
	msg    string
	at     *Ref
	offset int
}

// compileCondition compiles and type-checks t, the when of the step
// label names (steps.b.when); place is where in the pipeline file the byte
// at an offset of t's text is written.
func compileCondition(t *Template, label string, place func(offset int) spec.Position) (*Condition, *condError) {
	var (
		expr  strings.Builder
		decls []cel.EnvOption
		cond  = &Condition{}
		occur []*Ref // each occurrence, by variable
		at    []int  // and where it is in t.Parts
		index = map[string]int{}
		// toText maps each byte of expr to its offset in t.Text: a
		// reference's variable to its {{, literal text past the
		// backslashes an escape dropped from it.
		toText   []int
		_, raws  = parseTemplate(t.Text)
		textAt   = 0
		refCount = 0
	)
	for k, p := range t.Parts {
		if p.Ref == nil {
			expr.WriteString(p.Literal)
			for i := 0; i < len(p.Literal); i++ {
				for textAt < len(t.Text) && t.Text[textAt] != p.Literal[i] {
					textAt++
				}
				toText = append(toText, textAt)
				textAt++
			}
			continue
		}
		raw := raws[refCount]
		refCount++
		textAt = raw.offset + len(raw.raw)
		i, seen := index[p.Ref.Text]
		if !seen {
			i = len(cond.refs)
			index[p.Ref.Text] = i
			cond.refs = append(cond.refs, p.Ref)
		}
		name := varName(len(cond.vars))
		cond.vars = append(cond.vars, i)
		occur, at = append(occur, p.Ref), append(at, k)
		decls = append(decls, cel.Variable(name, refCELType(p.Ref)))
		v := "(" + name + ")"
		expr.WriteString(v)
		for range len(v) {
			toText = append(toText, raw.offset)
		}
	}
	toText = append(toText, min(textAt, len(t.Text))) // the end
	// JSON Schema's numbers include its integers: a number orders against
	// an integer literal as CEL's cross-type comparisons let it.
	env, err := cel.NewEnv(append(decls, cel.CrossTypeNumericComparisons(true))...)
	if err != nil {
		return nil, &condError{msg: "when: " + err.Error(), offset: -1}
	}
	ast, iss := env.Compile(expr.String())
	if iss.Err() != nil {
		e := &condError{msg: "when is not a valid expression: " + celMessage(iss.Err()) + mixedHint(iss.Err()), offset: -1}
		// Err sorted the errors by location: the first is the one told.
		if errs := iss.Errors(); len(errs) > 0 {
			if off, ok := exprOffset(expr.String(), errs[0].Location.Line(), errs[0].Location.Column()); ok {
				e.offset = toText[off]
			}
		}
		return nil, e
	}
	if e := unused(ast, t, occur, at); e != nil {
		return nil, e
	}
	if out := ast.OutputType(); !out.IsExactType(cel.BoolType) && !out.IsExactType(cel.DynType) {
		return nil, &condError{msg: fmt.Sprintf("when must be true or false, and this expression is of type %s", celTypeName(out.String())), offset: -1}
	}
	if e := cond.members(ast, expr.String(), toText); e != nil {
		return nil, e
	}
	if e := cond.guards(ast, occur, expr.String(), toText); e != nil {
		return nil, e
	}
	if e := cond.operands(env, ast, expr.String(), toText); e != nil {
		return nil, e
	}
	if cond.prg, err = env.Program(ast); err != nil {
		return nil, &condError{msg: "when: " + err.Error(), offset: -1}
	}
	cond.occur = occur
	cond.place(ast, expr.String(), toText, t.Pos, label, place)
	return cond, nil
}

// place records where the when is written, and each node of ast, which
// CEL compiled from expr (toText maps its offsets to the when's text), so
// that an error as it runs is told at the node that failed.
func (c *Condition) place(ast *cel.Ast, expr string, toText []int, start spec.Position, label string, place func(int) spec.Position) {
	c.label, c.start, c.at = label, start, map[int64]spec.Position{}
	c.ident, c.parent = make([]int64, len(c.vars)), map[int64]int64{}
	index := newExprIndex(expr)
	celast.PreOrderVisit(celast.NavigateAST(ast.NativeRep()), celast.NewExprVisitor(func(e celast.Expr) {
		if off := locateWith(ast, e, index.offset, toText); off >= 0 {
			c.at[e.ID()] = place(off)
		}
		if n, ok := e.(celast.NavigableExpr); ok {
			for _, child := range n.Children() {
				c.parent[child.ID()] = e.ID()
			}
		}
		if e.Kind() == celast.IdentKind {
			name, ok := strings.CutPrefix(e.AsIdent(), "_r")
			if v, err := strconv.Atoi(name); ok && err == nil && v >= 0 && v < len(c.ident) {
				c.ident[v] = e.ID()
			}
		}
	}))
}

// occurrence is the occurrence of the reference c.refs[i] that the node id
// holds, the one whose value failed there; its first when none is.
func (c *Condition) occurrence(i int, id int64) *Ref {
	for v, r := range c.vars {
		if r != i || v >= len(c.ident) || v >= len(c.occur) {
			continue
		}
		for n, depth := c.ident[v], 0; n != 0 && depth <= len(c.parent); n, depth = c.parent[n], depth+1 {
			if n == id {
				return c.occur[v]
			}
		}
	}
	return c.refs[i]
}

// occurrenceErr is the error a reference's value is, given as the value of
// its occurrence v: an evaluation that fails with it tells which.
type occurrenceErr struct {
	v   int
	err error
}

func (e *occurrenceErr) Error() string { return e.err.Error() }
func (e *occurrenceErr) Unwrap() error { return e.err }

// exprIndex finds the byte offset in an expression of a CEL location, as
// exprOffset does, in constant time: every node of a long when is placed
// in time in proportion to its length.
type exprIndex struct {
	chars []int // the byte offset of each character, then of the end
	lines []int // the index in chars of each line's first character
}

func newExprIndex(expr string) exprIndex {
	x := exprIndex{lines: []int{0}}
	for off, r := range expr {
		x.chars = append(x.chars, off)
		if r == '\n' {
			x.lines = append(x.lines, len(x.chars))
		}
	}
	x.chars = append(x.chars, len(expr))
	return x
}

// offset is exprOffset's answer for the expression x indexes.
func (x exprIndex) offset(line, col int) (int, bool) {
	if line < 1 || col < 0 || line > len(x.lines) {
		return 0, false
	}
	i := x.lines[line-1] + col
	if i >= len(x.chars) {
		return 0, false
	}
	return x.chars[i], true
}

// failed is err, a failure of the when's evaluation, told at the node id
// of the expression, or at the reference ref when it is not nil, as the
// errors of a load are: FILE:LINE:COL: steps.b.when: message.
func (c *Condition) failed(id int64, ref *Ref, err error) error {
	if c.label == "" {
		return fmt.Errorf("when: %w", err)
	}
	pos, ok := c.at[id]
	switch {
	case ref != nil && ref.Pos.Line > 0:
		pos = ref.Pos
	case !ok:
		pos = c.start
	}
	return fmt.Errorf("%s: %s: %w", pos, c.label, err)
}

func varName(i int) string { return "_r" + strconv.Itoa(i) }

// exprOffset is the byte offset in expr of a CEL location: its 1-based
// line and its 0-based column, counted in characters.
func exprOffset(expr string, line, col int) (int, bool) {
	if line < 1 || col < 0 {
		return 0, false
	}
	off := 0
	for ; line > 1; line-- {
		i := strings.IndexByte(expr[off:], '\n')
		if i < 0 {
			return 0, false
		}
		off += i + 1
	}
	for ; col > 0 && off < len(expr); col-- {
		_, size := utf8.DecodeRuneInString(expr[off:])
		off += size
	}
	return off, col == 0
}

// refCELType is the CEL type of ref's value: nullable when it may be absent
// or null.
func refCELType(r *Ref) *cel.Type {
	if !nullable(r) {
		return celType(r.Type, 0)
	}
	if t := celType(r.Type.nonNull(), 0); !t.IsExactType(cel.DynType) {
		return cel.NullableType(t)
	}
	return cel.DynType // takes null as it is
}

// nullable tells whether ref's value may be null: absent, or null by its
// schema.
func nullable(r *Ref) bool {
	return r.Optional != "" || r.Type.Known() && !r.Type.Is("null") && slices.Contains(r.Type.JSON(), "null")
}

// unused reports a reference the expression does not use: one written
// inside a string literal ('{{steps.a.output.name}}' is that text, never
// the value) or a comment, which would otherwise never be filled. occur are
// the references' occurrences, by variable; at, the index of each in t.Parts.
func unused(ast *cel.Ast, t *Template, occur []*Ref, at []int) *condError {
	used := map[string]bool{}
	for _, r := range ast.NativeRep().ReferenceMap() {
		used[r.Name] = true
	}
	var literals []string
	celast.PreOrderVisit(celast.NavigateAST(ast.NativeRep()), celast.NewExprVisitor(func(e celast.Expr) {
		if e.Kind() == celast.LiteralKind {
			switch v := e.AsLiteral().Value().(type) {
			case string:
				literals = append(literals, v)
			case []byte:
				literals = append(literals, string(v))
			}
		}
	}))
	for i, r := range occur {
		name := varName(i)
		if used[name] {
			continue
		}
		written := "{{" + r.Text + "}}"
		if !slices.ContainsFunc(literals, func(lit string) bool { return strings.Contains(lit, "("+name+")") }) {
			return &condError{at: r, msg: written + " is inside a comment, so the expression does not use it"}
		}
		msg := written + " is inside a string literal, where it is that text and is never filled; " +
			"a reference is a value of its own: write it outside the quotes"
		if fixed, ok := unquote(t, at[i]); ok {
			msg += ": " + fixed
		} else {
			msg += ", and join text to it with + ('prefix-' + " + written + ")"
		}
		return &condError{at: r, msg: msg}
	}
	return nil
}

// unquote is t's text with the quotes around the reference t.Parts[part]
// taken away, when they enclose it alone ('{{steps.a.output.name}}'). The
// rest is the text as written, its escapes (\{{...}}) kept.
func unquote(t *Template, part int) (string, bool) {
	k := 0 // the reference's index among t's
	for _, p := range t.Parts[:part] {
		if p.Ref != nil {
			k++
		}
	}
	_, raws := parseTemplate(t.Text)
	if k >= len(raws) {
		return "", false
	}
	open, end := raws[k].offset, raws[k].offset+len(raws[k].raw)
	if open == 0 || end >= len(t.Text) {
		return "", false
	}
	q := t.Text[open-1]
	if q != '\'' && q != '"' || t.Text[end] != q {
		return "", false
	}
	if open >= 2 {
		// Not the end of a triple quote, nor a raw or bytes literal's r'.
		if c := t.Text[open-2]; c == q || c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
			return "", false
		}
	}
	return t.Text[:open-1] + t.Text[open:end] + t.Text[end+1:], true
}

// members refuses a member the expression takes from an object whose
// schema does not have it, as a reference to it is refused:
// {{steps.a.output}}.scroe as {{steps.a.output.scroe}}, and f.scroe in
// {{steps.a.output.list}}.exists(f, f.scroe > 0) as an item's. CEL types an
// object as a map, whose keys it does not know, so without this the when
// would fail at run time with "no such key". has() is asked of a member
// the schema has too. expr is the expression CEL compiled, and toText maps
// its offsets to the when's text.
func (c *Condition) members(ast *cel.Ast, expr string, toText []int) *condError {
	m := memberCheck{c: c}
	m.visit(ast.NativeRep().Expr(), nil)
	if m.bad == nil {
		return nil
	}
	return &condError{msg: m.msg, offset: locate(ast, m.bad, expr, toText)}
}

// operands refuses a call whose operands the schemas type as CEL has no
// overload for, where an operand is a member the expression takes from an
// object: CEL types an object as a map of dyn, and would let
// {{steps.a.output}}.score + 1 pass, to fail at run time when score, a
// number, is a double. Each such call is type-checked again in env, its
// operands typed as their schemas type them (the member's type, the
// result of a call so checked, the list a map or a filter builds of
// such values and its items, or what CEL found), as a reference's value
// is typed when the expression is compiled.
func (c *Condition) operands(env *cel.Env, ast *cel.Ast, expr string, toText []int) *condError {
	o := operandCheck{c: c, env: env, ast: ast, typed: map[int64]*cel.Type{}, items: map[string]*cel.Type{}}
	root := ast.NativeRep().Expr()
	o.visit(root, nil)
	if o.bad != nil {
		return &condError{msg: "when is not a valid expression: " + o.msg, offset: locate(ast, o.bad, expr, toText)}
	}
	// {{steps.a.output}}.name is dyn to CEL, and a string by its schema.
	if t, ok := o.typed[root.ID()]; ok && !t.IsExactType(cel.BoolType) {
		return &condError{msg: fmt.Sprintf("when must be true or false, and this expression is of type %s", celTypeName(t.String())), offset: -1}
	}
	return nil
}

// operandCheck walks a when's expression for operands.
type operandCheck struct {
	c     *Condition
	env   *cel.Env
	ast   *cel.Ast
	typed map[int64]*cel.Type // what the schemas make of an expression CEL typed as dyn, or of a call over one
	// items types the variables of the comprehensions around that iterate
	// over a list typed here, not by a schema: what map and filter give.
	items map[string]*cel.Type
	bad   celast.Expr // the first call refused
	msg   string
}

// celOperators write a call of an operator over the operands x0, x1, x2.
var celOperators = map[string]string{
	operators.Add: "x0 + x1", operators.Subtract: "x0 - x1", operators.Multiply: "x0 * x1",
	operators.Divide: "x0 / x1", operators.Modulo: "x0 % x1", operators.Negate: "-x0",
	operators.Less: "x0 < x1", operators.LessEquals: "x0 <= x1", operators.Greater: "x0 > x1",
	operators.GreaterEquals: "x0 >= x1", operators.Equals: "x0 == x1", operators.NotEquals: "x0 != x1",
	operators.In: "x0 in x1", operators.Index: "x0[x1]", operators.LogicalAnd: "x0 && x1",
	operators.LogicalOr: "x0 || x1", operators.LogicalNot: "!x0", operators.Conditional: "x0 ? x1 : x2",
}

// visit checks e and what it holds, innermost first, where scope types
// the comprehensions' variables.
func (o *operandCheck) visit(e celast.Expr, scope map[string]typedExpr) {
	if o.bad != nil {
		return
	}
	switch e.Kind() {
	case celast.SelectKind:
		o.visit(e.AsSelect().Operand(), scope)
		o.member(e, scope)
	case celast.CallKind:
		call := e.AsCall()
		var operands []celast.Expr
		if call.IsMemberFunction() {
			operands = append(operands, call.Target())
		}
		operands = append(operands, call.Args()...)
		for _, a := range operands {
			o.visit(a, scope)
		}
		o.call(e, operands)
		if call.FunctionName() == operators.Index && o.bad == nil {
			o.member(e, scope) // what the schema says of an item or a member, more than the index's result type
		}
	case celast.ListKind, celast.MapKind, celast.StructKind:
		for _, part := range literalParts(e) {
			o.visit(part, scope)
		}
	case celast.ComprehensionKind:
		comp := e.AsComprehension()
		o.visit(comp.IterRange(), scope)
		o.visit(comp.AccuInit(), scope)
		inner := o.c.inner(comp, e.ID(), scope)
		outer := maps.Clone(o.items)
		delete(o.items, comp.AccuVar())
		delete(o.items, comp.IterVar())
		if _, typed := inner[comp.IterVar()]; !typed {
			if list, ok := o.typed[comp.IterRange().ID()]; ok && list.Kind() == types.ListKind && len(list.Parameters()) == 1 {
				o.items[comp.IterVar()] = list.Parameters()[0]
			}
		}
		for _, part := range []celast.Expr{comp.LoopCondition(), comp.LoopStep(), comp.Result()} {
			o.visit(part, inner)
		}
		if t, ok := o.listBuilt(comp); ok && !t.IsExactType(o.ast.NativeRep().GetType(e.ID())) {
			o.typed[e.ID()] = t
		}
		o.items = outer
	case celast.IdentKind:
		if v, ok := scope[e.AsIdent()]; ok {
			o.schemaType(e, v)
		} else if t, ok := o.items[e.AsIdent()]; ok && !t.IsExactType(o.ast.NativeRep().GetType(e.ID())) {
			o.typed[e.ID()] = t
		}
	}
}

// listBuilt is the type of the list comp builds, as map and filter do
// (accumulating [x] at each step, or only where a test holds), when the
// type of what it accumulates is one this check found: a list of numbers
// of a schema, which CEL would type as a list of dyn.
func (o *operandCheck) listBuilt(comp celast.ComprehensionExpr) (*cel.Type, bool) {
	x, ok := built(comp, true)
	if !ok {
		return nil, false
	}
	t, ok := o.typed[x.ID()]
	if !ok {
		return nil, false
	}
	return cel.ListType(t), true
}

// member types e, when it is a member or an item a schema types, as its
// schema does.
func (o *operandCheck) member(e celast.Expr, scope map[string]typedExpr) {
	if m, ok := o.c.typeOf(e, scope, nil); ok {
		o.schemaType(e, m)
	}
}

// schemaType records the type the schemas give e, where it says more than
// CEL found: nullable, as a reference's, when e may be absent or null.
func (o *operandCheck) schemaType(e celast.Expr, m typedExpr) {
	if !m.t.Known() {
		return
	}
	ct := celType(m.t.nonNull(), 0)
	if ct.IsExactType(cel.DynType) {
		return
	}
	if m.absent != "" || !m.t.Is("null") && slices.Contains(m.t.JSON(), "null") {
		ct = cel.NullableType(ct)
	}
	if !ct.IsExactType(o.ast.NativeRep().GetType(e.ID())) {
		o.typed[e.ID()] = ct
	}
}

// call checks the call e over operands, when the schemas type one of them
// as CEL did not, and records the type of its result.
func (o *operandCheck) call(e celast.Expr, operands []celast.Expr) {
	retyped := false
	for _, a := range operands {
		if _, ok := o.typed[a.ID()]; ok {
			retyped = true
		}
	}
	call := e.AsCall()
	fn := call.FunctionName()
	text, isOperator := celOperators[fn]
	if !retyped || !isOperator && (strings.HasPrefix(fn, "@") || strings.HasPrefix(fn, "_")) {
		return
	}
	names := make([]string, len(operands))
	decls := make([]cel.EnvOption, len(operands))
	for i, a := range operands {
		names[i] = "x" + strconv.Itoa(i)
		t, ok := o.typed[a.ID()]
		if !ok {
			t = o.ast.NativeRep().GetType(a.ID())
		}
		decls[i] = cel.Variable(names[i], t)
	}
	if !isOperator {
		args := names
		if call.IsMemberFunction() {
			text, args = names[0]+".", names[1:]
		}
		text += fn + "(" + strings.Join(args, ", ") + ")"
	}
	env, err := o.env.Extend(decls...)
	if err != nil {
		return
	}
	checked, iss := env.Compile(text)
	if iss.Err() != nil {
		msg := celMessage(iss.Err())
		if !strings.HasPrefix(msg, "found no matching overload") && !strings.HasPrefix(msg, "expected type") {
			return
		}
		o.bad, o.msg = e, msg+mixedHint(iss.Err())
		// CEL tells an operand of the wrong type ('expected type bool') at
		// the operand, as it does in the when itself.
		if errs := iss.Errors(); len(errs) > 0 {
			if i := operandAt(text, errs[0].Location.Column(), len(operands)); i >= 0 {
				o.bad = operands[i]
			}
		}
		return
	}
	if t := checked.OutputType(); !t.IsExactType(o.ast.NativeRep().GetType(e.ID())) {
		o.typed[e.ID()] = t
	}
}

// operandAt is the index of the operand xI that starts at col in text,
// -1 when none does.
func operandAt(text string, col, n int) int {
	for i := range n {
		name := "x" + strconv.Itoa(i)
		if strings.HasPrefix(text[min(col, len(text)):], name) &&
			(col+len(name) == len(text) || text[col+len(name)] < '0' || text[col+len(name)] > '9') {
			return i
		}
	}
	return -1
}

// mixedHint is what to write instead, when err is CEL's refusal of
// arithmetic that mixes a double and an int.
func mixedHint(err error) string {
	m := mixedArithmetic().FindStringSubmatch(celMessage(err))
	if m == nil || m[1] == m[2] {
		return ""
	}
	return "; a number is a double, and CEL's arithmetic does not mix doubles and ints: write 1.0 for 1, or double(...) around an integer"
}

var mixedArithmetic = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`'_[-+*/]_' applied to '\((double|int)(?: or null)?, (double|int)(?: or null)?\)'`)
})

// memberCheck walks a when's expression for members.
type memberCheck struct {
	c   *Condition
	bad celast.Expr // the first select of a member the schema does not have
	msg string
}

// typedExpr is what the checks know of an expression: its type, and how
// to write it in a message.
type typedExpr struct {
	t    Type
	text string
	// key names the value for the guards' facts, the same however it is
	// written: {{steps.a.output}}.n, {{steps.a.output}}['n'] and
	// {{steps.a.output.n}} are steps.a.output.n.
	key string
	// absent says why the value may be absent, a member its object's
	// schema does not require; "" when it is there whenever its object is.
	absent string
	// test is how to test that it is there: has(o.n), or 'n' in o.
	test string
	// defaults says that its members not given take their schema's
	// default: it is an input's.
	defaults bool
	// known are the keys of what is known of the value where it is
	// written, as the guards' facts: a comprehension's variable over a
	// list a filter made, whose test tested each item.
	known map[string]bool
	// itemFacts, of a list a filter or a map made, are the facts its test
	// established of each item, keyed as of an item whose key is itemKey.
	itemFacts map[string]bool
}

// itemKey stands for an item's key in a list's itemFacts, and itemsKey
// for the key of an item of an item, a list a filter made.
const (
	itemKey  = "\x00item"
	itemsKey = itemKey + "[*]"
)

// rebased are the facts about the value whose key is from, its members'
// and its items', as facts about the value whose key is to.
func rebased(facts map[string]bool, from, to string) map[string]bool {
	out := map[string]bool{}
	for k := range facts {
		key, isPresent := strings.CutPrefix(k, present(""))
		rest, ok := strings.CutPrefix(key, from)
		if !ok || rest != "" && rest[0] != '.' && rest[0] != '[' {
			continue
		}
		if isPresent {
			out[present(to+rest)] = true
		} else {
			out[to+rest] = true
		}
	}
	return out
}

// member is the type of the member name of x, whose type is prop, written
// as text.
func (x typedExpr) member(name string, prop Type, text string) typedExpr {
	m := typedExpr{t: prop, text: text, key: x.key + "." + name, defaults: x.defaults, known: x.known}
	if _, given := prop.Default(); x.t.Known() && !x.t.Requires(name) && !(x.defaults && given) {
		m.absent = fmt.Sprintf("%s does not require '%s'", x.t.origin, name)
	}
	m.test = "has(" + x.text + "." + name + ")"
	if !celIdent(name) {
		m.test = "'" + name + "' in " + x.text
	}
	return m
}

// celIdent tells whether name can be written as a CEL field selection,
// o.name.
func celIdent(name string) bool {
	for i, r := range name {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return name != "" && !slices.Contains(celReserved, name)
}

// celReserved are the words CEL does not take as a field's name.
var celReserved = []string{"true", "false", "null", "in", "as", "break", "const", "continue", "else", "for",
	"function", "if", "import", "let", "loop", "package", "namespace", "return", "var", "void", "while"}

// visit checks e, where scope types the variables of the comprehensions
// around it that iterate over a list whose items the schema types.
func (m *memberCheck) visit(e celast.Expr, scope map[string]typedExpr) {
	if m.bad != nil {
		return
	}
	switch e.Kind() {
	case celast.SelectKind:
		m.typeOf(e, scope)
		m.visit(e.AsSelect().Operand(), scope)
	case celast.CallKind:
		call := e.AsCall()
		if call.IsMemberFunction() {
			m.visit(call.Target(), scope)
		}
		for _, a := range call.Args() {
			m.visit(a, scope)
		}
	case celast.ListKind, celast.MapKind, celast.StructKind:
		for _, part := range literalParts(e) {
			m.visit(part, scope)
		}
	case celast.ComprehensionKind:
		comp := e.AsComprehension()
		m.visit(comp.IterRange(), scope)
		m.visit(comp.AccuInit(), scope)
		inner := m.c.inner(comp, e.ID(), scope)
		for _, part := range []celast.Expr{comp.LoopCondition(), comp.LoopStep(), comp.Result()} {
			m.visit(part, inner)
		}
	}
}

// literalParts are the expressions the list, map or struct literal e is
// written with: its elements, or its keys and values.
func literalParts(e celast.Expr) []celast.Expr {
	var parts []celast.Expr
	switch e.Kind() {
	case celast.ListKind:
		parts = e.AsList().Elements()
	case celast.MapKind:
		for _, en := range e.AsMap().Entries() {
			parts = append(parts, en.AsMapEntry().Key(), en.AsMapEntry().Value())
		}
	case celast.StructKind:
		for _, f := range e.AsStruct().Fields() {
			parts = append(parts, f.AsStructField().Value())
		}
	}
	return parts
}

// inner is scope inside the comprehension comp, whose expression's id is
// id: its variables shadow those outside, and its iteration variable is
// typed when its list's items are.
func (c *Condition) inner(comp celast.ComprehensionExpr, id int64, scope map[string]typedExpr) map[string]typedExpr {
	inner := make(map[string]typedExpr, len(scope)+1)
	for k, v := range scope {
		inner[k] = v
	}
	delete(inner, comp.AccuVar())
	delete(inner, comp.IterVar())
	if list, ok := c.typeOf(comp.IterRange(), scope, nil); ok {
		if item, ok := list.t.Items(); ok && item.Known() {
			// Its key is its own: an f of another comprehension is another value.
			key := comp.IterVar() + "#" + strconv.FormatInt(id, 10)
			inner[comp.IterVar()] = typedExpr{t: item, text: comp.IterVar(), key: key, defaults: list.defaults,
				known: rebased(list.itemFacts, itemKey, key), itemFacts: rebased(list.itemFacts, itemsKey, itemKey)}
		}
	}
	return inner
}

// typeOf is the type the schemas give e: a reference, a comprehension's
// variable that scope types, or a member of one of these. A member the
// schema does not have is recorded in m.bad.
func (m *memberCheck) typeOf(e celast.Expr, scope map[string]typedExpr) (typedExpr, bool) {
	return m.c.typeOf(e, scope, func(bad celast.Expr, msg string) {
		if m.bad == nil {
			m.bad, m.msg = bad, msg
		}
	})
}

// typeOf is the type the schemas give e: a reference, a comprehension's
// variable that scope types, or a member of one of these. missing, when
// not nil, is told of a member the schema does not have.
func (c *Condition) typeOf(e celast.Expr, scope map[string]typedExpr, missing func(celast.Expr, string)) (typedExpr, bool) {
	switch e.Kind() {
	case celast.IdentKind:
		if t, ok := scope[e.AsIdent()]; ok {
			return t, true
		}
		g := guard{c: c}
		if v, ok := g.variable(e); ok {
			r := c.refs[c.vars[v]]
			return typedExpr{t: r.Type, text: "{{" + r.Text + "}}", key: refKey(r), defaults: r.Kind == RefInput}, true
		}
	case celast.SelectKind:
		sel := e.AsSelect()
		base, ok := c.typeOf(sel.Operand(), scope, missing)
		if !ok {
			return typedExpr{}, false
		}
		text := base.text + "." + sel.FieldName()
		prop, names, found := base.t.Property(sel.FieldName())
		if !found {
			switch j := base.t.JSON(); {
			case missing == nil:
			case j != nil && !slices.Contains(j, "object"):
				missing(e, fmt.Sprintf("%s: %s is %s, which has no property '%s'", text, base.text, typeOf(base.t), sel.FieldName()))
			default:
				missing(e, fmt.Sprintf("%s: %s has no property '%s'%s", text, base.t.origin, sel.FieldName(), propHint(sel.FieldName(), names)))
			}
			return typedExpr{}, false
		}
		if sel.IsTestOnly() {
			return typedExpr{}, false // has() is true or false
		}
		return base.member(sel.FieldName(), prop, text), true
	case celast.CallKind:
		// An item of a list ({{steps.a.output.files}}[0]), or a member
		// of an object named as a key ({{steps.a.output}}['files']).
		call := e.AsCall()
		args := call.Args()
		if call.FunctionName() != operators.Index || len(args) != 2 {
			break
		}
		base, ok := c.typeOf(args[0], scope, missing)
		if !ok {
			break
		}
		if item, ok := base.t.Items(); ok && base.t.Is("array") {
			index, key := "[...]", "[#"+strconv.FormatInt(e.ID(), 10)+"]" // an index computed is no other's
			if args[1].Kind() == celast.LiteralKind {
				if i, ok := args[1].AsLiteral().Value().(int64); ok {
					index = "[" + strconv.FormatInt(i, 10) + "]"
					key = index
				}
			}
			// An item of a list a filter made is what its test established
			// of each item it kept.
			return typedExpr{t: item, text: base.text + index, key: base.key + key, defaults: base.defaults,
				known:     with(base.known, rebased(base.itemFacts, itemKey, base.key+key)),
				itemFacts: rebased(base.itemFacts, itemsKey, itemKey)}, true
		}
		if key := args[1]; key.Kind() == celast.LiteralKind && base.t.Is("object") {
			if name, ok := key.AsLiteral().Value().(string); ok {
				if prop, _, found := base.t.Property(name); found {
					return base.member(name, prop, base.text+"['"+name+"']"), true
				}
			}
		}
	case celast.ComprehensionKind:
		// A map of each item to a value the schemas type (l.map(f, f.p)) is
		// a list of that type, whose items may be null or lack a member as
		// that value may. So is a map with a test (l.map(f, t, f.p)), and a
		// filter (l.filter(f, t)) of the items themselves, but for what the
		// test established of each item it kept: has(f.p) that it is
		// there, f.p != null that it is not null.
		comp := e.AsComprehension()
		x, ok := built(comp, true)
		if !ok {
			break
		}
		list, ok := c.typeOf(comp.IterRange(), scope, nil)
		if !ok {
			break
		}
		inner := c.inner(comp, e.ID(), scope)
		item, ok := c.typeOf(x, inner, nil)
		if !ok || !item.t.Known() {
			break
		}
		facts := map[string]bool{}
		if v, ok := inner[comp.IterVar()]; ok {
			facts = v.known
		}
		text := list.text + ".map(" + comp.IterVar() + ", " + item.text + ")"
		if test, ok := builtTest(comp); ok {
			g := guard{c: c}
			facts = with(facts, g.facts(test, true, inner))
			text = list.text + ".map(" + comp.IterVar() + ", ..., " + item.text + ")"
			if x.Kind() == celast.IdentKind && x.AsIdent() == comp.IterVar() {
				text = list.text + ".filter(" + comp.IterVar() + ", ...)"
			}
		}
		t := arrayOf(item.t, item.t.origin)
		return typedExpr{t: t, text: text, key: "map#" + strconv.FormatInt(e.ID(), 10), defaults: item.defaults,
			itemFacts: with(rebased(facts, item.key, itemKey), rebased(item.itemFacts, itemKey, itemsKey))}, true
	}
	return typedExpr{}, false
}

// built is x when comp builds a list of x, one for each item, as CEL's
// l.map(i, x) expands: the empty list, to which each step adds [x]. With
// filtered, also one that adds it only where a test holds, as l.filter(i,
// t) and l.map(i, t, x) do.
func built(comp celast.ComprehensionExpr, filtered bool) (celast.Expr, bool) {
	accu := func(e celast.Expr) bool { return e.Kind() == celast.IdentKind && e.AsIdent() == comp.AccuVar() }
	if !accu(comp.Result()) || comp.AccuInit().Kind() != celast.ListKind || len(comp.AccuInit().AsList().Elements()) != 0 {
		return nil, false
	}
	step := comp.LoopStep()
	if filtered && step.Kind() == celast.CallKind && step.AsCall().FunctionName() == operators.Conditional {
		if args := step.AsCall().Args(); len(args) == 3 && accu(args[2]) {
			step = args[1]
		}
	}
	if step.Kind() != celast.CallKind || step.AsCall().FunctionName() != operators.Add {
		return nil, false
	}
	args := step.AsCall().Args()
	if len(args) != 2 || !accu(args[0]) || args[1].Kind() != celast.ListKind || len(args[1].AsList().Elements()) != 1 {
		return nil, false
	}
	return args[1].AsList().Elements()[0], true
}

// builtTest is the test of comp, when it builds a list of the items, or
// of values of the items, where the test holds (l.filter(i, t), l.map(i,
// t, x)).
func builtTest(comp celast.ComprehensionExpr) (celast.Expr, bool) {
	step := comp.LoopStep()
	if _, ok := built(comp, true); !ok || step.Kind() != celast.CallKind || step.AsCall().FunctionName() != operators.Conditional {
		return nil, false
	}
	return step.AsCall().Args()[0], true
}

// refKey is the key of r's value among the guards' facts: its text as
// the path it names.
func refKey(r *Ref) string { return r.prefix(len(r.Path)) }

// guards refuses a use of a value that may be null where a null would make
// the expression fail: any use but comparing it (==, !=, in), asking has()
// of it, or putting it in a list or map, unless the expression has tested
// it there, as CEL's && and || and ?: let it: x != null && x > 0,
// x == null || x > 0, x != null ? x > 0 : false, has(o.f) && o.f > 0 (o.f
// being a reference of its own, {{steps.a.output.f}}). The test may come on
// either side of && and ||, which ignore an error on one side when the
// other decides. A test names the very value: {{o}} != null says nothing
// of {{o.f}}. occur are the references' occurrences, by variable.
//
// A member the expression takes from an object ({{o}}.f, {{o}}['f'], f.p
// of an item f) whose schema does not require it is no key of the map
// when it is absent, and then any use of it fails, comparing it too: it
// must be tested with has({{o}}.f) or 'f' in {{o}}, or with a test of the
// reference to the same value ({{o.f}} != null). One that may be null is
// tested as a reference that may be.
func (c *Condition) guards(ast *cel.Ast, occur []*Ref, expr string, toText []int) *condError {
	g := guard{c: c, bad: -1}
	g.visit(ast.NativeRep().Expr(), nil, false, nil) // the when's own value must be true or false
	switch {
	case g.badMember != nil:
		return &condError{msg: g.msg, offset: locate(ast, g.badMember, expr, toText)}
	case g.bad < 0:
		return nil
	}
	r := c.refs[c.vars[g.bad]]
	written := "{{" + r.Text + "}}"
	return &condError{at: occur[g.bad], msg: fmt.Sprintf(
		"%s %s, and then this when fails: test it first, as %s != null && ...",
		written, whyNull(r), written)}
}

// locate is the offset in the when's text of e, an expression of expr,
// which CEL compiled from it (toText maps its offsets to the when's text):
// a member's name, or where CEL places e; -1 when that cannot be told.
func locate(ast *cel.Ast, e celast.Expr, expr string, toText []int) int {
	return locateWith(ast, e, func(line, col int) (int, bool) { return exprOffset(expr, line, col) }, toText)
}

// locateWith is locate, with offset finding the byte offset of a CEL
// location in the expression.
func locateWith(ast *cel.Ast, e celast.Expr, offset func(line, col int) (int, bool), toText []int) int {
	loc := ast.NativeRep().SourceInfo().GetStartLocation(e.ID())
	off, ok := offset(loc.Line(), loc.Column())
	if e.Kind() == celast.SelectKind {
		off++ // a select is located at its dot: the member's name starts after it
	}
	if !ok || off >= len(toText) {
		return -1
	}
	return toText[off]
}

// guard walks a when's expression for guards.
type guard struct {
	c   *Condition
	bad int // the first variable used where null fails, or -1
	// badMember is the first member used where its absence or null fails,
	// and msg says why.
	badMember celast.Expr
	msg       string
}

// ref is the index in c.refs of the reference the variable e is, when e is
// one that may be null.
func (g *guard) ref(e celast.Expr) (int, bool) {
	v, ok := g.variable(e)
	if !ok {
		return 0, false
	}
	i := g.c.vars[v]
	return i, nullable(g.c.refs[i])
}

// variable is the variable e is, when it is one of the references'.
func (g *guard) variable(e celast.Expr) (int, bool) {
	if e.Kind() != celast.IdentKind {
		return 0, false
	}
	name, ok := strings.CutPrefix(e.AsIdent(), "_r")
	v, err := strconv.Atoi(name)
	if !ok || err != nil || v < 0 || v >= len(g.c.vars) {
		return 0, false
	}
	return v, true
}

// present is the fact that the value key names is there, though maybe
// null; the fact key itself is that it is there and not null.
func present(key string) string { return "has " + key }

// visit checks e, where the values whose keys tested holds are known not
// to be null (and the members present(key) holds, to be there); free tells
// whether e may be null there; scope types the comprehensions' variables.
func (g *guard) visit(e celast.Expr, tested map[string]bool, free bool, scope map[string]typedExpr) {
	if g.bad >= 0 || g.badMember != nil {
		return
	}
	switch e.Kind() {
	case celast.IdentKind:
		if i, ok := g.ref(e); ok && !free && !tested[refKey(g.c.refs[i])] {
			g.bad, _ = g.variable(e)
		}
		if _, ok := scope[e.AsIdent()]; ok {
			g.member(e, tested, free, scope) // an item, which its schema may let be null
		}
	case celast.SelectKind:
		sel := e.AsSelect()
		g.visit(sel.Operand(), tested, sel.IsTestOnly(), scope) // has(null.f) is false
		if !sel.IsTestOnly() {
			g.member(e, tested, free, scope)
		}
	case celast.CallKind:
		call := e.AsCall()
		args := call.Args()
		switch fn := call.FunctionName(); {
		case fn == operators.LogicalAnd && len(args) == 2:
			g.visit(args[0], with(tested, g.facts(args[1], true, scope)), false, scope)
			g.visit(args[1], with(tested, g.facts(args[0], true, scope)), false, scope)
		case fn == operators.LogicalOr && len(args) == 2:
			g.visit(args[0], with(tested, g.facts(args[1], false, scope)), false, scope)
			g.visit(args[1], with(tested, g.facts(args[0], false, scope)), false, scope)
		case fn == operators.Conditional && len(args) == 3:
			g.visit(args[0], tested, false, scope)
			g.visit(args[1], with(tested, g.facts(args[0], true, scope)), free, scope)
			g.visit(args[2], with(tested, g.facts(args[0], false, scope)), free, scope)
		case fn == operators.Equals || fn == operators.NotEquals:
			for _, a := range args {
				g.visit(a, tested, true, scope)
			}
		case fn == operators.In && len(args) == 2:
			g.visit(args[0], tested, true, scope)
			g.visit(args[1], tested, false, scope)
		default:
			if call.IsMemberFunction() {
				g.visit(call.Target(), tested, false, scope)
			}
			for _, a := range args {
				g.visit(a, tested, false, scope)
			}
			if fn == operators.Index {
				g.member(e, tested, free, scope)
			}
		}
	case celast.ListKind:
		for _, el := range e.AsList().Elements() {
			g.visit(el, tested, true, scope)
		}
	case celast.MapKind:
		for _, en := range e.AsMap().Entries() {
			g.visit(en.AsMapEntry().Key(), tested, false, scope)
			g.visit(en.AsMapEntry().Value(), tested, true, scope)
		}
	case celast.StructKind:
		for _, f := range e.AsStruct().Fields() {
			g.visit(f.AsStructField().Value(), tested, true, scope)
		}
	case celast.ComprehensionKind:
		comp := e.AsComprehension()
		g.visit(comp.IterRange(), tested, false, scope)
		inner := g.c.inner(comp, e.ID(), scope)
		if v, ok := inner[comp.IterVar()]; ok {
			tested = with(tested, v.known) // what a filter's test established of each item
		}
		for _, part := range []celast.Expr{comp.AccuInit(), comp.LoopCondition(), comp.LoopStep(), comp.Result()} {
			g.visit(part, tested, true, inner) // the accumulator's own null is CEL's business
		}
	}
}

// member checks e, a member taken from an object, an item from a list or
// a comprehension's variable: one that may be absent must have been tested
// there, however it is used, and one that may be null, where free does
// not let it be.
func (g *guard) member(e celast.Expr, tested map[string]bool, free bool, scope map[string]typedExpr) {
	m, ok := g.c.typeOf(e, scope, nil)
	if ok && len(m.known) > 0 {
		tested = with(tested, m.known) // what a filter's test established of the item it is, or is of
	}
	switch {
	case !ok:
	case m.absent != "" && !tested[present(m.key)] && !tested[m.key]:
		g.badMember = e
		g.msg = fmt.Sprintf("%s may be absent (%s), and then this when fails: test it first, as %s && ...", m.text, m.absent, m.test)
	case !free && !tested[m.key] && m.t.Known() && !m.t.Is("null") && slices.Contains(m.t.JSON(), "null"):
		g.badMember = e
		g.msg = fmt.Sprintf("%s may be null (%s allows null), and then this when fails: test it first, as %s != null && ...", m.text, m.t.origin, m.text)
	}
}

// facts are the keys of the values known not to be null (and of the
// members known to be there, present(key)) where e is truth.
func (g *guard) facts(e celast.Expr, truth bool, scope map[string]typedExpr) map[string]bool {
	switch e.Kind() {
	case celast.SelectKind:
		// has(x.f) is true only of an x that is there, whose f is there:
		// x and x.f are not null.
		sel := e.AsSelect()
		if !sel.IsTestOnly() || !truth {
			break
		}
		if x, ok := g.c.typeOf(sel.Operand(), scope, nil); ok {
			f := x.key + "." + sel.FieldName()
			return map[string]bool{x.key: true, f: true, present(f): true}
		}
	case celast.CallKind:
		call := e.AsCall()
		args := call.Args()
		switch fn := call.FunctionName(); {
		case fn == operators.LogicalNot && len(args) == 1:
			return g.facts(args[0], !truth, scope)
		case fn == operators.LogicalAnd && len(args) == 2 && truth,
			fn == operators.LogicalOr && len(args) == 2 && !truth:
			return with(g.facts(args[0], truth, scope), g.facts(args[1], truth, scope))
		case fn == operators.LogicalAnd && len(args) == 2,
			fn == operators.LogicalOr && len(args) == 2:
			return both(g.facts(args[0], truth, scope), g.facts(args[1], truth, scope))
		case fn == operators.In && len(args) == 2 && truth:
			// 'f' in x is true only of an x that is there, whose f is.
			name, isName := literalString(args[0])
			if x, ok := g.c.typeOf(args[1], scope, nil); ok && isName && x.t.Is("object") {
				return map[string]bool{x.key: true, present(x.key + "." + name): true}
			}
		case (fn == operators.Equals || fn == operators.NotEquals) && len(args) == 2:
			// x != null true, x == null false; x == 'a' true, x != 'a' false.
			for k, a := range args {
				x, ok := g.c.typeOf(a, scope, nil)
				other := args[1-k]
				if !ok || other.Kind() != celast.LiteralKind {
					continue
				}
				isNull := other.AsLiteral().Type() == types.NullType
				if isNull == (truth == (fn == operators.NotEquals)) {
					return map[string]bool{x.key: true}
				}
			}
		}
	}
	return nil
}

// literalString is the value of e when it is a string literal.
func literalString(e celast.Expr) (string, bool) {
	if e.Kind() != celast.LiteralKind {
		return "", false
	}
	s, ok := e.AsLiteral().Value().(string)
	return s, ok
}

// with is a and b together, in a new set.
func with(a, b map[string]bool) map[string]bool {
	out := make(map[string]bool, len(a)+len(b))
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

// both is what a and b have in common.
func both(a, b map[string]bool) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		if b[k] {
			out[k] = true
		}
	}
	return out
}

// whyNull says why ref's value may be null: "may be absent (a's
// output_schema does not require 'count')".
func whyNull(r *Ref) string {
	if r.Optional != "" {
		return "may be absent (" + r.Optional + ")"
	}
	return "may be null (" + r.Type.origin + " allows null)"
}

func absentOrNull(r *Ref) string {
	if r.Optional != "" {
		return "absent (" + r.Optional + ")"
	}
	return "null"
}

// Refs returns the condition's references, each written text once, in
// order: Eval takes their values in this order.
func (c *Condition) Refs() []*Ref { return c.refs }

// Eval evaluates the condition with the values of its references (JSON
// values as encoding/json decodes them, numbers as float64 or json.Number;
// nil for an absent value). A value that could not be taken (an index past
// the end of the list an answer gave) is given as the error that says why:
// the when fails with it only where the expression needs that value, so
// "size(L) > 0 && L[0] == 'x'" is false of an empty L, as CEL's && and ||
// decide with an error on the side they do not need. An error is told
// where the when is written, at the node or the reference that failed:
// FILE:LINE:COL: steps.b.when: division by zero.
func (c *Condition) Eval(values []any) (bool, error) {
	if len(values) != len(c.refs) {
		return false, fmt.Errorf("when: %d values for %d references", len(values), len(c.refs))
	}
	vars := make(map[string]any, len(c.vars))
	for v, i := range c.vars {
		if err, ok := values[i].(error); ok {
			vars[varName(v)] = types.WrapErr(&occurrenceErr{v: v, err: err})
			continue
		}
		vars[varName(v)] = celValue(values[i], c.refs[i].Type, 0)
	}
	out, _, err := c.prg.Eval(vars)
	if err != nil {
		var id int64 // the node that failed, as CEL tells it
		if ce := (*types.Err)(nil); errors.As(err, &ce) {
			id = ce.NodeID()
		}
		for i, v := range values {
			if e, ok := v.(error); ok && errors.Is(err, e) {
				ref := c.refs[i]
				if oe := (*occurrenceErr)(nil); errors.As(err, &oe) && oe.v < len(c.occur) && c.vars[oe.v] == i {
					ref = c.occur[oe.v]
				}
				return false, c.failed(id, ref, e)
			}
		}
		// A null value is blamed only for the errors a null operand makes
		// (no operator or function takes it, it has no field or index),
		// not for one of another cause, a division by zero say.
		msg := err.Error()
		byNull := strings.HasPrefix(msg, "no such overload") || strings.HasPrefix(msg, "no such key")
		for i, r := range c.refs {
			if byNull && values[i] == nil && nullable(r) {
				return false, c.failed(id, c.occurrence(i, id), fmt.Errorf("{{%s}} is %s, and the expression needs its value: %w", r.Text, absentOrNull(r), err))
			}
		}
		return false, c.failed(id, nil, err)
	}
	b, ok := out.Value().(bool)
	if !ok {
		return false, c.failed(0, nil, fmt.Errorf("it gave %v, not true or false", out.Value()))
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
// says nothing; an object's members as their properties' schemas type
// them. An integer written as one is read as one, so its digits beyond
// float64's 2^53 are kept.
func celValue(v any, t Type, depth int) any {
	switch v := v.(type) {
	case json.Number:
		if n, err := v.Int64(); err == nil && (t.Is("integer") || !t.Is("number")) {
			return n
		}
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
			prop, _, ok := t.Property(k)
			if !ok {
				prop = Type{}
			}
			out[k] = celValue(e, prop, depth+1)
		}
		return out
	}
	return v
}

func celNumber(f float64, t Type) any {
	whole := f == math.Trunc(f) && f >= math.MinInt64 && f < math.MaxInt64 // MaxInt64 rounds up to 2^63
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
	return celTypeName(strings.ReplaceAll(msg, "(_r", "("))
}

// celTypeName writes CEL's nullable types, wrapper(int), as this package
// names them: int or null.
func celTypeName(s string) string {
	for {
		i := strings.Index(s, "wrapper(")
		if i < 0 {
			return s
		}
		depth, j := 0, i+len("wrapper(")
		for ; j < len(s); j++ {
			if s[j] == '(' {
				depth++
			} else if s[j] == ')' {
				if depth == 0 {
					break
				}
				depth--
			}
		}
		if j >= len(s) {
			return s
		}
		s = s[:i] + s[i+len("wrapper("):j] + " or null" + s[j+1:]
	}
}
