package providers

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/spec"
)

// WebSearch's user_location goes to Anthropic and to the Responses API
// with its type, "approximate", which Anthropic requires (its SDK always
// sends it) and OpenAI's names; the spec gives only the place.
func TestWebSearchUserLocationIsApproximate(t *testing.T) {
	t.Parallel()
	loc := map[string]any{"country": "DE", "city": "Berlin"}
	tool := NativeTool{Kind: "web_search", Options: map[string]any{"user_location": loc}}
	want := map[string]any{"type": "approximate", "country": "DE", "city": "Berlin"}

	a, err := anthropicNative(tool, spec.ModelSettings{})
	require.NoError(t, err)
	assert.Equal(t, want, a["user_location"], "Messages API")
	r, err := responsesNative(tool)
	require.NoError(t, err)
	assert.Equal(t, want, r["user_location"], "Responses API")
	assert.NotContains(t, loc, "type", "the spec's value is left as it was")
}
