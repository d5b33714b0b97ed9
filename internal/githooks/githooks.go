// Package githooks finds where git runs a repository's hooks from, and
// which files it reads the repository's configuration from, so that the
// tools that let a model change files (FileSystem, Shell) can keep it from
// planting a hook that the user's next git command runs, or the
// configuration that names one. A hooks directory or configuration file
// inside a .git is covered by their .git rules already; this is for the
// ones elsewhere: the directory core.hooksPath names (husky's .husky/_, a
// .githooks, any directory a setup script chose) and the files an
// include.path names (a .gitconfig.local in the work tree).
package githooks

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentspec/agentspec/internal/sandbox"
)

// Repo asks git, in dir, where it runs hooks from and which files it
// reads configuration from, as Dirs does for the repositories of its tree,
// and returns them absolute: hooks as git named it (relative answers taken
// from dir), configs as configFiles finds them (the files it read, and
// every file an include names, whether it exists or its condition holds or
// not), symlinks not resolved and wherever they lie, .git and outside dir
// included; "" and none when there is no git to ask or git cannot say (no
// repository there, or one it refuses). git itself answers, so every
// configuration file it reads counts, includes followed, as it will for
// the user's next commit. safe.directory is lifted for the question
// alone, which only reads configuration: a repository of another owner
// still runs its hooks for that owner.
func Repo(dir string) (hooks string, configs []string) {
	// --show-cdup says where git's relative names of configuration files
	// are taken from: the work tree's top.
	out, ok := gitOutput(dir, "rev-parse", "--git-path", "hooks", "--show-cdup")
	if !ok {
		return "", nil
	}
	hooks, cdup, _ := strings.Cut(out, "\n")
	cdup, _, _ = strings.Cut(cdup, "\n")
	if hooks = strings.TrimRight(hooks, "\r"); hooks != "" && !filepath.IsAbs(hooks) {
		hooks = filepath.Join(dir, hooks)
	}
	return hooks, configFiles(dir, filepath.Join(dir, strings.TrimRight(cdup, "\r")))
}

// gitOutput runs git in dir with args and returns what it printed; false
// when there is no git, or it failed or took over 5 s. safe.directory is
// lifted for the question (see Repo).
func gitOutput(dir string, args ...string) (string, bool) {
	git, err := exec.LookPath("git")
	if err != nil {
		return "", false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, git, append([]string{"-c", "safe.directory=*", "-C", dir}, args...)...)
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		// These would make git answer for another repository than dir's.
		return slices.Contains([]string{"GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_CEILING_DIRECTORIES"}, name)
	})
	out, err := cmd.Output()
	if err != nil {
		return "", false
	}
	return string(out), true
}

// InRepository reports whether dir or a directory above it holds a .git,
// so that git may find a repository whose configuration applies there.
func InRepository(dir string) bool {
	for {
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
			return true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return false
		}
		dir = parent
	}
}

// Dirs answers, for the paths in one directory tree, whether a path lies
// in a hooks directory git runs hooks from, or is a configuration file git
// reads: those of the repository whose work tree holds the path, or of one
// around it, when they lie inside the tree and outside any .git (which the
// tools guard as .git). git is asked once per repository, and the answer
// kept: a repository's configuration lies in its .git, which the tools
// never change, or in the files it includes, which Check names so that
// the tools change none of them either. Which repository holds a path is
// looked at anew each time, since a repository may be made meanwhile. It
// is safe for concurrent use.
type Dirs struct {
	root   string                // the tree, an absolute real path
	exists func(rel string) bool // whether rel, slash-separated, exists in the tree
	mu     sync.Mutex
	// byRepo maps a work tree's rel ("" for a repository above the root,
	// aboveTop for one above a root that is a work tree's top) to what
	// git said of that repository.
	byRepo    map[string]repo
	aboveOnce sync.Once
	above     bool // a directory above the root holds a .git
}

// NewDirs returns the Dirs of the tree at root, an absolute path with its
// symlinks resolved. exists says whether a slash-separated path relative
// to root exists, without following a final symlink; nil looks with
// os.Lstat.
func NewDirs(root string, exists func(rel string) bool) *Dirs {
	if exists == nil {
		exists = func(rel string) bool {
			_, err := os.Lstat(filepath.Join(root, filepath.FromSlash(rel)))
			return err == nil
		}
	}
	return &Dirs{root: root, exists: exists}
}

// repo is what git said of a repository: where it runs hooks from, and
// the configuration files it reads that lie in the tree, outside any .git,
// as rels.
type repo struct {
	hooks   hooksDir
	configs []string
}

// hooksDir is a hooks directory in the tree: its rel, and whether it is also
// a work tree's top or the root (core.hooksPath "."), where only files named
// as git's hooks are hooks: guarding the whole of it would leave nothing to
// change.
type hooksDir struct {
	rel       string
	namesOnly bool
}

// Check says whether rel, a clean slash-separated path relative to the
// root with its symlinks resolved, lies in a hooks directory or is a
// configuration file git reads, as the tools that refuse both ask on every
// change; the repositories asked are the one whose work tree holds rel and
// every one around it, outwards, until one answers.
//
// hooks is the rel of the hooks directory that holds rel, or is rel
// itself; "" when there is none. Directories are matched without regard to
// case, as a file system that ignores it would match them. A hooks
// directory that is the root (dir ".") or a work tree's top holds only the
// files in it named as git's hooks (pre-commit, post-checkout and the
// rest), and whole is false; any other holds all it contains, itself
// included. An outer repository counts too: git run there runs hooks from
// its own, which may lie in a nested one (a submodule of shared hooks that
// core.hooksPath names).
//
// config is the rel of the configuration file that rel is, or "": a file
// git reads that lies in the tree outside any .git. Those are the files git
// read its configuration from when asked (its global file, when the tree
// holds it, say) and every file an include.path or
// includeIf.<condition>.path names, whether it exists or not, its condition
// holds or not: a path relative to the directory of the file that names it,
// as git takes it, and ~ for the home directory. Names are matched as
// sandbox.EntryName takes them, so that another case, or a name NTFS or
// HFS+ takes for the same file, matches too. A file written there would
// give git a core.hooksPath, a core.fsmonitor, an alias, a filter: commands
// the user's next git command runs.
func (d *Dirs) Check(rel string) (hooks string, whole bool, config string) {
	d.around(rel, func(r repo) bool {
		if hooks, whole = r.hooks.holding(rel); hooks != "" {
			return true
		}
		config = r.config(rel)
		return config != ""
	})
	return hooks, whole, config
}

// config is the configuration file of r that rel names, or "".
func (r repo) config(rel string) string {
	for _, c := range r.configs {
		if sameEntry(rel, c) {
			return c
		}
	}
	return ""
}

// around calls f with what git says of the repository whose work tree
// holds rel, then of each repository around it, outwards, until f returns
// true.
func (d *Dirs) around(rel string, f func(repo) bool) {
	wt, ok := d.workTreeOf(path.Dir(rel))
	for ok {
		if f(d.repoOf(wt)) {
			return
		}
		switch wt {
		case "", aboveTop:
			return
		case ".":
			wt, ok = aboveTop, d.isAbove()
		default:
			wt, ok = d.workTreeOf(path.Dir(wt))
		}
	}
}

// sameEntry reports whether the rels a and b name the same file, compared
// a component at a time as sandbox.EntryName takes it.
func sameEntry(a, b string) bool {
	for {
		ca, ra, moreA := strings.Cut(a, "/")
		cb, rb, moreB := strings.Cut(b, "/")
		if moreA != moreB || sandbox.EntryName(ca) != sandbox.EntryName(cb) {
			return false
		}
		if !moreA {
			return true
		}
		a, b = ra, rb
	}
}

// aboveTop stands, among the work trees of byRepo, for the repository
// above a root that is a work tree's top itself.
const aboveTop = ".."

// repoOf returns what git says of the repository whose work tree is wt,
// asking it the first time.
func (d *Dirs) repoOf(wt string) repo {
	d.mu.Lock()
	defer d.mu.Unlock()
	r, known := d.byRepo[wt]
	if !known {
		r = d.ask(wt)
		if d.byRepo == nil {
			d.byRepo = map[string]repo{}
		}
		d.byRepo[wt] = r
	}
	return r
}

// holding is Check's hooks and whole for the one hooks directory hd.
func (hd hooksDir) holding(rel string) (dir string, whole bool) {
	h := hd.rel
	if hd.namesOnly {
		if strings.EqualFold(path.Dir(rel), h) && isHookName(path.Base(rel)) {
			return h, false
		}
		return "", false
	}
	if h == "" || !strings.EqualFold(rel, h) && !(len(rel) > len(h) && rel[len(h)] == '/' && strings.EqualFold(rel[:len(h)], h)) {
		return "", false
	}
	return h, true
}

// hookNames are the hooks git runs, as githooks(5) lists them.
var hookNames = []string{
	"applypatch-msg", "pre-applypatch", "post-applypatch", "pre-commit", "pre-merge-commit",
	"prepare-commit-msg", "commit-msg", "post-commit", "pre-rebase", "post-checkout", "post-merge",
	"pre-push", "pre-receive", "update", "proc-receive", "post-receive", "post-update",
	"reference-transaction", "push-to-checkout", "pre-auto-gc", "post-rewrite", "sendemail-validate",
	"fsmonitor-watchman", "p4-changelist", "p4-prepare-changelist", "p4-post-changelist",
	"p4-pre-submit", "post-index-change",
}

// isHookName reports whether name is a hook's, in any case, or a name NTFS
// or HFS+ may take for one (sandbox.EntryName: "pre-commit.",
// "pre-commit::$DATA"), which git would run as the hook, or one with
// ".exe" after it, which Git for Windows runs when the hook's own name is
// not there (find_hook's STRIP_EXTENSION).
func isHookName(name string) bool {
	name = sandbox.EntryName(name)
	return slices.Contains(hookNames, name) || slices.Contains(hookNames, strings.TrimSuffix(name, ".exe"))
}

// workTreeOf returns the nearest directory at or above dir, within the
// root, that holds a .git; "" when none does but the root lies in a
// repository; false when dir lies in no repository.
func (d *Dirs) workTreeOf(dir string) (string, bool) {
	for ; ; dir = path.Dir(dir) {
		if d.exists(path.Join(dir, ".git")) {
			return dir, true
		}
		if dir == "." || dir == "/" {
			break
		}
	}
	return "", d.isAbove()
}

// isAbove reports whether a directory above the root lies in a repository.
func (d *Dirs) isAbove() bool {
	d.aboveOnce.Do(func() { d.above = inRepositoryRecently(filepath.Dir(d.root)) })
	return d.above
}

// aboveRoots remembers, for a while, what InRepository said of a
// directory above a root: a batch builds a FileSystem per job, over
// workspaces that share their parent, and each looked up every directory
// above it. Measured with BenchmarkBatch1000 (runtime, cache=false, 1000
// jobs at -j 8, -benchtime 3x, two interleaved runs each, beside a build
// that skips the whole hooks check): looking up each time, 491,000 and
// 492,000 allocations per batch against 464,000 and 465,000, at 1,135 and
// 698 jobs/s against 1,301 and 996; with this memo, 468,000 and 469,000
// against 463,000 and 464,000, at 1,119 and 1,047 jobs/s against 1,269 and
// 1,079. An answer is kept for aboveTTL, so that a repository made above a
// root later (git init in a parent directory) is seen by the FileSystems
// made after that, in a long-lived agentspec mcp too.
var aboveRoots sync.Map // directory → aboveAnswer

// aboveStores counts the answers stored; every pruneEvery of them, those
// past aboveTTL are dropped, so that a long-lived worker whose workspaces
// lie under ever new directories keeps no more than a few seconds' worth.
var aboveStores atomic.Uint64

const pruneEvery = 256

type aboveAnswer struct {
	inRepo bool
	at     time.Time
}

const aboveTTL = 5 * time.Second

// inRepositoryRecently is InRepository(dir), as answered within aboveTTL.
func inRepositoryRecently(dir string) bool {
	if a, ok := aboveRoots.Load(dir); ok && time.Since(a.(aboveAnswer).at) < aboveTTL {
		return a.(aboveAnswer).inRepo
	}
	in := InRepository(dir)
	aboveRoots.Store(dir, aboveAnswer{inRepo: in, at: time.Now()})
	if aboveStores.Add(1)%pruneEvery == 0 {
		aboveRoots.Range(func(k, v any) bool {
			if time.Since(v.(aboveAnswer).at) >= aboveTTL {
				aboveRoots.Delete(k)
			}
			return true
		})
	}
	return in
}

// ask asks git, for the repository whose work tree is wt, where it runs
// hooks from and which configuration files it reads, and keeps those that
// lie inside the root and outside any .git. Where git cannot say where the
// hooks are, it is asked nothing more: it cannot read the repository's
// configuration, and runs nothing there.
func (d *Dirs) ask(wt string) repo {
	dir := d.root
	switch wt {
	case "":
	case aboveTop:
		dir = filepath.Dir(d.root) // git there answers for the repository above
	default:
		dir = filepath.Join(d.root, filepath.FromSlash(wt))
	}
	hooks, configs := Repo(dir)
	var r repo
	if rel, ok := d.inTree(hooks); ok {
		r.hooks = hooksDir{rel: rel, namesOnly: rel == "." || d.exists(path.Join(rel, ".git"))}
	}
	for _, f := range configs {
		if rel, ok := d.inTree(f); ok && rel != "." && !slices.Contains(r.configs, rel) {
			r.configs = append(r.configs, rel)
		}
	}
	return r
}

// inTree returns the rel of the absolute path p, its symlinks resolved as
// far as it exists, when it lies inside the root and outside any .git.
func (d *Dirs) inTree(p string) (string, bool) {
	if p == "" {
		return "", false
	}
	rel, err := filepath.Rel(d.root, realAsFarAsItExists(p))
	if err != nil {
		return "", false
	}
	rel = filepath.ToSlash(rel)
	if rel == ".." || strings.HasPrefix(rel, "../") || inGitDir(rel) {
		return "", false
	}
	return rel, true
}

// configFiles asks git, in dir, which files it reads configuration from
// (those it read some from) and which files the includes there name,
// followed or not, and returns their absolute paths. top is the directory
// git takes the relative names of the files it read from: the work tree's
// top, where it goes first.
func configFiles(dir, top string) []string {
	out, ok := gitOutput(dir, "config", "--list", "--show-origin", "--includes", "-z")
	if !ok {
		return nil
	}
	var files, unread []string
	read := map[string]bool{}
	// -z prints, for each variable, its origin and then its name, a newline
	// and its value, each ended by a NUL (the value and newline absent for
	// a variable without one).
	fields := strings.Split(out, "\x00")
	for i := 0; i+1 < len(fields); i += 2 {
		origin, ok := strings.CutPrefix(fields[i], "file:")
		if !ok {
			continue // the command line, a blob, standard input
		}
		if !filepath.IsAbs(origin) {
			origin = filepath.Join(top, origin)
		}
		files = append(files, origin)
		read[origin] = true
		if p := included(fields[i+1], origin); p != "" {
			files = append(files, p)
			unread = append(unread, p)
		}
	}
	// An included file git did not read, its includeIf condition false
	// today, is read here for the files it includes in turn, whatever their
	// conditions: git reads them once its condition holds. git's own
	// bound on the depth of includes, 10, bounds the files read so.
	for depth := 0; depth < 10 && len(unread) > 0; depth++ {
		var next []string
		for _, f := range unread {
			if read[f] {
				continue
			}
			read[f] = true
			if fi, err := os.Stat(f); err != nil || !fi.Mode().IsRegular() {
				continue
			}
			out, ok := gitOutput(dir, "config", "--file", f, "--list", "-z")
			if !ok {
				continue
			}
			for _, entry := range strings.Split(out, "\x00") {
				if p := included(entry, f); p != "" {
					files = append(files, p)
					next = append(next, p)
				}
			}
		}
		unread = next
	}
	return files
}

// included returns the file an include names in entry, a variable of
// git config -z's listing (its name, a newline and its value) read from the
// file from; "" for a variable that is not an include.
func included(entry, from string) string {
	key, value, _ := strings.Cut(entry, "\n")
	if key != "include.path" && !(strings.HasPrefix(key, "includeif.") && strings.HasSuffix(key, ".path")) {
		return ""
	}
	return includePath(value, from)
}

// includePath is the file an include's path value names, in a file at
// from, as git reads it: ~ and ~user begin a home directory, and a
// relative path is taken from from's directory; "" for none, and for one
// under git's own installation (%(prefix)/).
func includePath(value, from string) string {
	if value == "" || strings.HasPrefix(value, "%(prefix)/") {
		return ""
	}
	if name, ok := strings.CutPrefix(value, "~"); ok {
		name, rest, _ := strings.Cut(name, "/")
		home := os.Getenv("HOME")
		if name != "" {
			u, err := user.Lookup(name)
			if err != nil {
				return ""
			}
			home = u.HomeDir
		}
		if home == "" {
			return ""
		}
		return filepath.Join(home, rest)
	}
	if filepath.IsAbs(value) {
		return filepath.Clean(value)
	}
	return filepath.Join(filepath.Dir(from), value)
}

// inGitDir reports whether a component of rel is .git, in any case.
func inGitDir(rel string) bool {
	for c := range strings.SplitSeq(rel, "/") {
		if strings.EqualFold(c, ".git") {
			return true
		}
	}
	return false
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
