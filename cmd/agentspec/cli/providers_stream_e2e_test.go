//go:build linux || darwin

package cli

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/creack/pty"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/runtime/providers/providertest"
)

// On a terminal the run streams: Bedrock's ConverseStream (AWS event-stream
// frames, SigV4 recomputed by the stand-in) and Vertex AI's
// streamGenerateContent (SSE, a service account's token) carry the same
// FileSystem agent as the whole responses do.
func TestRunStreamsThroughBedrockAndVertex(t *testing.T) {
	replies := []providertest.Reply{
		providertest.Calls(providertest.ToolCall{Name: "read_file", Arguments: `{"path":"notes.md"}`}),
		providertest.Calls(
			providertest.ToolCall{Name: "create_directory", Arguments: `{"path":"out"}`},
			providertest.ToolCall{Name: "write_file", Arguments: `{"path":"out/summary.md","content":"hello\n"}`},
		),
		providertest.Text("Summary written."),
	}
	aws := providertest.AWSCredentials{AccessKeyID: "AKIDSTREAM", SecretAccessKey: "stream-secret", Region: "ap-southeast-2"}
	cases := []struct {
		name   string
		setup  func(t *testing.T) (*providertest.Server, string)
		model  string
		stream string // the path the streamed requests end with
	}{
		{"bedrock", func(t *testing.T) (*providertest.Server, string) {
			srv := providertest.NewBedrockSigV4Server(t, aws, replies...)
			isolateAWS(t)
			t.Setenv("AWS_ACCESS_KEY_ID", aws.AccessKeyID)
			t.Setenv("AWS_SECRET_ACCESS_KEY", aws.SecretAccessKey)
			t.Setenv("AWS_REGION", aws.Region)
			t.Setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", srv.URL)
			return srv, ""
		}, "bedrock:anthropic.claude-3-5-haiku-20241022-v1:0", "/converse-stream"},
		{"vertex", func(t *testing.T) (*providertest.Server, string) {
			srv := providertest.NewVertexServer(t, "proj-stream", "global", replies...)
			t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", srv.KeyFile(t, t.TempDir()))
			t.Setenv("GOOGLE_CLOUD_PROJECT", "")
			t.Setenv("GOOGLE_CLOUD_LOCATION", "global")
			return srv.Server, "model_settings: {base_url: " + srv.URL + "}\n"
		}, "google-cloud:gemini-2.5-flash", ":streamGenerateContent"},
	}
	t.Setenv("TERM", "xterm")
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv, extra := tc.setup(t)
			f := newRunFixture(t)
			specPath := f.write(t, "agent.yaml", "model: "+tc.model+"\ninstructions: Summarise notes.md.\ncapabilities: [FileSystem]\n"+extra)

			ptmx, tty, err := pty.Open()
			require.NoError(t, err)
			defer ptmx.Close()
			shown := make(chan []byte, 1)
			go func() {
				b, _ := io.ReadAll(ptmx)
				shown <- b
			}()
			var stdout bytes.Buffer
			code := Main(context.Background(), []string{"run", specPath, "--workspace", f.workspace, "--output", "text"},
				strings.NewReader(""), &stdout, tty)
			tty.Close()
			terminal := string(<-shown)
			require.Equal(t, 0, code, terminal)
			assert.Equal(t, "Summary written.\n", stdout.String())
			assert.Contains(t, terminal, "write_file out/summary.md")

			summary, err := os.ReadFile(filepath.Join(f.workspace, "out", "summary.md"))
			require.NoError(t, err)
			assert.Equal(t, "hello\n", string(summary))
			reqs := srv.Requests()
			require.Len(t, reqs, 3)
			for _, r := range reqs {
				assert.True(t, strings.HasSuffix(r.Path, tc.stream), r.Path)
			}
		})
	}
}
