package runtime

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestRenderInstructions(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"repo": "agentspec", "team.name": "core", "empty": ""}
	cases := []struct {
		name         string
		instructions []string
		want         string
		missing      []string
	}{
		{name: "none", want: ""},
		{name: "joined with blank lines", instructions: []string{"One.", "Two."}, want: "One.\n\nTwo."},
		{name: "placeholders", instructions: []string{"Review {{repo}} for {{ team.name }}.{{empty}}"}, want: "Review agentspec for core."},
		{name: "not a placeholder", instructions: []string{"Use {{ two words }} and {single} and {{}}."}, want: "Use {{ two words }} and {single} and {{}}."},
		{name: "a value is not expanded again", instructions: []string{"{{x}}"}, want: "{{repo}}"},
		{name: "missing, in order of use, once each", instructions: []string{"{{b}} {{a}}", "{{b}} {{repo}}"}, missing: []string{"b", "a"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v := vars
			if tc.name == "a value is not expanded again" {
				v = map[string]string{"x": "{{repo}}"}
			}
			got, err := RenderInstructions(tc.instructions, v)
			if tc.missing != nil {
				assert.Equal(t, &MissingVarError{Names: tc.missing}, err)
				return
			}
			assert.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
	assert.EqualError(t, &MissingVarError{Names: []string{"repo"}}, `instructions use variable "repo", but no value was given`)
}
