package spec

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSpecWithStepsIsAPipeline(t *testing.T) {
	t.Parallel()
	_, err := testLoader(t).Load("agent.yaml", []byte("model: test\nsteps:\n  a: {spec: a.yaml}\n"))
	var es Errors
	require.True(t, errors.As(err, &es), "%v", err)
	assert.Equal(t, []string{
		`agent.yaml:2:1: steps: is a pipeline's key: a file with steps is a pipeline, not an agent spec, and the two never mix`,
	}, messages(es))
}

func TestLoadValue(t *testing.T) {
	t.Parallel()
	src := "name: p\nsteps:\n  a:\n    spec:\n      model: test\n      instructions: Say {{who}}.\n      max_tool_rounds: 0x1F\n      x-note: kept\n"
	doc, err := ParseDocument("p.yaml", []byte(src), testEnv)
	require.NoError(t, err)
	s, err := testLoader(t).LoadValue(doc, "/steps/a/spec")
	require.NoError(t, err)
	assert.Equal(t, "test", s.Model)
	assert.Equal(t, 31, s.MaxToolRounds)
	assert.Equal(t, "p.yaml", s.File)
	assert.Equal(t, Position{File: "p.yaml", Line: 6, Col: 21}, s.Position("/instructions"))
	assert.Equal(t, []string{"who"}, Placeholders(s.Instructions...))
	inline := doc.Root().(map[string]any)["steps"].(map[string]any)["a"].(map[string]any)["spec"].(map[string]any)
	assert.Equal(t, "kept", inline["x-note"], "loading must leave the document as it was")

	tests := []struct {
		name, src string
		want      []string
	}{
		{
			name: "errors at their place in the enclosing file",
			src:  "steps:\n  a:\n    spec:\n      model: test\n      max_tool_rounds: 0x0\n      instructons: hi\n",
			want: []string{
				`p.yaml:5:24: max_tool_rounds: expected a positive integer, found 0x0`,
				`p.yaml:6:7: unknown key "instructons" (did you mean "instructions"?)`,
			},
		},
		{
			name: "not a mapping",
			src:  "steps:\n  a:\n    spec: [1]\n",
			want: []string{`p.yaml:3:11: steps.a.spec: an agent spec must be a mapping (model: ..., instructions: ...), found a list`},
		},
		{
			name: "an inline spec with steps",
			src:  "steps:\n  a:\n    spec: {model: test, steps: {}}\n",
			want: []string{`p.yaml:3:25: steps: is a pipeline's key: a file with steps is a pipeline, not an agent spec, and the two never mix`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			doc, err := ParseDocument("p.yaml", []byte(tt.src), testEnv)
			require.NoError(t, err)
			_, err = testLoader(t).LoadValue(doc, "/steps/a/spec")
			var es Errors
			require.True(t, errors.As(err, &es), "%v", err)
			assert.Equal(t, tt.want, messages(es))
		})
	}
}

func TestParseDocument(t *testing.T) {
	t.Parallel()
	doc, err := ParseDocument("p.json", []byte("{\"steps\": {\n  \"a\": {\"input\": \"x\"}}}"), nil)
	require.NoError(t, err)
	assert.Equal(t, "p.json", doc.File())
	assert.Equal(t, Position{File: "p.json", Line: 2, Col: 3}, doc.KeyPos("/steps/a"))
	assert.Equal(t, Position{File: "p.json", Line: 2, Col: 18}, doc.Pos("/steps/a/input"))

	_, err = ParseDocument("p.yaml", []byte("a: 1\na: 2\n"), nil)
	assert.EqualError(t, err, `p.yaml:2:1: duplicate key "a" (already set on line 1)`)
}

func TestPlaceholders(t *testing.T) {
	t.Parallel()
	assert.Equal(t, []string{"a", "b.c"}, Placeholders("{{a}} and {{ b.c }}", "{{a}} {{ not one"))
	assert.Nil(t, Placeholders("none"))
}

func messages(es Errors) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Error()
	}
	return out
}
