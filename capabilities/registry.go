package capabilities

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
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
}

// Args is what a factory receives.
type Args struct {
	// Options is the capability's options object as JSON, already validated
	// against the type's schema. Never nil: a capability given no options gets {}.
	Options json.RawMessage
	// Dir is the directory relative paths in the options resolve against: the
	// run's workspace, or the process's working directory when there is none.
	Dir string
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
	schema *jsonschema.Schema // compiled Schema; nil when the type takes no options
	doc    any                // Schema decoded, for composing
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{types: map[string]*registered{}}
}

var defaultRegistry = NewRegistry()

// Default is the registry the CLI and the package-level functions use. Built-in
// types add themselves to it when their package is imported.
func Default() *Registry { return defaultRegistry }

// Register adds t to the default registry.
func Register(t Type) error { return defaultRegistry.Register(t) }

// MustRegister adds t to the default registry and panics on error. It is meant
// for init functions, like database/sql.Register.
func MustRegister(t Type) {
	if err := defaultRegistry.Register(t); err != nil {
		panic(err)
	}
}

var nameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// ErrDuplicate is returned when a type name is registered twice.
var ErrDuplicate = errors.New("capability type already registered")

// Register adds t. The name must be an identifier and not already taken, the
// factory must be set and the schema must be a valid JSON Schema.
func (r *Registry) Register(t Type) error {
	if !nameRE.MatchString(t.Name) {
		return fmt.Errorf("capability type name %q: must be an identifier (letters, digits, _)", t.Name)
	}
	if t.New == nil {
		return fmt.Errorf("capability type %q: no factory (Type.New is nil)", t.Name)
	}
	reg := &registered{Type: t}
	if len(t.Schema) > 0 {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(t.Schema))
		if err != nil {
			return fmt.Errorf("capability type %q: schema is not JSON: %w", t.Name, err)
		}
		c := jsonschema.NewCompiler()
		c.DefaultDraft(jsonschema.Draft2020)
		url := "agentspec://capabilities/" + t.Name + ".json"
		if err := c.AddResource(url, doc); err != nil {
			return fmt.Errorf("capability type %q: %w", t.Name, err)
		}
		sch, err := c.Compile(url)
		if err != nil {
			return fmt.Errorf("capability type %q: invalid schema: %w", t.Name, err)
		}
		reg.schema, reg.doc = sch, doc
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
	if t.schema == nil {
		if m, isMap := options.(map[string]any); isMap && len(m) == 0 {
			return nil
		}
		return fmt.Errorf("capability %q takes no options", name)
	}
	return t.schema.Validate(options)
}

// SchemaDoc returns the decoded JSON Schema of the named type's options (nil
// when it takes none), for composing a whole-spec schema.
func (r *Registry) SchemaDoc(name string) (any, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	t, ok := r.types[name]
	if !ok {
		return nil, false
	}
	return t.doc, true
}

// New builds a capability of the named type. options must already be valid
// against the type's schema (see ValidateOptions).
func (r *Registry) New(ctx context.Context, name string, args Args) (Capability, error) {
	t, ok := r.Lookup(name)
	if !ok {
		return nil, &UnknownTypeError{Name: name, Valid: r.Names()}
	}
	if len(args.Options) == 0 {
		args.Options = json.RawMessage("{}")
	}
	return t.New(ctx, args)
}
