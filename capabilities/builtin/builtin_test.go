package builtin_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/capabilities/builtin"
)

// Every built-in type's schema compiles (Register compiles it), and Register
// fills a registry with exactly them, refusing to register them twice.
func TestRegister(t *testing.T) {
	t.Parallel()
	eager := capabilities.NewRegistry()
	for _, typ := range builtin.Types() {
		require.NoError(t, eager.Register(typ), typ.Name)
	}
	r := capabilities.NewRegistry()
	require.NoError(t, builtin.Register(r))
	assert.Equal(t, []string{"FileSystem", "LocalWorkspace", "MCP", "NativeTool", "PrefixTools", "Shell", "Thinking", "WebFetch", "WebSearch"}, r.Names())
	err := builtin.Register(r)
	assert.True(t, errors.Is(err, capabilities.ErrDuplicate), "%v", err)
}
