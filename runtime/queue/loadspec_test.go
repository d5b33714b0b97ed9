package queue

import (
	"io/fs"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/spec"
)

// A bundle the worker could not write whole is not loaded half-written by
// the next job that brings it: each is refused for what is wrong with it,
// and nothing of it is left in the scratch directory.
func TestBundleWrittenHalfIsNotReused(t *testing.T) {
	t.Parallel()
	w := &Worker{dir: t.TempDir(), specs: map[string]*spec.Spec{}}
	b := Bundle{Name: "agent.yaml", Data: []byte("model: script:turns.yaml\ninstructions: Copy the input.\n"),
		// One file where the other needs a directory: one of them cannot
		// be written, whichever comes first.
		Files: map[string][]byte{"turns.yaml": []byte(copyTurns), "turns.yaml/more": []byte("x")}}
	_, first := w.loadSpec(b)
	require.Error(t, first)
	_, again := w.loadSpec(b)
	require.Error(t, again)
	assert.NotErrorIs(t, again, fs.ErrNotExist, "the spec the first load never wrote is not looked for: %v", again)
	assert.NotContains(t, again.Error(), w.dir, "the error does not show the worker's scratch directory")
	entries, err := os.ReadDir(w.dir)
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing half-written stays")
}
