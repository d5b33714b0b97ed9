//go:build !unix

package filesystem

import (
	"path/filepath"
	"strings"

	"github.com/agentspec/agentspec/internal/sandbox"
)

// rgCursor returns a cursor at the directory rel, entered component by
// component without following a symlink.
func (fs *FS) rgCursor(rel string) (sandbox.Cursor, error) {
	c := fs.dir.Cursor()
	if rel == "." {
		return c, nil
	}
	for name := range strings.SplitSeq(rel, "/") {
		if err := c.Down(name); err != nil {
			return sandbox.Cursor{}, err
		}
	}
	return c, nil
}

// rgWorkDir names the canonical rel dir as rg's working directory by its host
// path: nothing here names a directory by a descriptor a child can enter.
func (fs *FS) rgWorkDir(_ *sandbox.Cursor, dir string) string {
	return filepath.Join(fs.rootDir, filepath.FromSlash(dir))
}
