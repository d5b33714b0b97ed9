package filesystem

import (
	"context"
	"fmt"
	iofs "io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/internal/githooks"
	"github.com/agentspec/agentspec/internal/sandbox"
)

// FS is the sandbox every tool works through: the real root, descriptors held
// on it, the working directory and the compiled access patterns.
//
// Paths inside FS are canonical root-relative paths ("rel"): "/"-separated,
// no "." or ".." components, no symlinks, "." for the root itself. resolve
// turns what the model wrote into one; the check methods and the descriptor
// helpers of internal/sandbox take one.
type FS struct {
	rootDir    string       // absolute real path of the root, as events report it
	rootParts  []string     // rootDir split into components
	aliasParts []string     // the root as configured, when absolute paths may use that spelling
	root       rootLstat    // the root as the path-based watcher sees it
	dir        *sandbox.Dir // the root, held: every tool reaches files through it
	resolver   *sandbox.Resolver
	cwd        string   // canonical rel of the working directory
	cwdParts   []string // cwd split into components (nil for ".")
	opts       Options  // normalized
	changes    *changeTracker
	listings   listings // list_directory's last listings

	// The compiled patterns, whose slices are shared with every FS built
	// from the same lists (see patternSets): nothing may change them.
	patternSet
	// protectedFiles are the rels of Options.ProtectedFiles inside the root.
	protectedFiles map[string]bool
	// hooks are the hooks directories core.hooksPath puts in the root,
	// and the configuration files git reads (those .git/config includes),
	// outside any .git: read-only to the tools, as .git is (D11), or a
	// model could write a hook that the user's next commit runs, or the
	// configuration that names one.
	hooks *githooks.Dirs

	closed    atomic.Bool
	closeOnce sync.Once
}

func newFS(opts Options, dir string, protectedReal bool) (*FS, error) {
	real, alias, cwd, rd, err := rootPaths(opts, dir)
	if err != nil {
		return nil, err
	}
	if rd == nil {
		if rd, err = sandbox.OpenRoot(real); err != nil {
			return nil, fmt.Errorf("filesystem: opening root_dir: %w", err)
		}
	}
	fs := &FS{
		rootDir:    real,
		rootParts:  splitAbs(real),
		dir:        rd,
		opts:       opts,
		patternSet: *compiledPatternSet(opts),
	}
	fs.root.dir = rd
	fs.hooks = githooks.NewDirs(real, func(rel string) bool {
		_, err := rd.Lstat(rel)
		return err == nil
	})
	fs.changes = newChangeTracker(fs)
	if alias != real {
		fs.aliasParts = splitAbs(alias)
	}
	fs.resolver = sandbox.NewResolver(rd, real, fs.rootParts, fs.aliasParts)
	rel, err := filepath.Rel(real, cwd)
	if err != nil {
		fs.Close()
		return nil, fmt.Errorf("filesystem: cwd: %w", err)
	}
	fs.cwd = filepath.ToSlash(rel)
	if fs.cwd != "." {
		fs.cwdParts = strings.Split(fs.cwd, "/")
	}
	fs.protectedFiles = protectedRels(real, dir, opts.ProtectedFiles, protectedReal)
	return fs, nil
}

// protectedRels returns the root-relative names of the files in paths that
// lie inside the root real, symlinks resolved; with resolved, the absolute
// paths come resolved already.
func protectedRels(real, dir string, paths []string, resolved bool) map[string]bool {
	if len(paths) == 0 {
		return nil
	}
	rels := map[string]bool{}
	for _, p := range paths {
		if abs, err := filepath.Abs(realProtected(p, dir, resolved)); err == nil && within(abs, real) {
			if rel, err := filepath.Rel(real, abs); err == nil {
				rels[filepath.ToSlash(rel)] = true
			}
		}
	}
	return rels
}

// realProtected is the protected file p, made absolute against dir, with its
// symlinks resolved where they resolve, unless resolved says an absolute p
// comes so.
func realProtected(p, dir string, resolved bool) string {
	switch {
	case !filepath.IsAbs(p):
		p = filepath.Join(dir, p)
	case resolved:
		return p
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}

// Close stops the change watcher, then releases the root's descriptors, which
// the watcher walks from. Only the first call does anything.
func (fs *FS) Close() error {
	fs.closeOnce.Do(func() {
		fs.closed.Store(true)
		fs.changes.close()
		fs.dir.Close()
	})
	return nil
}

// rootLstat describes a rel as an os.Root would, for the watcher of systems
// that watch by path (watch_dirs.go): the real path it compares is
// followed the same way.
type rootLstat struct{ dir *sandbox.Dir }

// Lstat describes rel without following a final symlink.
func (r rootLstat) Lstat(rel string) (os.FileInfo, error) {
	fsys, err := r.dir.FS()
	if err != nil {
		return nil, err
	}
	return iofs.Lstat(fsys, rel)
}

func (fs *FS) hashes() bool { return *fs.opts.ContentHashes }

// checkRead gates a read of rel: denied patterns (rel and its ancestors, as
// checkWalkRoot matches them), then allowed patterns (rel itself).
func (fs *FS) checkRead(rel string) error {
	if err := fs.checkWalkRoot(rel); err != nil {
		return err
	}
	if !fs.allows(rel) {
		return capabilities.Retry("Path %s does not match any allowed pattern.", pyRepr(rel))
	}
	return nil
}

// allows reports whether the allowed patterns let rel through (rel itself,
// not its ancestors): every rel when there are none.
func (fs *FS) allows(rel string) bool {
	if len(fs.allowed) == 0 {
		return true
	}
	_, ok := matchAny(fs.allowed, rel, false)
	return ok
}

// protectedError is the refusal of a change to rel, protected by what.
func protectedError(rel, what string) error {
	return capabilities.Refuse(capabilities.RefusedProtected, "Path %s is protected (matches %s).", pyRepr(rel), pyRepr(what))
}

// checkWrite gates a change to rel: checkProtected, then the read checks.
func (fs *FS) checkWrite(rel string) error {
	if err := fs.checkProtected(rel); err != nil {
		return err
	}
	return fs.checkRead(rel)
}

// checkProtected refuses a change to a protected rel (see protectedBy), to
// one in a hooks directory of a repository, or to a configuration file git
// reads for one (see FS.hooks).
func (fs *FS) checkProtected(rel string) error {
	if what, ok := fs.protectedBy(rel); ok {
		return protectedError(rel, what)
	}
	h, whole, c := fs.hooks.Check(rel)
	switch {
	case h != "" && !whole:
		return protectedError(rel, rel) // a hook's name in the root or a work tree's top
	case h != "":
		return protectedError(rel, h)
	case c != "":
		return protectedError(rel, c)
	}
	return nil
}

// protectedBy says what protects rel: a protected pattern, then a .git
// entry at any depth (decision D11), then the spec's own files.
func (fs *FS) protectedBy(rel string) (string, bool) {
	if p, ok := matchAny(fs.protected, rel, true); ok {
		return p, true
	}
	if hasGitComponent(rel) {
		return ".git", true
	}
	// A protected directory (the result cache's) covers what is below it.
	for r := rel; r != "." && r != "/" && r != ""; r = path.Dir(r) {
		if fs.protectedFiles[r] {
			return r, true
		}
	}
	return "", false
}

// checkWalkRoot gates the directory a walker starts from: only denied
// patterns apply, since a directory never matches a file allowlist such as
// '*.py'. Containment was settled by resolve.
func (fs *FS) checkWalkRoot(rel string) error {
	if p, ok := matchAny(fs.denied, rel, true); ok {
		return capabilities.Retry("Path %s is denied by pattern %s.", pyRepr(rel), pyRepr(p))
	}
	return nil
}

// readable reports whether a walker may show the entry whose resolved target
// is rel: read-level patterns, protection never hides.
func (fs *FS) readable(rel string) bool {
	_, denied := matchAny(fs.denied, rel, true)
	return !denied && fs.allows(rel)
}

// deniedBelow reports whether the denied patterns cover everything in the
// directory dir: they match dir or a directory above it. The root is no
// entry's ancestor. A walker that shows many entries of one directory asks
// once, then readableIn for each entry.
func (fs *FS) deniedBelow(dir string) bool {
	if dir == "." {
		return false
	}
	_, ok := matchAny(fs.denied, dir, true)
	return ok
}

// readableIn is readable(rel) for a rel whose directory's deniedBelow is
// below: the patterns are matched against rel itself, its directories
// having been answered for.
func (fs *FS) readableIn(below bool, rel string) bool {
	return !below && fs.entryReadable(rel)
}

// A walk starts at a root that passed checkWalkRoot, which matched the
// denied patterns against the root and its ancestors, and enters only the
// directories entryDenied passed. So no denied pattern matches an ancestor
// of an entry it meets, and matching the entry's own path is enough: a path
// six directories deep is matched once, not seven times.

// entryDenied reports whether a denied pattern hides the walk entry rel and,
// for a directory, everything below it.
func (fs *FS) entryDenied(rel string) bool {
	_, ok := matchAny(fs.denied, rel, false)
	return ok
}

// entryReadable is readable for the walk entry rel, not a symlink.
func (fs *FS) entryReadable(rel string) bool {
	return !fs.entryDenied(rel) && fs.allows(rel)
}

// hasGitComponent reports whether a component of rel is .git or a name a
// file system may take for it (sandbox.IsDotGit: ".GIT", ".git.", "GIT~1",
// ".git::$INDEX_ALLOCATION", "\u200c.git"): a file or directory there
// redirects or configures git, which runs hooks and fsmonitor commands from
// it.
func hasGitComponent(rel string) bool {
	for c := range strings.SplitSeq(rel, "/") {
		if sandbox.IsDotGit(c) {
			return true
		}
	}
	return false
}

// hidden reports whether rel has a component hiddenName hides; walkers skip
// such entries whatever the patterns say.
func hidden(rel string) bool {
	return rel != "." && (strings.HasPrefix(rel, ".") || strings.Contains(rel, "/.") || hasGitComponent(rel))
}

// hiddenName reports whether walkers skip an entry named name: a dot file
// or directory, or a name a file system may take for .git, which is one.
func hiddenName(name string) bool {
	return strings.HasPrefix(name, ".") || sandbox.IsDotGit(name)
}

// relToCwd spells rel relative to the working directory, with ".." where it
// lies outside it, the way walkers print paths: a name that could mislead is
// shown escaped (internal/sandbox/names.go).
func (fs *FS) relToCwd(rel string) string { return sandbox.DisplayName(fs.cwdRelative(rel)) }

func (fs *FS) cwdRelative(rel string) string {
	if fs.cwd == "." {
		return rel
	}
	if rel == fs.cwd {
		return "."
	}
	if strings.HasPrefix(rel, fs.cwd) && rel[len(fs.cwd)] == '/' {
		return rel[len(fs.cwd)+1:]
	}
	// Find the deepest common directory, then climb from cwd to it.
	common := 0 // number of shared leading components
	rest := rel
	if rel == "." {
		rest = ""
	}
	for _, c := range fs.cwdParts {
		next, ok := strings.CutPrefix(rest, c)
		if !ok || (next != "" && next[0] != '/') {
			break
		}
		common++
		rest = strings.TrimPrefix(next, "/")
	}
	var b strings.Builder
	for range len(fs.cwdParts) - common {
		if b.Len() > 0 {
			b.WriteByte('/')
		}
		b.WriteString("..")
	}
	if rest != "" {
		b.WriteByte('/')
		b.WriteString(rest)
	}
	return b.String()
}

// base fills the fields every event carries.
func (fs *FS) base(ctx context.Context, rel string) EventBase {
	call, _ := capabilities.CallFrom(ctx)
	return EventBase{
		Path:         rel,
		RootDir:      fs.rootDir,
		CapabilityID: CapabilityID,
		ToolCallID:   call.ID,
		ToolName:     call.Tool,
	}
}

// emit sends ev to the run's listener, if any. A listener's error is fatal.
func (fs *FS) emit(ctx context.Context, ev capabilities.Event) error {
	if err := capabilities.Emit(ctx, ev); err != nil {
		return fmt.Errorf("%s listener: %w", ev.Kind(), err)
	}
	return nil
}

// splitAbs splits an absolute path into its components ("/" gives none).
func splitAbs(p string) []string {
	p = filepath.ToSlash(filepath.Clean(p))
	if vol := filepath.VolumeName(p); vol != "" {
		p = p[len(vol):]
	}
	p = strings.Trim(p, "/")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}
