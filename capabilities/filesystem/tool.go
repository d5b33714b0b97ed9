package filesystem

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentspec/agentspec/capabilities"
)

// tool adapts a function to capabilities.Tool. A is the struct its call
// takes the arguments as: its json tags name the parameters, and a field
// whose tag lacks ",omitempty" is required.
type tool[A any] struct {
	name, description string
	params            map[string]any // shared (sharedSchema): never changed
	call              func(ctx context.Context, args A) (string, error)
	spec              atomic.Pointer[argSpec] // A's parameters, read at the first call
}

func (t *tool[A]) Name() string        { return t.name }
func (t *tool[A]) Description() string { return t.description }

// Parameters returns the JSON Schema of the tool's arguments. The map is
// shared by the tools of every FileSystem built with the same schema inputs
// (sharedSchema): callers must not mutate it, nor any map or slice in it.
func (t *tool[A]) Parameters() map[string]any { return t.params }

// Hints says how the tool behaves: the ones in ReadOnlyToolNames change
// nothing; write_file replaces what is there; edit_file changes it;
// create_directory only adds, and adding again does nothing. Every tool
// stays under the root, a closed domain.
func (t *tool[A]) Hints() capabilities.Hints {
	switch {
	case slices.Contains(ReadOnlyToolNames, t.name):
		return capabilities.Hints{ReadOnly: true, Idempotent: true}
	case t.name == ToolCreateDirectory:
		return capabilities.Hints{Idempotent: true}
	case t.name == ToolWriteFile:
		return capabilities.Hints{Destructive: true, Idempotent: true}
	default:
		return capabilities.Hints{Destructive: true}
	}
}

// Call runs the tool under a deadline: the caller's (the runtime's
// tool_timeout puts one on the context), or DefaultToolTimeout when the
// context has none, so that no call runs unbounded. As tool_timeout's, that
// limit's clock stops while the listeners hear the call's events: a person
// answering --approve after it would otherwise see the approved change fail.
func (t *tool[A]) Call(ctx context.Context, raw json.RawMessage) (string, error) {
	if _, ok := ctx.Deadline(); ok {
		return t.run(ctx, raw)
	}
	limit := defaultToolTimeout()
	ctx, cancel := capabilities.WithCallTimeout(ctx, limit, errTimeLimit)
	defer cancel()
	out, err := t.run(ctx, raw)
	if err != nil && errors.Is(context.Cause(ctx), errTimeLimit) && errors.Is(err, context.DeadlineExceeded) {
		// The deadline is this wrapper's, so saying so is too: a retry
		// the model can act on, not a failure that ends the run.
		return "", capabilities.Retry("%s stopped at its time limit of %s before finishing. Try a narrower path "+
			"or pattern.", t.name, limit)
	}
	return out, err
}

// DefaultToolTimeout is the deadline of a FileSystem tool call whose
// context has none, in the call's own time: the time its listeners take
// does not count. Walkers and searches that reach it return what they
// found with a note saying they stopped; other tools return a retry.
const DefaultToolTimeout = 2 * time.Minute

// toolTimeoutOverride shortens DefaultToolTimeout in tests; 0 keeps it.
var toolTimeoutOverride atomic.Int64

func defaultToolTimeout() time.Duration {
	if d := toolTimeoutOverride.Load(); d > 0 {
		return time.Duration(d)
	}
	return DefaultToolTimeout
}

// errTimeLimit is the cause of a call's context ended by
// DefaultToolTimeout. It is a deadline error, so code that asks whether a
// context timed out gets the answer it expects.
var errTimeLimit error = timeLimitError{}

type timeLimitError struct{}

func (timeLimitError) Error() string   { return "the FileSystem tool time limit passed" }
func (timeLimitError) Is(e error) bool { return e == context.DeadlineExceeded }

// schemaKey is everything a tool's parameter schema is built from: a
// builder given to sharedSchema sees the key alone, so two equal keys give
// equal schemas.
type schemaKey struct {
	tool         string
	hashes       bool // write_file and edit_file offer expected_hash
	maxReadLines int  // read_file states its default limit
}

// schemas are the parameter schemas built so far, by key, up to maxSchemas
// of them. A batch builds a FileSystem per job, and each built the same
// maps for its tools again, some fifty maps a job: the schemas are built
// once and shared, never changed after (see Parameters). Measured with
// BenchmarkNewClose (New with the default options, the tool list, Close):
// 26 against 45 µs, 4.7 against 17.3 KB and 61 against 155 allocations a
// job with it and without (medians of ten interleaved runs on a loaded
// two-CPU machine); BenchmarkBatch1000/cache=false, 28.7 against 41.1 MB
// and 431k against 526k allocations a batch of 1,000 jobs.
var schemas struct {
	sync.Mutex
	m map[schemaKey]map[string]any
}

// maxSchemas bounds schemas in a process that meets ever new limits: past
// it, a schema is built anew for each tool.
const maxSchemas = 256

// sharedSchema returns build(key), built once for equal keys while schemas
// has room. Nobody may change the map it returns. A build takes
// microseconds: it is made under the lock, so that concurrent News share
// the one built first without looking twice.
func sharedSchema(key schemaKey, build func(schemaKey) map[string]any) map[string]any {
	schemas.Lock()
	defer schemas.Unlock()
	if m, ok := schemas.m[key]; ok {
		return m
	}
	if schemas.m == nil {
		schemas.m = map[schemaKey]map[string]any{}
	}
	m := build(key)
	if len(schemas.m) < maxSchemas {
		schemas.m[key] = m
	}
	return m
}

// object returns the JSON Schema of a tool's arguments.
func object(props map[string]any, required ...string) map[string]any {
	if required == nil {
		required = []string{}
	}
	return map[string]any{
		"type":                 "object",
		"properties":           props,
		"required":             required,
		"additionalProperties": false,
	}
}

func param(typ, description string) map[string]any {
	return map[string]any{"type": typ, "description": description}
}

// run decodes the arguments and calls the tool.
func (t *tool[A]) run(ctx context.Context, raw json.RawMessage) (string, error) {
	spec := t.spec.Load()
	if spec == nil {
		spec = new(argSpecOf(reflect.TypeFor[A]()))
		t.spec.Store(spec)
	}
	var args A
	if err := spec.decode(raw, &args); err != nil {
		return "", err
	}
	return t.call(ctx, args)
}

// decode unmarshals a tool call's arguments into v, a pointer to the struct
// spec was read from; null counts as missing. Every failure is a
// *capabilities.RetryError that names the argument and says what was
// expected, so the model can fix its call.
func (spec *argSpec) decode(raw json.RawMessage, v any) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		raw = []byte("{}")
	}
	var given map[string]json.RawMessage
	if err := json.Unmarshal(raw, &given); err != nil {
		return capabilities.Retry("Invalid arguments: expected a JSON object of named arguments.")
	}
	var unknown []string
	for k := range given {
		if !slices.Contains(spec.names, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return capabilities.Retry("Unknown argument %s. Expected: %s.", pyRepr(unknown[0]), strings.Join(spec.names, ", "))
	}
	for _, name := range spec.required {
		if val, ok := given[name]; !ok || bytes.Equal(bytes.TrimSpace(val), []byte("null")) {
			return capabilities.Retry("Missing required argument %s.", pyRepr(name))
		}
	}
	if err := json.Unmarshal(raw, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return capabilities.Retry("Argument %s must be %s, got %s.", pyRepr(te.Field), jsonKind(te.Type), te.Value)
		}
		return capabilities.Retry("Invalid arguments: %v.", err)
	}
	return nil
}

type argSpec struct {
	names, required []string
}

func argSpecOf(t reflect.Type) argSpec {
	var s argSpec
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		s.names = append(s.names, name)
		if !strings.Contains(opts, "omitempty") {
			s.required = append(s.required, name)
		}
	}
	return s
}

// jsonKind names the JSON type a Go type decodes from.
func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Slice, reflect.Array:
		return "a list"
	default:
		return "an object"
	}
}
