package mcp

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/internal/argmax"
)

// A local server's env (the workspace's in it) whose variables are each
// short enough but together, with the server's command line, more than
// exec takes (Linux: a quarter of the stack limit) is refused by the
// check, as validate makes it, naming the total and the limit: the server
// could not be started, and the run would end.
func TestEnvTooLargeForAProcess(t *testing.T) {
	t.Parallel()
	half := func(prefix string) map[string]string {
		env := map[string]string{}
		for i := 0; i <= argmax.Limit()/2/100_000; i++ {
			env[fmt.Sprintf("%s%03d", prefix, i)] = strings.Repeat("x", 100_000)
		}
		return env
	}
	dir := t.TempDir()
	opts := Options{Command: []string{"server", "--stdio"}, Env: half("OWN")}
	_, err := New(context.Background(), opts, capabilities.Setup{Dir: dir, CheckOnly: true})
	require.NoError(t, err)
	_, err = New(context.Background(), opts, capabilities.Setup{Dir: dir, CheckOnly: true, Env: half("WS")})
	var argErr *capabilities.ArgError
	require.ErrorAs(t, err, &argErr, "the workspace's env and the server's own, together")
	assert.Equal(t, "env", argErr.Option)
	assert.Contains(t, argErr.Msg, "env is too large to be passed to a process: with the rest of its environment and its command line it takes ")
	assert.Contains(t, argErr.Msg, fmt.Sprintf("and exec takes at most %d here (%s)", argmax.Limit(), argmax.Rule))
}

// exec counts the program's path as it is given to it, the one found in
// PATH (sh is /usr/bin/sh) or made absolute, not the name the spec gives:
// an env that fits beside the name alone but not beside that path is
// refused, as the server could not be started.
func TestEnvTooLargeBesideTheProgramsPath(t *testing.T) {
	t.Parallel()
	path, err := exec.LookPath("sh")
	require.NoError(t, err)
	require.Greater(t, len(path), len("sh"))
	command := []string{"sh", "-c", "exit 0"}
	env := map[string]string{}
	size := func() int { return argmax.Size("sh", command, serverEnv(env)) }
	for i := 0; size()+100_010 <= argmax.Limit(); i++ {
		env[fmt.Sprintf("PAD%03d", i)] = strings.Repeat("x", 100_000)
	}
	env["PADEND"] = ""
	env["PADEND"] = strings.Repeat("x", argmax.Limit()-size())
	require.Equal(t, argmax.Limit(), size(), "the env fits beside the name sh exactly")

	dir := t.TempDir()
	_, err = New(context.Background(), Options{Command: command, Env: env}, capabilities.Setup{Dir: dir, CheckOnly: true})
	var argErr *capabilities.ArgError
	require.ErrorAs(t, err, &argErr)
	assert.Equal(t, "env", argErr.Option)
}
