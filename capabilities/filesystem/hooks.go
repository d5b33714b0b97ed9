package filesystem

import (
	"errors"
	"io/fs"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"github.com/agentspec/agentspec/internal/githooks"
)

// hookDirs remembers where git runs each repository's hooks from, for the
// repositories the root holds or lies in, as far as a change is concerned:
// a hooks directory that core.hooksPath puts in the root outside any .git
// (husky's .husky/_, a .githooks) is read-only to the tools, as .git is
// (decision D11), or a model could write a hook that the user's next
// commit runs. The answer is git's, asked once per repository per FS: its
// configuration lives in .git, which no tool changes.
type hookDirs struct {
	mu sync.Mutex
	// byRepo maps a work tree's rel ("" for a repository above the root)
	// to its hooks directory's rel, or "" for none to protect.
	byRepo map[string]string
	// above says whether a directory above the root holds a .git: the
	// root lies in a repository whose hooks may be inside it.
	aboveOnce sync.Once
	above     bool
}

// hooksProtect returns the rel of the hooks directory that holds rel, or is
// rel, in the repository rel lies in; "" when there is none.
func (fs *FS) hooksProtect(rel string) string {
	wt, ok := fs.workTreeOf(rel)
	if !ok {
		return ""
	}
	fs.hooks.mu.Lock()
	h, known := fs.hooks.byRepo[wt]
	if !known {
		h = fs.hooksRel(wt)
		if fs.hooks.byRepo == nil {
			fs.hooks.byRepo = map[string]string{}
		}
		fs.hooks.byRepo[wt] = h
	}
	fs.hooks.mu.Unlock()
	if h == "" || !(strings.EqualFold(rel, h) || len(rel) > len(h) && rel[len(h)] == '/' && strings.EqualFold(rel[:len(h)], h)) {
		return ""
	}
	return h
}

// workTreeOf returns the nearest directory at or above rel's directory,
// within the root, that holds a .git; "" when none does but the root lies
// in a repository; false when rel is in no repository. The directories are
// looked at anew each time: a repository may be made while the tools run.
func (fs *FS) workTreeOf(rel string) (string, bool) {
	for d := path.Dir(rel); ; d = path.Dir(d) {
		if _, err := fs.dir.Lstat(path.Join(d, ".git")); err == nil {
			return d, true
		}
		if d == "." || d == "/" {
			break
		}
	}
	fs.hooks.aboveOnce.Do(func() { fs.hooks.above = githooks.InRepository(filepath.Dir(fs.rootDir)) })
	return "", fs.hooks.above
}

// hooksRel asks git where the repository whose work tree is wt runs hooks
// from, and returns that directory's rel when it lies strictly inside the
// root and outside any .git (which D11 covers); "" otherwise.
func (fs *FS) hooksRel(wt string) string {
	dir := fs.rootDir
	if wt != "" {
		dir = filepath.Join(fs.rootDir, filepath.FromSlash(wt))
	}
	hooks := githooks.Dir(dir)
	if hooks == "" {
		return ""
	}
	rel, err := filepath.Rel(fs.rootDir, realAsFarAsItExists(hooks))
	if err != nil {
		return ""
	}
	rel = filepath.ToSlash(rel)
	if rel == "." || rel == ".." || strings.HasPrefix(rel, "../") || hasGitComponent(rel) {
		return ""
	}
	return rel
}

// realAsFarAsItExists resolves the symlinks of the longest part of p that
// exists and joins the rest to it: the real path p would have once made.
func realAsFarAsItExists(p string) string {
	rest := ""
	for q := p; ; q = filepath.Dir(q) {
		real, err := filepath.EvalSymlinks(q)
		if err == nil {
			return filepath.Join(real, rest)
		}
		if !errors.Is(err, fs.ErrNotExist) || filepath.Dir(q) == q {
			return p
		}
		rest = filepath.Join(filepath.Base(q), rest)
	}
}
