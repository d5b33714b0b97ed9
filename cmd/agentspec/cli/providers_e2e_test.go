package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/runtime/providers/providertest"
)

// An agent reads, writes and edits files through both wire protocols, with
// the real langchaingo clients, and answers with JSON valid against its output
// schema after one invalid attempt.
func TestRunReadsWritesAndEditsThroughProviders(t *testing.T) {
	replies := []providertest.Reply{
		providertest.Calls(providertest.ToolCall{Name: "read_file", Arguments: `{"path":"notes.md"}`}),
		providertest.Calls(
			providertest.ToolCall{Name: "write_file", Arguments: `{"path":"out/summary.md","content":"hello\n"}`},
			providertest.ToolCall{Name: "create_directory", Arguments: `{"path":"out"}`},
		),
		providertest.Calls(
			providertest.ToolCall{Name: "create_directory", Arguments: `{"path":"out"}`},
		),
		providertest.Calls(
			providertest.ToolCall{Name: "write_file", Arguments: `{"path":"out/summary.md","content":"hello\n"}`},
			providertest.ToolCall{Name: "edit_file", Arguments: `{"path":"notes.md","old_text":"hello from the notes","new_text":"summarised"}`},
		),
		providertest.Text(`{"files_written": "two"}`), // breaks the schema: sent back
		providertest.Text("```json\n{\"files_written\": 2}\n```"),
	}
	const schema = `
output_schema:
  type: object
  properties: {files_written: {type: integer}}
  required: [files_written]
  additionalProperties: false
`
	aws := providertest.AWSCredentials{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "secret-example", SessionToken: "session", Region: "eu-north-1"}
	var vertexURL string // the Vertex stand-in's, set by its setup
	cases := []struct {
		name  string
		setup func(t *testing.T) *providertest.Server
		model string
		extra string // more of the spec
	}{
		{"openai", func(t *testing.T) *providertest.Server {
			srv := providertest.NewOpenAIServer(t, replies...)
			t.Setenv("OPENAI_API_KEY", "sk-test")
			t.Setenv("OPENAI_BASE_URL", srv.BaseURL())
			return srv
		}, "openai:gpt-test", ""},
		{"anthropic", func(t *testing.T) *providertest.Server {
			srv := providertest.NewAnthropicServer(t, replies...)
			t.Setenv("ANTHROPIC_API_KEY", "sk-ant-test")
			t.Setenv("ANTHROPIC_BASE_URL", srv.URL)
			return srv
		}, "anthropic:claude-test", ""},
		// SigV4 from the standard variables, recomputed by the stand-in.
		{"bedrock", func(t *testing.T) *providertest.Server {
			srv := providertest.NewBedrockSigV4Server(t, aws, replies...)
			isolateAWS(t)
			t.Setenv("AWS_ACCESS_KEY_ID", aws.AccessKeyID)
			t.Setenv("AWS_SECRET_ACCESS_KEY", aws.SecretAccessKey)
			t.Setenv("AWS_SESSION_TOKEN", aws.SessionToken)
			t.Setenv("AWS_DEFAULT_REGION", aws.Region)
			t.Setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", srv.URL)
			return srv
		}, "bedrock:us.anthropic.claude-sonnet-4-5-20250929-v1:0", ""},
		// A Bedrock API key as a bearer token; the endpoint from AWS_ENDPOINT_URL.
		{"bedrock-bearer", func(t *testing.T) *providertest.Server {
			srv := providertest.NewBedrockBearerServer(t, "bedrock-key", replies...)
			isolateAWS(t)
			t.Setenv("AWS_BEARER_TOKEN_BEDROCK", "bedrock-key")
			t.Setenv("AWS_REGION", "us-east-1")
			t.Setenv("AWS_ENDPOINT_URL", srv.URL)
			return srv
		}, "bedrock:amazon.nova-pro-v1:0", ""},
		{"gateway-converse", func(t *testing.T) *providertest.Server {
			srv := providertest.NewBedrockBearerServer(t, "pylf_v1_us_key", replies...)
			isolateAWS(t)
			t.Setenv("PYDANTIC_AI_GATEWAY_API_KEY", "pylf_v1_us_key")
			t.Setenv("PYDANTIC_AI_GATEWAY_BASE_URL", srv.URL)
			return srv
		}, "gateway/converse:amazon.nova-pro-v1:0", ""},
		// Application Default Credentials from a service-account key, whose
		// token_uri is the stand-in's token endpoint.
		{"vertex", func(t *testing.T) *providertest.Server {
			srv := providertest.NewVertexServer(t, "proj-e2e", "us-central1", replies...)
			t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", srv.KeyFile(t, t.TempDir()))
			t.Setenv("GOOGLE_CLOUD_PROJECT", "proj-e2e")
			t.Setenv("GOOGLE_CLOUD_LOCATION", "")
			vertexURL = srv.URL
			return srv.Server
		}, "google-cloud:gemini-2.5-pro", "model_settings: {base_url: VERTEX_URL}\n"},
		// Claude on Vertex AI, Anthropic's publisher model, with the same
		// credentials.
		{"vertex-claude", func(t *testing.T) *providertest.Server {
			srv := providertest.NewVertexClaudeServer(t, "proj-e2e", "us-east5", replies...)
			t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", srv.KeyFile(t, t.TempDir()))
			t.Setenv("GOOGLE_CLOUD_PROJECT", "proj-e2e")
			t.Setenv("GOOGLE_CLOUD_LOCATION", "us-east5")
			vertexURL = srv.URL
			return srv.Server
		}, "google-cloud:claude-sonnet-4-5@20250929", "model_settings: {base_url: VERTEX_URL}\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := tc.setup(t)
			f := newRunFixture(t)
			extra := strings.ReplaceAll(tc.extra, "VERTEX_URL", vertexURL)
			specPath := f.write(t, "agent.yaml", "model: "+tc.model+"\ninstructions: Summarise notes.md.\ncapabilities: [FileSystem]\n"+extra+schema)

			out := invokeRun(t, "", specPath, "--workspace", f.workspace, "--output", "text")
			require.Equal(t, 0, out.code, out.stderr)
			assert.JSONEq(t, `{"files_written": 2}`, out.stdout)

			summary, err := os.ReadFile(filepath.Join(f.workspace, "out", "summary.md"))
			require.NoError(t, err)
			assert.Equal(t, "hello\n", string(summary))
			notes, err := os.ReadFile(filepath.Join(f.workspace, "notes.md"))
			require.NoError(t, err)
			assert.Equal(t, "# Notes\nsummarised\n", string(notes))

			reqs := srv.Requests()
			require.Len(t, reqs, 6)
			// The first write failed (no parent yet) and the model was told so.
			assert.Contains(t, string(reqs[2].Body), "Parent directory 'out' does not exist.")
			// The invalid answer went back with the validation error.
			assert.Contains(t, string(reqs[5].Body), "Try again. Your previous response was invalid")
			assert.Contains(t, out.stderr, "  edit_file notes.md  ")
		})
	}
}

// isolateAWS keeps the machine's AWS configuration out of a test.
func isolateAWS(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_BEARER_TOKEN_BEDROCK",
		"AWS_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_BEDROCK_RUNTIME"} {
		t.Setenv(k, "")
	}
	t.Setenv("AWS_CONFIG_FILE", dir+"/config")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", dir+"/credentials")
}
