package spec

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/capabilities"
)

func TestCapabilityVars(t *testing.T) {
	t.Parallel()
	reg := capabilities.NewRegistry()
	noop := func(context.Context, capabilities.Args) (capabilities.Capability, error) { return nil, nil }
	require.NoError(t, reg.Register(capabilities.Type{Name: "Leaf", New: noop}))
	require.NoError(t, reg.Register(capabilities.Type{
		Name: "Wrap", New: noop, Nested: []string{"inner"}, NoBaseOptions: true,
		Schema: json.RawMessage(`{"type": "object", "additionalProperties": false, "required": ["inner"],
			"properties": {"inner": {}}}`),
	}))
	s, err := (&Loader{Registry: reg}).Load("agent.yaml", []byte(`model: test
instructions: Fix {{path}}.
capabilities:
  - Leaf: {id: "{{path}}"}
  - Wrap: {inner: {Leaf: {id: "{{who}}-{{path}}"}}}
  - Leaf: {id: plain}
`))
	require.NoError(t, err)
	assert.Equal(t, []string{"path", "who"}, s.CapabilityPlaceholders())

	filled, err := s.WithCapabilityVars(map[string]string{"path": "a.go", "who": "me"})
	require.NoError(t, err)
	assert.JSONEq(t, `{"id": "a.go"}`, string(filled.Capabilities[0].Options))
	var wrap struct {
		Inner capabilities.Nested `json:"inner"`
	}
	require.NoError(t, json.Unmarshal(filled.Capabilities[1].Options, &wrap))
	assert.JSONEq(t, `{"id": "me-a.go"}`, string(wrap.Inner.Options), "a nested capability's arguments too")
	assert.Equal(t, s.Capabilities[2].Options, filled.Capabilities[2].Options)
	assert.Contains(t, string(s.Capabilities[0].Options), "{{path}}", "the spec itself is left as written")
	assert.Equal(t, s.Document, filled.Document, "what the spec means, for cache keys, is the spec as written")

	_, err = s.WithCapabilityVars(map[string]string{"path": "a.go"})
	assert.EqualError(t, err, "agent.yaml:5:32: capabilities[1]: the options use {{who}}, but no value was given for it")

	plain, err := (&Loader{Registry: reg}).Load("agent.yaml", []byte("model: test\ncapabilities: [{Leaf: {id: x}}]\n"))
	require.NoError(t, err)
	same, err := plain.WithCapabilityVars(nil)
	require.NoError(t, err)
	assert.Same(t, plain, same, "nothing to fill, no copy")
}

// A value given for a placeholder written many times cannot make the
// filled options grow past MaxFilled: the fill is refused before it is
// built, at the capability, however the growth is spread over its strings.
func TestCapabilityVarsAreBounded(t *testing.T) {
	t.Parallel()
	reg := capabilities.NewRegistry()
	noop := func(context.Context, capabilities.Args) (capabilities.Capability, error) { return nil, nil }
	require.NoError(t, reg.Register(capabilities.Type{Name: "Leaf", New: noop,
		Schema: json.RawMessage(`{"type": "object", "properties": {"texts": {"type": "array", "items": {"type": "string"}}}}`)}))
	many := strings.Repeat("{{x}}", 2_000)
	list := strings.TrimSuffix(strings.Repeat(`"`+many+`", `, 10), ", ")
	s, err := (&Loader{Registry: reg}).Load("agent.yaml", []byte("model: test\ncapabilities:\n  - Leaf: {texts: ["+list+"]}\n"))
	require.NoError(t, err)
	x := strings.Repeat("a", 1_000) // 20,000 times: 20 MB, past MaxFilled
	_, err = s.WithCapabilityVars(map[string]string{"x": x})
	assert.EqualError(t, err, "agent.yaml:3:5: capabilities[0]: the placeholders' values would add more than 16 MB (16000000 bytes) to the text, the most they may add ({{x}} is filled with 1 KB, 1000 bytes, each time it is used)")

	filled, err := s.WithCapabilityVars(map[string]string{"x": "ab"})
	require.NoError(t, err, "80 KB is well within it")
	assert.Contains(t, string(filled.Capabilities[0].Options), strings.Repeat("ab", 2_000))
}

// A backslash escapes a placeholder, as in Handlebars, which pydantic-ai
// renders its templates with: \{{name}} is the text {{name}}, needs no value
// and loses its backslash; \\{{name}} is a backslash and the placeholder.
// Only the two characters before the braces count: \\\{{name}} is two
// backslashes and the placeholder.
func TestEscapedPlaceholders(t *testing.T) {
	t.Parallel()
	assert.Equal(t, []string{"b", "c", "d"}, Placeholders(`\{{a}} \\{{b}}`, `\\\{{c}} {{d}} \{{ a }}`))
	assert.Nil(t, Placeholders(`\{{a}}`))

	vars := map[string]string{"a": "A", "b": "B"}
	for in, want := range map[string]string{
		`\{{a}}`:                  `{{a}}`,
		`\{{ a }} and {{a}}`:      `{{ a }} and A`,
		`\\{{a}}`:                 `\A`,
		`\\\{{a}}`:                `\\A`,
		`x\{{nope}}y`:             `x{{nope}}y`,
		`\{{a}}{{b}}`:             `{{a}}B`,
		`a\b \{ \{{ two words }}`: `a\b \{ \{{ two words }}`, // not a placeholder: a backslash before it is text
		`{{a}}\`:                  `A\`,
	} {
		budget := MaxFilled
		var missing []string
		got, err := FillPlaceholders(in, vars, func(n string) { missing = append(missing, n) }, &budget)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
		assert.Empty(t, missing, in)
	}
	budget := MaxFilled
	var missing []string
	got, err := FillPlaceholders(`\\{{nope}} \{{other}}`, vars, func(n string) { missing = append(missing, n) }, &budget)
	require.NoError(t, err)
	assert.Equal(t, []string{"nope"}, missing, "an escaped placeholder needs no value")
	assert.Equal(t, `\\{{nope}} {{other}}`, got, "a placeholder without a value is left as written")

	reg := capabilities.NewRegistry()
	noop := func(context.Context, capabilities.Args) (capabilities.Capability, error) { return nil, nil }
	require.NoError(t, reg.Register(capabilities.Type{Name: "Leaf", New: noop}))
	s, err := (&Loader{Registry: reg}).Load("agent.yaml", []byte(`model: test
deps_schema: {type: object, properties: {who: {type: string}}}
description: Shows \{{team}}.
instructions: 'Reply with \{{name}} replaced, for {{who}}.'
capabilities:
  - Leaf: {id: '\{{path}}'}
  - Leaf: {id: '\\{{who}}'}
`))
	require.NoError(t, err)
	assert.Empty(t, s.Warnings, "an escaped placeholder is no placeholder deps_schema should list")
	assert.Equal(t, []string{"who"}, s.VarNames())
	assert.Equal(t, []string{"who"}, s.CapabilityPlaceholders())
	assert.Empty(t, s.Capabilities[0].Placeholders())
	assert.Len(t, s.TemplatedCapabilityNotes("x"), 1, "only the capability with a placeholder")

	filled, err := s.WithCapabilityVars(map[string]string{"who": "me"})
	require.NoError(t, err)
	assert.JSONEq(t, `{"id": "{{path}}"}`, string(filled.Capabilities[0].Options))
	assert.JSONEq(t, `{"id": "\\me"}`, string(filled.Capabilities[1].Options))
	_, err = s.WithCapabilityVars(nil)
	assert.EqualError(t, err, "agent.yaml:7:19: capabilities[1]: the options use {{who}}, but no value was given for it")

	// A check without values builds the capability whose options only hold
	// escaped placeholders, as a run would: with their text.
	checked := s.WithoutTemplatedCapabilities()
	require.Len(t, checked.Capabilities, 1)
	assert.JSONEq(t, `{"id": "{{path}}"}`, string(checked.Capabilities[0].Options))
	assert.Contains(t, string(s.Capabilities[0].Options), `\\{{path}}`, "the spec itself is left as written")
}

// A placeholder without a value is placed at its {{, in a plain, a
// double-quoted or a single-quoted scalar and on its line within a literal
// or folded block, in a nested entry's options and a positional value too;
// the first place a name is used is the one told, and each name's error
// comes in the order of the file.
func TestMissingCapabilityVarIsAtThePlaceholder(t *testing.T) {
	t.Parallel()
	reg := capabilities.NewRegistry()
	noop := func(context.Context, capabilities.Args) (capabilities.Capability, error) { return nil, nil }
	require.NoError(t, reg.Register(capabilities.Type{Name: "Leaf", New: noop, Positional: "id",
		Schema: json.RawMessage(`{"type": "object", "additionalProperties": false, "properties": {"id": {}, "list": {}}}`)}))
	require.NoError(t, reg.Register(capabilities.Type{
		Name: "Wrap", New: noop, Nested: []string{"inner"}, NoBaseOptions: true,
		Schema: json.RawMessage(`{"type": "object", "additionalProperties": false, "required": ["inner"],
			"properties": {"inner": {}}}`),
	}))
	for _, tc := range []struct{ name, caps, want string }{
		{"plain", "  - Leaf:\n      id: x-{{who}}\n", "agent.yaml:4:13: "},
		{"double-quoted", "  - Leaf: {id: \"x-{{who}}\"}\n", "agent.yaml:3:19: "},
		{"single-quoted", "  - Leaf: {id: 'it''s {{who}}'}\n", "agent.yaml:3:23: "},
		{"plain, spaced", "  - Leaf:\n      id: a {{ who }} b\n", "agent.yaml:4:13: "},
		{"literal block", "  - Leaf:\n      id: |\n        first line\n        then {{who}} and {{who}}\n", "agent.yaml:6:14: "},
		{"folded block", "  - Leaf:\n      id: >-\n        first {{x}}\n\n          {{who}} indented\n", "agent.yaml:7:11: "},
		{"positional", "  - Leaf: 'by {{who}}'\n", "agent.yaml:3:15: "},
		{"list", "  - Leaf: {list: [a, \"{{who}}\"]}\n", "agent.yaml:3:23: "},
		{"nested", "  - Wrap: {inner: {Leaf: {id: \"{{who}}\"}}}\n", "agent.yaml:3:32: "},
		{"nested long form", "  - Wrap: {inner: {name: Leaf, arguments: {id: \"{{who}}\"}}}\n", "agent.yaml:3:49: "},
		// After an escape the source no longer reads as the value: the
		// scalar's start is told.
		{"after an escape", "  - Leaf: {id: \"\\t{{who}}\"}\n", "agent.yaml:3:16: "},
	} {
		s, err := (&Loader{Registry: reg}).Load("agent.yaml", []byte("model: test\ncapabilities:\n"+tc.caps))
		require.NoError(t, err, tc.name)
		_, err = s.WithCapabilityVars(map[string]string{"x": "1"})
		assert.EqualError(t, err, tc.want+"capabilities[0]: the options use {{who}}, but no value was given for it", tc.name)
	}

	s, err := (&Loader{Registry: reg}).Load("agent.yaml", []byte("model: test\ncapabilities:\n"+
		"  - Leaf: {list: [\"{{b}}\", \"{{a}}\"], id: \"{{b}}\"}\n"))
	require.NoError(t, err)
	_, err = s.WithCapabilityVars(nil)
	assert.EqualError(t, err, "agent.yaml:3:20: capabilities[0]: the options use {{b}}, but no value was given for it\n"+
		"agent.yaml:3:29: capabilities[0]: the options use {{a}}, but no value was given for it")
}

// A spec built in Go has no positions of its values: a placeholder without
// a value in it is told at its capability's Pos, as before placeholders
// were placed, and not at the file alone.
func TestMissingCapabilityVarOfASpecBuiltInGo(t *testing.T) {
	t.Parallel()
	s := &Spec{File: "agent.yaml", Capabilities: []Capability{{
		Name: "Leaf", Options: json.RawMessage(`{"id": "x-{{who}}"}`),
		Pos: Position{File: "agent.yaml", Line: 7, Col: 3}, Pointer: "/capabilities/0/Leaf",
	}}}
	_, err := s.WithCapabilityVars(nil)
	assert.EqualError(t, err, "agent.yaml:7:3: capabilities[0]: the options use {{who}}, but no value was given for it")
}

// The instructions' placeholders are placed as the options' are; a Spec
// built in Go, or whose instructions were changed after it was loaded, has
// no place for them, which is said rather than guessed.
func TestInstructionPlaceholderAt(t *testing.T) {
	t.Parallel()
	s, err := (&Loader{}).Load("agent.yaml", []byte("model: test\ninstructions:\n  - Read \\{{who}} first.\n  - 'Then {{ who }}, {{who}}'\n"))
	require.NoError(t, err)
	pos, ok := s.InstructionPlaceholderAt("who")
	assert.True(t, ok)
	assert.Equal(t, Position{File: "agent.yaml", Line: 4, Col: 11}, pos, "the first not escaped")
	_, ok = s.InstructionPlaceholderAt("nobody")
	assert.False(t, ok, "a name the instructions do not use")

	edited := *s
	edited.Instructions = []string{"Other {{who}}.", s.Instructions[1]}
	_, ok = edited.InstructionPlaceholderAt("who")
	assert.False(t, ok, "instructions the file no longer writes")

	_, ok = (&Spec{File: "agent.yaml", Instructions: []string{"{{who}}"}}).InstructionPlaceholderAt("who")
	assert.False(t, ok, "a Spec built in Go")
}
