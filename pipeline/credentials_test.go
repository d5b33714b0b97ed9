package pipeline

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/spec"
)

// Every step whose provider has no key is found before any step runs, each
// at its own name, however late in the graph it comes; offline models need
// none. Not parallel: it sets the environment.
func TestCheckCredentials(t *testing.T) {
	for _, v := range []string{"OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"} {
		t.Setenv(v, "")
	}
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "answer.yaml"), []byte("- text: done\n"), 0o644))
	file := filepath.Join(dir, "p.yaml")
	src := `steps:
  first:
    spec: {model: "script:answer.yaml"}
  offline:
    spec: {model: test}
  draft:
    needs: [first]
    spec: {model: "openai:gpt-4o-mini"}
  review:
    needs: [draft]
    spec: {model: "anthropic:claude-sonnet-4-5"}
  again:
    needs: [review]
    spec: {model: "openai:gpt-4o-mini"}
`
	p, err := Load(file, []byte(src))
	require.NoError(t, err)

	err = p.CheckCredentials()
	var es spec.Errors
	require.True(t, errors.As(err, &es), "want spec.Errors, got %v", err)
	got := make([]string, len(es))
	for i, e := range es {
		got[i] = e.Error()
	}
	assert.Equal(t, []string{
		file + ":6:3: steps.draft: openai: API key not set: set the OPENAI_API_KEY environment variable",
		file + ":9:3: steps.review: anthropic: API key not set: set the ANTHROPIC_API_KEY environment variable",
		file + ":12:3: steps.again: openai: API key not set: set the OPENAI_API_KEY environment variable",
	}, got)

	t.Setenv("OPENAI_API_KEY", "sk-test")
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-test")
	assert.NoError(t, p.CheckCredentials())
}
