package mcpserve

import (
	"context"
	"fmt"
	"os/exec"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The descriptor ServeStdio reads stdin through is not inherited by the
// processes started while it serves (an MCP server started late, a Shell
// command): one could read the client's messages off it.
func TestStdioDescriptorIsNotInherited(t *testing.T) {
	t.Parallel()
	in, out, _ := serveOverPipes(t, context.Background())
	_, err := in.WriteString(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}` + "\n")
	require.NoError(t, err)
	_, err = out.ReadString('\n') // ServeStdio is reading
	require.NoError(t, err)

	st, err := in.Stat()
	require.NoError(t, err)
	pipe := fmt.Sprintf("pipe:[%d]", st.Sys().(*syscall.Stat_t).Ino)
	fds, err := exec.Command("sh", "-c", `for f in /proc/$$/fd/*; do readlink "$f"; done; true`).Output()
	require.NoError(t, err)
	assert.NotContains(t, string(fds), pipe, "a child holds the pipe ServeStdio reads")
}
