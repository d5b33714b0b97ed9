//go:build unix && !linux

package sandbox

import "os"

// oPath is zero where O_PATH does not exist: walked directories are opened
// read-only, so a directory that is searchable but not readable cannot be
// walked through.
const oPath = 0

// beneath reports that there is no one-call walk here.
func (c *Cursor) beneath(string) (bool, error) { return false, nil }

// osRoot opens an os.Root on the directory the Dir holds, by its path:
// there is no name for its descriptor here.
func (d *Dir) osRoot(path string) (*os.Root, error) { return os.OpenRoot(path) }

// renameNoReplace renames from to to in the directory dirfd, failing with
// EEXIST when to exists.
func renameNoReplace(dirfd int, from, to string) error { return linkNoReplace(dirfd, from, to) }
