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
		// In draft 2020-12 the keywords beside a $ref apply too.
		{"beside a $ref", `{"$ref":"#/$defs/b","$defs":{"b":{"type":"object","properties":{"id":{"type":"integer"}}}},"properties":{"extra":{"type":"string"}}}`, "extra", true, []string{"string"}, nil},
		{"through a $ref with keywords beside it", `{"$ref":"#/$defs/b","$defs":{"b":{"type":"object","properties":{"id":{"type":"integer"}}}},"properties":{"extra":{"type":"string"}}}`, "id", true, []string{"integer"}, nil},
		{"anyOf branches that type it apart", `{"anyOf":[{"type":"object","properties":{"v":{"type":"string"}}},{"type":"object","properties":{"v":{"type":"integer"}}},{"type":"null"}]}`, "v", true, []string{"integer", "string"}, nil},
		{"oneOf branches, one open", `{"oneOf":[{"type":"object","properties":{"v":{"type":"string"}}},{"type":"object"}]}`, "v", true, nil, nil},
		{"an anyOf that is its own branch", `{"$ref":"#/$defs/a","$defs":{"a":{"anyOf":[{"$ref":"#/$defs/a"},{"type":"object","properties":{"y":{"type":"string"}}}]}}}`, "y", true, []string{"string"}, nil},
		{"an anyOf that is its own branch twice", `{"$ref":"#/$defs/a","$defs":{"a":{"anyOf":[{"$ref":"#/$defs/a"},{"$ref":"#/$defs/a"},{"type":"object","properties":{"y":{"type":"string"}}}]}}}`, "z", false, nil, []string{"y"}},
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

// An index's element type and how many items the array may have at most:
// maxItems, prefixItems with items: false, every allOf branch, the largest
// anyOf branch.
func TestTypeItem(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		schema string
		index  int
		want   []string // JSON types of the element
		most   int
	}{
		{`{"type":"array","items":{"type":"string"}}`, 7, []string{"string"}, -1},
		{`{"type":"array","maxItems":2}`, 1, nil, 2},
		{`{"type":"array","prefixItems":[{"type":"string"},{"type":"integer"}],"items":false}`, 1, []string{"integer"}, 2},
		{`{"type":"array","prefixItems":[{"type":"string"}],"items":{"type":"boolean"}}`, 3, []string{"boolean"}, -1},
		{`{"type":"array","items":false}`, 0, nil, 0},
		{`{"allOf":[{"type":"array","maxItems":5},{"maxItems":3}]}`, 0, nil, 3},
		{`{"anyOf":[{"type":"array","maxItems":2},{"type":"array","maxItems":4},{"type":"null"}]}`, 0, nil, 4},
		{`{"anyOf":[{"type":"array","maxItems":2},{"type":"array"}]}`, 0, nil, -1},
		{`{"$ref":"#/$defs/l","$defs":{"l":{"type":"array","maxItems":1}}}`, 0, nil, 1},
	} {
		item, most, ok := schema(t, tc.schema).Item(tc.index)
		require.True(t, ok, tc.schema)
		assert.Equal(t, tc.want, item.JSON(), tc.schema)
		assert.Equal(t, tc.most, most, tc.schema)
	}
	items, ok := schema(t, `{"type":"array","prefixItems":[{"type":"string"}],"items":{"type":"boolean"}}`).Items()
	require.True(t, ok)
	assert.False(t, items.Known(), "a tuple's items differ by index")
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

// InputValue types a --var as the checks type {{inputs.NAME}}.
func TestInputValue(t *testing.T) {
	t.Parallel()
	p, err := Load("p.yaml", []byte(`inputs:
  type: object
  $defs: {n: {type: integer}}
  properties:
    n: {$ref: "#/$defs/n"}
    num: {type: number}
    opt: {type: [boolean, "null"]}
    s: {type: string}
    either: {type: [string, integer]}
    any: {description: anything}
  additionalProperties: false
steps:
  a: {spec: {model: test, instructions: hi}}
`))
	require.NoError(t, err)
	for _, tc := range []struct {
		name, text string
		want       any
		err        string
	}{
		{"n", "3", json.Number("3"), ""},
		{"n", " 3.0 ", json.Number("3.0"), ""},
		{"n", "15e-1", nil, `input n is an integer, and "15e-1" is not one`},
		{"n", "150e-1", json.Number("150e-1"), ""},
		{"n", "12345678901234567890123", json.Number("12345678901234567890123"), ""},
		{"n", "3 4", nil, `input n is an integer, and "3 4" is not one`},
		{"n", `"3"`, nil, `input n is an integer, and "\"3\"" is not one`},
		{"num", "2.5", json.Number("2.5"), ""},
		{"num", "NaN", nil, `input num is a number, and "NaN" is not one`},
		{"opt", "null", nil, ""},
		{"opt", "True", true, ""},
		{"opt", "no", nil, `input opt is a boolean or null, and "no" is not one`},
		{"s", "007", "007", ""},
		{"either", "42", "42", ""},
		{"any", "[1]", "[1]", ""},
		{"other", "1", "1", ""},
	} {
		v, err := p.InputValue(tc.name, tc.text)
		if tc.err != "" {
			assert.EqualError(t, err, tc.err, tc.name+"="+tc.text)
			continue
		}
		require.NoError(t, err, tc.name+"="+tc.text)
		assert.Equal(t, tc.want, v, tc.name+"="+tc.text)
	}

	p, err = Load("p.yaml", []byte("steps:\n  a: {spec: {model: test, instructions: hi}}\n"))
	require.NoError(t, err)
	v, err := p.InputValue("n", "3")
	require.NoError(t, err)
	assert.Equal(t, "3", v, "without an inputs schema every input is a string")
}

func TestIntegral(t *testing.T) {
	t.Parallel()
	for n, want := range map[string]bool{
		"0": true, "-0.0": true, "3": true, "3.0": true, "-3.50": false, "1e3": true, "1E+3": true, "1.5e1": true,
		"1.25e1": false, "0.5": false, "0.05e2": true, "5e-1": false, "0e-99999999999999999999": true,
		"1e99999999999999999999": true, "1e-99999999999999999999": false, "100e-2": true, "100e-3": false,
	} {
		assert.Equal(t, want, integral(n), n)
	}
}

// What the keywords beside a $ref require is required, as what its target
// requires is.
func TestTypeRequiresBesideARef(t *testing.T) {
	t.Parallel()
	s := schema(t, `{"$ref":"#/$defs/b","$defs":{"b":{"type":"object","properties":{"id":{"type":"integer"}},"required":["id"]}},"properties":{"extra":{"type":"string"}},"required":["extra"]}`)
	assert.True(t, s.Requires("extra"))
	assert.True(t, s.Requires("id"))
	assert.Equal(t, []string{"object"}, s.JSON())
}
