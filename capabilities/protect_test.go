package capabilities

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestProtected(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	real, err := filepath.EvalSymlinks(dir)
	require.NoError(t, err)
	for _, d := range []string{"a", "b"} {
		require.NoError(t, os.Mkdir(filepath.Join(real, d), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(real, d, "agent.yaml"), nil, 0o644))
	}
	link := filepath.Join(real, "link")
	require.NoError(t, os.Symlink("a", link))
	spec := filepath.Join(link, "agent.yaml")

	var none *Protected
	assert.Nil(t, none.Paths())
	assert.Nil(t, none.Real())
	assert.Nil(t, none.With(), "no paths, no new set")

	missing := filepath.Join(link, "missing.yaml")
	set := NewProtected(spec, "rel.yaml", missing)
	assert.Equal(t, []string{spec, "rel.yaml", missing}, set.Paths())
	assert.Equal(t, []string{filepath.Join(real, "a", "agent.yaml"), "rel.yaml", missing}, set.Real(),
		"absolute paths resolved; relative ones, and those that do not resolve, as given")

	again := set.With("rel.yaml", spec, missing)
	assert.Same(t, set, again, "paths already held add nothing")

	// Resolved once per set: the same set keeps the answer even after the
	// link moves, while one that adds a path resolves afresh.
	require.NoError(t, os.Remove(link))
	require.NoError(t, os.Symlink("b", link))
	assert.Equal(t, filepath.Join(real, "a", "agent.yaml"), again.Real()[0])
	more := again.With("other.yaml")
	assert.Equal(t, []string{spec, "rel.yaml", missing, "other.yaml"}, more.Paths())
	assert.Equal(t, filepath.Join(real, "b", "agent.yaml"), more.Real()[0])
	assert.Equal(t, []string{spec, "rel.yaml", missing}, set.Paths(), "adding did not change the first set")

	got := set.Real()
	got[0] = "changed"
	assert.NotEqual(t, "changed", set.Real()[0], "callers get a copy")
}
