// Package walk reads a directory tree through descriptors, in the order
// ripgrep's --sort path visits it.
//
// On Unix every directory is opened relative to its parent's descriptor with
// O_NOFOLLOW and every file relative to its directory's descriptor with
// O_NOFOLLOW, so nothing in the walk ever goes through a path string joined
// onto a host directory: a directory renamed or swapped for a symlink while the
// walk runs can make entries disappear, never make the walk leave the tree it
// was started on. Elsewhere each directory is an os.Root, which cannot be left
// either.
//
// A walk visits at most MaxEntries entries (see Limit and Capped), so a tree
// of millions of files costs bounded time and memory.
//
// The walk is a pull iterator. The caller sees each entry as the directory
// reports it (a symlink is a Symlink, not its target), filters it, and asks
// for a directory to be entered with Descend; nothing else is entered, so a
// walk that stops early has read no more of the tree than it needed.
//
// On Linux a walk may also be tracked (NewTrackedAt): its stamp, read from
// inotify, tells a later walk that the directory is unchanged, and spares it
// reading the directory at all.
package walk

import (
	"os"
	"slices"
	"strings"
	"sync/atomic"
)

// Type is the kind of an entry as its directory reports it; symlinks are not
// followed.
type Type uint8

const (
	Regular Type = iota + 1 // a regular file
	Dir                     // a directory
	Symlink                 // a symbolic link, whatever it points to
	Other                   // a FIFO, socket or device
)

func (t Type) String() string {
	switch t {
	case Regular:
		return "file"
	case Dir:
		return "dir"
	case Symlink:
		return "symlink"
	case Other:
		return "other"
	}
	return "unknown"
}

// Entry is one entry of the tree.
type Entry struct {
	// Path is the entry's slash-separated path: the walk's prefix joined with
	// the names of the directories above it and its own name.
	Path string
	Type Type
	// Depth is 1 for the walk root's own entries, 2 for theirs, and so on.
	Depth int
}

// Name returns the entry's last path component.
func (e *Entry) Name() string { return e.Path[strings.LastIndexByte(e.Path, '/')+1:] }

// MaxEntries is how many directory entries one walk reads at most, counting
// every entry of every directory it lists (hidden, filtered or not). Past it
// the walk ends as if the tree did, and Capped reports it.
const MaxEntries = 1_000_000

// Walker visits a tree depth first, each directory's entries sorted by name
// in byte order (code-point order for UTF-8 names), so that a directory's
// contents come right after it and "a/b.txt" comes before "a.txt". S is state
// the caller attaches to a directory when it descends into it (see Descend and
// State); callers that need none use struct{}.
//
// A Walker is not safe for concurrent use; the File values it hands out are.
type Walker[S any] struct {
	stack []*frame[S]
	cur   Entry
	dir   *frame[S] // the frame cur was read from
	enter *frame[S] // the frame Descend asked for, opened by the next call to Next
	buf   []byte    // directory listing buffer, reused
	left  int       // entries the walk may still read
	// capped is set when a directory had more entries than left.
	capped bool
	// track is the walk root's tracker (NewTrackedAt), until the walk shows
	// something its stamp does not cover.
	track *trackedDir
}

type frame[S any] struct {
	d       *dir
	prefix  string // the directory's Path; "" for a walk root without prefix
	names   []dirent
	next    int
	state   S
	depth   int
	pending string // name of the subdirectory to open (enter frames only)
}

// dirent is a directory entry as the directory listing reports it.
type dirent struct {
	name string
	typ  Type
}

// dir is an open directory shared by a frame and the Files read from it. It
// is closed when the last of them lets go, so a File handed to another
// goroutine stays readable after the walk has moved on.
type dir struct {
	sys  sysDir
	refs atomic.Int32
}

func newDir(sys sysDir) *dir {
	d := &dir{sys: sys}
	d.refs.Store(1)
	return d
}

func (d *dir) acquire() *dir { d.refs.Add(1); return d }

func (d *dir) release() {
	if d.refs.Add(-1) == 0 {
		d.sys.close()
	}
}

// Stamp names a directory and a state of what a listing of it shows: the
// names and types of its entries and the sizes of its regular files. A
// directory that changes gets a new stamp; stamps are never reused. The zero
// Stamp is that of a directory that cannot be tracked (not on Linux, not on
// a local file system, or past the tracker's share of inotify watches).
type Stamp struct {
	d       *trackedDir
	version uint64
}

// begin starts a walk of dir below the open directory top, which it closes:
// the walk NewAt describes or, with last, the one NewTrackedAt does.
func begin[S any](top sysDir, dir string, state S, last *Stamp) (*Walker[S], Stamp, error) {
	sys, dir, err := openPath(top, dir)
	if err != nil {
		return nil, Stamp{}, err
	}
	var stamp Stamp
	if last != nil {
		stamp.d, stamp.version = sys.track()
		if stamp.d != nil && stamp == *last {
			sys.close()
			return nil, stamp, nil
		}
	}
	w, err := start(sys, dir, state)
	if err != nil {
		return nil, Stamp{}, err
	}
	w.track = stamp.d
	return w, stamp, nil
}

// Tracked reports whether the stamp NewTrackedAt returned covers what the walk
// has shown: it read every entry of the directory, entered none, met no
// symlink or special file, and watched each regular file Lstat described.
func (w *Walker[S]) Tracked() bool { return w.track != nil && !w.capped }

// openPath opens the directory dir below the open directory sys one
// component at a time, and closes sys: a component that is a symlink fails.
// It returns dir as the prefix of the directory's entries: "" for ".".
func openPath(sys sysDir, dir string) (sysDir, string, error) {
	if dir == "." {
		return sys, "", nil
	}
	for done := 0; done < len(dir); {
		end := strings.IndexByte(dir[done:], '/')
		if end < 0 {
			end = len(dir)
		} else {
			end += done
		}
		sub, err := sys.openDir(dir[done:end])
		sys.close()
		if err != nil {
			return sub, "", &os.PathError{Op: "open", Path: dir[:end], Err: err}
		}
		sys, done = sub, end+1
	}
	return sys, dir, nil
}

// start begins a walk of the open directory sys, whose entries get paths
// dir/name.
func start[S any](sys sysDir, dir string, state S) (*Walker[S], error) {
	w := &Walker[S]{left: MaxEntries}
	fr := &frame[S]{d: newDir(sys), prefix: dir, state: state}
	if err := w.read(fr); err != nil {
		fr.d.release()
		return nil, &os.PathError{Op: "readdir", Path: dir, Err: err}
	}
	w.stack = append(w.stack, fr)
	return w, nil
}

// read loads the frame's entries, sorted by name, within the walk's budget.
// Listing a directory advances its descriptor's offset, which openat does not
// depend on.
func (w *Walker[S]) read(fr *frame[S]) error {
	names, err := fr.d.sys.list(&w.buf, w.left)
	if err != nil {
		return err
	}
	if len(names) > w.left {
		// The budget ends inside this directory: which of its entries
		// are kept depends on the listing order, so nothing after the
		// walk's end is shown as if it were all.
		names, w.capped = names[:w.left], true
	}
	w.left -= len(names)
	slices.SortFunc(names, func(a, b dirent) int { return strings.Compare(a.name, b.name) })
	fr.names = names
	return nil
}

// Next advances to the next entry and reports whether there is one. A
// directory the walk cannot open or read (gone, not permitted, swapped for a
// symlink) is skipped silently, the way a recursive glob skips it.
func (w *Walker[S]) Next() bool {
	if w.enter != nil {
		fr := w.enter
		w.enter = nil
		if err := w.open(fr); err == nil {
			w.stack = append(w.stack, fr)
		}
	}
	for len(w.stack) > 0 {
		top := w.stack[len(w.stack)-1]
		if top.next < len(top.names) {
			de := top.names[top.next]
			top.next++
			w.dir = top
			w.cur = Entry{Path: join(top.prefix, de.name), Type: de.typ, Depth: top.depth + 1}
			if de.typ != Regular && de.typ != Dir {
				w.track = nil
			}
			return true
		}
		w.stack = w.stack[:len(w.stack)-1]
		top.d.release()
	}
	w.dir = nil
	return false
}

func (w *Walker[S]) open(fr *frame[S]) error {
	sys, err := w.stack[len(w.stack)-1].d.sys.openDir(fr.pending)
	if err != nil {
		return err
	}
	fr.d = newDir(sys)
	if err := w.read(fr); err != nil {
		fr.d.release()
		return err
	}
	return nil
}

// Limit lowers how many entries the walk may still read to n, if that is
// fewer than it may now. It is meant to be called right after NewAt, whose own
// listing of the walk root already counts.
func (w *Walker[S]) Limit(n int) {
	used := MaxEntries - w.left
	if rest := n - used; rest < w.left {
		w.left = max(rest, 0)
		if len(w.stack) == 1 && len(w.stack[0].names) > n {
			w.stack[0].names, w.capped = w.stack[0].names[:n], true
		}
	}
}

// Capped reports whether the walk stopped at its entry limit: there were
// entries it did not read.
func (w *Walker[S]) Capped() bool { return w.capped }

// Entry returns the current entry. It is valid until the next call to Next.
func (w *Walker[S]) Entry() *Entry { return &w.cur }

// State returns the state of the directory holding the current entry.
func (w *Walker[S]) State() S { return w.dir.state }

// Descend makes the next call to Next enter the current entry, which must be
// a directory (Type Dir), attaching state to it. Symlinked directories are
// never entered.
func (w *Walker[S]) Descend(state S) {
	if w.dir == nil || w.cur.Type != Dir {
		return
	}
	w.track = nil
	w.enter = &frame[S]{prefix: w.cur.Path, state: state, depth: w.cur.Depth, pending: w.cur.Name()}
}

// Lstat describes the current entry without following a symlink: its type
// and size.
func (w *Walker[S]) Lstat() (Type, int64, error) {
	if w.track != nil && !w.dir.d.sys.watchFile(w.track, w.cur.Name()) {
		w.track = nil
	}
	typ, size, err := w.dir.d.sys.lstat(w.cur.Name())
	if err != nil {
		return 0, 0, &os.PathError{Op: "lstat", Path: w.cur.Path, Err: err}
	}
	return typ, size, nil
}

// File returns a handle on the current entry for reading it, possibly from
// another goroutine and after the walk has moved on. The caller must Close it.
func (w *Walker[S]) File() *File {
	return &File{d: w.dir.d.acquire(), name: w.cur.Name(), path: w.cur.Path}
}

// Close releases the walk's descriptors. Files already handed out stay valid
// until they are closed.
func (w *Walker[S]) Close() {
	for _, fr := range w.stack {
		fr.d.release()
	}
	w.stack, w.enter, w.dir = nil, nil, nil
}

func join(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "/" + name
}
