//go:build !unix

package filesystem

import (
	"path/filepath"
	"strings"
)

// rgCursor returns a cursor at the directory rel, entered component by
// component without following a symlink.
func (fs *FS) rgCursor(rel string) (cursor, error) {
	c := fs.dir.cursor()
	if rel == "." {
		return c, nil
	}
	for name := range strings.SplitSeq(rel, "/") {
		if err := c.down(name); err != nil {
			return cursor{}, err
		}
	}
	return c, nil
}

// rgWorkDir names the canonical rel dir as rg's working directory by its host
// path: nothing here names a directory by a descriptor a child can enter.
func (fs *FS) rgWorkDir(_ *cursor, dir string) string {
	return filepath.Join(fs.rootDir, filepath.FromSlash(dir))
}

// regularAt reports whether name, below c, is a regular file (not a symlink
// to one).
func regularAt(c *cursor, name string) bool {
	st, err := c.root.Lstat(c.path(name))
	return err == nil && st.Mode().IsRegular()
}
