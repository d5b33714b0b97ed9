package pipeline

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func schema(t *testing.T, text string) Type {
	t.Helper()
	var m map[string]any
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber() // as the loader reads numbers
	require.NoError(t, dec.Decode(&m))
	return schemaType(m, "s")
}

func TestTypeProperty(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, schema, prop string
		ok                 bool
		want               []string // JSON types of the property
		names              []string
	}{
		{"listed", `{"type":"object","properties":{"a":{"type":"integer"}}}`, "a", true, []string{"integer"}, nil},
		{"not listed", `{"type":"object","properties":{"a":{},"b":{}}}`, "c", false, nil, []string{"a", "b"}},
		{"through $ref", `{"$ref":"#/$defs/o","$defs":{"o":{"type":"object","properties":{"a":{"$ref":"#/$defs/s"}}},"s":{"type":"string"}}}`, "a", true, []string{"string"}, nil},
		{"a map's values", `{"type":"object","additionalProperties":{"type":"boolean"}}`, "any", true, []string{"boolean"}, nil},
		{"closed and empty", `{"type":"object","additionalProperties":false}`, "a", false, nil, nil},
		{"an object that lists nothing", `{"type":"object"}`, "a", true, nil, nil},
		{"a string", `{"type":"string"}`, "a", false, nil, nil},
		{"anyOf branches", `{"anyOf":[{"type":"object","properties":{"a":{"type":"string"}}},{"type":"null"}]}`, "a", true, []string{"string"}, nil},
		{"a $ref loop", `{"$ref":"#/$defs/a","$defs":{"a":{"$ref":"#/$defs/a"}}}`, "x", true, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, names, ok := schema(t, tt.schema).Property(tt.prop)
			assert.Equal(t, tt.ok, ok)
			assert.Equal(t, tt.names, names)
			if ok {
				assert.Equal(t, tt.want, p.JSON())
			}
		})
	}
}

func TestTypeJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		schema string
		want   []string
		str    string
	}{
		{`{"type":["string","null"]}`, []string{"null", "string"}, "null or string"},
		{`{"enum":["a",1,1.5]}`, []string{"integer", "number", "string"}, "integer or number or string"},
		{`{"const":true}`, []string{"boolean"}, "boolean"},
		{`{"items":{"type":"string"}}`, []string{"array"}, "array"},
		{`{"oneOf":[{"type":"string"},{}]}`, nil, "any value"},
		{`{}`, nil, "any value"},
		{`{"allOf":[{"type":["array","null"]},{"type":"array"},{"minItems":1}]}`, []string{"array"}, "array"},
		{`{"allOf":[{"type":"number"},{"type":"integer"}]}`, []string{"integer"}, "integer"},
	}
	for _, tt := range tests {
		ty := schema(t, tt.schema)
		assert.Equal(t, tt.want, ty.JSON(), tt.schema)
		assert.Equal(t, tt.str, ty.String(), tt.schema)
	}
	assert.True(t, schema(t, `{"type":"integer"}`).Is("number"), "an integer is a number")
	assert.False(t, schema(t, `{"type":"number"}`).Is("integer"))
	assert.False(t, schema(t, `{"type":["array","null"]}`).Is("array"))
}

func TestTypeItems(t *testing.T) {
	t.Parallel()
	items, ok := schema(t, `{"type":"array","items":{"$ref":"#/$defs/f"},"$defs":{"f":{"type":"object"}}}`).Items()
	require.True(t, ok)
	assert.Equal(t, []string{"object"}, items.JSON())
	_, ok = schema(t, `{"type":"string"}`).Items()
	assert.False(t, ok)
	items, ok = schema(t, `{"type":"array"}`).Items()
	assert.True(t, ok)
	assert.False(t, items.Known(), "an array of anything")
}

func TestTypeRequires(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		schema string
		want   bool
	}{
		{`{"type":"object","properties":{"a":{}},"required":["a"]}`, true},
		{`{"type":"object","properties":{"a":{},"b":{}},"required":["b"]}`, false},
		{`{"type":"object","additionalProperties":{"type":"string"}}`, false},
		{`{"$ref":"#/$defs/o","$defs":{"o":{"type":"object","required":["a"]}}}`, true},
		{`{"allOf":[{"type":"object"},{"required":["a"]}]}`, true},
		{`{"anyOf":[{"required":["a"]},{"required":["a","b"]}]}`, true},
		{`{"oneOf":[{"required":["a"]},{"type":"null"}]}`, false},
		{`{}`, false},
	} {
		assert.Equal(t, tc.want, schema(t, tc.schema).Requires("a"), tc.schema)
	}
}

func TestTypeNonNull(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		schema string
		want   []string
	}{
		{`{"type":["integer","null"]}`, []string{"integer"}},
		{`{"type":["integer","string","null"]}`, []string{"integer", "string"}},
		{`{"anyOf":[{"type":"array"},{"type":"null"}]}`, []string{"array"}},
		{`{"type":"string"}`, []string{"string"}},
		{`{"enum":["a",null]}`, nil},
	} {
		assert.Equal(t, tc.want, schema(t, tc.schema).nonNull().JSON(), tc.schema)
	}
}
