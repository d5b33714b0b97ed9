package queue

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A result larger than the server takes in one message fails its job at
// once, saying so, rather than leave the job unsettled to run again until
// its deliveries run out and be reported as one no worker finished.
func TestResultOverTheServersMaxPayload(t *testing.T) {
	t.Parallel()
	url := startServer(t)
	root := t.TempDir()
	// The test model answers a string of minLength characters: 2 MB, over
	// the server's 1 MB default max_payload.
	agent := "model: test\ninstructions: Answer.\noutput_schema: {type: object, required: [s], properties: {s: {type: string, minLength: 2000000}}}\n"
	specPath, s := writeSpec(t, t.TempDir(), agent, "turns: []\n")
	dirs := jobDirs(t, root, 1)
	// Under -race on a loaded machine, a worker busy with a 2 MB answer can
	// miss the progress reports a one-second acknowledgement wait needs (one
	// run of the suite did), and the job is taken back and run again, which
	// is not what this test is about.
	q := connect(t, url, 10*time.Second)
	startWorkerOn(t, q, WorkerOptions{Name: "w", WorkspaceRoot: root})
	list, starts := submitWatched(t, q, BatchOptions{SpecPath: specPath, Spec: s, Workspaces: dirs, WorkspaceRoot: root})
	require.Len(t, list, 1)
	r := list[0]
	assert.False(t, r.OK)
	assert.Equal(t, 1, r.Attempt, "not run again")
	assert.Equal(t, []string{"w#1"}, starts())
	assert.Regexp(t, `^the job's result is 2\d{6} bytes, more than the NATS server takes in a message \(max_payload 1 MiB\)$`, r.Error)
	assert.False(t, strings.Contains(r.Error, "no worker finished it"), r.Error)
	settled(t, q, Stats{Stream: DefaultStream, Failed: 1, CacheEntries: 0})
}
