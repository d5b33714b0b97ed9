package queue

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRunCapabilityVars: a job's vars fill its capabilities' options on the
// worker, as they do for a run here, and the worker judges what the
// capabilities reach with them filled: a var that roots the FileSystem in
// the workspace runs, one that leads out of it is refused.
func TestRunCapabilityVars(t *testing.T) {
	t.Parallel()
	url := startServer(t)
	root := t.TempDir()
	startWorker(t, url, WorkerOptions{Name: "w1", WorkspaceRoot: root, MaxAttempts: 1})
	ws := filepath.Join(root, "ws")
	writeFiles(t, ws, map[string]string{"pkg/input.txt": "the input of pkg"})
	writeFiles(t, filepath.Join(root, "other"), map[string]string{"input.txt": "the input of other"})
	specPath, s := writeSpec(t, t.TempDir(), `model: script:turns.yaml
instructions: Read {{dir}}.
capabilities:
  - FileSystem: {root_dir: "{{dir}}"}
`, `turns:
  - tool_calls:
      - {name: read_file, arguments: {path: input.txt}}
  - expect: {tool_result_contains: "the input of"}
    text: read
`)
	q := connect(t, url, 0)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, tc := range []struct{ dir, err string }{
		{dir: "pkg"},
		{dir: "../other", err: "outside the job's workspace"},
	} {
		res, err := q.Run(ctx, BatchOptions{SpecPath: specPath, Spec: s, Vars: map[string]string{"dir": tc.dir},
			Workspaces: []string{ws}, WorkspaceRoot: root})
		if tc.err != "" {
			require.Error(t, err, tc.dir)
			assert.Contains(t, err.Error(), tc.err, tc.dir)
			continue
		}
		require.NoError(t, err, tc.dir)
		assert.Equal(t, "read", res.Output)
		assert.Nil(t, res.JSON, "a spec without an output_schema answers text")
		assert.Equal(t, 2, res.Usage.Requests, "the worker's usage comes back")
		assert.False(t, res.Cached)
	}
	_, err := q.Run(ctx, BatchOptions{SpecPath: specPath, Spec: s, Workspaces: []string{ws, ws}, WorkspaceRoot: root})
	assert.EqualError(t, err, "a job runs over one workspace, not 2")
}
