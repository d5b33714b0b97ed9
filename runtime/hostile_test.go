package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/runtime/providers"
	"github.com/agentspec/agentspec/spec"
)

// A spec built in Go can hold what no loaded spec can (a NaN, an infinite
// number, a budget that overflows, values that are not JSON). The public
// entry points refuse such a spec with an error before any request; none
// panics.
func TestHostileSpecsAreErrorsNotPanics(t *testing.T) {
	t.Parallel()
	nan, inf, ninf := math.NaN(), math.Inf(1), math.Inf(-1)
	settings := func(f func(*spec.ModelSettings)) *spec.Spec {
		s := &spec.Spec{Model: "openai:gpt-4o"}
		f(&s.ModelSettings)
		return s
	}
	cases := []struct {
		name string
		spec *spec.Spec
		err  string
	}{
		{"NaN temperature", settings(func(m *spec.ModelSettings) { m.Temperature = &nan }), "model_settings.temperature: NaN is not a finite number"},
		{"infinite temperature", settings(func(m *spec.ModelSettings) { m.Temperature = &inf }), "model_settings.temperature: +Inf is not a finite number"},
		{"NaN top_p", settings(func(m *spec.ModelSettings) { m.TopP = &nan }), "model_settings.top_p: NaN is not a finite number"},
		{"-Inf presence_penalty", settings(func(m *spec.ModelSettings) { m.PresencePenalty = &ninf }), "model_settings.presence_penalty: -Inf is not a finite number"},
		{"NaN frequency_penalty", settings(func(m *spec.ModelSettings) { m.FrequencyPenalty = &nan }), "model_settings.frequency_penalty: NaN is not a finite number"},
		{"NaN in a provider key", settings(func(m *spec.ModelSettings) { m.Provider = map[string]any{"openai_user": nan} }),
			"model_settings.openai_user: json: unsupported value: NaN"},
		{"NaN in extra_body", settings(func(m *spec.ModelSettings) { m.ExtraBody = map[string]any{"a": []any{nan}} }),
			"model_settings.extra_body.a: json: unsupported value: NaN"},
		{"a channel in a provider key", settings(func(m *spec.ModelSettings) { m.Provider = map[string]any{"openai_user": make(chan int)} }),
			"model_settings.openai_user: json: unsupported type: chan int"},
		{"an overflowing thinking budget", &spec.Spec{Model: "anthropic:claude-sonnet-4-5", ModelSettings: spec.ModelSettings{Thinking: &spec.Thinking{Enabled: true, Budget: math.MaxInt}}},
			fmt.Sprintf("model_settings.thinking: a budget of %d tokens is beyond any model's", math.MaxInt)},
		{"a capability without options or name", &spec.Spec{Model: "test", Capabilities: []spec.Capability{{}}}, `unknown capability type ""`},
		{"options that are not JSON", &spec.Spec{Model: "test", Capabilities: []spec.Capability{{Name: "Thinking", Options: json.RawMessage("{")}}}, "Thinking"},
		{"an output schema that is not JSON", &spec.Spec{Model: "test", OutputSchema: json.RawMessage("{")}, "output_schema is not JSON"},
		{"a check without a file", &spec.Spec{Model: "test", Workspace: spec.Workspace{Checks: []spec.Check{{}}}}, "workspace.checks[0].file: the path is empty"},
		{"nil spec", nil, "runtime: nil spec"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			ws := WithWorkspace(t.TempDir())
			if tc.spec != nil && tc.spec.Model != "test" {
				require.NotPanics(t, func() {
					err := providers.Validate(tc.spec.Model, tc.spec.ModelSettings)
					require.Error(t, err)
					assert.Contains(t, err.Error(), tc.err)
				}, "providers.Validate")
			}
			require.NotPanics(t, func() {
				err := Check(ctx, tc.spec, ws)
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
			}, "Check")
			require.NotPanics(t, func() {
				_, err := Run(ctx, tc.spec, ws, WithProviderOptions(providers.Options{Getenv: func(string) string { return "key" }}))
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
			}, "Run")
		})
	}
	require.NotPanics(t, func() {
		_, err := spec.Instantiate(context.Background(), nil, nil, capabilities.Setup{Dir: t.TempDir()})
		assert.EqualError(t, err, "spec: nil spec")
		assert.Equal(t, spec.Position{}, (*spec.Spec)(nil).Position("/model"))
	})
}

// A huge output_retries in a spec built in Go does not overflow into no
// answer attempts at all.
func TestHugeOutputRetries(t *testing.T) {
	t.Parallel()
	big := math.MaxInt
	assert.Equal(t, math.MaxInt, answerAttempts(&spec.Spec{OutputRetries: &big}))
	neg := math.MinInt
	assert.Equal(t, 1, answerAttempts(&spec.Spec{OutputRetries: &neg}))
}
