package runtime

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/spec"
)

func TestTestModelRunsEveryToolThenAnswers(t *testing.T) {
	t.Parallel()
	echo := &echoTool{name: "echo"}
	failing := funcTool{name: "fails", fn: func(context.Context, json.RawMessage) (string, error) {
		return "", capabilities.Retry("not today")
	}}
	s := newSpec(func(s *spec.Spec) { s.Model = "test" })
	res, err := Run(context.Background(), s, WithWorkspace(t.TempDir()),
		WithCapabilities(toolCaps{echo, failing}))
	require.NoError(t, err)
	assert.Equal(t, []string{"{}"}, echo.Calls())
	assert.Equal(t, `{"echo":"echo({})"}`, res.Output)
	assert.Equal(t, 2, res.Usage.Requests)
	assert.Equal(t, 2, res.Usage.ToolCalls)
}

func TestTestModelAnswerMatchesOutputSchema(t *testing.T) {
	t.Parallel()
	s := newSpec(func(s *spec.Spec) {
		s.Model = "test"
		s.OutputSchema = json.RawMessage(`{"type": "object", "properties": {"city": {"type": "string", "minLength": 2}, "pop": {"type": "integer", "minimum": 1}}, "required": ["city", "pop"]}`)
	})
	res, err := Run(context.Background(), s, WithWorkspace(t.TempDir()))
	require.NoError(t, err)
	assert.JSONEq(t, `{"city": "aa", "pop": 1}`, string(res.JSON))
}

func TestOutputRetriesBoundTheAnswers(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		output *int
		want   int
	}{{nil, MaxAttempts}, {ptr(0), 1}, {ptr(3), 4}} {
		s := newSpec(func(s *spec.Spec) { s.Model, s.OutputRetries = "test", c.output })
		res, err := Run(context.Background(), s, WithWorkspace(t.TempDir()),
			WithValidator(func(context.Context, *Result) error { return Feedback("never good enough") }))
		require.ErrorIs(t, err, ErrInvalidAnswer)
		assert.Equal(t, c.want, res.Usage.Requests, "answers given")
	}
}
