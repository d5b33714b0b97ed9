package queue

import (
	"fmt"
	"io/fs"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A bundle the worker could not write whole is not loaded half-written by
// the next job that brings it: each is refused for what is wrong with it,
// and nothing of it is left in the scratch directory.
func TestBundleWrittenHalfIsNotReused(t *testing.T) {
	t.Parallel()
	w := &Worker{dir: t.TempDir(), specs: map[string]*loaded{}}
	b := Bundle{Name: "agent.yaml", Data: []byte("model: script:turns.yaml\ninstructions: Copy the input.\n"),
		// One file where the other needs a directory: one of them cannot
		// be written, whichever comes first.
		Files: map[string][]byte{"turns.yaml": []byte(copyTurns), "turns.yaml/more": []byte("x")}}
	_, _, first := w.loadSpec(b)
	require.Error(t, first)
	_, _, again := w.loadSpec(b)
	require.Error(t, again)
	assert.NotErrorIs(t, again, fs.ErrNotExist, "the spec the first load never wrote is not looked for: %v", again)
	assert.NotContains(t, again.Error(), w.dir, "the error does not show the worker's scratch directory")
	entries, err := os.ReadDir(w.dir)
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing half-written stays")
}

// Whoever submits jobs chooses their specs: a worker keeps the files of no
// more of them than it keeps loaded, however many different ones come, so
// that its scratch directory does not grow with every job ever run.
func TestWorkerKeepsTheFilesOfBoundedSpecs(t *testing.T) {
	t.Parallel()
	url := startServer(t)
	root := t.TempDir()
	specPath, s := writeSpec(t, t.TempDir(), agentYAML, copyTurns)
	n := maxSpecs + 40
	w := startWorker(t, url, WorkerOptions{WorkspaceRoot: root, Concurrency: 4, NoEvents: true})
	b, err := connect(t, url, 0).NewBatch(BatchOptions{SpecPath: specPath, Spec: s, Workspaces: jobDirs(t, root, n), WorkspaceRoot: root})
	require.NoError(t, err)
	for i := range b.Jobs {
		b.Jobs[i].Spec.Data = []byte(strings.Replace(agentYAML, "Copy the input.", fmt.Sprintf("Copy the input, %d.", i), 1))
	}
	got, _ := publishAndWait(t, b)
	require.Len(t, got, n)
	for _, o := range got {
		require.NoError(t, o.Err)
	}
	entries, err := os.ReadDir(w.dir)
	require.NoError(t, err)
	assert.LessOrEqual(t, len(entries), maxSpecs+1, "the specs' directories and the lock")
}
