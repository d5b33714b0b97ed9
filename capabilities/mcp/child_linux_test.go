package mcp

import (
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A process that starts a local server has a secret in the environment it
// was started with (where /proc/<pid>/environ finds it: os.Setenv, and so
// t.Setenv, does not change that); the server, the test binary in reader
// mode, tries to read it from /proc/<its parent>/environ and from the
// parent's stack through /proc/<its parent>/mem, and writes what it found
// to stderr, which the parent prints.
func TestServerCannotReadAgentspecsEnvironment(t *testing.T) {
	t.Parallel()
	secret := "sk-test-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), readerParentEnvVar+"="+secret)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "environ: open /proc/", "the server tried to read agentspec's environment and was refused")
	assert.Contains(t, string(out), "mem: open /proc/", "and its memory")
	assert.NotContains(t, string(out), secret)
}
