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

// A batch whose LocalWorkspace gives every job one directory (an absolute
// working_dir) is refused before any job starts; a relative one gives each
// job its own and runs.
func TestBatchRefusesOneLocalWorkspaceForAllJobs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	shared := filepath.Join(dir, "shared")
	require.NoError(t, os.Mkdir(shared, 0o755))
	jobs := []string{filepath.Join(dir, "a"), filepath.Join(dir, "b")}
	for _, j := range jobs {
		writeFiles(t, j, map[string]string{"repo/input.txt": "input of job " + filepath.Base(j) + "\n"})
	}
	writeFiles(t, dir, map[string]string{"turns.yaml": batchScript})
	load := func(workingDir string) *spec.Spec {
		path := filepath.Join(dir, "agent-"+filepath.Base(workingDir)+".yaml")
		writeFiles(t, dir, map[string]string{filepath.Base(path): "version: 1\nmodel: script:turns.yaml\ninstructions: Copy input.txt to output.txt.\n" +
			"capabilities: [{LocalWorkspace: " + workingDir + "}, FileSystem]\noutput_schema: {type: object}\n"})
		s, err := spec.LoadFile(path)
		require.NoError(t, err)
		return s
	}

	var ran int
	sum, err := Batch(context.Background(), load(shared), jobs, BatchOptions{OnResult: func(JobResult) { ran++ }})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the spec's workspace entry gives the jobs of "+jobs[0]+" and "+jobs[1]+" the same directory, "+shared)
	assert.Zero(t, ran, "no job starts")
	assert.Zero(t, sum.OK+sum.Failed)
	assert.NoFileExists(t, filepath.Join(shared, "output.txt"))

	sum, err = Batch(context.Background(), load("repo"), jobs, BatchOptions{OnResult: func(r JobResult) { assert.NoError(t, r.Err) }})
	require.NoError(t, err)
	assert.Equal(t, 2, sum.OK)
}
