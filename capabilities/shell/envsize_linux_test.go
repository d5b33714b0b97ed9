package shell

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/internal/argmax"
)

// bigEnv is variables, named prefix and a number, of at most 100,000 bytes each that take size bytes
// of what exec counts (argmax.Size: NAME=value, its NUL and a pointer).
func bigEnv(prefix string, size int) map[string]string {
	env := map[string]string{}
	for i := 0; size > 0; i++ {
		name := fmt.Sprintf("%s%03d", prefix, i)
		n := min(size-len(name)-2-8, 100_000)
		env[name] = strings.Repeat("x", max(n, 0))
		size -= len(name) + 2 + 8 + max(n, 0)
	}
	return env
}

// An env whose variables are each short enough but together more than
// exec takes beside the rest of a command's environment and command line
// (Linux: a quarter of the stack limit, 2 MiB for 8 MiB) is refused with
// the spec, naming the total and the limit, since every command would fail
// to start with E2BIG, ending the run; a LocalWorkspace's env counts with
// the Shell's own. One that leaves too little room for a long command
// beside it still runs that command, which sh then reads from a file.
func TestEnvTooLargeForAProcess(t *testing.T) {
	t.Parallel()
	limit := argmax.Limit()
	mode := sandboxMode(t)
	_, err := New(Options{Env: bigEnv("BIG", limit), Sandbox: mode}, t.TempDir())
	var argErr *capabilities.ArgError
	require.ErrorAs(t, err, &argErr)
	assert.Equal(t, "env", argErr.Option)
	assert.Regexp(t, `^env is too large to be passed to a process: with the rest of its environment and its command line it takes \d+ bytes `+
		regexp.QuoteMeta(fmt.Sprintf("(each string with its NUL and a pointer to each), and exec takes at most %d here (%s)", limit, argmax.Rule))+`$`, argErr.Msg)

	half := bigEnv("OWN", limit/2)
	_, err = newFromArgs(context.Background(), capabilities.Args{
		Options: json.RawMessage(`{"sandbox": "` + mode + `"}`), Setup: capabilities.Setup{Dir: t.TempDir(), Env: half},
	})
	require.NoError(t, err)
	own, _ := json.Marshal(map[string]any{"sandbox": mode, "env": half})
	_, err = newFromArgs(context.Background(), capabilities.Args{Options: own, Setup: capabilities.Setup{Dir: t.TempDir(), Env: bigEnv("WS", limit/2)}})
	require.ErrorAs(t, err, &argErr, "the workspace's env and the Shell's, together")

	s, err := New(Options{Env: bigEnv("BIG", limit-60_000), Sandbox: mode}, t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	long := ": " + strings.Repeat("x", 100_000) + "; echo ok"
	assert.Equal(t, "[stdout]\nok\n", run(t, s, long))
}
