//go:build unix

package filesystem

import (
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// mkfifo makes a named pipe at path: the tests use one wherever a tool must
// refuse a path that exists but is not a regular file or directory.
func mkfifo(t *testing.T, path string) {
	t.Helper()
	require.NoError(t, syscall.Mkfifo(path, 0o644))
}
