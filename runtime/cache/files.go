package cache

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/agentspec/agentspec/internal/glob"
	"github.com/agentspec/agentspec/internal/sandbox"
)

// HashFiles hashes the content of the files under root that match any of
// globs, the way PlanAI's hash_files does, and returns the hex digest and the
// matched paths in the order they were hashed.
//
// The matched set is the union over globs of the regular files under root,
// named by their slash-separated path relative to root and de-duplicated on
// it. The digest is the SHA-256 over, for each path in sorted order, the path,
// a NUL byte, the SHA-256 of the file's bytes and a NUL byte. A digest of
// fixed length stands for the bytes, not the bytes themselves, since these
// may hold NUL bytes too: a file whose content ended in NUL, another path,
// NUL and other bytes was hashed as that file and one more. No glob, or no
// match, gives "" and no error, and so does a root that does not exist yet.
//
// Globs have doublestar semantics (internal/glob's doublestar dialect,
// github.com/bmatcuk/doublestar/v4): "*"
// stays within one directory, "**" spans any number of them, {a,b} and [ab]
// work. They are matched against root-relative slash paths, so "./x" is "x";
// an empty glob, an absolute one or one with a ".." component is an error.
// Hidden files and directories are included (as in PlanAI, "*.md" matches
// ".draft.md", and "**" walks into ".git"), so narrow the globs when the
// workspace holds a repository.
//
// Every read goes through internal/sandbox, beneath a descriptor held on
// root's real path, so nothing outside root is ever read.
// A symlink is followed when it resolves inside root and ignored when it
// points outside (changing the outside target leaves the digest unchanged),
// dangles or loops; an absolute symlink counts as inside when its target is
// spelled under root's real path. Walks do not descend into symlinked
// directories, so links cannot make a walk loop. A matched file or a walked
// directory that cannot be read is an error: the digest would not cover it.
func HashFiles(ctx context.Context, root string, globs []string) (digest string, files []string, err error) {
	patterns, err := cleanGlobs(globs)
	if err != nil || len(patterns) == 0 {
		return "", nil, err
	}
	_, t, err := openWorkspace(root)
	if err != nil {
		return "", nil, fmt.Errorf("hash input files: %w", err)
	}
	defer t.close()
	return hashFiles(ctx, t, patterns)
}

// hashFiles is HashFiles for the workspace t (nil when there is none) and
// patterns that are clean.
func hashFiles(ctx context.Context, t *tree, patterns []string) (digest string, files []string, err error) {
	if len(patterns) == 0 || t == nil {
		return "", nil, nil
	}
	found, err := t.match(ctx, patterns)
	if err != nil {
		return "", nil, fmt.Errorf("hash input files: %w", err)
	}
	if len(found) == 0 {
		return "", nil, nil
	}
	files = make([]string, 0, len(found))
	for p := range found {
		files = append(files, p)
	}
	slices.Sort(files)

	h, content := sha256.New(), sha256.New()
	var sum [sha256.Size]byte
	buf := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(buf)
	r := &fileReader{tree: t, buf: *buf}
	defer r.close()
	for _, p := range files {
		if err := ctx.Err(); err != nil {
			return "", nil, err
		}
		io.WriteString(h, p)
		h.Write([]byte{0})
		content.Reset()
		if err := r.copy(content, found[p]); err != nil {
			return "", nil, fmt.Errorf("hash input files: %s: %w", p, err)
		}
		h.Write(content.Sum(sum[:0]))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)), files, nil
}

// copyBufs hold the buffers files are hashed through: a batch computes two
// keys per job, and a fresh buffer each time was most of what a key
// allocated. Measured with BenchmarkBatch1000/cache=true, 8 interleaved runs
// against a build without the pool: without it a batch of cache hits took
// 1.22x as long (the median of the runs' ratios, which spread from 0.97 to
// 1.79: the batch has no anchor to steady it) and allocated 4.2x the bytes.
var copyBufs = sync.Pool{New: func() any {
	b := make([]byte, 32<<10)
	return &b
}}

// cleanGlobs checks globs and returns them cleaned, sorted and de-duplicated,
// since neither their order nor repetition changes what they match.
func cleanGlobs(globs []string) ([]string, error) {
	out := make([]string, 0, len(globs))
	for _, g := range globs {
		if g == "" {
			return nil, errors.New("input glob is empty")
		}
		if strings.HasPrefix(g, "/") || filepath.IsAbs(g) {
			return nil, fmt.Errorf("input glob %q must be relative to the workspace", g)
		}
		c := path.Clean(g)
		if slices.Contains(strings.Split(c, "/"), "..") {
			return nil, fmt.Errorf("input glob %q must not contain '..'", g)
		}
		if !glob.ValidDoublestar(c) {
			return nil, fmt.Errorf("input glob %q is not a valid pattern", g)
		}
		out = append(out, c)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// A tree reads a workspace through internal/sandbox: a descriptor held on
// its real path, every lookup beneath it without following a symlink, and the
// symlinks it does follow resolved by a strict sandbox.Resolver, which never
// looks outside the root.
type tree struct {
	dir *sandbox.Dir
	rv  *sandbox.Resolver
	// own is the canonical path of the directory of the cache the key is
	// for, when the workspace holds it; "" when it does not.
	own string
	// excluded are the canonical paths of KeyInput.Exclude the workspace
	// holds: neither they nor anything below them is matched.
	excluded []string
}

// ownedWithin is the canonical path of the cache directory own (a real
// path, "" for none) within the workspace whose real path is root, "." for
// root itself, or "" when the workspace does not hold it.
func ownedWithin(root, own string) string {
	if own == "" {
		return ""
	}
	rel, err := filepath.Rel(root, own)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return ""
	}
	return filepath.ToSlash(rel)
}

// isOwn reports whether the canonical path rel is the cache's own (its
// marker, its entries directory or anything in it; nothing else of the
// cache's directory is) or excluded.
func (t *tree) isOwn(rel string) bool {
	for _, x := range t.excluded {
		if rel == x || strings.HasPrefix(rel, x+"/") {
			return true
		}
	}
	if t.own == "" {
		return false
	}
	entries := sandbox.Join(t.own, entriesDir)
	return rel == sandbox.Join(t.own, markerName) || rel == entries || strings.HasPrefix(rel, entries+"/")
}

func openTree(root string) (*tree, error) {
	_, t, err := openWorkspace(root)
	if err == nil && t == nil {
		err = fs.ErrNotExist
	}
	return t, err
}

// openReal is openTree for a root that is a real path already.
func openReal(real string) (*tree, error) {
	d, err := sandbox.OpenDir(real)
	if err != nil {
		return nil, err
	}
	return &tree{dir: d, rv: sandbox.NewStrictResolver(d, real)}, nil
}

// openWorkspace returns the real path of the workspace dir (see realPath) and
// the workspace opened as a tree, nil when it does not exist. Where the
// kernel names an open directory (sandbox.OpenReal), the directory is opened
// first and its real path read back: an open and a readlink whatever its
// depth, where realPath stats every component before the open.
func openWorkspace(dir string) (real string, t *tree, err error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", nil, err
	}
	if d, real, ok := sandbox.OpenReal(abs); ok {
		return real, &tree{dir: d, rv: sandbox.NewStrictResolver(d, real)}, nil
	}
	if real, err = realPath(abs); err != nil {
		return "", nil, err
	}
	t, err = openReal(real)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return real, nil, nil
	case err != nil:
		return "", nil, err
	}
	return real, t, nil
}

// close releases the tree's descriptor; a nil tree has none.
func (t *tree) close() {
	if t != nil {
		t.dir.Close()
	}
}

// match walks the workspace for the regular files that match patterns (clean
// and valid) and maps each file's path to the canonical path (symlinks
// resolved) its content is read from.
func (t *tree) match(ctx context.Context, patterns []string) (map[string]string, error) {
	found := map[string]string{}
	var bases []string
	for _, p := range patterns {
		if isLiteral(p) {
			// No need to walk for a plain path.
			if target, ok := t.regular(p); ok && !t.isOwn(target) {
				found[p] = target
			}
			continue
		}
		base, _ := glob.SplitDoublestar(p)
		bases = append(bases, base)
	}
	for _, base := range outermost(bases) {
		if err := t.walkBase(ctx, base, patterns, found); err != nil {
			return nil, err
		}
	}
	return found, nil
}

// walkBase adds the files under base that match patterns to found. The base
// is a path the globs spell, so it is looked up as a literal path is,
// through symlinks inside the root; below it the walk descends into no
// symlink, so links cannot make it loop.
func (t *tree) walkBase(ctx context.Context, base string, patterns []string, found map[string]string) error {
	canon, err := t.rv.Resolve(nil, base)
	if err != nil {
		if gone(err) {
			return nil // nothing under a base that is not there
		}
		return &fs.PathError{Op: "open", Path: base, Err: err}
	}
	if t.isOwn(canon) {
		return nil
	}
	info, err := t.dir.Lstat(canon)
	switch {
	case err != nil:
		if gone(err) {
			return nil
		}
		return err
	case info.Mode().IsRegular():
		if matchAny(patterns, base) {
			found[base] = canon
		}
		return nil
	case !info.IsDir():
		return nil
	}
	c, err := t.dir.Walk(canon)
	if err != nil {
		return &fs.PathError{Op: "open", Path: base, Err: err}
	}
	defer c.Close()
	return t.walk(ctx, &c, base, canon, patterns, found)
}

// walk adds the matching files below the cursor, which is at the directory
// spelled rel and found at canon.
func (t *tree) walk(ctx context.Context, c *sandbox.Cursor, rel, canon string, patterns []string, found map[string]string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	entries, err := c.ReadDir()
	if err != nil {
		return &fs.PathError{Op: "readdir", Path: rel, Err: err}
	}
	for _, e := range entries {
		p, target := sandbox.Join(rel, e.Name), sandbox.Join(canon, e.Name)
		switch {
		case t.isOwn(target):
		case e.Type.IsDir():
			if err := c.Down(e.Name); err != nil {
				return &fs.PathError{Op: "open", Path: p, Err: err}
			}
			err := t.walk(ctx, c, p, target, patterns, found)
			c.Up()
			if err != nil {
				return err
			}
		case !matchAny(patterns, p):
		case e.Type.IsRegular():
			found[p] = target
		case e.Type&fs.ModeSymlink != 0:
			if target, ok := t.regular(target); ok && !t.isOwn(target) {
				found[p] = target
			}
		}
	}
	return nil
}

// gone reports whether a lookup failed because the path leads nowhere
// inside the root: missing, through a file, out of the root or in a loop.
func gone(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) ||
		errors.Is(err, sandbox.ErrOutside) || errors.Is(err, sandbox.ErrSymlinkLoop)
}

// regular reports whether rel is, or links inside the root to, a regular
// file, and returns the canonical path to read it from.
func (t *tree) regular(rel string) (target string, ok bool) {
	target, found, err := t.rv.ResolveFound(nil, rel)
	if err != nil {
		return "", false
	}
	if found == sandbox.FoundFile {
		return target, true
	}
	info, err := t.dir.Lstat(target)
	if err != nil || !info.Mode().IsRegular() {
		return "", false
	}
	return target, true
}

// A fileReader copies files out of a tree. Paths read in sorted order come
// grouped by directory, so it keeps a cursor at the last file's directory:
// opening from the root walks to the directory again for every file.
type fileReader struct {
	*tree
	dir  string         // the canonical directory cur is at
	cur  sandbox.Cursor // valid while held
	held bool
	buf  []byte
}

func (r *fileReader) copy(w io.Writer, rel string) error {
	f, err := r.open(rel)
	if err != nil {
		return err
	}
	defer f.Close()
	// Hide a WriterTo (os.File's, where there is no openat), whose fallback
	// allocates a buffer per file.
	_, err = io.CopyBuffer(w, struct{ io.Reader }{f}, r.buf)
	return err
}

func (r *fileReader) open(rel string) (*sandbox.FileReader, error) {
	dir, name := sandbox.Split(rel)
	if !r.held || dir != r.dir {
		r.close()
		c, err := r.tree.dir.Walk(dir)
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: rel, Err: err}
		}
		r.dir, r.cur, r.held = dir, c, true
	}
	// Every path read was found a regular file, by an lstat or by its
	// directory's listing: the type is checked again on the descriptor.
	return r.cur.OpenFoundReader(name)
}

func (r *fileReader) close() {
	if r.held {
		r.cur.Close()
		r.held = false
	}
}

// missing returns those of files (workspace-relative paths) that are not in
// the workspace as a file or a directory. A path that is empty, absolute,
// holds a ".." component or resolves outside the root counts as missing.
func (t *tree) missing(files []string) []string {
	var out []string
	for _, f := range files {
		p := filepath.ToSlash(f)
		if p == "" || strings.HasPrefix(p, "/") || filepath.IsAbs(f) ||
			slices.Contains(strings.Split(p, "/"), "..") {
			out = append(out, f)
			continue
		}
		if _, err := t.rv.Resolve(nil, path.Clean(p)); err != nil {
			out = append(out, f)
		}
	}
	return out
}

// missingOutputs is tree.missing for the workspace at root; with no workspace
// at all, every file is missing.
func missingOutputs(root string, files []string) []string {
	if len(files) == 0 {
		return nil
	}
	t, err := openTree(root)
	if err != nil {
		return slices.Clone(files)
	}
	defer t.close()
	return t.missing(files)
}

// isLiteral reports whether a pattern has no meta characters (nor escapes)
// and so names one path.
func isLiteral(p string) bool { return !strings.ContainsAny(p, `*?[{\`) }

func matchAny(patterns []string, rel string) bool {
	for _, p := range patterns {
		if glob.MatchDoublestar(p, rel) {
			return true
		}
	}
	return false
}

// outermost drops the bases that lie under another base, so no directory is
// walked twice.
func outermost(bases []string) []string {
	if slices.Contains(bases, ".") {
		return []string{"."}
	}
	slices.Sort(bases)
	bases = slices.Compact(bases)
	var out []string
	for _, b := range bases {
		covered := slices.ContainsFunc(out, func(o string) bool {
			return strings.HasPrefix(b, o+"/")
		})
		if !covered {
			out = append(out, b)
		}
	}
	return out
}

// realPath is the absolute path of dir with every symlink resolved. A tail
// that does not exist yet is kept as written, so a workspace the run will
// create has a stable real path before and after the run.
func realPath(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	p, rest := abs, ""
	for {
		r, err := filepath.EvalSymlinks(p)
		if err == nil {
			return filepath.Join(r, rest), nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		parent := filepath.Dir(p)
		if parent == p {
			return abs, nil
		}
		rest = filepath.Join(filepath.Base(p), rest)
		p = parent
	}
}
