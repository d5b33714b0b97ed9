package capabilities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type nopCapability struct{ opts map[string]any }

func (nopCapability) Tools(context.Context) ([]Tool, error) { return nil, nil }

func nopFactory(_ context.Context, a Args) (Capability, error) {
	var opts map[string]any
	if err := json.Unmarshal(a.Options, &opts); err != nil {
		return nil, err
	}
	return nopCapability{opts}, nil
}

func TestRegisterRejectsBadTypes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		typ  Type
		want string
	}{
		{"empty name", Type{New: nopFactory}, `capability type name "": must be an identifier`},
		{"name with space", Type{Name: "File System", New: nopFactory}, `capability type name "File System"`},
		{"no factory", Type{Name: "X"}, `capability type "X": no factory`},
		{"schema not JSON", Type{Name: "X", New: nopFactory, Schema: json.RawMessage(`{`)}, `capability type "X": schema is not JSON`},
		{"invalid schema", Type{Name: "X", New: nopFactory, Schema: json.RawMessage(`{"type": 12}`)}, `capability type "X": invalid schema`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := NewRegistry().Register(tt.typ)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestRegisterDuplicate(t *testing.T) {
	t.Parallel()
	r := NewRegistry()
	require.NoError(t, r.Register(Type{Name: "Shell", New: nopFactory}))
	v := r.Version()
	err := r.Register(Type{Name: "Shell", New: nopFactory})
	require.ErrorIs(t, err, ErrDuplicate)
	assert.Contains(t, err.Error(), `"Shell"`)
	assert.Equal(t, v, r.Version(), "a refused registration changes nothing")
}

func TestLookupAndNames(t *testing.T) {
	t.Parallel()
	r := NewRegistry()
	for _, n := range []string{"Zeta", "Alpha", "Mid"} {
		require.NoError(t, r.Register(Type{Name: n, Description: "type " + n, New: nopFactory}))
	}
	assert.Equal(t, []string{"Alpha", "Mid", "Zeta"}, r.Names())
	typ, ok := r.Lookup("Mid")
	require.True(t, ok)
	assert.Equal(t, "type Mid", typ.Description)
	_, ok = r.Lookup("mid")
	assert.False(t, ok, "names are case-sensitive")
}

func TestValidateOptions(t *testing.T) {
	t.Parallel()
	r := NewRegistry()
	require.NoError(t, r.Register(Type{
		Name:   "Limits",
		New:    nopFactory,
		Schema: json.RawMessage(`{"type":"object","properties":{"max":{"type":"integer","minimum":1}},"additionalProperties":false}`),
	}))
	require.NoError(t, r.Register(Type{Name: "Bare", New: nopFactory}))

	assert.NoError(t, r.ValidateOptions("Limits", map[string]any{"max": json.Number("3")}))
	var verr *jsonschema.ValidationError
	assert.ErrorAs(t, r.ValidateOptions("Limits", map[string]any{"max": json.Number("0")}), &verr)
	assert.ErrorAs(t, r.ValidateOptions("Limits", map[string]any{"mx": json.Number("3")}), &verr)

	assert.NoError(t, r.ValidateOptions("Bare", map[string]any{}))
	assert.EqualError(t, r.ValidateOptions("Bare", map[string]any{"x": true}), `capability "Bare" takes no options`)

	var unknown *UnknownTypeError
	require.ErrorAs(t, r.ValidateOptions("Limitz", map[string]any{}), &unknown)
	assert.Equal(t, `unknown capability "Limitz"; valid choices: Bare, Limits`, unknown.Error())
}

func TestNewGivesEmptyOptionsObject(t *testing.T) {
	t.Parallel()
	r := NewRegistry()
	require.NoError(t, r.Register(Type{Name: "Bare", New: nopFactory}))
	c, err := r.New(context.Background(), "Bare", Args{})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{}, c.(nopCapability).opts)

	_, err = r.New(context.Background(), "Nope", Args{})
	var unknown *UnknownTypeError
	assert.ErrorAs(t, err, &unknown)
}

func TestArgsDecodeIsStrict(t *testing.T) {
	t.Parallel()
	var v struct {
		Root string `json:"root_dir"`
	}
	require.NoError(t, Args{Options: json.RawMessage(`{"root_dir": "x"}`)}.Decode(&v))
	assert.Equal(t, "x", v.Root)
	err := Args{Options: json.RawMessage(`{"root": "x"}`)}.Decode(&v)
	assert.ErrorContains(t, err, `unknown field "root"`)
}

func TestRetryErrors(t *testing.T) {
	t.Parallel()
	err := fmt.Errorf("read_file: %w", Retry("File not found: %s", "a.txt"))
	msg, ok := AsRetry(err)
	assert.True(t, ok)
	assert.Equal(t, "File not found: a.txt", msg)

	msg, ok = AsRetry(Retry("Not a directory: x"))
	assert.True(t, ok)
	assert.Equal(t, "Not a directory: x", msg)

	_, ok = AsRetry(errors.New("disk full"))
	assert.False(t, ok)
	_, ok = AsRetry(nil)
	assert.False(t, ok)
}

func TestArgError(t *testing.T) {
	t.Parallel()
	err := fmt.Errorf("wrapped: %w", ArgErrorf("cwd", "cwd %q is outside root_dir", "../x"))
	var ae *ArgError
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, "cwd", ae.Option)
	assert.Equal(t, `cwd "../x" is outside root_dir`, ae.Msg)
}

type testEvent struct {
	Path  string `json:"path"`
	Count int    `json:"count"`
}

func (testEvent) Kind() string { return "test.thing_happened" }

type emptyEvent struct{}

func (emptyEvent) Kind() string { return "test.empty" }

type listEvent []int

func (listEvent) Kind() string { return "test.list" }

func TestEmitNeedsAListener(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	assert.False(t, Emitting(ctx))
	assert.NoError(t, Emit(ctx, testEvent{}), "direct API calls emit nothing")

	var got []Event
	ctx = WithListener(ctx, func(_ context.Context, ev Event) error {
		got = append(got, ev)
		if ev.(testEvent).Count < 0 {
			return errors.New("listener refused")
		}
		return nil
	})
	assert.True(t, Emitting(ctx))
	require.NoError(t, Emit(ctx, testEvent{Path: "a", Count: 1}))
	assert.EqualError(t, Emit(ctx, testEvent{Count: -1}), "listener refused")
	assert.Len(t, got, 2)
}

func TestCallInfo(t *testing.T) {
	t.Parallel()
	_, ok := CallFrom(context.Background())
	assert.False(t, ok)
	c, ok := CallFrom(WithCall(context.Background(), CallInfo{ID: "call_1", Tool: "read_file"}))
	assert.True(t, ok)
	assert.Equal(t, CallInfo{ID: "call_1", Tool: "read_file"}, c)
}

func TestMarshalEvent(t *testing.T) {
	t.Parallel()
	b, err := MarshalEvent(testEvent{Path: "a/b.txt", Count: 2})
	require.NoError(t, err)
	assert.Equal(t, `{"kind":"test.thing_happened","path":"a/b.txt","count":2}`, string(b))

	b, err = MarshalEvent(emptyEvent{})
	require.NoError(t, err)
	assert.Equal(t, `{"kind":"test.empty"}`, string(b))

	_, err = MarshalEvent(listEvent{1})
	assert.ErrorContains(t, err, "not a JSON object")
	assert.True(t, strings.HasPrefix(err.Error(), "encoding test.list event"))
}

type selfDescribing struct{}

func (selfDescribing) Kind() string { return "test.self" }
func (selfDescribing) MarshalJSON() ([]byte, error) {
	return []byte(`{"kind":"test.self","n":1}`), nil
}

func TestMarshalEventKeepsAnOwnKind(t *testing.T) {
	t.Parallel()
	b, err := MarshalEvent(selfDescribing{})
	require.NoError(t, err)
	assert.Equal(t, `{"kind":"test.self","n":1}`, string(b))
}

// MustRegister's path compiles a schema on first use: the types register at
// once, and a schema that does not compile is an error of that use.
func TestLazyRegisterReportsBadSchemaOnUse(t *testing.T) {
	t.Parallel()
	r := NewRegistry()
	require.NoError(t, r.register(Type{Name: "Late", New: nopFactory, Schema: json.RawMessage(`{"type": 12}`)}, false))
	require.NoError(t, r.register(Type{Name: "Fine", New: nopFactory, Schema: json.RawMessage(`{"type": "object"}`)}, false))
	assert.Equal(t, []string{"Fine", "Late"}, r.Names())

	err := r.ValidateOptions("Late", map[string]any{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `capability type "Late": invalid schema`)
	_, err = r.New(context.Background(), "Late", Args{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `capability type "Late": invalid schema`)

	require.NoError(t, r.ValidateOptions("Fine", map[string]any{"id": "a"}))
	doc, ok := r.SchemaDoc("Fine")
	require.True(t, ok)
	assert.Contains(t, doc.(map[string]any)["properties"], "id", "the base options are added when compiled")
}
