package runtime

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/spec"
)

// A FileSystem's max_retries, as the pydantic-ai harness has it, replaces the
// spec's retries for that capability's tools, also behind PrefixTools.
func TestCapabilityRetryBudget(t *testing.T) {
	t.Parallel()
	turns := `
turns:
  - tool_calls: [{name: TOOL, arguments: {path: missing.txt}}]
  - tool_calls: [{name: TOOL, arguments: {path: missing.txt}}]
  - tool_calls: [{name: TOOL, arguments: {path: missing.txt}}]
  - text: gave up
`
	for _, tc := range []struct {
		name, caps, tool string
		wantErr          bool
	}{
		{"spec retries", "[FileSystem]", "read_file", false},
		{"max_retries 1", "[{FileSystem: {max_retries: 1}}]", "read_file", true},
		{"prefixed", "[{PrefixTools: {prefix: ws, capability: {FileSystem: {max_retries: 1}}}}]", "ws_read_file", true},
		{"max_retries 5", "[{FileSystem: {max_retries: 5}}]", "read_file", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			writeFiles(t, dir, map[string]string{
				"agent.yaml": "version: 1\nmodel: script:turns.yaml\nretries: 3\ncapabilities: " + tc.caps + "\n",
				"turns.yaml": strings.ReplaceAll(turns, "TOOL", tc.tool),
			})
			s, err := spec.LoadFile(filepath.Join(dir, "agent.yaml"))
			require.NoError(t, err)
			res, err := Run(context.Background(), s, WithWorkspace(dir))
			if !tc.wantErr {
				require.NoError(t, err)
				assert.Equal(t, "gave up", res.Output)
				return
			}
			var exceeded *RetriesExceededError
			require.ErrorAs(t, err, &exceeded)
			assert.Equal(t, 1, exceeded.Retries)
			assert.Equal(t, tc.tool, exceeded.Tool)
		})
	}
}
