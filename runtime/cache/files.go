package cache

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentspec/agentspec/internal/glob"
)

// HashFiles hashes the content of the files under root that match any of
// globs, the way PlanAI's hash_files does, and returns the hex digest and the
// matched paths in the order they were hashed.
//
// The matched set is the union over globs of the regular files under root,
// named by their slash-separated path relative to root and de-duplicated on
// it. The digest is the SHA-256 over, for each path in sorted order, the path,
// a NUL byte, the file's bytes and a NUL byte. No glob, or no match, gives ""
// and no error, and so does a root that does not exist yet.
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
// Every read goes through an os.Root, so nothing outside root is ever read.
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
	j, err := openJail(root)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil, nil
	}
	if err != nil {
		return "", nil, fmt.Errorf("hash input files: %w", err)
	}
	defer j.close()

	found, err := j.match(ctx, patterns)
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

	h := sha256.New()
	r := &fileReader{jail: j, buf: make([]byte, 32<<10)}
	defer r.close()
	for _, p := range files {
		if err := ctx.Err(); err != nil {
			return "", nil, err
		}
		io.WriteString(h, p)
		h.Write([]byte{0})
		if err := r.copy(h, found[p]); err != nil {
			return "", nil, fmt.Errorf("hash input files: %s: %w", p, err)
		}
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)), files, nil
}

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

// A jail reads a workspace through an os.Root.
type jail struct {
	root *os.Root
	real string // the root's real path
}

func openJail(dir string) (*jail, error) {
	real, err := realPath(dir)
	if err != nil {
		return nil, err
	}
	r, err := os.OpenRoot(real)
	if err != nil {
		return nil, err
	}
	return &jail{root: r, real: real}, nil
}

func (j *jail) close() { j.root.Close() }

// match walks the workspace for the regular files that match patterns (clean
// and valid) and maps each file's path to the path its content is read from:
// the same path, or the target of a symlink.
func (j *jail) match(ctx context.Context, patterns []string) (map[string]string, error) {
	found := map[string]string{}
	var bases []string
	for _, p := range patterns {
		if isLiteral(p) {
			// No need to walk for a plain path.
			if target, ok := j.regular(p); ok {
				found[p] = target
			}
			continue
		}
		base, _ := glob.SplitDoublestar(p)
		bases = append(bases, base)
	}
	fsys := j.root.FS()
	for _, base := range outermost(bases) {
		err := fs.WalkDir(fsys, base, func(rel string, d fs.DirEntry, err error) error {
			if err != nil {
				if rel == base && errors.Is(err, fs.ErrNotExist) {
					return fs.SkipDir // nothing under a base that is not there
				}
				return err
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			if d.IsDir() || !matchAny(patterns, rel) {
				return nil
			}
			switch t := d.Type(); {
			case t.IsRegular():
				found[rel] = rel
			case t&fs.ModeSymlink != 0:
				if target, ok := j.regular(rel); ok {
					found[rel] = target
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return found, nil
}

// regular reports whether rel is, or links inside the root to, a regular
// file, and returns the path to read it from.
func (j *jail) regular(rel string) (target string, ok bool) {
	info, target, err := j.stat(rel)
	if err != nil || !info.Mode().IsRegular() {
		return "", false
	}
	return target, true
}

// stat is os.Root.Stat, except that a symlink with an absolute target inside
// the root is followed too (os.Root refuses every absolute link). It returns
// the path that was finally looked up.
func (j *jail) stat(rel string) (fs.FileInfo, string, error) {
	info, err := j.root.Stat(rel)
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		return info, rel, err
	}
	link, lerr := j.root.Readlink(rel)
	if lerr != nil || !filepath.IsAbs(link) {
		return nil, "", err
	}
	inside, ok := j.inside(link)
	if !ok {
		return nil, "", err
	}
	info, err = j.root.Stat(inside)
	return info, inside, err
}

// inside returns abs relative to the root's real path, if it lies within it.
// The test is lexical and on whole components, so nothing outside the root is
// looked at, not even to resolve a symlink; the lookup that follows goes
// through the os.Root, which never leaves the root whatever the path holds.
// An absolute link that spells the root through another symlink is therefore
// not followed: the digest must not depend on how the root was named.
func (j *jail) inside(abs string) (string, bool) {
	rel, err := filepath.Rel(j.real, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	return filepath.ToSlash(rel), true
}

// A fileReader copies files out of a jail. Paths read in sorted order come
// grouped by directory, so it keeps the last file's directory open as an
// os.Root of its own: opening through the jail's root walks every component
// again, one openat each, for every file.
type fileReader struct {
	*jail
	dir string   // the directory sub holds
	sub *os.Root // nil until the first file
	buf []byte
}

func (r *fileReader) copy(w io.Writer, rel string) error {
	f, err := r.open(rel)
	if err != nil {
		return err
	}
	defer f.Close()
	// Hide os.File's WriterTo, whose fallback allocates a buffer per file.
	_, err = io.CopyBuffer(w, struct{ io.Reader }{f}, r.buf)
	return err
}

func (r *fileReader) open(rel string) (*os.File, error) {
	dir, name := path.Dir(rel), path.Base(rel)
	if r.sub == nil || dir != r.dir {
		r.close()
		sub, err := r.root.OpenRoot(dir)
		if err != nil {
			return r.root.Open(rel)
		}
		r.dir, r.sub = dir, sub
	}
	if f, err := r.sub.Open(name); err == nil {
		return f, nil
	}
	// The directory's root is stricter than the jail's (a link to a sibling
	// directory leaves it), so a failure is only final from the jail's root.
	return r.root.Open(rel)
}

func (r *fileReader) close() {
	if r.sub != nil {
		r.sub.Close()
		r.sub = nil
	}
}

// missing returns those of files (workspace-relative paths) that are not in
// the workspace as a file or a directory. A path that is empty, absolute,
// holds a ".." component or resolves outside the root counts as missing.
func (j *jail) missing(files []string) []string {
	var out []string
	for _, f := range files {
		p := filepath.ToSlash(f)
		if p == "" || strings.HasPrefix(p, "/") || filepath.IsAbs(f) ||
			slices.Contains(strings.Split(p, "/"), "..") {
			out = append(out, f)
			continue
		}
		if _, _, err := j.stat(path.Clean(p)); err != nil {
			out = append(out, f)
		}
	}
	return out
}

// missingOutputs is jail.missing for the workspace at root; with no workspace
// at all, every file is missing.
func missingOutputs(root string, files []string) []string {
	if len(files) == 0 {
		return nil
	}
	j, err := openJail(root)
	if err != nil {
		return slices.Clone(files)
	}
	defer j.close()
	return j.missing(files)
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
