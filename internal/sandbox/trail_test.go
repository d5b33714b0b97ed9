package sandbox

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A trail enters each directory of a sorted run of paths once, keeps the
// state of the directories it stays in, and refuses what is not a directory
// reached without a symlink.
func TestTrail(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	for _, rel := range []string{"top/a/b/x.txt", "top/a/d/y.txt", "top/e/z.txt", "top/f"} {
		mustWrite(t, root, rel, "")
	}
	mustSymlink(t, "a", filepath.Join(root, "top", "l"))
	r, err := os.OpenRoot(root)
	require.NoError(t, err)
	defer r.Close()
	d, err := openOSRoot(r)
	require.NoError(t, err)
	defer d.Close()
	c, err := d.Walk("top")
	require.NoError(t, err)
	tr := NewTrail[int](c)
	defer tr.Close()

	require.True(t, tr.Enter("a/b"))
	assert.Equal(t, "a/b", tr.At())
	assert.True(t, tr.Cursor().Regular("x.txt"))
	*tr.State() = 1
	require.True(t, tr.Enter("a/b"))
	assert.Equal(t, 1, *tr.State(), "staying keeps the state")

	require.True(t, tr.Enter("a"))
	*tr.State() = 2
	require.True(t, tr.Enter("a/d"))
	assert.Zero(t, *tr.State(), "a directory entered starts from zero")
	assert.True(t, tr.Cursor().Regular("y.txt"))
	require.True(t, tr.Enter("a"))
	assert.Equal(t, 2, *tr.State(), "climbing to a directory held keeps its state")

	for _, dir := range []string{"l", "l/b", "f", "missing", "a/../e", "a/./b", "a//b", "", "..", "/a"} {
		assert.False(t, tr.Enter(dir), dir)
	}
	require.True(t, tr.Enter("e"))
	assert.True(t, tr.Cursor().Regular("z.txt"))
	require.True(t, tr.Enter("."))
	assert.Equal(t, ".", tr.At())
	assert.True(t, tr.Cursor().Regular("f"), "back at the start")
	assert.False(t, tr.Cursor().Regular("l"), "a symlink is no regular file")
}
