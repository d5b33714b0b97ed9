//go:build unix

package filesystem

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/internal/nobodytest"
)

// readOnlyTree is a root holding ro.txt, made read-only (0444) in a
// writable directory, and rw.txt beside it.
func readOnlyTree(t *testing.T) (*Capability, string) {
	t.Helper()
	c, root := newTestFS(t, Options{}, map[string]string{"ro.txt": "old\n", "rw.txt": "old\n"})
	require.NoError(t, os.Chmod(filepath.Join(root, "ro.txt"), 0o444))
	mustSymlink(t, "ro.txt", filepath.Join(root, "link.txt"))
	return c, root
}

// A file the user made read-only is not replaced: write_file and edit_file
// answer with the error a plain open for writing gives, though the rename
// would need only the directory's permission. Run as root, the test runs
// itself again as nobody.
func TestReadOnlyFileIsNotReplaced(t *testing.T) {
	t.Parallel()
	if os.Geteuid() == 0 {
		nobodytest.Rerun(t)
		return
	}
	c, root := readOnlyTree(t)
	_, err := os.OpenFile(filepath.Join(root, "ro.txt"), os.O_WRONLY, 0)
	require.ErrorIs(t, err, fs.ErrPermission, "a plain open for writing is refused")
	ctx := context.Background()
	hash := contentHash([]byte("old\n"))
	want := "RETRY: [Errno 13] Permission denied: 'ro.txt'"
	for _, tc := range []struct {
		tool string
		args map[string]any
	}{
		{ToolWriteFile, map[string]any{"path": "ro.txt", "content": "new\n"}},
		{ToolWriteFile, map[string]any{"path": "ro.txt", "content": "new\n", "expected_hash": hash}},
		{ToolWriteFile, map[string]any{"path": "link.txt", "content": "new\n"}},
		{ToolEditFile, map[string]any{"path": "ro.txt", "old_text": "old", "new_text": "new"}},
		{ToolEditFile, map[string]any{"path": "ro.txt", "old_text": "old", "new_text": "new", "expected_hash": hash}},
	} {
		out, err := callTool(ctx, t, c, tc.tool, tc.args)
		assert.Equal(t, want, result(out, err), "%s %v", tc.tool, tc.args)
	}
	assert.Equal(t, "old\n", readBack(t, root, "ro.txt"))
	st, err := os.Stat(filepath.Join(root, "ro.txt"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o444), st.Mode())
	assert.Empty(t, tempFiles(t, root), "no temporary file remains")

	assert.Contains(t, write(ctx, t, c, map[string]any{"path": "rw.txt", "content": "new\n"}), "Wrote", "a writable file is written")
	assert.Equal(t, "new\n", readBack(t, root, "rw.txt"))
}

// Root keeps POSIX's answer: it may write a read-only file, and the file
// stays read-only.
func TestReadOnlyFileRootWrites(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("notice: root's answer is tested as root; TestReadOnlyFileIsNotReplaced tests this user's")
	}
	c, root := readOnlyTree(t)
	ctx := context.Background()
	assert.Contains(t, write(ctx, t, c, map[string]any{"path": "ro.txt", "content": "new\n"}), "Wrote")
	assert.Contains(t, edit(ctx, t, c, map[string]any{"path": "ro.txt", "old_text": "new", "new_text": "newer"}), "Edited")
	assert.Equal(t, "newer\n", readBack(t, root, "ro.txt"))
	st, err := os.Stat(filepath.Join(root, "ro.txt"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o444), st.Mode(), "the permission bits are kept")
}
