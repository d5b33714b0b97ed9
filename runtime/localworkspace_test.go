package runtime

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	_ "github.com/agentspec/agentspec/capabilities/localworkspace" // LocalWorkspace in specs
	"github.com/agentspec/agentspec/spec"
)

// A LocalWorkspace entry is the run's workspace for the capabilities, the
// checks and the cache alike, with the cache on or off: the expected output
// file is looked for where write_file put it, and the cache hashes the input
// file found there.
func TestLocalWorkspaceRuns(t *testing.T) {
	t.Parallel()
	for _, cached := range []bool{false, true} {
		extra := ""
		if cached {
			extra = "cache: {dir: .cache}\n"
		}
		dir := t.TempDir()
		writeFiles(t, dir, map[string]string{
			"turns.yaml": batchScript,
			"agent.yaml": "version: 1\nmodel: script:turns.yaml\ninstructions: Copy input.txt to output.txt.\n" +
				"capabilities: [{LocalWorkspace: repo}, FileSystem]\noutput_schema: {type: object}\n" +
				"workspace:\n  input_globs: [input.txt]\n  expected_output_files: [output.txt]\n" + extra,
		})
		s, err := spec.LoadFile(filepath.Join(dir, "agent.yaml"))
		require.NoError(t, err)
		ws := filepath.Join(dir, "job")
		writeFiles(t, ws, map[string]string{"repo/input.txt": "input of job 0\n"})

		res, err := Run(context.Background(), s, WithWorkspace(ws))
		require.NoError(t, err, "cache=%v", cached)
		assert.False(t, res.Cached)
		data, err := os.ReadFile(filepath.Join(ws, "repo", "output.txt"))
		require.NoError(t, err, "the file lands in the LocalWorkspace's directory")
		assert.Equal(t, "copied\n", string(data))
		assert.NoFileExists(t, filepath.Join(ws, "output.txt"))

		res, err = Run(context.Background(), s, WithWorkspace(ws))
		require.NoError(t, err, "cache=%v", cached)
		assert.Equal(t, cached, res.Cached, "a second run over the same input is replayed when the cache is on")

		_, err = Run(context.Background(), s, WithWorkspace(t.TempDir()))
		require.Error(t, err)
		assert.Regexp(t, `agent.yaml:4:33: capabilities\[0\]\.LocalWorkspace\.working_dir: local workspace directory .*/repo does not exist$`, err.Error())
	}
}
