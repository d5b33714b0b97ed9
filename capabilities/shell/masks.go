package shell

import (
	"errors"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/user"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/internal/githooks"
	"github.com/agentspec/agentspec/internal/sandbox"
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
// must read as empty, and the .git directories and files, hooks
// directories and configuration files git reads, that it must not change;
// and the home's credentials that it found in the workspace (stores).
type hidden struct {
	masks, readOnly []string
	stores          map[fileID]bool
}

// fileID names a file whatever its path: its device and inode number.
type fileID struct{ dev, ino uint64 }

// findHidden walks root (absolute, real) and collects every file or
// directory that access says is secret or denied, or that is one of
// stores, and, unless gitWrites,
// every .git directory or file, at any depth, and the hooks directory and
// configuration files of each repository there when they lie in the
// workspace (see hooksAndConfigs); then the credentials in each of homes. A
// directory masked or made read-only is not entered: the mount covers
// what is below it.
//
// stores are the credentials of the homes that earlier walks found in the
// workspace, where a symlink of the home led (~/.aws -> W/dot/aws), known
// by their identity: a command may move them, or a directory above them,
// within the workspace (the mask moves with them while it runs), and the
// link then leads nowhere, but they are masked wherever they now are.
// Those this walk finds are returned in h.stores, stores among them. A file
// replaced since (a new inode) is a new file, no longer a store, unless
// the link leads to it.
//
// The walk fails closed: a directory below root that it cannot read (its
// permissions, or a path longer than PATH_MAX, where a command may have
// moved it) may hold secrets or a .git, so it is masked whole. A root it
// cannot read is an error: nothing could be hidden.
func findHidden(root string, homes []string, stores map[fileID]bool, access func(path string) capabilities.PathAccess, gitWrites bool) (hidden, error) {
	h := hidden{stores: map[fileID]bool{}}
	// The home's credentials, known before the walk, so that it finds each
	// at every name it has in the workspace (a hard link) at once.
	stores = homeStores(root, homes, stores)
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
		if len(stores) > 0 {
			if id, ok := entryID(d); ok && stores[id] {
				h.stores[id] = true
				h.masks = append(h.masks, path)
				return skip(d)
			}
		}
		a := access(path)
		if !a.Secret && !a.Denied {
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 {
			path = maskedAt(path, root)
		}
		if !slices.Contains(h.masks, path) {
			h.masks = append(h.masks, path)
		}
		return skip(d)
	})
	if err != nil {
		return hidden{}, err
	}
	if !gitWrites {
		h.readOnly = append(h.readOnly, hooksAndConfigs(root, worktrees, h.readOnly)...)
	}
	for _, home := range homes {
		for _, rel := range HomeCredentials {
			p := filepath.Join(home, rel)
			if _, err := os.Lstat(p); err == nil {
				p = maskedAt(p, root)
				if fi, err := os.Lstat(p); err == nil && strictlyBelow(root, p) {
					if id, ok := idOf(fi); ok {
						h.stores[id] = true
					}
				}
				if !slices.Contains(h.masks, p) {
					h.masks = append(h.masks, p)
				}
			}
		}
	}
	return h, nil
}

// homeStores is stores and the home's credentials that may be found in
// root under a name of their own: one that a symlink leads to there, and
// a file with more than one link, whose other names may be there.
func homeStores(root string, homes []string, stores map[fileID]bool) map[fileID]bool {
	out := maps.Clone(stores)
	for _, home := range homes {
		for _, rel := range HomeCredentials {
			p := maskedAt(filepath.Join(home, rel), root)
			fi, err := os.Lstat(p)
			if err != nil || !strictlyBelow(root, p) && !(fi.Mode().IsRegular() && linkCount(fi) > 1) {
				continue
			}
			if id, ok := idOf(fi); ok {
				if out == nil {
					out = map[fileID]bool{}
				}
				out[id] = true
			}
		}
	}
	return out
}

// entryID is the identity of the file d names, not following a symlink.
func entryID(d fs.DirEntry) (fileID, bool) {
	fi, err := d.Info()
	if err != nil {
		return fileID{}, false
	}
	return idOf(fi)
}

// maskedAt is where the secret at path is masked: where it leads when it
// is a symlink, the secret being what it leads to (.env ->
// /run/secrets/app.env), but never over the workspace root or a directory
// that holds it (key.pem -> ., ~/.aws -> the workspace): then, as when it
// leads nowhere, on the link itself, which reads as empty and leads
// nowhere.
func maskedAt(path, root string) string {
	real, err := filepath.EvalSymlinks(path)
	if err != nil || real == root || strictlyBelow(real, root) {
		return path
	}
	return real
}

// credentialHomes are the home directories whose credentials commands read
// as empty: $HOME, and this user's home in the system's user database when
// it is another, since a process started without HOME or with another one
// (a service, `env -i`, a CI job) still has its credentials there.
func credentialHomes() []string {
	var homes []string
	if home, err := os.UserHomeDir(); err == nil {
		homes = append(homes, filepath.Clean(home))
	}
	if u, err := user.Current(); err == nil && u.HomeDir != "" && filepath.IsAbs(u.HomeDir) {
		if home := filepath.Clean(u.HomeDir); !slices.Contains(homes, home) {
			homes = append(homes, home)
		}
	}
	return homes
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

// hooksAndConfigs returns the hooks directories strictly below root that
// git runs hooks from for the repositories whose work trees are worktrees,
// and for the one around root (the one it lies in, or the one around its
// own work tree when root is one, as FileSystem asks), when core.hooksPath
// (in any of git's configuration files, includes followed) names one
// there: husky's .husky/_, a .githooks. Those lie outside any .git, so
// without this a command could plant a hook that the user's next commit
// runs unconfined. It returns as well the configuration files git reads
// for those repositories that lie strictly below root (see
// makeMissingConfigs): a command that wrote core.hooksPath in one would
// choose the hooks directory itself. git itself answers (githooks.Repo),
// as the user's git will read the configuration; without git there is
// nothing to ask, and nothing that would run a hook. A hooks directory
// that does not exist is made, empty, so that it can be made read-only:
// git runs no hooks from an empty one, as from none. A directory or file
// within one of readOnly (a .git's own hooks and config) is covered
// already.
func hooksAndConfigs(root string, worktrees, readOnly []string) []string {
	// git in root's parent answers for the repository root lies in, or
	// for the one around root's own work tree.
	if above := filepath.Dir(root); githooks.InRepository(above) {
		worktrees = append(worktrees, above)
	}
	if len(worktrees) == 0 {
		return nil
	}
	var paths []string
	add := func(path string) {
		real, err := filepath.EvalSymlinks(path)
		if err != nil || !strictlyBelow(root, real) || slices.Contains(paths, real) ||
			slices.ContainsFunc(readOnly, func(ro string) bool { return real == ro || strictlyBelow(ro, real) }) {
			return
		}
		paths = append(paths, real)
	}
	for _, wt := range worktrees {
		dir, configs := githooks.Repo(wt)
		if dir != "" {
			if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) && madeBelow(root, dir) {
				os.MkdirAll(dir, 0o755)
			}
			add(dir)
		}
		makeMissingConfigs(root, configs)
		for _, f := range configs {
			add(f)
		}
	}
	return paths
}

// makeMissingConfigs makes, empty, each of configs (the configuration files
// git reads for a repository, githooks.Repo) that is missing and would lie
// in root outside any .git, so that it can be made read-only: git reads
// an empty file as no configuration, as it ignores an include whose file
// is missing, whose path a command could otherwise fill with a
// core.hooksPath. The file is made through the workspace's sandbox, so
// that a symlink on its way cannot take it out of the workspace. Those made show in git status
// as untracked files (docs/shell.md says so).
func makeMissingConfigs(root string, configs []string) {
	var d *sandbox.Dir
	defer func() {
		if d != nil {
			d.Close()
		}
	}()
	for _, f := range configs {
		if _, err := os.Stat(f); !errors.Is(err, fs.ErrNotExist) {
			continue
		}
		rel, err := filepath.Rel(root, realAsFarAsItExists(f))
		if err != nil || !filepath.IsLocal(rel) || slices.ContainsFunc(strings.Split(rel, string(filepath.Separator)),
			func(c string) bool { return strings.EqualFold(c, ".git") }) {
			continue
		}
		if d == nil {
			if d, err = sandbox.OpenDir(root); err != nil {
				return
			}
		}
		rel = filepath.ToSlash(rel)
		if dir := path.Dir(rel); dir != "." {
			if _, err := d.MkdirAll(dir, 0o755); err != nil {
				continue
			}
		}
		if file, err := d.OpenFile(rel, os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
			file.Close()
		}
	}
}

// realAsFarAsItExists is path with the symlinks of its longest part that
// exists resolved, the rest kept as it is.
func realAsFarAsItExists(path string) string {
	rest := ""
	for p := path; ; p = filepath.Dir(p) {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(real, rest)
		} else if !errors.Is(err, fs.ErrNotExist) || filepath.Dir(p) == p {
			return path
		}
		rest = filepath.Join(filepath.Base(p), rest)
	}
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
