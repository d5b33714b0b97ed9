package sandbox

// How a path becomes safe to open
//
// A tool path goes through two steps, and neither ever follows a symlink out
// of the root.
//
//  1. Resolver.Resolve turns what the model wrote into a canonical root-relative path
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
//  2. The I/O (dir_unix.go) reaches rel again from a descriptor held on
//     the root, one component at a time with O_NOFOLLOW|O_DIRECTORY, and opens
//     the final component with O_NOFOLLOW. rel contains no symlinks, so any
//     symlink met now was swapped in after the check: the open fails (ELOOP,
//     reported as "changed to a symlink") instead of following it. The file
//     opened is therefore always the one at the path that was checked, never
//     one outside the root and never an in-root file the patterns forbid.
//     Writes and edits additionally re-hash the content under the open
//     descriptor, so a file replaced in place is a conflict, not overwritten.
//
// FileSystem's walkers list directories through the same descriptors (the
// walk subpackage, or an os.Root, which never leaves the root either) and
// resolve every entry before matching patterns against its target.

import (
	"errors"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

const (
	// maxSymlinks bounds symlink expansions in one resolution, as the kernel's
	// MAXSYMLINKS does for a lookup; more is reported as a loop.
	maxSymlinks = 40
	// pathMax is the longest absolute path the OS accepts (Linux PATH_MAX,
	// counting the terminating NUL).
	pathMax = 4096
)

// The errors of Resolve, which the caller words for the model.
var (
	ErrNUL         = errors.New("the path name contains a NUL byte")
	ErrTooLong     = errors.New("the path name is too long")
	ErrEncoding    = errors.New("the path name contains a byte sequence the filesystem cannot represent")
	ErrSymlinkLoop = errors.New("the path resolves through a symlink loop")
	ErrOutside     = errors.New("the path resolves outside the root directory")
)

// Resolver turns the paths a model writes into canonical rels (step 1 above).
type Resolver struct {
	dir        *Dir
	real       string   // absolute real path of the root
	rootParts  []string // real split into components
	aliasParts []string // the root as configured, when absolute paths may use that spelling; nil if none
	// strict makes a resolution fail on a name that is not there
	// (NewStrictResolver); vol is then the root's volume name, if any.
	strict bool
	vol    string
}

// NewResolver resolves beneath d, whose absolute real path is real, split
// into rootParts; aliasParts is the root's other absolute spelling, or nil.
func NewResolver(d *Dir, real string, rootParts, aliasParts []string) *Resolver {
	return &Resolver{dir: d, real: real, rootParts: rootParts, aliasParts: aliasParts}
}

// NewStrictResolver resolves beneath d, whose absolute real path is real, as
// the kernel resolves a path to open: every component must exist and every
// one but the last be a directory, or Resolve fails with the lookup's errno
// (ENOENT, ENOTDIR, EACCES). Nothing outside the root is ever looked at: a
// path that leaves it and does not come back spelled under real is
// ErrOutside, with no other spelling of the root tried, and a name is never
// taken for an escaped one. It suits following a symlink found in a walk,
// where the resolution is all there is to decide whether the link counts.
func NewStrictResolver(d *Dir, real string) *Resolver {
	vol := filepath.VolumeName(real)
	var parts []string
	if p := strings.Trim(filepath.ToSlash(real[len(vol):]), "/"); p != "" {
		parts = strings.Split(p, "/")
	}
	return &Resolver{dir: d, real: real, rootParts: parts, strict: true, vol: vol}
}

// Found is what a resolution saw at the last component of the rel it
// returns, for a caller that would otherwise stat it again.
type Found uint8

const (
	FoundUnsure Found = iota // nothing to rely on: a directory, a device, not looked at alone
	FoundFile                // a regular file, by its lstat
	FoundAbsent              // no such name, in a directory that is there
)

// Resolve returns the canonical rel of p: relative to the directory whose
// components are base (nil for the root), or absolute. The errors are
// ErrNUL, ErrTooLong, ErrEncoding, ErrSymlinkLoop and ErrOutside.
func (rv *Resolver) Resolve(base []string, p string) (string, error) {
	rel, _, err := rv.ResolveFound(base, p)
	return rel, err
}

// ResolveFound is Resolve, and says what the lstat of rel's last component
// found. That is only as fresh as the lstat: a caller acting on it must
// still check what it opens, as OpenFoundReader does.
func (rv *Resolver) ResolveFound(base []string, p string) (string, Found, error) {
	rel, found, _, err := rv.resolve(base, p)
	return rel, found, err
}

// ResolveGit is ResolveFound, and also says whether rel is, or lies below,
// what a symlink named as .git (IsDotGit) that the resolution followed
// leads to: a repository's git directory, or the file redirecting git to
// one, under another name.
func (rv *Resolver) ResolveGit(base []string, p string) (string, Found, bool, error) {
	rel, found, gitLinks, err := rv.resolve(base, p) // no gitLinks with an error
	git := slices.ContainsFunc(gitLinks, func(g string) bool {
		return g == "." || rel == g || strings.HasPrefix(rel, g+"/")
	})
	return rel, found, git, err
}

// resolve is ResolveFound, and returns the rels the symlinks named as .git
// it followed lead to.
func (rv *Resolver) resolve(base []string, p string) (string, Found, []string, error) {
	if strings.IndexByte(p, 0) >= 0 {
		return "", FoundUnsure, nil, ErrNUL
	}
	if len(p) > 16*pathMax {
		return "", FoundUnsure, nil, ErrTooLong
	}
	r := resolution{rv: rv, cur: rv.dir.Cursor(), inside: true}
	defer r.cur.Close()
	p = filepath.ToSlash(p)
	r.push(p)
	if strings.HasPrefix(p, "/") {
		r.restart()
	} else {
		for _, name := range slices.Backward(base) { // walked first
			r.pending = append(r.pending, name)
		}
	}
	if err := r.run(); err != nil {
		return "", FoundUnsure, nil, err
	}
	if !r.inside {
		// Only an absolute path names the host's directories it is
		// spelled with: a relative one that left the root did so through
		// a symlink, and its names say nothing from "/".
		if !rv.strict && strings.HasPrefix(p, "/") {
			if rel, gitLinks, ok := rv.viaAlias(p); ok {
				return rel, FoundUnsure, gitLinks, nil
			}
		}
		return "", FoundUnsure, nil, ErrOutside
	}
	rel := joinRel(r.parts)
	if len(rv.real)+1+len(rel) >= pathMax {
		return "", FoundUnsure, nil, ErrTooLong
	}
	return rel, r.found, r.gitLinks, nil
}

// gitLinkEnd is queued after the target of a symlink named as .git, so
// that the resolution notes where that target led once it is walked. No
// name holds a NUL byte.
const gitLinkEnd = "\x00.git"

// resolution is the state of one resolve.
type resolution struct {
	rv  *Resolver
	cur Cursor // at the deepest existing directory of parts
	// inside says whether parts is relative to the root or, having climbed
	// above it, absolute.
	inside bool
	parts  []string
	// literal counts the trailing parts the cursor did not enter because
	// they are missing, not directories or not searchable.
	literal int
	links   int
	pending []string // components still to walk, last one next
	found   Found    // what step saw of the last of parts
	// gitLinks are the rels that symlinks named as .git led to.
	gitLinks []string
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

// restart moves to the filesystem root "/", which is the sandbox root itself
// when the sandbox is "/".
func (r *resolution) restart() {
	r.cur.Reset()
	r.parts = r.parts[:0]
	r.literal = 0
	r.inside = len(r.rv.rootParts) == 0
}

func (r *resolution) run() error {
	for len(r.pending) > 0 {
		name := r.pending[len(r.pending)-1]
		r.pending = r.pending[:len(r.pending)-1]
		if name == "" || name == "." {
			continue
		}
		if name == gitLinkEnd {
			if r.inside {
				r.gitLinks = append(r.gitLinks, joinRel(r.parts))
			}
			continue
		}
		r.found = FoundUnsure
		switch {
		case name == "..":
			r.up()
		case !r.inside:
			r.parts = append(r.parts, name)
			if slices.Equal(r.parts, r.rv.rootParts) || (r.rv.aliasParts != nil && slices.Equal(r.parts, r.rv.aliasParts)) {
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
		if n := len(r.rv.rootParts); n > 0 { // ".." of "/" is "/"
			r.inside = false
			r.parts = append(r.parts[:0], r.rv.rootParts[:n-1]...)
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
	if err != nil && !r.rv.strict && strings.IndexByte(name, '\\') >= 0 {
		// A name the listings showed escaped (see names.go) addresses the
		// file of the raw name when no file has the escaped one.
		if raw, ok := UnescapeName(name); ok && raw != name {
			if k, rerr := r.cur.Lstat(raw); rerr == nil {
				name, kind, err = raw, k, nil
			}
		}
	}
	if err != nil {
		if e := pathNameError(err); e != nil {
			return e
		}
		if r.rv.strict {
			return err
		}
		r.parts = append(r.parts, name)
		r.literal = 1
		if errors.Is(err, fs.ErrNotExist) {
			r.found = FoundAbsent
		}
		return nil
	}
	switch kind {
	case KindDir:
		r.parts = append(r.parts, name)
		if err := r.cur.Down(name); err != nil {
			if r.rv.strict {
				return err
			}
			r.literal = 1
		}
	case KindSymlink:
		r.links++
		if r.links > maxSymlinks {
			return ErrSymlinkLoop
		}
		target, err := r.cur.Readlink(name)
		if err != nil || target == "" {
			if e := pathNameError(err); e != nil {
				return e
			}
			if r.rv.strict {
				if err == nil {
					err = syscall.ENOENT // as the kernel reports an empty link
				}
				return err
			}
			r.parts = append(r.parts, name)
			r.literal = 1
			return nil
		}
		target = filepath.ToSlash(target)
		if vol := filepath.VolumeName(target); vol != "" && r.rv.strict {
			// Another volume is outside; the root's own is the "/" the
			// root's real path is spelled from.
			if !strings.EqualFold(vol, r.rv.vol) {
				return ErrOutside
			}
			target = target[len(vol):]
		}
		if strings.HasPrefix(target, "/") {
			r.restart()
		}
		if IsDotGit(name) {
			r.pending = append(r.pending, gitLinkEnd) // walked after the target
		}
		r.push(target)
	default:
		if r.rv.strict && len(r.pending) > 0 {
			return syscall.ENOTDIR // a file with more of the path after it
		}
		r.parts = append(r.parts, name)
		r.literal = 1
		if kind == KindFile {
			r.found = FoundFile
		}
	}
	return nil
}

// pathNameError turns the OS's complaints about a path name itself into
// ErrTooLong and ErrEncoding; other errors give nil.
func pathNameError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, syscall.ENAMETOOLONG):
		return ErrTooLong
	case errors.Is(err, syscall.EILSEQ):
		return ErrEncoding
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
func (rv *Resolver) viaAlias(p string) (string, []string, bool) {
	comps := strings.Split(strings.Trim(p, "/"), "/")
	prefix := ""
	for i, c := range comps {
		if c == ".." {
			return "", nil, false // a climb the OS would resolve differently: not guessed at
		}
		if c == "" || c == "." {
			continue
		}
		prefix += "/" + c
		real, err := filepath.EvalSymlinks(filepath.FromSlash(prefix))
		if err != nil {
			return "", nil, false
		}
		if !Within(real, rv.real) {
			continue
		}
		dir, err := filepath.Rel(rv.real, real)
		if err != nil {
			return "", nil, false
		}
		rel, _, gitLinks, err := rv.resolve(nil, filepath.ToSlash(dir)+"/"+strings.Join(comps[i+1:], "/"))
		return rel, gitLinks, err == nil
	}
	return "", nil, false
}

// Within reports whether p is root or below it, component-wise.
func Within(p, root string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}
