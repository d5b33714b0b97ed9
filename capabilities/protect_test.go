package capabilities

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestProtectedFiles(t *testing.T) {
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

	bare := context.Background()
	assert.Nil(t, ProtectedFiles(bare))
	assert.Nil(t, RealProtectedFiles(bare))
	assert.Equal(t, bare, WithProtectedFiles(bare), "no paths, no new context")

	missing := filepath.Join(link, "missing.yaml")
	ctx := WithProtectedFiles(bare, spec, "rel.yaml", missing)
	assert.Equal(t, []string{spec, "rel.yaml", missing}, ProtectedFiles(ctx))
	assert.Equal(t, []string{filepath.Join(real, "a", "agent.yaml"), "rel.yaml", missing}, RealProtectedFiles(ctx),
		"absolute paths resolved; relative ones, and those that do not resolve, as given")

	again := WithProtectedFiles(ctx, "rel.yaml", spec, missing)
	assert.Equal(t, ctx, again, "paths already carried add nothing")
	job := context.WithValue(again, struct{}{}, "job")

	// Resolved once per WithProtectedFiles: a derived context keeps the answer
	// even after the link moves, while one that adds a path resolves afresh.
	require.NoError(t, os.Remove(link))
	require.NoError(t, os.Symlink("b", link))
	assert.Equal(t, filepath.Join(real, "a", "agent.yaml"), RealProtectedFiles(job)[0])
	more := WithProtectedFiles(job, "other.yaml")
	assert.Equal(t, []string{spec, "rel.yaml", missing, "other.yaml"}, ProtectedFiles(more))
	assert.Equal(t, filepath.Join(real, "b", "agent.yaml"), RealProtectedFiles(more)[0])
	assert.Equal(t, []string{spec, "rel.yaml", missing}, ProtectedFiles(ctx), "adding did not change the parent's list")

	got := RealProtectedFiles(ctx)
	got[0] = "changed"
	assert.NotEqual(t, "changed", RealProtectedFiles(ctx)[0], "callers get a copy")
}
