package mcpserve

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/capabilities/shell"
)

// `agentspec mcp --read-only` offers none of Shell's tools.
func TestReadOnlyOffersNoShellTool(t *testing.T) {
	t.Parallel()
	sh, err := shell.New(shell.Options{Sandbox: "off"}, t.TempDir())
	require.NoError(t, err)
	defer sh.Close()
	srv, cs := connect(t, Options{ReadOnly: true}, sh)
	res, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	assert.Empty(t, res.Tools)
	assert.ElementsMatch(t, shell.DefaultToolNames, srv.Withheld())
}
