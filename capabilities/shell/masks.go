package shell

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentspec/agentspec/capabilities"
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
// every .git directory or file, at any depth; then the credentials in
// home. A directory masked or made read-only is not entered: the mount
// covers what is below it.
//
// The walk fails closed: a directory below root that it cannot read (its
// permissions, or a path longer than PATH_MAX, where a command may have
// moved it) may hold secrets or a .git, so it is masked whole. A root it
// cannot read is an error: nothing could be hidden.
func findHidden(root, home string, access func(path string) capabilities.PathAccess, gitWrites bool) (hidden, error) {
	var h hidden
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
	rel, err := filepath.Rel(root, real)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, "../") {
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
