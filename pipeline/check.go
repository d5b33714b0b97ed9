package pipeline

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/agentspec/agentspec/internal/glob"
	"github.com/agentspec/agentspec/internal/suggest"
	"github.com/agentspec/agentspec/spec"
)

// checker loads one pipeline file, collecting every problem it finds.
type checker struct {
	specs    *spec.Loader
	file     string
	dir      string
	doc      *spec.Document
	data     []byte // the pipeline file, as read
	p        *Pipeline
	steps    map[string]*Step
	raw      map[*Step]map[string]any // each step's mapping, as written
	edges    map[[2]string]edge       // from, to: where the dependency is first written
	errs     spec.Errors              // in the pipeline file
	specErrs spec.Errors              // in the steps' spec files
	failed   map[string]bool          // spec files whose errors are in specErrs
}

// edge is where a step's dependency on another is written.
type edge struct {
	pos   spec.Position
	label string
}

// add reports msg about the value at ptr, prefixed with its label.
func (c *checker) add(ptr, msg string) {
	c.addAt(c.doc.Pos(ptr), label(ptr), msg)
}

// addKey reports msg about the member at ptr as such, at its key, prefixed
// with its mapping's label.
func (c *checker) addKey(ptr, msg string) {
	c.addAt(c.doc.KeyPos(ptr), label(parent(ptr)), msg)
}

func (c *checker) addAt(pos spec.Position, label, msg string) {
	if label != "" {
		msg = label + ": " + msg
	}
	c.errs = append(c.errs, &spec.Error{Pos: pos, Msg: msg})
}

// keys returns m's keys in the order the file writes them.
func (c *checker) keys(m map[string]any, ptr string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.SortFunc(ks, func(a, b string) int {
		pa, pb := c.doc.KeyPos(child(ptr, a)), c.doc.KeyPos(child(ptr, b))
		if pa.Line != pb.Line {
			return pa.Line - pb.Line
		}
		if pa.Col != pb.Col {
			return pa.Col - pb.Col
		}
		return strings.Compare(a, b)
	})
	return ks
}

// checkKeys reports the members of m, at ptr, that are neither allowed nor
// x-... extensions.
func (c *checker) checkKeys(m map[string]any, ptr string, allowed []string) {
	for _, k := range c.keys(m, ptr) {
		if slices.Contains(allowed, k) || strings.HasPrefix(k, "x-") {
			continue
		}
		msg := fmt.Sprintf("unknown key %q", k)
		if hint := suggest.DidYouMean(k, allowed); hint != "" {
			msg += hint
		} else {
			msg += fmt.Sprintf(" (valid keys: %s)", strings.Join(allowed, ", "))
		}
		c.addKey(child(ptr, k), msg)
	}
}

// str returns the string at ptr in m[key]; a value of another kind is reported.
func (c *checker) str(m map[string]any, ptr, key string) (string, bool) {
	v, ok := m[key]
	if !ok {
		return "", false
	}
	s, ok := v.(string)
	if !ok {
		c.add(child(ptr, key), "expected a string, found "+describe(v))
	}
	return s, ok
}

func (c *checker) load(root map[string]any) {
	c.checkKeys(root, "", pipelineKeys)
	if v, ok := root["version"]; ok {
		if n, isNum := v.(json.Number); !isNum || n.String() != "1" {
			c.add("/version", "expected 1, found "+describe(v))
		}
	}
	c.p.Name, _ = c.str(root, "", "name")
	c.p.Description, _ = c.str(root, "", "description")
	c.str(root, "", "$schema")
	c.loadCache(root)
	c.loadInputs(root)

	steps, ok := root["steps"].(map[string]any)
	switch {
	case !ok:
		c.add("/steps", "expected a mapping of step names to steps, found "+describe(root["steps"]))
		return
	case len(steps) == 0:
		c.add("/steps", "a pipeline has at least one step")
		return
	}
	c.raw = map[*Step]map[string]any{}
	for _, name := range c.keys(steps, "/steps") {
		c.loadStep(name, steps[name])
	}
	for _, st := range c.p.Steps {
		c.checkStep(st)
	}
	c.loadOutputs(root)
	c.graph()
}

func (c *checker) loadCache(root map[string]any) {
	v, ok := root["cache"]
	if !ok {
		return
	}
	switch v := v.(type) {
	case bool:
		c.p.Cache = &Cache{Enabled: v}
		return
	case map[string]any:
		c.checkKeys(v, "/cache", []string{"dir"})
		dir, ok := v["dir"].(string)
		if _, given := v["dir"]; given && (!ok || dir == "") {
			c.add("/cache/dir", "expected a directory, found "+describe(v["dir"]))
			return
		}
		c.p.Cache = &Cache{Enabled: true, Dir: dir}
		return
	}
	c.add("/cache", "expected true, false or a mapping (dir: .agentspec-cache), found "+describe(v))
}

// inputsURL is the URL the inputs schema is compiled under.
const inputsURL = "agentspec://pipeline/inputs.json"

func (c *checker) loadInputs(root map[string]any) {
	v, ok := root["inputs"]
	if !ok {
		return
	}
	const ptr = "/inputs"
	sch, ok := v.(map[string]any)
	if !ok {
		c.add(ptr, "expected a JSON Schema of the inputs (type: object, properties: ...), found "+describe(v))
		return
	}
	if t, _ := sch["type"].(string); t != "object" {
		c.add(ptr, "expected an object schema (type: object): the inputs are named values, --var NAME=VALUE")
		return
	}
	if errs := c.doc.CheckSchema(ptr); errs != nil {
		c.errs = append(c.errs, errs...) // each where it is written, as in a spec's output_schema
		return
	}
	comp := jsonschema.NewCompiler()
	comp.DefaultDraft(jsonschema.Draft2020)
	compiled, err := func() (*jsonschema.Schema, error) {
		if err := comp.AddResource(inputsURL, sch); err != nil {
			return nil, err
		}
		return comp.Compile(inputsURL)
	}()
	if err != nil {
		c.add(ptr, "not a valid JSON Schema: "+schemaError(err))
		return
	}
	c.p.Inputs = &Inputs{Schema: sch, Compiled: compiled, Type: schemaType(sch, "the pipeline's inputs schema"), Pos: c.doc.Pos(ptr)}
}

// schemaError is the gist of a schema compiler's error: where the schema
// first breaks the meta-schema, and how.
func schemaError(err error) string {
	var se *jsonschema.SchemaValidationError
	if errors.As(err, &se) {
		err = se.Err
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return strings.Join(strings.Fields(strings.ReplaceAll(err.Error(), inputsURL, "inputs")), " ")
	}
	for len(ve.Causes) > 0 {
		ve = ve.Causes[0]
	}
	return fmt.Sprintf("at /%s: %s", strings.Join(ve.InstanceLocation, "/"), ve.ErrorKind.LocalizedString(message.NewPrinter(language.English)))
}

func (c *checker) loadStep(name string, v any) {
	ptr := child("/steps", name)
	st := &Step{Name: name, Pos: c.doc.KeyPos(ptr), As: "item", OnItemError: "fail"}
	if !stepName().MatchString(name) {
		c.addKey(ptr, fmt.Sprintf("step name %q must match [a-z][a-z0-9_-]*: lowercase letters, digits, _ and -, starting with a letter", name))
	}
	c.p.Steps = append(c.p.Steps, st)
	c.steps[name] = st
	m, ok := v.(map[string]any)
	if !ok {
		c.add(ptr, "expected a step (spec: ..., input: ...), found "+describe(v))
		return
	}
	c.raw[st] = m
	if _, ok := m["for_each"]; ok {
		st.ForEach = &ForEach{Pos: c.doc.Pos(ptr + "/for_each")}
	}
	c.checkKeys(m, ptr, stepKeys)
	st.Description, _ = c.str(m, ptr, "description")
	c.loadSpec(st, m, ptr)
}

// loadSpec loads the agent spec a step runs, from its file or inline.
func (c *checker) loadSpec(st *Step, m map[string]any, ptr string) {
	sptr := ptr + "/spec"
	switch v := m["spec"].(type) {
	case nil:
		if _, given := m["spec"]; !given {
			c.addKey(ptr, "missing spec: every step names the agent spec it runs (spec: agents/NAME.yaml, or an inline mapping)")
			return
		}
	case string:
		st.SpecPath = v
		path := v
		if !filepath.IsAbs(path) {
			path = filepath.Join(c.dir, path)
		}
		if sameFile(path, c.file) {
			c.add(sptr, fmt.Sprintf("%s is this pipeline; a step runs an agent spec", v))
			return
		}
		data, err := spec.ReadFile(path)
		if err != nil {
			var es spec.Errors
			if !errors.As(err, &es) {
				c.add(sptr, fmt.Sprintf("%s: %s", v, readError(err)))
			} else if !c.failed[path] { // too large to be read; two steps run one spec: its errors once
				c.specErrs = append(c.specErrs, es...)
				c.failed[path] = true
			}
			return
		}
		if IsPipeline(data) {
			c.add(sptr, fmt.Sprintf("%s is a pipeline, not an agent spec; a step runs an agent spec (pipelines do not nest)", v))
			return
		}
		s, err := c.specs.Load(path, data)
		if err != nil {
			var es spec.Errors
			switch {
			case c.failed[path]: // two steps run one spec: its errors once
			case errors.As(err, &es):
				c.specErrs = append(c.specErrs, es...)
			default:
				c.add(sptr, fmt.Sprintf("%s: %v", v, err))
			}
			c.failed[path] = true
			return
		}
		c.useSpec(st, s)
		st.specData = data
		return
	case map[string]any:
		st.SpecPointer = sptr
		s, err := c.specs.LoadValue(c.doc, sptr)
		if err != nil {
			var es spec.Errors
			if errors.As(err, &es) {
				c.errs = append(c.errs, es...)
			} else {
				c.add(sptr, err.Error())
			}
			return
		}
		c.useSpec(st, s)
		st.specData = c.data
		return
	}
	c.add(sptr, "expected a path to an agent spec, or an agent spec mapping, found "+describe(m["spec"]))
}

func (c *checker) useSpec(st *Step, s *spec.Spec) {
	st.Spec = s
	if s.OutputSchema == nil {
		st.Output = stringType(st.Name + " has no output_schema, so its output")
		return
	}
	var sch map[string]any
	dec := json.NewDecoder(bytes.NewReader(s.OutputSchema))
	dec.UseNumber()
	if err := dec.Decode(&sch); err != nil {
		return // spec checked it: an object schema
	}
	st.Output = schemaType(sch, st.Name+"'s output_schema")
}

// sameFile tells whether paths a and b name one file.
func sameFile(a, b string) bool {
	ia, errA := os.Stat(a)
	ib, errB := os.Stat(b)
	if errA == nil && errB == nil {
		return os.SameFile(ia, ib)
	}
	absA, errA := filepath.Abs(a)
	absB, errB := filepath.Abs(b)
	return errA == nil && errB == nil && absA == absB
}

// checkStep checks what a step says beyond its spec, now that every step
// is known.
func (c *checker) checkStep(st *Step) {
	m, ok := c.raw[st]
	if !ok {
		return
	}
	ptr := child("/steps", st.Name)
	if st.FanOut() {
		c.loadFanOutKeys(st, m, ptr)
		c.loadForEach(st, m["for_each"], ptr+"/for_each")
	} else {
		for _, k := range []string{"as", "max_parallel", "on_item_error"} {
			if _, ok := m[k]; ok {
				c.addKey(child(ptr, k), k+" is for a fan-out step: give the step a for_each, or remove "+k)
			}
		}
	}
	if s, ok := c.str(m, ptr, "input"); ok {
		st.Input = c.template(ptr+"/input", s, st, st.FanOut())
	}
	c.loadVars(st, m, ptr)
	c.loadNeeds(st, m, ptr)
	if s, ok := c.str(m, ptr, "when"); ok {
		errs := len(c.errs)
		st.When = c.template(ptr+"/when", s, st, false)
		if len(c.errs) == errs { // its references are sound: the expression's turn
			cond, e := compileCondition(st.When, label(ptr+"/when"), c.textPositions(st.When))
			switch {
			case e != nil && e.at != nil:
				c.addAt(e.at.Pos, label(ptr+"/when"), e.msg)
			case e != nil && e.offset >= 0:
				c.addAt(c.textPos(st.When, e.offset), label(ptr+"/when"), e.msg)
			case e != nil:
				c.add(ptr+"/when", e.msg)
			}
			st.Condition = cond
		}
	}
}

func (c *checker) loadFanOutKeys(st *Step, m map[string]any, ptr string) {
	if v, ok := m["as"]; ok {
		s, isStr := v.(string)
		switch {
		case !isStr || !itemName().MatchString(s):
			c.add(ptr+"/as", "expected a name for the item (letters, digits, _ and -), found "+describe(v))
		case s == "inputs" || s == "steps":
			c.add(ptr+"/as", fmt.Sprintf("%q names a kind of reference already ({{%s.NAME}}); choose another name for the item", s, s))
		default:
			st.As = s
		}
	}
	if v, ok := m["max_parallel"]; ok {
		n, err := strconv.Atoi(fmt.Sprint(v))
		if _, isNum := v.(json.Number); !isNum || err != nil || n < 1 {
			c.add(ptr+"/max_parallel", "expected a positive integer, found "+describe(v))
		} else {
			st.MaxParallel = n
		}
	}
	if v, ok := m["on_item_error"]; ok {
		s, _ := v.(string)
		if s != "fail" && s != "skip" {
			c.add(ptr+"/on_item_error", "expected fail or skip, found "+describe(v))
		} else {
			st.OnItemError = s
		}
	}
}

const forEachWant = `expected one reference to an array ("{{steps.STEP.output.LIST}}") or {glob: PATTERN}`

func (c *checker) loadForEach(st *Step, v any, ptr string) {
	fe := st.ForEach
	switch v := v.(type) {
	case string:
		reported := len(c.errs)
		t := c.template(ptr, v, st, false)
		fe.Template = t
		if len(c.errs) > reported {
			return
		}
		ref := t.Whole()
		if ref == nil {
			c.add(ptr, forEachWant+", found "+describe(v))
			return
		}
		// A null array has no items, as an absent one has none.
		if !ref.Type.nonNull().Is("array") {
			c.addAt(ref.Pos, label(ptr), fmt.Sprintf("%s is %s, not an array; for_each needs an array", ref.Text, typeOf(ref.Type)))
			return
		}
		fe.Item, _ = ref.Type.nonNull().Items()
		return
	case map[string]any:
		c.checkKeys(v, ptr, []string{"glob"})
		pat, ok := v["glob"].(string)
		if !ok {
			c.add(ptr+"/glob", "expected a pattern of workspace files (glob: inbox/*.md), found "+describe(v["glob"]))
			return
		}
		if _, err := spec.WorkspacePath(pat); err != nil {
			c.add(ptr+"/glob", err.Error()+": a glob matches files inside the workspace")
			return
		}
		if !glob.ValidDoublestar(pat) {
			c.add(ptr+"/glob", fmt.Sprintf("%q is not a valid glob pattern", pat))
			return
		}
		fe.Glob = pat
		fe.Item = stringType("each item of " + st.Name + "'s for_each glob (a workspace path)")
		return
	}
	c.add(ptr, forEachWant+", found "+describe(v))
}

// typeOf says what a value of type t is: "a string by triage's output_schema".
func typeOf(t Type) string {
	if !t.Known() {
		return "any value by " + t.origin + " (it gives no type)"
	}
	what := article(t.String())
	if t.desc != "" {
		return what
	}
	return what + " by " + t.origin
}

func article(s string) string {
	if s != "" && strings.ContainsRune("aeiou", rune(s[0])) {
		return "an " + s
	}
	return "a " + s
}

func (c *checker) loadVars(st *Step, m map[string]any, ptr string) {
	vptr := ptr + "/vars"
	raw, given := m["vars"]
	vars, ok := raw.(map[string]any)
	if given && !ok {
		c.add(vptr, "expected a mapping of placeholder names to values, found "+describe(raw))
	}
	for _, k := range c.keys(vars, vptr) {
		kptr := child(vptr, k)
		s, isStr := vars[k].(string)
		if !isStr {
			c.add(kptr, "expected a string, found "+describe(vars[k])+"; quote it")
			continue
		}
		st.Vars = append(st.Vars, &Var{Name: k, Pos: c.doc.KeyPos(kptr), Value: c.template(kptr, s, st, st.FanOut())})
	}
	if st.Spec == nil {
		return
	}
	named := st.SpecPath
	if named == "" {
		named = "the inline spec"
	}
	capNames := st.Spec.CapabilityPlaceholders()
	have := union(spec.Placeholders(append(slices.Clone(st.Spec.Instructions), st.Spec.Description)...), capNames)
	for _, v := range st.Vars {
		if slices.Contains(have, v.Name) {
			continue
		}
		msg := fmt.Sprintf("%s has no placeholder {{%s}}", named, v.Name)
		switch c := suggest.Closest(v.Name, have); {
		case c != "":
			msg += fmt.Sprintf("; did you mean {{%s}}?", c)
		case len(have) > 0:
			msg += "; it has " + braced(have)
		default:
			msg += "; it has none"
		}
		c.addKey(child(vptr, v.Name), msg)
	}
	// The description's placeholders may be filled, and need not be: it is
	// not sent to the model.
	need := union(spec.Placeholders(st.Spec.Instructions...), capNames)
	for _, name := range need {
		if slices.ContainsFunc(st.Vars, func(v *Var) bool { return v.Name == name }) {
			continue
		}
		msg := fmt.Sprintf("%s uses {{%s}}, which vars does not fill", named, name)
		if root, _, _ := strings.Cut(name, "."); root == "steps" || root == "inputs" || st.FanOut() && root == st.As {
			msg += fmt.Sprintf("; a spec's placeholders are filled by vars only: vars: {NAME: \"{{%s}}\"}, and {{NAME}} in the spec", name)
		}
		if given {
			c.addKey(vptr, msg)
		} else {
			c.addAt(st.Pos, label(ptr), msg)
		}
	}
}

// union is a with the names of b it lacks added, in order.
func union(a, b []string) []string {
	for _, n := range b {
		if !slices.Contains(a, n) {
			a = append(a, n)
		}
	}
	return a
}

func braced(names []string) string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = "{{" + n + "}}"
	}
	return strings.Join(out, ", ")
}

func (c *checker) loadNeeds(st *Step, m map[string]any, ptr string) {
	nptr := ptr + "/needs"
	raw, given := m["needs"]
	if !given {
		return
	}
	list, ok := raw.([]any)
	if !ok {
		c.add(nptr, "expected a list of step names, found "+describe(raw))
		return
	}
	for i, v := range list {
		iptr := nptr + "/" + strconv.Itoa(i)
		name, ok := v.(string)
		switch {
		case !ok:
			c.add(iptr, "expected a step name, found "+describe(v))
			continue
		case name == st.Name:
			c.add(iptr, "a step cannot need itself")
			continue
		case c.steps[name] == nil:
			c.add(iptr, fmt.Sprintf("no step named '%s'%s", name, c.stepHint(name)))
			continue
		}
		st.Needs = append(st.Needs, name)
		c.edge(st.Name, name, edge{pos: c.doc.Pos(iptr), label: label(iptr)})
	}
}

func (c *checker) stepHint(name string) string {
	names := make([]string, len(c.p.Steps))
	for i, s := range c.p.Steps {
		names[i] = s.Name
	}
	if h := suggest.Closest(name, names); h != "" {
		return fmt.Sprintf("; did you mean '%s'?", h)
	}
	return "; the steps are " + strings.Join(names, ", ")
}

func (c *checker) edge(from, to string, e edge) {
	k := [2]string{from, to}
	if _, ok := c.edges[k]; !ok {
		c.edges[k] = e
	}
}

// depends records the dependencies of st that t's references imply.
func (c *checker) depends(st *Step, t *Template) {
	for _, r := range t.Refs() {
		if (r.Kind == RefOutput || r.Kind == RefOutputs) && r.Name != st.Name {
			c.edge(st.Name, r.Name, edge{pos: r.Pos, label: r.Text})
		}
	}
}

func (c *checker) loadOutputs(root map[string]any) {
	raw, given := root["outputs"]
	if !given {
		return
	}
	outs, ok := raw.(map[string]any)
	if !ok {
		c.add("/outputs", "expected a mapping of output names to templates, found "+describe(raw))
		return
	}
	for _, k := range c.keys(outs, "/outputs") {
		kptr := child("/outputs", k)
		s, isStr := outs[k].(string)
		if !isStr {
			c.add(kptr, "expected a string, found "+describe(outs[k]))
			continue
		}
		c.p.Outputs = append(c.p.Outputs, &Output{Name: k, Pos: c.doc.KeyPos(kptr), Value: c.template(kptr, s, nil, false)})
	}
}

// template parses the string s, the value at ptr, and checks its
// references: st is the step it belongs to (nil for outputs), and item tells
// whether the step's for_each item is defined there.
func (c *checker) template(ptr, s string, st *Step, item bool) *Template {
	at := c.doc.Pos(ptr)
	parts, raws := parseTemplate(s)
	t := &Template{Text: s, Pos: at, Parts: parts}
	refs := t.Refs()
	var written []spec.Position // where each byte of s is, when the file reads back as s
	if len(raws) > 0 && at.Line > 0 {
		written = scalarPositions(c.doc.Line, at, s)
	}
	for i, r := range raws {
		ref := refs[i]
		if written != nil {
			ref.Pos = written[r.offset]
		} else {
			ref.Pos = c.refine(at, s[:r.offset], r.raw)
		}
		if r.bad != "" {
			c.addAt(ref.Pos, label(ptr), r.bad)
			continue
		}
		c.resolve(ref, r, st, item)
	}
	if st != nil {
		c.depends(st, t)
	}
	return t
}

// resolve checks the reference r, filling in ref.
func (c *checker) resolve(ref *Ref, r *rawRef, st *Step, item bool) {
	fail := func(text, msg string) { c.addAt(ref.Pos, text, msg) }
	elems := r.elems
	switch {
	case r.root == "inputs":
		if len(elems) == 0 || elems[0].Key == "" {
			fail(r.text, "name an input: {{inputs.NAME}}")
			return
		}
		name := elems[0].Key
		base := "inputs." + name
		var (
			t        Type
			optional string
		)
		if c.p.Inputs != nil {
			var names []string
			var ok bool
			if t, names, ok = c.p.Inputs.Type.Property(name); !ok {
				fail(base, fmt.Sprintf("the pipeline's inputs schema has no property '%s'%s", name, propHint(name, names)))
				return
			}
			if _, given := t.Default(); !given && !c.p.Inputs.Type.Requires(name) {
				optional = fmt.Sprintf("the pipeline's inputs schema does not require '%s', nor give it a default", name)
			}
		} else {
			t = stringType("the pipeline has no inputs schema, so " + base)
		}
		ref.Kind, ref.Name, ref.Path = RefInput, name, elems[1:]
		ref.Type, ref.Optional = c.walk(t, base, elems[1:], ref.Pos, true)
		ref.Optional = cmp.Or(optional, ref.Optional)
	case r.root == "steps":
		if len(elems) == 0 || elems[0].Key == "" {
			fail(r.text, "name a step: {{steps.STEP.output}}")
			return
		}
		name := elems[0].Key
		base := "steps." + name
		target := c.steps[name]
		switch {
		case target == nil:
			fail(base, fmt.Sprintf("no step named '%s'%s", name, c.stepHint(name)))
			return
		case st != nil && target == st:
			fail(base, "a step cannot use its own answer")
			return
		case len(elems) < 2 || elems[1].Key != "output" && elems[1].Key != "outputs":
			fail(base, fmt.Sprintf("expected steps.%s.output or steps.%s.outputs", name, name))
			return
		}
		base += "." + elems[1].Key
		ref.Name, ref.Path = name, elems[2:]
		var t Type
		switch {
		case elems[1].Key == "output" && target.FanOut():
			fail(base, fmt.Sprintf("%s fans out (for_each): its answers are steps.%s.outputs, an array in item order", name, name))
			return
		case elems[1].Key == "outputs" && !target.FanOut():
			fail(base, fmt.Sprintf("%s is not a fan-out step (it has no for_each): its answer is steps.%s.output", name, name))
			return
		case elems[1].Key == "output":
			ref.Kind, t = RefOutput, target.Output
		default:
			ref.Kind, t = RefOutputs, arrayOf(target.Output, target.Output.origin)
			t.desc = ""
			if target.Output.desc != "" {
				t.desc = "steps." + name + ".outputs (" + name + " has no output_schema)"
			}
		}
		ref.Type, ref.Optional = c.walk(t, base, elems[2:], ref.Pos, false)
	case st != nil && st.FanOut() && r.root == st.As && item:
		ref.Kind, ref.Name, ref.Path = RefItem, r.root, elems
		// The items of an input's array have their defaults, as the input.
		over := st.ForEach.Template
		fromInput := over != nil && over.Whole() != nil && over.Whole().Kind == RefInput
		ref.Type, ref.Optional = c.walk(st.ForEach.Item, r.root, elems, ref.Pos, fromInput)
	case st != nil && st.FanOut() && r.root == st.As:
		fail(r.root, fmt.Sprintf("the item %s is defined in the step's input and vars, one job per item; for_each and when are the step's own", r.root))
	case st != nil && r.root == st.As:
		fail(r.root, fmt.Sprintf("%s is a for_each item, and step %s has no for_each", r.root, st.Name))
	default:
		roots := []string{"inputs", "steps"}
		if st != nil && st.FanOut() && item {
			roots = append(roots, st.As)
		}
		msg := fmt.Sprintf("unknown reference '%s': a reference starts with %s", r.root, strings.Join(quoteAll(roots), ", "))
		if h := suggest.Closest(r.root, roots); h != "" {
			msg += fmt.Sprintf("; did you mean '%s'?", h)
		}
		fail(r.root, msg)
	}
}

// atMost says how many items an array has at most: "no items", "at most 1
// item", "at most 3 items".
func atMost(n int) string {
	switch n {
	case 0:
		return "no items"
	case 1:
		return "at most 1 item"
	}
	return fmt.Sprintf("at most %d items", n)
}

func quoteAll(s []string) []string {
	out := make([]string, len(s))
	for i, e := range s {
		out[i] = "'" + e + "'"
	}
	return out
}

func propHint(name string, names []string) string {
	if h := suggest.Closest(name, names); h != "" {
		return fmt.Sprintf("; did you mean '%s'?", h)
	}
	if len(names) == 0 {
		return "; it lists none"
	}
	return "; it has " + strings.Join(quoteAll(names), ", ")
}

// walk follows elems into a value of type t, the value base names, and
// returns the type at the end, and why the value there may be absent (""
// when it is always there: every member on the way is required by its
// schema, or the schema says nothing of it, and no value on the way may be
// null); a step the type does not allow is reported.
//
// defaults says that the value's members not given take their schema's
// default (an input's, as Run fills them): a member with one is there.
func (c *checker) walk(t Type, base string, elems []Elem, at spec.Position, defaults bool) (_ Type, optional string) {
	here := base
	for _, e := range elems {
		next := here + e.String()
		if j := t.JSON(); optional == "" && slices.Contains(j, "null") && len(j) > 1 {
			// A member or item of a null is null: what the path leads to
			// may be absent, however required it is of the object.
			optional = fmt.Sprintf("%s allows %s to be null", t.origin, here)
		}
		if e.Key == "" {
			item, most, ok := t.Item(e.Index)
			if !ok {
				c.addAt(at, next, fmt.Sprintf("%s is %s, not an array", t.what(here), typeOf(t)))
				return Type{}, ""
			}
			if most >= 0 && e.Index >= most {
				c.addAt(at, next, fmt.Sprintf("index %d is past the end of %s, which has %s by %s", e.Index, t.what(here), atMost(most), t.origin))
				return Type{}, ""
			}
			t, here = item, next
			continue
		}
		prop, names, ok := t.Property(e.Key)
		if !ok {
			if j := t.JSON(); j != nil && !slices.Contains(j, "object") {
				c.addAt(at, next, fmt.Sprintf("%s is %s, which has no property '%s'", t.what(here), typeOf(t), e.Key))
			} else {
				c.addAt(at, next, fmt.Sprintf("%s has no property '%s'%s", t.origin, e.Key, propHint(e.Key, names)))
			}
			return Type{}, ""
		}
		if _, given := prop.Default(); optional == "" && t.Known() && !t.Requires(e.Key) && !(defaults && given) {
			optional = fmt.Sprintf("%s does not require '%s'", t.origin, e.Key)
		}
		t, here = prop, next
	}
	return t, optional
}

// refine narrows at, where a string value starts, to the column of text,
// written after prefix in the value, when the source shows it there: a
// quoted or plain scalar on one line. Otherwise it returns at.
func (c *checker) refine(at spec.Position, prefix, text string) spec.Position {
	if strings.ContainsAny(prefix, "\n\\") || at.Line == 0 {
		return at
	}
	line := c.doc.Line(at.Line)
	i := 0
	for col := 1; col < at.Col && i < len(line); col++ {
		_, size := utf8.DecodeRuneInString(line[i:])
		i += size
	}
	if i >= len(line) {
		return at
	}
	col := at.Col + utf8.RuneCountInString(prefix)
	i += len(prefix)
	if line[i-len(prefix)] == '"' || line[i-len(prefix)] == '\'' {
		col++
		i++
	}
	if i <= len(line) && strings.HasPrefix(line[i:], text) {
		at.Col = col
	}
	return at
}

// describe says what a value found is, for "expected ..., found ...".
func describe(v any) string {
	switch v := v.(type) {
	case nil:
		return "nothing (null)"
	case string:
		if utf8.RuneCountInString(v) > 60 {
			v = string([]rune(v)[:57]) + "..."
		}
		return strconv.Quote(v) + " (a string)"
	case bool:
		return strconv.FormatBool(v) + " (a boolean)"
	case json.Number:
		return v.String() + " (a number)"
	case []any:
		return "a list"
	case map[string]any:
		return "a mapping"
	}
	return fmt.Sprint(v)
}

// JSON pointers and their labels, as spec writes them.

func child(ptr, token string) string {
	if strings.ContainsAny(token, "~/") {
		token = strings.NewReplacer("~", "~0", "/", "~1").Replace(token)
	}
	return ptr + "/" + token
}

func parent(ptr string) string { return ptr[:max(0, strings.LastIndexByte(ptr, '/'))] }

// label renders a JSON pointer as a path: "/steps/fix/vars/path" becomes
// "steps.fix.vars.path".
func label(ptr string) string {
	if ptr == "" {
		return ""
	}
	var b strings.Builder
	for _, t := range strings.Split(ptr[1:], "/") {
		t = strings.NewReplacer("~1", "/", "~0", "~").Replace(t)
		switch {
		case t != "" && strings.Trim(t, "0123456789") == "":
			b.WriteString("[" + t + "]")
		case t != "" && strings.Trim(t, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-$") == "":
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(t)
		default:
			b.WriteString("[" + strconv.Quote(t) + "]")
		}
	}
	return b.String()
}
