package queue

import (
	"fmt"
	"io/fs"
	"os"
	"strings"
	"testing"
	"time"

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

// A submitted spec whose merge keys nest in each other, each repeating
// thousands of keys already present, costs its worker the walk of every
// one: it is refused as it is parsed, at the alias that passes the spec's
// bound, before any of it is converted, and not retried.
func TestWorkerRefusesAMergeBomb(t *testing.T) {
	t.Parallel()
	url := startServer(t)
	root := t.TempDir()
	specPath, s := writeSpec(t, t.TempDir(), agentYAML, copyTurns)
	startWorker(t, url, WorkerOptions{WorkspaceRoot: root})
	var bomb strings.Builder
	bomb.WriteString(agentYAML + "metadata:\n  m0: &m0 {")
	for i := range 3000 {
		fmt.Fprintf(&bomb, "k%d: 1, ", i)
	}
	bomb.WriteString("k: 1}\n  m1: &m1 {<<: [" + strings.Repeat("*m0, ", 29) + "*m0]}\n")
	bomb.WriteString("  m2: {<<: [" + strings.Repeat("*m1, ", 29) + "*m1]}\n")
	b, err := connect(t, url, 0).NewBatch(BatchOptions{SpecPath: specPath, Spec: s, Workspaces: jobDirs(t, root, 1), WorkspaceRoot: root})
	require.NoError(t, err)
	b.Jobs[0].Spec.Data = []byte(bomb.String())
	start := time.Now()
	got, _ := publishAndWait(t, b)
	t.Logf("a spec of %d bytes refused in %s", bomb.Len(), time.Since(start))
	require.Len(t, got, 1)
	assert.False(t, got[0].OK)
	assert.Equal(t, 1, got[0].Attempt, "not retried")
	assert.Equal(t, "agent.yaml:11:13: metadata.m2: alias *m1 expands to too much: the spec expands to more than 100000 values; are YAML aliases nested in each other?", got[0].Error)
}
