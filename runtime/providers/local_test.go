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
	assert.Equal(t, []string{"OLLAMA_BASE_URL", "OLLAMA_HOST"}, vars)
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
	_, _, ok = LocalDefault("ollama:llama3", func(v string) string {
		return map[string]string{"OLLAMA_BASE_URL": "http://localhost:11434/v1"}[v]
	})
	assert.False(t, ok, "the operator named the default endpoint itself")
	// As a run reads the environment: Ollama's own OLLAMA_HOST names an
	// endpoint, and a blank variable names none.
	for env, value := range map[string]string{"OLLAMA_HOST": "gpu-box:11434", "OLLAMA_BASE_URL": "  "} {
		local := value == "  "
		_, _, ok = LocalDefault("ollama:llama3", func(v string) string {
			if v == env {
				return value
			}
			return ""
		})
		assert.Equal(t, local, ok, "%s=%q", env, value)
	}
	for _, m := range []string{"openai:gpt-4o", "anthropic:claude-sonnet-4-6", "test", "script:a.yaml", "nosuch:x", ""} {
		_, _, ok = LocalDefault(m, none)
		assert.False(t, ok, m)
	}
}
