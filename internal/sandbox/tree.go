package sandbox

import (
	"io/fs"
	"os"
)

// RemoveTree removes dir and all below it, even where something took away
// the owner's write or search permission on a directory inside (a command
// may chmod 000 a directory of its own temp): those directories are given
// the permission back, then removed.
//
// Permissions are given back through an os.Root on dir, so a directory
// swapped for a symlink between the listing and the chmod changes at worst
// something inside dir: the chmod never follows a link out of it. os.RemoveAll
// removes symlinks and never follows them.
func RemoveTree(dir string) error {
	if err := os.RemoveAll(dir); err == nil {
		return nil
	}
	giveBack(dir)
	return os.RemoveAll(dir)
}

// giveBack gives the owner read, write and search permission on every
// directory below dir it can reach, through an os.Root on dir.
func giveBack(dir string) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return
	}
	defer root.Close()
	// WalkDir calls the function on a directory before it reads it, so each
	// directory is given back its permissions before it is entered.
	_ = fs.WalkDir(root.FS(), ".", func(path string, d fs.DirEntry, err error) error {
		if d != nil && d.IsDir() {
			_ = root.Chmod(path, 0o700)
		}
		return nil
	})
}
