package cache

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

func TestCanonicalNumber(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"0", "0"},
		{"-0", "0"},
		{"0.000", "0"},
		{"0e10", "0"},
		{"1", "1"},
		{"1.0", "1"},
		{"1.000e0", "1"},
		{"10e-1", "1"},
		{"1E0", "1"},
		{"100", "100"},
		{"1e2", "100"},
		{"-42", "-42"},
		{"1.5", "1.5"},
		{"15e-1", "1.5"},
		{"0.001", "0.001"},
		{"1e-6", "0.000001"},
		{"1e-7", "1e-7"},
		{"1.5e-7", "1.5e-7"},
		{"123456789012345678901", "123456789012345678901"}, // 21 digits, kept whole
		{"1e21", "1e+21"},
		{"12345678901234567890123", "1.2345678901234567890123e+22"}, // beyond float64, every digit kept
		{"0.1000000000000000055511151231257827", "0.1000000000000000055511151231257827"},
		{"-2.50E+3", "-2500"},
	}
	for _, tt := range tests {
		got, err := canonicalNumber(tt.in)
		require.NoError(t, err, tt.in)
		assert.Equal(t, tt.want, got, tt.in)
		// The normal form is a fixed point and still a JSON number.
		again, err := canonicalNumber(got)
		require.NoError(t, err, got)
		assert.Equal(t, got, again, "normal form of %s", tt.in)
		assert.True(t, json.Valid([]byte(got)), got)
	}
}

func TestCanonicalNumberRejects(t *testing.T) {
	t.Parallel()
	for _, in := range []string{"", "-", ".5", "1.", "1e", "1e+", "0x10", "1e99999999999", "Infinity", "1_000"} {
		_, err := canonicalNumber(in)
		assert.Error(t, err, "%q", in)
	}
}

func TestCanonicalJSONEqualDocuments(t *testing.T) {
	t.Parallel()
	// Each group holds encodings of one document; no two groups are equal.
	groups := [][]string{
		{
			`{"a": 1, "b": [true, null, "x"], "c": {"y": 2.50, "x": "<&>"}}`,
			`{"c":{"x":"<&>","y":25e-1},"b":[true,null,"x"],"a":1.0}`,
			"{\n  \"b\" : [ true , null , \"x\" ],\n  \"a\" : 1E0,\n  \"c\" : { \"y\" : 2.5, \"x\" : \"\\u003c\\u0026\\u003e\" }\n}",
		},
		{`{"a": 2, "b": [true, null, "x"], "c": {"y": 2.5, "x": "<&>"}}`},
		{`{"a": 1, "b": [null, true, "x"], "c": {"y": 2.5, "x": "<&>"}}`},
		{`{"a": "1", "b": [true, null, "x"], "c": {"y": 2.5, "x": "<&>"}}`},
	}
	var firsts []string
	for _, g := range groups {
		want, err := CanonicalJSON(json.RawMessage(g[0]))
		require.NoError(t, err)
		for _, doc := range g[1:] {
			got, err := CanonicalJSON(json.RawMessage(doc))
			require.NoError(t, err)
			assert.Equal(t, string(want), string(got), doc)
		}
		firsts = append(firsts, string(want))
	}
	for i := range firsts {
		for j := i + 1; j < len(firsts); j++ {
			assert.NotEqual(t, firsts[i], firsts[j])
		}
	}
	assert.Equal(t, `{"a":1,"b":[true,null,"x"],"c":{"x":"<&>","y":2.5}}`, firsts[0])
}

// A spec reformatted, reordered or commented has the same canonical JSON once
// decoded; a changed value does not.
func TestCanonicalJSONOfYAML(t *testing.T) {
	t.Parallel()
	const original = `version: 1
model: openai:gpt-4o
instructions: Summarise the notes.
model_settings:
  temperature: 0.5
  max_tokens: 1000
workspace:
  input_globs: ["notes/*.md"]
`
	const reformatted = `# The summariser.
model: "openai:gpt-4o"   # the model
version: 1.0
workspace: {input_globs: [notes/*.md]}
model_settings: {max_tokens: 1e3, temperature: .5}
instructions: >-
  Summarise the notes.
`
	const changed = `version: 1
model: openai:gpt-4o
instructions: Summarise the notes.
model_settings:
  temperature: 0.7
  max_tokens: 1000
workspace:
  input_globs: ["notes/*.md"]
`
	canon := func(src string) string {
		var doc any
		require.NoError(t, yaml.Unmarshal([]byte(src), &doc))
		b, err := CanonicalJSON(doc)
		require.NoError(t, err)
		return string(b)
	}
	assert.Equal(t, canon(original), canon(reformatted))
	assert.NotEqual(t, canon(original), canon(changed))
}

func TestCanonicalJSONErrors(t *testing.T) {
	t.Parallel()
	for name, v := range map[string]any{
		"NaN":          math.NaN(),
		"invalid JSON": json.RawMessage(`{"a":`),
		"channel":      make(chan int),
	} {
		_, err := CanonicalJSON(v)
		assert.Error(t, err, name)
	}
}
