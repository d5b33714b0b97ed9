package shell

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/internal/githooks"
)

// HomeCredentials are the paths below the user's home directory that a
// command reads as empty (D13.2), whatever the workspace is: D13.2's, the
// ones FileSystem's defaults keep secret anywhere (.pgpass, .vault-token),
// and the other stores of the same tools' kind (git's XDG one, Azure's,
// Cargo's, RubyGems', Terraform's, Podman's).
var HomeCredentials = []string{
	".ssh", ".aws", ".gnupg", ".docker", ".kube", ".config/gh", ".config/gcloud",
	".netrc", ".pypirc", ".npmrc", ".git-credentials",
	".pgpass", ".vault-token", ".config/git/credentials", ".azure",
	".cargo/credentials", ".cargo/credentials.toml", ".gem/credentials",
	".terraform.d/credentials.tfrc.json", ".config/containers/auth.json",
}

// hidden is what the walk of the workspace found: the paths a command
// must read as empty, and the .git directories and files it must not
// change.
type hidden struct {
	masks, readOnly []string
}

// findHidden walks root (absolute, real) and collects every file or
// directory that access says is secret or denied, and, unless gitWrites,
// every .git directory or file, at any depth, and the hooks directory of
// each repository there when core.hooksPath puts it in the workspace (see
// hooksDirs); then the credentials in home. A directory masked or made read-only is not entered: the mount
// covers what is below it.
//
// The walk fails closed: a directory below root that it cannot read (its
// permissions, or a path longer than PATH_MAX, where a command may have
// moved it) may hold secrets or a .git, so it is masked whole. A root it
// cannot read is an error: nothing could be hidden.
func findHidden(root, home string, access func(path string) capabilities.PathAccess, gitWrites bool) (hidden, error) {
	var h hidden
	var worktrees []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path == root {
				return err
			}
			// Only a directory that cannot be read gets here (d is it).
			h.masks = append(h.masks, path)
			return fs.SkipDir
		}
		if path == root {
			return nil
		}
		if d.Name() == ".git" && !gitWrites {
			h.readOnly = append(h.readOnly, path)
			h.readOnly = append(h.readOnly, reposNamedBy(root, path, d)...)
			worktrees = append(worktrees, filepath.Dir(path))
			return skip(d)
		}
		a := access(path)
		if !a.Secret && !a.Denied {
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 {
			// A mount on a symlink lands on its target: mask that, so the
			// link reads as empty, wherever it leads.
			if real, err := filepath.EvalSymlinks(path); err == nil {
				h.masks = append(h.masks, real)
			}
			return nil
		}
		h.masks = append(h.masks, path)
		return skip(d)
	})
	if err != nil {
		return hidden{}, err
	}
	if !gitWrites {
		h.readOnly = append(h.readOnly, hooksDirs(root, worktrees, h.readOnly)...)
	}
	if home != "" {
		for _, rel := range HomeCredentials {
			p := filepath.Join(home, rel)
			if _, err := os.Lstat(p); err == nil {
				if real, err := filepath.EvalSymlinks(p); err == nil {
					p = real
				}
				h.masks = append(h.masks, p)
			}
		}
	}
	return h, nil
}

// reposNamedBy returns the repositories below root that git uses for the
// .git at path when it is not one itself: the directory a symlink leads
// to, or the one a file names (`gitdir: DIR`, as git init
// --separate-git-dir, submodules and worktrees write), and the common
// directory a worktree's names in its commondir file, which holds its hooks
// and config. Only a directory that holds a HEAD is a repository to git;
// root itself is never one, which would leave commands nothing to write.
func reposNamedBy(root, path string, d fs.DirEntry) []string {
	var dir string
	switch {
	case d.Type()&fs.ModeSymlink != 0:
		dir = path
	case d.Type().IsRegular():
		dir = gitdirIn(filepath.Dir(path), path, "gitdir: ")
	}
	if dir = repoBelow(root, dir); dir == "" {
		return nil
	}
	repos := []string{dir}
	if common := repoBelow(root, gitdirIn(dir, filepath.Join(dir, "commondir"), "")); common != "" {
		repos = append(repos, common)
	}
	return repos
}

// gitdirIn reads the directory the first line of file names after prefix,
// relative to base; "" when it names none.
func gitdirIn(base, file, prefix string) string {
	f, err := os.Open(file)
	if err != nil {
		return ""
	}
	defer f.Close()
	b := make([]byte, 4096)
	n, _ := io.ReadFull(f, b)
	line, _, _ := strings.Cut(string(b[:n]), "\n")
	rest, ok := strings.CutPrefix(strings.TrimRight(line, "\r"), prefix)
	if !ok || strings.TrimSpace(rest) == "" {
		return ""
	}
	rest = strings.TrimSpace(rest)
	if !filepath.IsAbs(rest) {
		rest = filepath.Join(base, rest)
	}
	return rest
}

// repoBelow returns dir with its symlinks resolved when that is a
// directory strictly below root holding a HEAD, else "".
func repoBelow(root, dir string) string {
	if dir == "" {
		return ""
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return ""
	}
	if !strictlyBelow(root, real) {
		return ""
	}
	if fi, err := os.Stat(filepath.Join(real, "HEAD")); err != nil || fi.IsDir() {
		return ""
	}
	return real
}

func skip(d fs.DirEntry) error {
	if d.IsDir() {
		return fs.SkipDir
	}
	return nil
}

// hooksDirs returns the hooks directories strictly below root that git
// runs hooks from for the repositories whose work trees are worktrees, and
// for the one root itself lies in, when core.hooksPath (in any of git's
// configuration files, includes followed) names one there: husky's
// .husky/_, a .githooks. Those lie outside any .git, so without this a
// command could plant a hook that the user's next commit runs unconfined.
// git itself answers (rev-parse --git-path hooks), as the user's git will
// read the configuration; without git there is nothing to ask, and nothing
// that would run a hook. A hooks directory that does not exist is made,
// empty, so that it can be made read-only: git runs no hooks from an empty
// one, as from none. A directory within one of readOnly (a .git's own
// hooks) is covered already.
func hooksDirs(root string, worktrees, readOnly []string) []string {
	if !slices.Contains(worktrees, root) && githooks.InRepository(root) {
		worktrees = append(worktrees, root)
	}
	if len(worktrees) == 0 {
		return nil
	}
	var dirs []string
	for _, wt := range worktrees {
		dir := githooks.Dir(wt)
		if dir == "" {
			continue
		}
		if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) && madeBelow(root, dir) {
			os.MkdirAll(dir, 0o755)
		}
		real, err := filepath.EvalSymlinks(dir)
		if err != nil || !strictlyBelow(root, real) || slices.Contains(dirs, real) ||
			slices.ContainsFunc(readOnly, func(ro string) bool { return real == ro || strictlyBelow(ro, real) }) {
			continue
		}
		dirs = append(dirs, real)
	}
	return dirs
}

// madeBelow reports whether making the directory path would make it
// below root: the nearest of its parents that exists is root or below it,
// its symlinks followed.
func madeBelow(root, path string) bool {
	for dir := filepath.Dir(path); dir != filepath.Dir(dir); dir = filepath.Dir(dir) {
		real, err := filepath.EvalSymlinks(dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		return err == nil && (real == root || strictlyBelow(root, real))
	}
	return false
}

// strictlyBelow reports whether path lies below root, not root itself.
func strictlyBelow(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, "../")
}
