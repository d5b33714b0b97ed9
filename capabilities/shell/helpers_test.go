package shell

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/capabilities/filesystem"
	"github.com/agentspec/agentspec/internal/confine"
)

func TestMain(m *testing.M) {
	confine.Main()
	capabilities.MustRegister(Type())            // the tests' specs name Shell
	capabilities.MustRegister(filesystem.Type()) // and FileSystem
	os.Exit(m.Run())
}

func stringsReader(s string) io.Reader { return strings.NewReader(s) }

// Bounds of require.Eventually: how long a background command may take to
// get somewhere, and how often to look.
const (
	timeoutForEventually = 20 * time.Second
	pollEvery            = 20 * time.Millisecond
)

// The temp directory goes even when a command locked a directory of it.
func TestRemoveTreeLockedDirs(t *testing.T) {
	t.Parallel()
	if os.Geteuid() == 0 {
		t.Skip("root removes a locked directory anyway: the case needs an unprivileged user")
	}
	dir := t.TempDir()
	deep := filepath.Join(dir, "tmp", "a", "b")
	require.NoError(t, os.MkdirAll(deep, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(deep, "f"), []byte("x"), 0o600))
	require.NoError(t, os.Chmod(filepath.Join(dir, "tmp", "a", "b"), 0o000))
	require.NoError(t, os.Chmod(filepath.Join(dir, "tmp", "a"), 0o000))
	require.NoError(t, removeTree(filepath.Join(dir, "tmp")))
	_, err := os.Lstat(filepath.Join(dir, "tmp"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}
