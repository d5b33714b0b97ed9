// Package sandbox is FileSystem's descriptor layer: everything that reaches a
// file beneath the root without ever following a symlink, and nothing that
// knows about tools, patterns or the model.
//
// Its callers speak canonical root-relative paths ("rel"): "/"-separated, no
// "." or ".." components, no symlinks, "." for the root itself. Resolver
// turns what the model wrote into one, package filesystem checks it against
// the access patterns, and this package then reaches rel again from a
// descriptor held on the root, one component at a time with
// O_NOFOLLOW|O_DIRECTORY (in one openat2 RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS
// call where Linux has it), and opens the final component with O_NOFOLLOW.
// rel contains no symlinks, so any symlink met now was swapped in after the
// check: the open fails with ELOOP instead of following it.
//
// The API:
//
//   - Resolver (NewResolver) turns a path as the model wrote it into rel
//     (resolve.go, which says how a path becomes safe to open); its errors
//     (ErrNUL, ErrTooLong, ErrEncoding, ErrSymlinkLoop, ErrOutside) are
//     worded for the model by the caller. ResolveFound also says what the
//     lookup saw of rel's last component (Found: a regular file, a name
//     missing from a directory that is there, or nothing to rely on), so
//     that a caller need not stat it again. NewStrictResolver's resolve only
//     what exists, as the kernel would, and never look outside the root, not
//     even for another spelling of it: the result cache follows in-root
//     symlinks with one. Within compares host paths.
//   - Dir (OpenDir, or OpenRoot where the root is reached as os.OpenRoot
//     reaches it) holds the root. On Linux, OpenReal opens a directory first
//     and reads its real path back from the kernel. Dir.Walk gives a Cursor
//     at a directory; Dir.Lstat, Dir.Readlink, Dir.OpenFile, Dir.OpenReader,
//     Dir.OpenFoundReader (for a rel ResolveFound found regular: no second
//     stat before the open, the type still checked on the descriptor),
//     Dir.WriteFile, Dir.MkdirAll, Dir.Rename and Dir.Remove do one
//     operation on rel.
//   - NewWalker starts a walk (package walk) and Dir.FS reads the tree
//     following a symlink as long as it stays beneath the root (the
//     workspace checks), both through an os.Root the Dir opens on the same
//     directory when first asked (root.go): the one os.Root of the program.
//   - Cursor is a stack of directory descriptors: Down, Up, Reset and Close
//     move it, Lstat and Readlink look at a name below it, ReadDir lists its
//     directory (DirEntry, types not followed), OpenReader and
//     OpenFoundReader open a regular file in it, and WorkDir names its
//     directory (Linux) as a child's working directory, for ripgrep.
//   - FileReader reads a regular file through its bare descriptor.
//   - Trail (NewTrail) moves a Cursor through the directories of a run of
//     sorted paths, entering each once and climbing only as far as the next
//     path needs, with the caller's state for each directory it holds; and
//     Cursor.ListRegular lists a directory's regular files in one getdents64
//     pass (Linux; nil elsewhere, where Regular looks up each name). The
//     ripgrep driver checks every path rg prints with them (trail.go,
//     list_linux.go). They are descriptor I/O that knows nothing of rg or of
//     patterns, which is why they live here rather than beside the driver.
//   - On Linux, Dir.NameDir names a walked directory by a /proc/self/fd path
//     (ProcName), for the watcher's inotify, which takes only paths.
//   - Dir.Replace replaces a file's content atomically, under the file's
//     lock, once the file there is what an Expect says (replace.go):
//     temporary files (IsTempName, TempPrefix) that a killed writer left are
//     swept, the new content synced in one, which is renamed over the
//     target. The checks between the lock and the rename (the content hash)
//     are the caller's Expect.Check. Tests fail a replacement at a chosen
//     point, or walk as without openat2, through package sandboxtest.
//   - On unix, RetryEINTR retries a system call that EINTR interrupted.
//   - RemoveTree removes a private directory tree (Shell's temporary
//     directory) even where a command took away its own permission on a
//     directory in it, giving permissions back only inside it (tree.go).
//   - Names a listing must not show raw (control characters, bidirectional
//     controls, bytes that are not UTF-8) are escaped reversibly:
//     DisplayName, NeedsEscape and UnescapeName (names.go). IsDotGit
//     recognises the names NTFS or HFS+ may take for ".git" (names.go).
//   - Errors are *os.PathError wrapping an errno, ErrNotRegular for a FIFO,
//     socket or device, and a ParentError (InParent) when the failure was on
//     the way to the target's directory rather than on the target.
//
// The tree walker the listing and search tools use is the subpackage walk:
// the same descriptor discipline (every directory opened relative to its
// parent with O_NOFOLLOW), a pull iterator in ripgrep's --sort path order.
//
// Where there is no openat (windows, plan9, wasip1) the same API goes through
// the os.Root: it never leaves the root, though it follows in-root symlinks
// that appear after a check, and it cannot check a file's type before opening
// it.
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

// Split returns the parent and final component of a canonical rel.
func Split(rel string) (dir, name string) {
	i := strings.LastIndexByte(rel, '/')
	if i < 0 {
		return ".", rel
	}
	return rel[:i], rel[i+1:]
}
