package pipeline

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/runtime/providers/providertest"
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

// The credentials check and the jobs that follow share what the AWS
// credential chain found: it is asked once, not by the check and again by
// every job. The chain's credential_process counts the times it is asked.
// Not parallel: the chain reads the process's environment.
func TestCheckCredentialsSharesTheAWSChainWithTheRun(t *testing.T) {
	creds := providertest.AWSCredentials{AccessKeyID: "AKIDPROCESS", SecretAccessKey: "process-secret", Region: "us-east-1"}
	asked := providertest.AWSCredentialProcess(t, creds)
	srv := providertest.NewBedrockSigV4Server(t, creds,
		providertest.Reply{Text: "one"}, providertest.Reply{Text: "a"}, providertest.Reply{Text: "b"}, providertest.Reply{Text: "c"})
	model := `{model: "bedrock:anthropic.claude-sonnet-4-5", model_settings: {base_url: "` + srv.URL + `"}}`
	p := loadPipeline(t, map[string]string{"pipeline.yaml": `
inputs:
  type: object
  properties: {items: {type: array, items: {type: string}}}
steps:
  first:
    spec: ` + model + `
  each:
    needs: [first]
    for_each: "{{inputs.items}}"
    input: "{{item}}"
    spec: ` + model + `
`})
	require.NoError(t, p.CheckCredentials())
	res, err := Run(t.Context(), p, RunOptions{Workspace: t.TempDir(), Concurrency: 2,
		Inputs: map[string]any{"items": []any{"a", "b", "c"}}})
	require.NoError(t, err)
	require.True(t, res.OK(), "%+v", res.Steps)
	assert.Equal(t, 1, asked(), "times the credential chain was asked")
}
