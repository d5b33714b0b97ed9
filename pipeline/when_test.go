package pipeline

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A step's when is compiled when the pipeline loads and evaluated over the
// values of its references, as their schemas type them.
func TestConditionEval(t *testing.T) {
	t.Parallel()
	p, err := LoadFile(filepath.Join("testdata", "review-fix", "pipeline.yaml"))
	require.NoError(t, err)
	review := p.Step("review")
	require.NotNil(t, review.Condition)
	require.Len(t, review.Condition.Refs(), 1)
	assert.Equal(t, "triage", review.Condition.Refs()[0].Name)

	var files any
	require.NoError(t, json.Unmarshal([]byte(`[{"path": "a.go", "problem": "crash"}]`), &files))
	ok, err := review.Condition.Eval([]any{files})
	require.NoError(t, err)
	assert.True(t, ok)
	ok, err = review.Condition.Eval([]any{[]any{}})
	require.NoError(t, err)
	assert.False(t, ok, "no files: nothing to review")
	_, err = review.Condition.Eval(nil)
	assert.Error(t, err)
	assert.Nil(t, p.Step("triage").Condition, "a step without when always runs")
}

// Numbers reach CEL as the schema types them: an integer property compares
// with integer literals, whether it arrives as 3 or 3.0.
func TestConditionNumbers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		value any
		want  bool
	}{{float64(3), true}, {json.Number("3"), true}, {float64(1), false}} {
		ok, err := compileAndEval(t, "{{steps.t.output.count}} >= 2", tc.value)
		require.NoError(t, err)
		assert.Equal(t, tc.want, ok, "%v", tc.value)
	}
}

func compileAndEval(t *testing.T, when string, value any) (bool, error) {
	t.Helper()
	dir := t.TempDir()
	writeAgents(t, dir)
	src := "steps:\n  t: {spec: agents/triage.yaml}\n  a:\n    spec: agents/plain.yaml\n    when: \"" + when + "\"\n"
	p, err := Load(filepath.Join(dir, "p.yaml"), []byte(src))
	require.NoError(t, err)
	return p.Step("a").Condition.Eval([]any{value})
}
