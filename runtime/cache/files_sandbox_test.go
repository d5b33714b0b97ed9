package cache

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Whether a link counts depends only on where it resolves, as the kernel
// resolves it: wherever an absolute link appears in a chain, whether a
// relative one climbs out through the root's parent and back, and whether a
// glob's base is itself a link.
func TestHashFilesSymlinkResolution(t *testing.T) {
	t.Parallel()
	outside := newWorkspace(t, map[string]string{"dir/s.md": "outside"})
	ws := realTempDir(t)
	writeFiles(t, ws, map[string]string{"real/t.md": "target", "real/sub/u.md": "under"})
	symlink(t, filepath.Join(ws, "real", "t.md"), filepath.Join(ws, "abs.md"))
	symlink(t, "abs.md", filepath.Join(ws, "chain.md"))
	symlink(t, filepath.Join(ws, "real"), filepath.Join(ws, "absdir"))
	symlink(t, filepath.Join("..", filepath.Base(ws), "real", "t.md"), filepath.Join(ws, "back-in.md"))
	symlink(t, "missing/../real/t.md", filepath.Join(ws, "via-gap.md"))
	symlink(t, "real", filepath.Join(ws, "linkdir"))
	symlink(t, filepath.Join(outside, "dir"), filepath.Join(ws, "outdir"))
	symlink(t, "loopdir", filepath.Join(ws, "loopdir"))

	tests := []struct {
		name  string
		globs []string
		want  []string
	}{
		{"absolute links anywhere in a chain, never through a missing name", []string{"*.md"}, []string{"abs.md", "back-in.md", "chain.md"}},
		{"a path through an absolute link to a directory", []string{"absdir/t.md"}, []string{"absdir/t.md"}},
		{"a glob based on an in-root linked directory walks it", []string{"linkdir/**/*.md"}, []string{"linkdir/sub/u.md", "linkdir/t.md"}},
		{"a glob based on a link out of the root matches nothing", []string{"outdir/*"}, nil},
		{"a glob based on a loop matches nothing", []string{"loopdir/**"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, files := hashOf(t, ws, tt.globs...)
			assert.Equal(t, tt.want, files)
		})
	}
}
