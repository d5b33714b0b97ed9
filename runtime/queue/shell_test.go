package queue

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/spec"
)

// A worker runs a job whose spec has a Shell only with --allow-exec, and
// with --allow-network too when its commands may reach the network.
func TestConfineShell(t *testing.T) {
	t.Parallel()
	ws, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	for _, tc := range []struct {
		yaml  string
		allow Allow
		err   string
	}{
		{"capabilities: [{Shell: {sandbox: off}}]\n", Allow{}, "Shell starts programs the model chooses; this worker was not started with --allow-exec"},
		{"capabilities: [{Shell: {sandbox: off}}]\n", Allow{Exec: true}, "Shell connects to addresses the model chooses; this worker was not started with --allow-network"},
		{"capabilities: [{Shell: {sandbox: off}}]\n", Allow{Exec: true, Network: true}, "Shell reaches /, outside the job's workspace"},
	} {
		s, err := (&spec.Loader{}).Load("agent.yaml", []byte("model: test\n"+tc.yaml))
		require.NoError(t, err)
		w := &Worker{opts: WorkerOptions{Allow: tc.allow}}
		assert.EqualError(t, w.confine(context.Background(), s, ws), tc.err, tc.yaml)
	}
}
