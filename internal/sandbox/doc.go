// Package sandbox is FileSystem's descriptor layer: everything that reaches a
// file beneath the root without ever following a symlink, and nothing that
// knows about tools, patterns or the model.
//
// Its callers speak canonical root-relative paths ("rel"): "/"-separated, no
// "." or ".." components, no symlinks, "." for the root itself. A Resolver
// turns what the model wrote into one, package filesystem checks it against
// the access patterns, and a Dir, which holds the root, then reaches rel
// again without following a symlink (resolve.go says how). A Cursor is a
// stack of directory descriptors below the root; a Trail moves one through
// the directories of a run of sorted paths. Dir.Replace replaces a file's
// content atomically under the file's lock (replace.go). Names a listing
// must not show raw are escaped reversibly (names.go).
//
// The ripgrep driver checks every path rg prints with Trail and
// Cursor.ListRegular: they are descriptor I/O that knows nothing of rg or
// of patterns, which is why they live here rather than beside the driver.
//
// The tree walker the listing and search tools use is the subpackage walk:
// the same descriptor discipline (every directory opened relative to its
// parent with O_NOFOLLOW), a pull iterator in ripgrep's --sort path order.
//
// Where there is no openat (windows, plan9, wasip1) the same API goes through
// an os.Root: it never leaves the root, though it follows in-root symlinks
// that appear after a check, and it cannot open a FIFO without blocking or
// check a file's type before opening it.
package sandbox

import (
	"errors"
	"io/fs"
	"strings"
)

// Kind is what a name is, as Cursor.Lstat tells it.
type Kind uint8

const (
	KindOther   Kind = iota // a FIFO, socket or device
	KindDir                 // a directory
	KindSymlink             // a symlink, not followed
	KindFile                // a regular file
)

func kindOf(m fs.FileMode) Kind {
	switch {
	case m.IsDir():
		return KindDir
	case m&fs.ModeSymlink != 0:
		return KindSymlink
	case m.IsRegular():
		return KindFile
	}
	return KindOther
}

// Regular reports whether name, below the cursor, is a regular file (not a
// symlink to one).
func (c *Cursor) Regular(name string) bool {
	k, err := c.Lstat(name)
	return err == nil && k == KindFile
}

// DirEntry is a name in a directory as Cursor.ReadDir lists it. Type holds
// the fs.FileMode type bits, as fs.DirEntry.Type does: a symlink is
// fs.ModeSymlink, never its target's type.
type DirEntry struct {
	Name string
	Type fs.FileMode
}

// ErrNotRegular is the error of an open that found a FIFO, socket or device.
var ErrNotRegular = errors.New("not a regular file")

// ParentError marks a failure to reach the directory that holds a target,
// as opposed to a failure on the target itself.
type ParentError struct{ Err error }

func (e ParentError) Error() string { return e.Err.Error() }
func (e ParentError) Unwrap() error { return e.Err }

// InParent reports whether err happened on the way to the target's directory.
func InParent(err error) bool {
	var pe ParentError
	return errors.As(err, &pe)
}

// Join appends name to the canonical rel dir.
func Join(dir, name string) string {
	if dir == "." || dir == "" {
		return name
	}
	return dir + "/" + name
}

// joinRel is the canonical rel of the components parts: "." for none.
func joinRel(parts []string) string {
	if len(parts) == 0 {
		return "."
	}
	return strings.Join(parts, "/")
}

// Split returns the parent and final component of a canonical rel.
func Split(rel string) (dir, name string) {
	i := strings.LastIndexByte(rel, '/')
	if i < 0 {
		return ".", rel
	}
	return rel[:i], rel[i+1:]
}
