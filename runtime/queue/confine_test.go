package queue

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/spec"
)

// Nothing in a job's spec may lead a worker outside its workspace root.
func TestConfine(t *testing.T) {
	t.Parallel()
	root, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	ws := filepath.Join(root, "job")
	require.NoError(t, os.MkdirAll(filepath.Join(ws, "sub"), 0o755))
	require.NoError(t, os.Symlink(t.TempDir(), filepath.Join(ws, "out")))
	require.NoError(t, os.Symlink("sub", filepath.Join(ws, "in")))

	for name, tc := range map[string]struct{ yaml, err string }{
		"the workspace":         {"capabilities: [FileSystem]\n", ""},
		"a directory in it":     {"capabilities: [{FileSystem: sub}]\n", ""},
		"a link inside":         {"capabilities: [{FileSystem: in}]\n", ""},
		"not there yet":         {"capabilities: [{FileSystem: later}]\n", ""},
		"an absolute root":      {"capabilities: [{FileSystem: /etc}]\n", `FileSystem root_dir "/etc": a job's root must be relative to its workspace`},
		"a sibling":             {"capabilities: [{FileSystem: ../other}]\n", `FileSystem root_dir "../other": leads out of the job's workspace`},
		"up and out":            {"capabilities: [{FileSystem: ../..}]\n", `FileSystem root_dir "../..": leads out of the job's workspace`},
		"a link that leads out": {"capabilities: [{FileSystem: {root_dir: out}}]\n", `FileSystem root_dir "out": leads out of the job's workspace`},
		"an absolute script":    {"model: script:/etc/passwd\n", `the spec's script file /etc/passwd: an absolute path; name it relative to the spec`},
		"a script above":        {"model: script:../x.yaml\n", `the spec's script file ../x.yaml: it must lie beside the spec or below it`},
	} {
		s, err := (&spec.Loader{}).Load("agent.yaml", []byte("model: script:t.yaml\n"+tc.yaml))
		if name == "an absolute script" || name == "a script above" {
			s, err = (&spec.Loader{}).Load("agent.yaml", []byte(tc.yaml))
		}
		require.NoError(t, err, name)
		err = confine(s, ws)
		if tc.err == "" {
			assert.NoError(t, err, name)
		} else {
			assert.EqualError(t, err, tc.err, name)
		}
	}
}
