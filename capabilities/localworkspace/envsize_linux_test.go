package localworkspace

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/internal/argmax"
)

// An env whose variables are each short enough but together more than
// exec takes (Linux: a quarter of the stack limit) is refused with the
// spec, naming the total and the limit: no command started in the
// workspace could be given it.
func TestEnvTooLargeForAProcess(t *testing.T) {
	t.Parallel()
	env := map[string]string{}
	for i := 0; i <= argmax.Limit()/100_000; i++ {
		env[fmt.Sprintf("V%03d", i)] = strings.Repeat("x", 100_000)
	}
	options, _ := json.Marshal(map[string]any{"working_dir": ".", "env": env})
	_, err := build(t, string(options), capabilities.Setup{Dir: t.TempDir()})
	var argErr *capabilities.ArgError
	require.ErrorAs(t, err, &argErr)
	assert.Equal(t, "env", argErr.Option)
	size := argmax.Size("", nil, capabilities.EnvStrings(env))
	assert.Equal(t, fmt.Sprintf("env is too large to be passed to a process: with the rest of its environment and its command line it takes %d bytes "+
		"(each string with its NUL and a pointer to each), and exec takes at most %d here (%s)", size, argmax.Limit(), argmax.Rule), argErr.Msg)

	delete(env, "V000")
	options, _ = json.Marshal(map[string]any{"working_dir": ".", "env": env})
	_, err = build(t, string(options), capabilities.Setup{Dir: t.TempDir()})
	require.NoError(t, err)
}
