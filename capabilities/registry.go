package capabilities

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Factory builds a capability from the options a spec gave it.
type Factory func(ctx context.Context, args Args) (Capability, error)

// Type describes a capability type: its name in specs, the JSON Schema of its
// options and the factory that builds it.
//
// In a spec a capability appears as `- Name`, `- Name: {options}`,
// `- Name: scalar` or `{name: Name, arguments: ...}`. The loader turns each into
// an options object before validating it against Schema: `- Name` gives {}, and a
// scalar gives {Positional: scalar}.
type Type struct {
	// Name is how specs refer to the type, e.g. "FileSystem".
	Name string
	// Description is shown in the composed schema (editors display it).
	Description string
	// Schema is the JSON Schema of the options object. It should say
	// "additionalProperties": false so that misspelt options are caught.
	// Nil means the type takes no options.
	Schema json.RawMessage
	// Positional names the option a scalar short form (`- Name: value`) sets.
	// Empty means the type has no scalar form.
	Positional string
	// New builds the capability. Errors it returns are reported at the
	// capability's position in the spec; an *ArgError points at one option.
	New Factory
	// NoBaseOptions says the type does not take the options every other
	// capability takes (id, description, defer_loading; see BaseOptions),
	// as pydantic-ai's PrefixTools does not.
	NoBaseOptions bool
	// NoEffect names options that specs written for pydantic-ai set but that
	// mean nothing in agentspec, with the reason. A spec that sets one to
	// anything but false or null loads, with a warning at its position giving
	// the reason, rather than silently.
	NoEffect map[string]string
	// Deprecated names options the type still reads under a name its
	// reference has deprecated, with what to write instead. A spec that
	// sets one loads, with a warning at its key saying so.
	Deprecated map[string]string
	// Pure says New neither touches the file system nor starts or reaches
	// anything, and holds nothing that needs closing: a capability of the
	// type may be built from its options alone, to ask it what it asks of
	// the model (capabilities.NativeTooler, a thinking setting), as the
	// loader's model checks do before any run.
	Pure bool
	// SetsWorkspace says the type sets the run's workspace, as
	// LocalWorkspace does: a run builds it first, in the workspace it was
	// given (Setup.Dir), asks it for its WorkspaceSetter's Workspace, and
	// builds the spec's other capabilities there. A spec has at most one
	// entry of such a type. New must be as cheap as a Pure type's.
	SetsWorkspace bool
	// Nested names the options whose value is itself a capability entry, in
	// any of the forms a spec's capabilities list takes (PrefixTools's
	// capability). The loader checks such an entry as it checks the list's,
	// and hands the factory its canonical form: {"name": N, "options": {...}},
	// which Registry.NewNested builds.
	Nested []string
}

// BaseOptions are the options every capability type takes unless it says
// NoBaseOptions, as every pydantic-ai capability does. The registry adds them
// to each type's schema and takes them out of the options before the factory
// sees them, unless the type's schema declares the option itself.
type BaseOptions struct {
	// ID identifies the capability within a spec; two entries cannot share one.
	ID string `json:"id,omitempty"`
	// Description says what the capability is for.
	Description string `json:"description,omitempty"`
	// DeferLoading asks that the capability's tools be hidden until the model
	// loads them. agentspec offers every tool from the start; the loader
	// warns that the option has no effect.
	DeferLoading bool `json:"defer_loading,omitempty"`
}

// baseOptionSchemas are the schemas of the base options.
var baseOptionSchemas = map[string]any{
	"id": map[string]any{
		"type": "string", "minLength": 1,
		"description": "Identifies the capability within the spec; two capabilities cannot share an id.",
	},
	"description": map[string]any{
		"type":        "string",
		"description": "What the capability is for.",
	},
	"defer_loading": map[string]any{
		"type":        "boolean",
		"description": "pydantic-ai: hide the capability's tools until the model loads them (needs an id). Accepted; agentspec offers every tool from the start.",
	},
}

// BaseOptionNames are the keys of BaseOptions, sorted.
var BaseOptionNames = []string{"defer_loading", "description", "id"}

// Args is what a factory receives.
type Args struct {
	// Options is the capability's options object as JSON, already validated
	// against the type's schema. Never nil: a capability given no options gets {}.
	Options json.RawMessage
	// Setup is how the caller has the capability built: Dir, the directory
	// relative paths in the options resolve against, and the rest. Nested
	// capabilities are built with the same.
	Setup
	// Base holds the base options the spec gave (see BaseOptions).
	Base BaseOptions
	// Registry is the registry building the capability, for types that
	// build others (see Type.Nested and NewNested).
	Registry *Registry
}

// Decode unmarshals the options into v, rejecting unknown fields.
func (a Args) Decode(v any) error {
	dec := json.NewDecoder(bytes.NewReader(a.Options))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("decoding options: %w", err)
	}
	return nil
}

// ArgError is a factory error about one option. The loader reports it at that
// option's position in the spec.
type ArgError struct {
	Option string // the option's key, e.g. "cwd"
	Msg    string
}

func (e *ArgError) Error() string { return e.Msg }

// ArgErrorf returns an *ArgError for option.
func ArgErrorf(option, format string, args ...any) error {
	return &ArgError{Option: option, Msg: fmt.Sprintf(format, args...)}
}

// Registry holds capability types by name. The zero value is not usable; call
// NewRegistry. A Registry is safe for concurrent use.
type Registry struct {
	mu      sync.RWMutex
	types   map[string]*registered
	version int // bumped on every registration; lets callers cache derived schemas
}

type registered struct {
	Type
	// compiled compiles Schema once, on first use: most processes never
	// load a spec, and start-up should not pay for every type's schema.
	compiled func() (compiledType, error)
}

// compiledType is a type's schema as validation and composition use it.
type compiledType struct {
	schema *jsonschema.Schema // compiled Schema, base options added; nil when the type takes no options
	doc    any                // that schema decoded, for composing
	own    map[string]bool    // base options the type's schema declares itself
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{types: map[string]*registered{}}
}

var defaultRegistry = NewRegistry()

// Default is the registry the CLI and the package-level functions use. It
// holds the types a program registered in it: the CLI registers the built-in
// ones (package builtin) before it runs a command.
func Default() *Registry { return defaultRegistry }

// Register adds t to the default registry.
func Register(t Type) error { return defaultRegistry.Register(t) }

// MustRegister adds t to the default registry and panics on error, for a
// program's main before it loads a spec. Unlike Register it checks
// the name and the factory at once but compiles the schema when the type is
// first used, so that registering a capability costs a program nothing until
// it loads a spec: a schema that does not compile is then reported by
// ValidateOptions and New. Each package's tests compile its schemas.
func MustRegister(t Type) {
	if err := defaultRegistry.register(t, false); err != nil {
		panic(err)
	}
}

// nameRE is compiled on first use, not when the package is initialised.
var nameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })

// ErrDuplicate is returned when a type name is registered twice.
var ErrDuplicate = errors.New("capability type already registered")

// Register adds t. The name must be an identifier and not already taken, the
// factory must be set and the schema must be a valid JSON Schema.
func (r *Registry) Register(t Type) error { return r.register(t, true) }

// RegisterLazily adds t as Register does, but compiles its schema when the
// type is first used, as MustRegister does: for types whose packages' tests
// compile their schemas (the built-in ones), so that registering them costs
// a program nothing until it loads a spec.
func (r *Registry) RegisterLazily(t Type) error { return r.register(t, false) }

// register adds t; eager compiles its schema now, and refuses t when the
// schema does not compile.
func (r *Registry) register(t Type, eager bool) error {
	if !nameRE().MatchString(t.Name) {
		return fmt.Errorf("capability type name %q: must be an identifier (letters, digits, _)", t.Name)
	}
	if t.New == nil {
		return fmt.Errorf("capability type %q: no factory (Type.New is nil)", t.Name)
	}
	reg := &registered{Type: t}
	reg.compiled = sync.OnceValues(func() (compiledType, error) { return compileType(t) })
	if eager {
		if _, err := reg.compiled(); err != nil {
			return err
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.types[t.Name]; ok {
		return fmt.Errorf("%w: %q", ErrDuplicate, t.Name)
	}
	r.types[t.Name] = reg
	r.version++
	return nil
}

// compileType compiles t's schema with the base options added.
func compileType(t Type) (compiledType, error) {
	out := compiledType{own: map[string]bool{}}
	var doc any
	if len(t.Schema) > 0 {
		var err error
		doc, err = jsonschema.UnmarshalJSON(bytes.NewReader(t.Schema))
		if err != nil {
			return out, fmt.Errorf("capability type %q: schema is not JSON: %w", t.Name, err)
		}
	}
	if !t.NoBaseOptions {
		doc = withBaseOptions(doc, out.own)
	}
	if doc != nil {
		c := jsonschema.NewCompiler()
		c.DefaultDraft(jsonschema.Draft2020)
		url := "agentspec://capabilities/" + t.Name + ".json"
		if err := c.AddResource(url, doc); err != nil {
			return out, fmt.Errorf("capability type %q: %w", t.Name, err)
		}
		sch, err := c.Compile(url)
		if err != nil {
			return out, fmt.Errorf("capability type %q: invalid schema: %w", t.Name, err)
		}
		out.schema, out.doc = sch, doc
	}
	return out, nil
}

// withBaseOptions returns the schema doc with the base options added to its
// properties, recording in own the ones it declares itself. A type without a
// schema gets one that takes the base options alone. A schema that is not an
// object schema with properties is left as written: its own rules decide.
func withBaseOptions(doc any, own map[string]bool) any {
	if doc == nil {
		doc = map[string]any{"type": "object", "additionalProperties": false, "properties": map[string]any{}}
	}
	m, ok := doc.(map[string]any)
	if !ok {
		return doc
	}
	props, ok := m["properties"].(map[string]any)
	if !ok {
		if m["type"] != "object" {
			return doc
		}
		props = map[string]any{}
		m["properties"] = props
	}
	for name, sch := range baseOptionSchemas {
		if _, declared := props[name]; declared {
			own[name] = true
			continue
		}
		props[name] = sch
	}
	return m
}

// Lookup returns the type registered under name.
func (r *Registry) Lookup(name string) (Type, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	t, ok := r.types[name]
	if !ok {
		return Type{}, false
	}
	return t.Type, true
}

// Names returns the registered type names, sorted.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	names := make([]string, 0, len(r.types))
	for n := range r.types {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Version changes whenever a type is registered.
func (r *Registry) Version() int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.version
}

// UnknownTypeError is returned for a capability name nobody registered.
type UnknownTypeError struct {
	Name  string
	Valid []string
}

func (e *UnknownTypeError) Error() string {
	return fmt.Sprintf("unknown capability %q; valid choices: %s", e.Name, strings.Join(e.Valid, ", "))
}

// ValidateOptions checks options (a decoded JSON value, as produced by
// jsonschema.UnmarshalJSON or encoding/json with UseNumber) against the schema
// of the named type. The error is an *UnknownTypeError or a
// *jsonschema.ValidationError.
func (r *Registry) ValidateOptions(name string, options any) error {
	r.mu.RLock()
	t, ok := r.types[name]
	r.mu.RUnlock()
	if !ok {
		return &UnknownTypeError{Name: name, Valid: r.Names()}
	}
	c, err := t.compiled()
	if err != nil {
		return err
	}
	if len(t.Type.Schema) == 0 {
		m, isMap := options.(map[string]any)
		if !isMap {
			return fmt.Errorf("capability %q takes no options", name)
		}
		for k := range m {
			if t.NoBaseOptions || !slices.Contains(BaseOptionNames, k) {
				return fmt.Errorf("capability %q takes no options", name)
			}
		}
		if c.schema == nil {
			return nil
		}
	}
	return c.schema.Validate(options)
}

// SchemaDoc returns the decoded JSON Schema of the named type's options (nil
// when it takes none), for composing a whole-spec schema.
func (r *Registry) SchemaDoc(name string) (any, bool) {
	r.mu.RLock()
	t, ok := r.types[name]
	r.mu.RUnlock()
	if !ok {
		return nil, false
	}
	c, _ := t.compiled()
	return c.doc, true
}

// New builds a capability of the named type. options must already be valid
// against the type's schema (see ValidateOptions). The base options are
// taken out of them into args.Base, except those the type declares itself,
// which it gets in both.
func (r *Registry) New(ctx context.Context, name string, args Args) (Capability, error) {
	r.mu.RLock()
	t, ok := r.types[name]
	r.mu.RUnlock()
	if !ok {
		return nil, &UnknownTypeError{Name: name, Valid: r.Names()}
	}
	c, err := t.compiled()
	if err != nil {
		return nil, err
	}
	if len(args.Options) == 0 {
		args.Options = json.RawMessage("{}")
	}
	args.Registry = r
	if !t.NoBaseOptions {
		var opts map[string]json.RawMessage
		if err := json.Unmarshal(args.Options, &opts); err == nil {
			if err := splitBase(opts, c.own, &args.Base); err != nil {
				return nil, err
			}
			b, err := json.Marshal(opts)
			if err != nil {
				return nil, err
			}
			args.Options = b
		}
	}
	return t.New(ctx, args)
}

// splitBase moves the base options out of opts into base, leaving those the
// type declares itself (own).
func splitBase(opts map[string]json.RawMessage, own map[string]bool, base *BaseOptions) error {
	found := map[string]json.RawMessage{}
	for _, name := range BaseOptionNames {
		if v, ok := opts[name]; ok {
			found[name] = v
			if !own[name] {
				delete(opts, name)
			}
		}
	}
	if len(found) == 0 {
		return nil
	}
	b, err := json.Marshal(found)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, base); err != nil {
		return fmt.Errorf("base options: %w", err)
	}
	return nil
}

// Nested is the canonical form of a capability entry held in an option of a
// type that builds other capabilities (Type.Nested): what the loader hands
// the factory.
type Nested struct {
	Name    string          `json:"name"`
	Options json.RawMessage `json:"options"`
}

// NewNested builds the capability a nested entry describes, with the same
// Setup as the capability holding it. args are the holder's. Its factory's
// error comes back as a *NestedError, so that the loader can place an
// *ArgError at the option inside the entry.
func (args Args) NewNested(ctx context.Context, n Nested) (Capability, error) {
	reg := args.Registry
	if reg == nil {
		reg = Default()
	}
	c, err := reg.New(ctx, n.Name, Args{Options: n.Options, Setup: args.Setup})
	if err != nil {
		return nil, &NestedError{Nested: n, Err: err}
	}
	return c, nil
}

// NestedError is the error of the factory of a nested entry (NewNested):
// Err is about Nested's options, not the holder's.
type NestedError struct {
	Nested Nested
	Err    error
}

func (e *NestedError) Error() string { return e.Err.Error() }

func (e *NestedError) Unwrap() error { return e.Err }
