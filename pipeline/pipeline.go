package pipeline

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"

	"github.com/agentspec/agentspec/runtime"
	"github.com/agentspec/agentspec/runtime/providers"
	"github.com/agentspec/agentspec/spec"
)

// Pipeline is a loaded pipeline file whose every reference, dependency and
// step spec has been checked.
type Pipeline struct {
	File        string // the path it was loaded from, as given
	Version     int    // 1
	Name        string
	Description string
	// Inputs is the JSON Schema of the pipeline's inputs; nil when the file
	// gives none (every {{inputs.NAME}} is then a string).
	Inputs *Inputs
	// Cache is the file's cache: setting, for every step whose spec has no
	// cache: key of its own; nil when not given.
	Cache *Cache
	// Steps are the steps in the order the file writes them.
	Steps []*Step
	// Order is the steps in an order that runs every step after the steps
	// it depends on; of the steps ready at once, the one written first comes
	// first.
	Order []*Step
	// Outputs are the outputs mapping's entries, in the order written.
	Outputs []*Output

	// credentials is what CheckCredentials and the jobs of Run found in
	// the AWS credential chain, so that they ask it once; a Pipeline not
	// made by a Loader has none, and each asks.
	credentials *providers.CredentialCache
}

// Step returns the step named name, or nil.
func (p *Pipeline) Step(name string) *Step {
	for _, s := range p.Steps {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// Inputs is the schema of a pipeline's inputs.
type Inputs struct {
	Schema   map[string]any     // as written
	Compiled *jsonschema.Schema // for validating the inputs of a run
	Type     Type
	Pos      spec.Position
}

// InputType is the type the checks give {{inputs.NAME}}: the inputs
// schema's property name, through $ref, anyOf, oneOf, allOf and
// additionalProperties, or a string when the pipeline has no inputs schema.
// ok is false when the schema has no such input.
func (p *Pipeline) InputType(name string) (t Type, ok bool) {
	if p.Inputs == nil {
		return stringType("the pipeline has no inputs schema, so inputs." + name), true
	}
	t, _, ok = p.Inputs.Type.Property(name)
	return t, ok
}

// InputNames are the names of the pipeline's inputs, sorted: those its
// inputs schema lists (through $ref, anyOf, oneOf and allOf) and those its
// templates reference, which additionalProperties types, or every input
// when the pipeline has no inputs schema.
func (p *Pipeline) InputNames() []string {
	var names []string
	if p.Inputs != nil {
		names = p.Inputs.Type.Properties()
	}
	for _, name := range inputNames(p) {
		if _, ok := p.InputType(name); ok && !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// InputValue is text, given for the input name (--var NAME=TEXT), as the
// value its type (InputType) says it is: the text itself when the input may
// be a string, or its type is not known; otherwise the JSON value text
// spells, which must be of a type the input allows (a boolean may be
// spelled as strconv.ParseBool reads it too: 1, t, True...). An input the
// schema does not have keeps the text, for the schema's check to refuse.
func (p *Pipeline) InputValue(name, text string) (any, error) {
	t, ok := p.InputType(name)
	kinds := t.JSON()
	if !ok || kinds == nil || slices.Contains(kinds, "string") {
		return text, nil
	}
	if v, ok := jsonOf(text, kinds); ok {
		return v, nil
	}
	if slices.Contains(kinds, "boolean") {
		if b, err := strconv.ParseBool(strings.TrimSpace(text)); err == nil {
			return b, nil
		}
	}
	return nil, fmt.Errorf("input %s is %s, and %q is not one", name, article(t.String()), text)
}

// jsonOf is the one JSON value text holds, when it is of one of kinds.
func jsonOf(text string, kinds []string) (any, bool) {
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, false // more after the value
	}
	kind := jsonKind(v)
	if n, isNum := v.(json.Number); isNum {
		kind = "number"
		if integral(n.String()) {
			kind = "integer"
		}
	}
	return v, slices.Contains(kinds, kind) || kind == "integer" && slices.Contains(kinds, "number")
}

// integral tells whether the JSON number n is an integer (3, 3.0, 1e3 and
// 1500e-2 are; 3.5 is not), as JSON Schema counts integers.
func integral(n string) bool {
	mant, exp, _ := strings.Cut(strings.ToLower(strings.TrimPrefix(n, "-")), "e")
	whole, frac, _ := strings.Cut(mant, ".")
	digits := strings.TrimLeft(whole+frac, "0")
	point := len(digits) - len(frac) // where the point is, counted in digits
	digits = strings.TrimRight(digits, "0")
	if digits == "" {
		return true // zero
	}
	if exp != "" {
		e, err := strconv.Atoi(exp)
		switch {
		case err != nil: // an exponent too large for an int: integral unless negative
			return !strings.HasPrefix(exp, "-")
		case e >= len(digits):
			return true
		case e < -len(n):
			return false
		}
		point += e
	}
	return len(digits) <= point
}

// Cache is a pipeline's cache: setting: true, false, or {dir: DIR} (on).
type Cache struct {
	Enabled bool
	Dir     string // "" for the default directory
}

// Step is one step of a pipeline: an agent spec, run once or once per item.
type Step struct {
	Name        string
	Pos         spec.Position // where its name is written
	Description string
	// SpecPath is the spec: path as written; "" for an inline spec.
	SpecPath string
	// SpecPointer is where an inline spec lies in the pipeline file, as a
	// JSON pointer ("/steps/fix/spec"); "" for a spec of its own file.
	SpecPointer string
	// Spec is the step's agent spec, loaded and checked. Its File is the
	// spec file's path (the pipeline file's directory joined with SpecPath),
	// or the pipeline file for an inline spec.
	Spec *spec.Spec
	// Input is the user message; nil when the step gives none.
	Input *Template
	// Vars fill the spec's {{placeholders}}, in the order written.
	Vars []*Var
	// Needs are the steps named by needs:, as written.
	Needs []string
	// ForEach makes the step a fan-out: one job per item. nil otherwise.
	ForEach *ForEach
	// As names the current item in templates ("item" unless given).
	As          string
	MaxParallel int    // at most this many items at once; 0: no bound but the run's
	OnItemError string // "fail" or "skip"
	// When is the step's condition as written, with its references
	// checked; nil when the step always runs. Condition is it compiled and
	// type-checked (CEL), ready to evaluate.
	When      *Template
	Condition *Condition
	// Deps are the steps this one runs after: those it references and those
	// it needs, in the order the file writes them.
	Deps []string
	// Output is the type of the step's answer: its spec's output_schema, or
	// a string. For a fan-out step it is one item's answer.
	Output Type

	// itemBase is what the item specs of a glob fan-out are copied from
	// (see keyItemFiles); nil for any other step.
	itemBase *spec.Spec
	// specData is the file Spec was loaded from, as it was read then (the
	// pipeline file for an inline spec): what a job on a queue's workers
	// runs. nil for a step made in Go.
	specData []byte
}

// FanOut tells whether the step runs once per item.
func (s *Step) FanOut() bool { return s.ForEach != nil }

// Var is one entry of a step's vars.
type Var struct {
	Name  string
	Pos   spec.Position // where the key is written
	Value *Template
}

// VarsAsWritten are the values of the step's vars as the pipeline file
// tells them before any job runs: a var whose template holds no reference
// has the value every job gives it; one that holds references has the
// template with each written as {{reference}}, standing for the value
// each job gives it, and its name is in perJob, in the order written.
func (s *Step) VarsAsWritten() (vars map[string]string, perJob []string) {
	vars = make(map[string]string, len(s.Vars))
	for _, v := range s.Vars {
		var b strings.Builder
		for _, p := range v.Value.Parts {
			if p.Ref == nil {
				b.WriteString(p.Literal)
				continue
			}
			b.WriteString("{{" + p.Ref.Text + "}}")
		}
		vars[v.Name] = b.String()
		if len(v.Value.Refs()) > 0 {
			perJob = append(perJob, v.Name)
		}
	}
	return vars, perJob
}

// ForEach is what a fan-out step iterates over: the array a template
// resolves to, or the workspace files a glob matches.
type ForEach struct {
	// Template is the reference to an array; nil for a glob.
	Template *Template
	// Glob is a doublestar pattern relative to the workspace (the dialect of
	// input_globs); "" for a template.
	Glob string
	Pos  spec.Position
	// Item is the type of one item: the array's items, or a string (a
	// workspace-relative path) for a glob.
	Item Type
}

// Output is one entry of the pipeline's outputs.
type Output struct {
	Name  string
	Pos   spec.Position // where the key is written
	Value *Template
}

// Loader loads pipelines. The zero value is ready to use: step specs are
// loaded with a spec.Loader that checks their models as a run would
// (runtime.CheckModel).
type Loader struct {
	// Specs loads the steps' agent specs; nil means a spec.Loader whose
	// ModelCheck is runtime.CheckModel. Its LookupEnv fills ${VAR} in the
	// pipeline file too.
	Specs *spec.Loader
}

var defaultSpecs = spec.Loader{ModelCheck: runtime.CheckModel}

// LoadFile loads the pipeline at path with a zero Loader.
func LoadFile(path string) (*Pipeline, error) { return (&Loader{}).LoadFile(path) }

// Load loads the pipeline in data, named file, with a zero Loader.
func Load(file string, data []byte) (*Pipeline, error) { return (&Loader{}).Load(file, data) }

// LoadFile reads and loads the pipeline at path.
func (l *Loader) LoadFile(path string) (*Pipeline, error) {
	data, err := spec.ReadFile(path)
	if err != nil {
		if errors.As(err, new(spec.Errors)) {
			return nil, err // too large to be read
		}
		return nil, fmt.Errorf("%s: %s", path, readError(err))
	}
	return l.Load(path, data)
}

// Load parses and checks the pipeline in data: file names it in positions,
// its extension chooses the syntax, and its directory is where step spec
// paths start. A pipeline with problems gives a spec.Errors: those in the
// pipeline file, sorted by position, then those in each step's spec file,
// in step order.
func (l *Loader) Load(file string, data []byte) (*Pipeline, error) {
	specs := l.Specs
	if specs == nil {
		specs = &defaultSpecs
	}
	if !IsPipeline(data) {
		if !parses(data) {
			// It may be a pipeline with a mistake in its syntax: say where,
			// as validate, which reads it as a spec, does.
			if _, err := spec.ParseDocument(file, data, specs.LookupEnv); err != nil {
				return nil, err
			}
		}
		return nil, spec.Errors{{Pos: spec.Position{File: file}, Msg: notPipelineMsg}}
	}
	doc, err := spec.ParseDocument(file, data, specs.LookupEnv)
	if err != nil {
		return nil, err
	}
	c := &checker{
		specs: specs, file: file, dir: filepath.Dir(file), doc: doc, data: data,
		p:      &Pipeline{File: file, Version: 1, credentials: providers.NewCredentialCache()},
		steps:  map[string]*Step{},
		edges:  map[[2]string]edge{},
		failed: map[string]bool{},
	}
	root, ok := doc.Root().(map[string]any)
	if !ok { // IsPipeline saw a mapping; the parser must agree
		return nil, spec.Errors{{Pos: spec.Position{File: file}, Msg: notPipelineMsg}}
	}
	c.load(root)
	if len(c.errs) > 0 || len(c.specErrs) > 0 {
		slices.SortStableFunc(c.errs, func(a, b *spec.Error) int {
			if a.Pos.Line != b.Pos.Line {
				return a.Pos.Line - b.Pos.Line
			}
			return a.Pos.Col - b.Pos.Col
		})
		return nil, append(c.errs, c.specErrs...)
	}
	keyItemFiles(c.p)
	return c.p, nil
}

const notPipelineMsg = "not a pipeline: a pipeline is a mapping with steps: at its top level"

// IsPipeline tells whether data, a YAML or JSON file, is a pipeline: a
// mapping with steps: at its top level. Anything else is an agent spec (or
// not a valid file at all, which loading it as a spec reports).
func IsPipeline(data []byte) bool {
	var doc yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(data)).Decode(&doc); err != nil && !errors.Is(err, io.EOF) || len(doc.Content) == 0 {
		return false
	}
	root := doc.Content[0]
	for root.Kind == yaml.AliasNode {
		root = root.Alias
	}
	if root.Kind != yaml.MappingNode {
		return false
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		if k := root.Content[i]; k.Kind == yaml.ScalarNode && k.Value == "steps" {
			return true
		}
	}
	return false
}

// parses reports whether data is a YAML document (or none) the parser reads
// without a syntax error.
func parses(data []byte) bool {
	var doc yaml.Node
	err := yaml.NewDecoder(bytes.NewReader(data)).Decode(&doc)
	return err == nil || errors.Is(err, io.EOF)
}

// readError says why a file could not be read, briefly.
func readError(err error) string {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "no such file"
	case errors.Is(err, fs.ErrPermission):
		return "permission denied"
	case errors.Is(err, syscall.EISDIR):
		return "is a directory, not a spec file"
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// The keys a pipeline and a step may have, besides x-... extensions.
var (
	pipelineKeys = []string{"$schema", "cache", "description", "inputs", "name", "outputs", "steps", "version"}
	stepKeys     = []string{"as", "description", "for_each", "input", "max_parallel", "needs", "on_item_error", "spec", "vars", "when"}
)

var stepName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z][a-z0-9_-]*$`) })

// itemName is what as: may name: a name a reference can start with.
var itemName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`) })
