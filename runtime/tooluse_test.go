package runtime

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/runtime/providers"
	"github.com/agentspec/agentspec/runtime/providers/providertest"
	"github.com/agentspec/agentspec/spec"
)

// A spec whose capabilities offer tools, on a Bedrock model the Converse
// API has no tool use for, is refused by Check (agentspec validate) at the
// capability that offers them, and by Run before any request, since it
// failed only at the first request, which the provider refused. Without
// tools, or on a model with tool use, it passes.
func TestToolsOnABedrockModelWithoutToolUse(t *testing.T) {
	t.Parallel()
	creds := providertest.AWSCredentials{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "secret", Region: "us-east-1"}
	load := func(t *testing.T, src string) *spec.Spec {
		t.Helper()
		s, err := (&spec.Loader{ModelCheck: CheckModel}).Load("agent.yaml", []byte(src))
		require.NoError(t, err)
		return s
	}
	const titan = "model: bedrock:amazon.titan-text-express-v1\ninstructions: Read a.txt.\ncapabilities:\n  - FileSystem\n"
	want := "agent.yaml:4:5: capabilities[0]: FileSystem offers tools, which bedrock:amazon.titan-text-express-v1 cannot call: " +
		"the Converse API has no tool use for Amazon Titan models; give the spec a model that has it " +
		"(Claude 3 or later, Nova, Llama 3.1, Mistral Large, Command R, ...) or leave out the capabilities that offer tools"

	err := Check(t.Context(), load(t, titan), WithWorkspace(t.TempDir()))
	assert.EqualError(t, err, want)

	srv := providertest.NewBedrockSigV4Server(t, creds, providertest.Text("done"))
	env := map[string]string{"AWS_ACCESS_KEY_ID": creds.AccessKeyID, "AWS_SECRET_ACCESS_KEY": creds.SecretAccessKey,
		"AWS_REGION": creds.Region, "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": srv.URL}
	getenv := WithProviderOptions(providers.Options{Getenv: func(k string) string { return env[k] }})
	_, err = Run(t.Context(), load(t, titan), WithWorkspace(t.TempDir()), getenv)
	assert.EqualError(t, err, want)
	assert.Len(t, srv.Requests(), 0, "no request is made")

	// Without tools, or on a model that has tool use, the spec passes.
	for _, src := range []string{
		"model: bedrock:amazon.titan-text-express-v1\n",
		"model: bedrock:meta.llama3-1-70b-instruct-v1:0\ncapabilities:\n  - FileSystem\n",
	} {
		assert.NoError(t, Check(t.Context(), load(t, src), WithWorkspace(t.TempDir())), src)
	}
}
