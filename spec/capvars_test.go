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
	assert.EqualError(t, err, "agent.yaml:5:5: capabilities[1]: the options use {{who}}, but no value was given for it")

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
	assert.EqualError(t, err, "agent.yaml:3:5: capabilities[0]: filling the placeholders with their values makes more than 16 MB of text, the most a spec may hold filled")

	filled, err := s.WithCapabilityVars(map[string]string{"x": "ab"})
	require.NoError(t, err, "80 KB is well within it")
	assert.Contains(t, string(filled.Capabilities[0].Options), strings.Repeat("ab", 2_000))
}
