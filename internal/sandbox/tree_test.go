package sandbox

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The directories a command locked are opened again, and nothing a symlink
// inside points at is touched.
func TestGiveBackStaysInside(t *testing.T) {
	base := t.TempDir()
	outside := filepath.Join(base, "outside")
	require.NoError(t, os.Mkdir(outside, 0o500))
	t.Cleanup(func() { os.Chmod(outside, 0o700) })
	tree := filepath.Join(base, "tmp")
	deep := filepath.Join(tree, "a", "b")
	require.NoError(t, os.MkdirAll(deep, 0o700))
	require.NoError(t, os.Symlink(outside, filepath.Join(tree, "a", "link")))
	require.NoError(t, os.Symlink("../../outside", filepath.Join(tree, "relative")))
	require.NoError(t, os.Chmod(deep, 0o000))
	require.NoError(t, os.Chmod(filepath.Join(tree, "a"), 0o000))

	giveBack(tree)
	for _, dir := range []string{filepath.Join(tree, "a"), deep} {
		st, err := os.Lstat(dir)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o700), st.Mode().Perm(), dir)
	}
	st, err := os.Lstat(outside)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o500), st.Mode().Perm(), "a symlink's target outside the tree keeps its mode")

	require.NoError(t, RemoveTree(tree))
	_, err = os.Lstat(tree)
	assert.ErrorIs(t, err, os.ErrNotExist)
	_, err = os.Lstat(outside)
	assert.NoError(t, err, "the symlinks' target stays")
}
