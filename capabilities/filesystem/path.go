package filesystem

// How a path becomes safe to open
//
// A tool path goes through two steps, and neither ever follows a symlink out
// of the root.
//
//  1. resolve turns what the model wrote into a canonical root-relative path
//     ("rel") with the semantics of Python's non-strict os.path.realpath: it
//     walks the components from cwd (or from "/" for an absolute path),
//     expands each symlink it meets (relative targets against the link's
//     directory, absolute ones from "/"), applies ".." to the resolved prefix
//     rather than lexically, and keeps components that do not exist literally
//     so write targets resolve too. The walk holds a descriptor per directory
//     of the resolved prefix and looks the next component up with
//     fstatat/readlinkat relative to it, so resolution is immune to a parent
//     being swapped for a symlink while it runs. Anything outside the root is
//     never looked at: components above the root are followed lexically only
//     (so "../root/x" and an absolute path into the root still work), and the
//     final path must lie inside the root or the call is refused. Patterns
//     are then matched against rel, so an alias is checked as its target.
//
//  2. The I/O (internal/sandbox) reaches rel again from a descriptor held on
//     the root, one component at a time with O_NOFOLLOW|O_DIRECTORY, and opens
//     the final component with O_NOFOLLOW. rel contains no symlinks, so any
//     symlink met now was swapped in after the check: the open fails (ELOOP,
//     reported as "changed to a symlink") instead of following it. The file
//     opened is therefore always the one at the path that was checked, never
//     one outside the root and never an in-root file the patterns forbid.
//     Writes and edits additionally re-hash the content under the open
//     descriptor, so a file replaced in place is a conflict, not overwritten.
//
// Walkers list directories through the same descriptors (FS.root is an
// os.Root, which never leaves the root either) and resolve every entry with
// resolveEntry before matching patterns against its target.

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/capabilities/filesystem/internal/sandbox"
)

const (
	// maxSymlinks bounds symlink expansions in one resolution, as the kernel's
	// MAXSYMLINKS does for a lookup; more is reported as a loop.
	maxSymlinks = 40
	// pathMax is the longest absolute path the OS accepts (Linux PATH_MAX,
	// counting the terminating NUL).
	pathMax = 4096
)

var (
	errTooLong  = capabilities.Retry("The path name is too long.")
	errEncoding = capabilities.Retry("The path name contains a byte sequence the filesystem cannot represent.")
	errNUL      = capabilities.Retry("The path name contains a NUL byte.")
	errLoopOS   = capabilities.Retry("The path resolves through a symlink loop.")
)

// resolve returns the canonical root-relative form of the path p the model
// gave (relative to cwd, or absolute), or a retry error naming p.
func (fs *FS) resolve(p string) (string, error) {
	return fs.resolvePath(fs.cwdParts, p)
}

// resolveGated resolves p as resolve does, then passes the result through
// gate (checkRead, checkWrite or checkWalkRoot), the check of every tool
// before it touches the path.
func (fs *FS) resolveGated(p string, gate func(rel string) error) (string, error) {
	rel, err := fs.resolve(p)
	if err != nil {
		return "", err
	}
	if err := gate(rel); err != nil {
		return "", err
	}
	return rel, nil
}

// resolveEntry resolves a path relative to the root, such as a walker's entry,
// to the canonical rel of its target.
func (fs *FS) resolveEntry(rel string) (string, error) {
	return fs.resolvePath(nil, rel)
}

func (fs *FS) resolvePath(base []string, p string) (string, error) {
	if strings.IndexByte(p, 0) >= 0 {
		return "", errNUL
	}
	if len(p) > 16*pathMax {
		return "", errTooLong
	}
	r := resolution{fs: fs, cur: fs.dir.Cursor(), inside: true}
	defer r.cur.Close()
	given := p
	p = filepath.ToSlash(p)
	r.push(p)
	if strings.HasPrefix(p, "/") {
		r.restart()
	} else {
		r.pushParts(base) // walked first
	}
	if err := r.run(); err != nil {
		if errors.Is(err, errSymlinkLoop) {
			return "", capabilities.Retry("Path %s resolves through a symlink loop.", pyRepr(given))
		}
		return "", err
	}
	if !r.inside {
		if rel, ok := fs.viaAlias(p); ok {
			return rel, nil
		}
		return "", capabilities.Retry("Path %s resolves outside the root directory.", pyRepr(given))
	}
	rel := "."
	if len(r.parts) > 0 {
		rel = strings.Join(r.parts, "/")
	}
	if len(fs.rootDir)+1+len(rel) >= pathMax {
		return "", errTooLong
	}
	return rel, nil
}

var errSymlinkLoop = errors.New("symlink loop")

// resolution is the state of one resolve.
type resolution struct {
	fs  *FS
	cur sandbox.Cursor // at the deepest existing directory of parts
	// inside says whether parts is relative to the root or, having climbed
	// above it, absolute.
	inside bool
	parts  []string
	// literal counts the trailing parts the cursor did not enter because
	// they are missing, not directories or not searchable.
	literal int
	links   int
	pending []string // components still to walk, last one next
}

// push queues the components of p to be walked before those already queued.
func (r *resolution) push(p string) {
	for p != "" {
		i := strings.LastIndexByte(p, '/')
		r.pending = append(r.pending, p[i+1:])
		if i < 0 {
			break
		}
		p = p[:i]
	}
}

func (r *resolution) pushParts(parts []string) {
	for i := len(parts) - 1; i >= 0; i-- {
		r.pending = append(r.pending, parts[i])
	}
}

// restart moves to the filesystem root "/", which is the sandbox root itself
// when the sandbox is "/".
func (r *resolution) restart() {
	r.cur.Reset()
	r.parts = r.parts[:0]
	r.literal = 0
	r.inside = len(r.fs.rootParts) == 0
}

func (r *resolution) run() error {
	for len(r.pending) > 0 {
		name := r.pending[len(r.pending)-1]
		r.pending = r.pending[:len(r.pending)-1]
		switch {
		case name == "" || name == ".":
		case name == "..":
			r.up()
		case !r.inside:
			r.parts = append(r.parts, name)
			if slices.Equal(r.parts, r.fs.rootParts) || (r.fs.aliasParts != nil && slices.Equal(r.parts, r.fs.aliasParts)) {
				r.parts = r.parts[:0]
				r.inside = true
				r.cur.Reset()
			}
		case r.literal > 0:
			r.parts = append(r.parts, name)
			r.literal++
		default:
			if err := r.step(name); err != nil {
				return err
			}
		}
	}
	return nil
}

func (r *resolution) up() {
	switch {
	case !r.inside:
		if len(r.parts) > 0 {
			r.parts = r.parts[:len(r.parts)-1]
		}
	case len(r.parts) == 0:
		if n := len(r.fs.rootParts); n > 0 { // ".." of "/" is "/"
			r.inside = false
			r.parts = append(r.parts[:0], r.fs.rootParts[:n-1]...)
			r.cur.Reset()
		}
	default:
		if r.literal > 0 {
			r.literal--
		} else {
			r.cur.Up()
		}
		r.parts = r.parts[:len(r.parts)-1]
	}
}

// step walks one existing-or-not component below the cursor.
func (r *resolution) step(name string) error {
	kind, err := r.cur.Lstat(name)
	if err != nil && strings.IndexByte(name, '\\') >= 0 {
		// A name the listings showed escaped (see internal/sandbox/names.go) addresses the
		// file of the raw name when no file has the escaped one.
		if raw, ok := sandbox.UnescapeName(name); ok && raw != name {
			if k, rerr := r.cur.Lstat(raw); rerr == nil {
				name, kind, err = raw, k, nil
			}
		}
	}
	if err != nil {
		if e := pathNameError(err); e != nil {
			return e
		}
		r.parts = append(r.parts, name)
		r.literal = 1
		return nil
	}
	switch kind {
	case sandbox.KindDir:
		r.parts = append(r.parts, name)
		if r.cur.Down(name) != nil {
			r.literal = 1
		}
	case sandbox.KindSymlink:
		r.links++
		if r.links > maxSymlinks {
			return errSymlinkLoop
		}
		target, err := r.cur.Readlink(name)
		if err != nil || target == "" {
			if e := pathNameError(err); e != nil {
				return e
			}
			r.parts = append(r.parts, name)
			r.literal = 1
			return nil
		}
		target = filepath.ToSlash(target)
		if strings.HasPrefix(target, "/") {
			r.restart()
		}
		r.push(target)
	default:
		r.parts = append(r.parts, name)
		r.literal = 1
	}
	return nil
}

// pathNameError turns the OS's complaints about a path name itself into the
// fixed retry messages; other errors give nil.
func pathNameError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, syscall.ENAMETOOLONG):
		return errTooLong
	case errors.Is(err, syscall.EILSEQ):
		return errEncoding
	}
	return nil
}

// viaAlias resolves the absolute path p that the walk placed outside the
// root, for the case where it reaches the root through a symlink outside it:
// an alias of the root or of a directory in it (on macOS /tmp and /var are
// links to /private/..., and a symlinked home is common). The shortest prefix
// of p whose real path lies in the root is taken for that directory, and the
// rest is resolved below it as any path is. Only here does a resolution look
// at the filesystem outside the root, and only at the names p spells.
func (fs *FS) viaAlias(p string) (string, bool) {
	comps := strings.Split(strings.Trim(p, "/"), "/")
	prefix := ""
	for i, c := range comps {
		if c == ".." {
			return "", false // a climb the OS would resolve differently: not guessed at
		}
		if c == "" || c == "." {
			continue
		}
		prefix += "/" + c
		real, err := filepath.EvalSymlinks(filepath.FromSlash(prefix))
		if err != nil {
			return "", false
		}
		if !within(real, fs.rootDir) {
			continue
		}
		dir, err := filepath.Rel(fs.rootDir, real)
		if err != nil {
			return "", false
		}
		rel, err := fs.resolvePath(nil, filepath.ToSlash(dir)+"/"+strings.Join(comps[i+1:], "/"))
		return rel, err == nil
	}
	return "", false
}
