package cli

import (
	"os"
	"path/filepath"
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
	cases := []struct {
		name  string
		setup func(t *testing.T) *providertest.Server
		model string
	}{
		{"openai", func(t *testing.T) *providertest.Server {
			srv := providertest.NewOpenAIServer(t, replies...)
			t.Setenv("OPENAI_API_KEY", "sk-test")
			t.Setenv("OPENAI_BASE_URL", srv.BaseURL())
			return srv
		}, "openai:gpt-test"},
		{"anthropic", func(t *testing.T) *providertest.Server {
			srv := providertest.NewAnthropicServer(t, replies...)
			t.Setenv("ANTHROPIC_API_KEY", "sk-ant-test")
			t.Setenv("ANTHROPIC_BASE_URL", srv.URL)
			return srv
		}, "anthropic:claude-test"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := tc.setup(t)
			f := newRunFixture(t)
			specPath := f.write(t, "agent.yaml", "model: "+tc.model+"\ninstructions: Summarise notes.md.\ncapabilities: [FileSystem]\n"+schema)

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
