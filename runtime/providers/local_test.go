package providers

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A provider served on this machine by default is named by LocalDefault
// until the environment names its endpoint; other providers never are.
func TestLocalDefault(t *testing.T) {
	t.Parallel()
	none := func(string) string { return "" }
	at, vars, ok := LocalDefault("ollama:llama3", none)
	assert.True(t, ok)
	assert.Equal(t, "http://localhost:11434/v1", at)
	assert.Equal(t, []string{"OLLAMA_BASE_URL"}, vars)
	_, _, ok = LocalDefault(" litellm:gpt-4o ", none)
	assert.True(t, ok)

	named := func(v string) string {
		if v == "OLLAMA_BASE_URL" {
			return "http://gpu-box:11434"
		}
		return ""
	}
	_, _, ok = LocalDefault("ollama:llama3", named)
	assert.False(t, ok, "the operator named the endpoint")
	for _, m := range []string{"openai:gpt-4o", "anthropic:claude-sonnet-4-6", "test", "script:a.yaml", "nosuch:x", ""} {
		_, _, ok = LocalDefault(m, none)
		assert.False(t, ok, m)
	}
}
