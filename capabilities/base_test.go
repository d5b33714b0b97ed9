package capabilities

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type capturing struct{ args Args }

func (c *capturing) Tools(context.Context) ([]Tool, error) { return nil, nil }

func capture(_ context.Context, args Args) (Capability, error) { return &capturing{args: args}, nil }

func TestBaseOptions(t *testing.T) {
	t.Parallel()
	r := NewRegistry()
	require.NoError(t, r.Register(Type{Name: "Plain", New: capture, Schema: json.RawMessage(
		`{"type": "object", "additionalProperties": false, "properties": {"size": {"type": "integer"}}}`)}))
	require.NoError(t, r.Register(Type{Name: "OwnID", New: capture, Schema: json.RawMessage(
		`{"type": "object", "additionalProperties": false, "properties": {"id": {"type": "string"}}}`)}))
	require.NoError(t, r.Register(Type{Name: "Bare", New: capture}))
	require.NoError(t, r.Register(Type{Name: "NoBase", New: capture, NoBaseOptions: true, Schema: json.RawMessage(
		`{"type": "object", "additionalProperties": false, "properties": {"size": {"type": "integer"}}}`)}))

	opts := map[string]any{"size": json.Number("2"), "id": "a", "description": "d", "defer_loading": true}
	require.NoError(t, r.ValidateOptions("Plain", opts))
	c, err := r.New(context.Background(), "Plain", Args{Options: json.RawMessage(`{"size": 2, "id": "a", "description": "d", "defer_loading": true}`)})
	require.NoError(t, err)
	got := c.(*capturing).args
	assert.JSONEq(t, `{"size": 2}`, string(got.Options), "the factory does not see the base options")
	assert.Equal(t, BaseOptions{ID: "a", Description: "d", DeferLoading: true}, got.Base)
	assert.Same(t, r, got.Registry)

	c, err = r.New(context.Background(), "OwnID", Args{Options: json.RawMessage(`{"id": "x"}`)})
	require.NoError(t, err)
	got = c.(*capturing).args
	assert.JSONEq(t, `{"id": "x"}`, string(got.Options), "a type that declares id gets it")
	assert.Equal(t, "x", got.Base.ID)

	assert.NoError(t, r.ValidateOptions("Bare", map[string]any{"id": "b"}), "a type without options takes the base ones")
	assert.EqualError(t, r.ValidateOptions("Bare", map[string]any{"size": 1}), `capability "Bare" takes no options`)
	assert.Error(t, r.ValidateOptions("Bare", map[string]any{"defer_loading": "yes"}), "base options are typed")
	assert.Error(t, r.ValidateOptions("NoBase", map[string]any{"id": "n"}))

	doc, _ := r.SchemaDoc("Plain")
	props := doc.(map[string]any)["properties"].(map[string]any)
	for _, name := range BaseOptionNames {
		assert.Contains(t, props, name, "the composed schema shows %s", name)
	}
}

func TestNewNested(t *testing.T) {
	t.Parallel()
	r := NewRegistry()
	require.NoError(t, r.Register(Type{Name: "Leaf", New: capture}))
	c, err := Args{Registry: r, Setup: Setup{Dir: "/ws"}}.NewNested(context.Background(), Nested{Name: "Leaf", Options: json.RawMessage(`{"id": "in"}`)})
	require.NoError(t, err)
	got := c.(*capturing).args
	assert.Equal(t, "/ws", got.Dir, "a nested capability resolves paths where its holder does")
	assert.Equal(t, "in", got.Base.ID)
	_, err = Args{Registry: r}.NewNested(context.Background(), Nested{Name: "Nope"})
	var unknown *UnknownTypeError
	assert.ErrorAs(t, err, &unknown)
}
