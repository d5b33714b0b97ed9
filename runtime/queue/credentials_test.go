package queue

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/runtime/providers/providertest"
)

// A worker's jobs share what the AWS credential chain found, for the
// worker's life: the chain is asked once by the worker, not once per job
// (the SDK's cache kept with it renews credentials as they expire). The
// chain's credential_process counts the times it is asked. Not parallel:
// the chain reads the process's environment.
func TestWorkerAsksTheAWSChainOnce(t *testing.T) {
	creds := providertest.AWSCredentials{AccessKeyID: "AKIDPROCESS", SecretAccessKey: "process-secret", Region: "us-east-1"}
	asked := providertest.AWSCredentialProcess(t, creds)
	const n = 4
	srv := providertest.NewBedrockSigV4Server(t, creds, slices.Repeat([]providertest.Reply{providertest.Text("done")}, n)...)
	t.Setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", srv.URL) // the worker's own endpoint: a spec's base_url would need Allow.Network
	url := startServer(t)
	root := t.TempDir()
	specPath, s := writeSpec(t, t.TempDir(), "model: bedrock:anthropic.claude-sonnet-4-5\ninstructions: Answer.\n", "")
	startWorker(t, url, WorkerOptions{Name: "w", Concurrency: 2, WorkspaceRoot: root})
	list, _ := submit(t, connect(t, url, 0), BatchOptions{SpecPath: specPath, Spec: s, Workspaces: jobDirs(t, root, n), WorkspaceRoot: root})
	require.Len(t, list, n)
	for _, r := range list {
		require.NoError(t, r.Err, "job %d", r.Index)
	}
	assert.Equal(t, 1, asked(), "times the credential chain was asked")
}
