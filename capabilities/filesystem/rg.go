package filesystem

import (
	"bufio"
	"context"
	"errors"
	iofs "io/fs"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/capabilities/filesystem/internal/rg"
	"github.com/agentspec/agentspec/internal/sandbox"
)

// The ripgrep tools run the rg executable: never through a shell, always
// with --no-config (so no RIPGREP_CONFIG_PATH adds arguments), the pattern
// always through --regexp (so it is never read as a flag). rg applies its own
// ignore rules (.gitignore inside a git repository, .ignore anywhere; an
// explicit glob overrides them).
//
// rg works by path, so the tools never take its word for what a path holds.
// It starts in the directory that passed the walk-root checks, held by a
// descriptor from a walk that follows no symlink (on Linux rg enters it
// through that descriptor, so a path swapped since cannot send it elsewhere).
// Below it rg walks by path, and a directory swapped for a symlink mid-walk
// can lead it out of the root; so every path it prints is checked again
// (rgPaths) and, for grep, every line against the file read through the same
// descriptor walk the other tools use (rgSource). What fails is dropped, and
// counts neither as a result nor toward the caps.
//
// grep runs rg with --text and --encoding none, so that rg searches every
// file's raw bytes, and applies the binary rule of read_file and
// search_files itself (a NUL byte in the first 8192 bytes) as it checks the
// lines: rg's own rule (stop at the first NUL anywhere; decode UTF-16 after
// a byte-order mark) would answer differently for the same file.
//
// rg runs under the call's deadline in a process group of its own, killed
// whole when the deadline passes; what it printed until then is returned with
// a note. Files rg could not read (gone since it listed them, say) are counted
// in a note, and the rest of the result stands.

var errNoRipgrep = capabilities.Retry("ripgrep (rg) is not installed. Install it, or use the pure-Python search tools.")

// rgRun is how an rg run ended, short of failing.
type rgRun struct {
	truncated bool // record refused one, or a record was too long
	incomplete
}

// runRipgrep runs rg with args in dir, a canonical rel, and hands each output
// record (as split cuts them) to record until it returns false, which stops
// rg and counts as truncated. A record too long to be a path or a line also
// ends the output as truncated. path is dir as the model gave it (or the
// file in it), and gone the error for a dir that is no longer a directory;
// pattern is grep's pattern, for the message when rg refuses it.
func (fs *FS) runRipgrep(ctx context.Context, path, dir string, gone error, split bufio.SplitFunc, args []string, pattern string, record func([]byte, *rgPaths) bool) (run rgRun, err error) {
	paths, err := fs.openRGPaths(dir)
	switch {
	case errors.Is(err, syscall.ELOOP):
		return run, changedToSymlink(path)
	case errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ENOTDIR):
		return run, gone
	case err != nil:
		return run, osError(&iofs.PathError{Op: "open", Path: dir, Err: err})
	}
	defer paths.close()
	p, err := rg.Start(ctx, fs.rgWorkDir(&paths.c, dir), split, args...)
	var chdir *iofs.PathError
	switch {
	case errors.Is(err, rg.ErrNotInstalled):
		return run, errNoRipgrep
	case errors.As(err, &chdir) && chdir.Op == "chdir":
		// The directory went away since it was checked; name it as the
		// model knows it, never by its host path.
		return run, osError(&iofs.PathError{Op: "chdir", Path: dir, Err: chdir.Err})
	case err != nil:
		return run, err
	}
	for {
		rec, ok := p.Next()
		if !ok {
			run.truncated = p.Truncated()
			run.outputCut = p.OutputCut()
			break
		}
		if !record(rec, paths) {
			run.truncated = true
			p.Stop()
			break
		}
	}
	var failure *rg.Failure
	switch err := p.Wait(); {
	case errors.As(err, &failure) && regexRefused(failure):
		return rgRun{}, grepRegexError(pattern, fs.scrubHostPaths(failure.Stderr))
	case errors.As(err, &failure):
		return rgRun{}, capabilities.Retry("ripgrep failed: %s", fs.scrubHostPaths(failure.Error()))
	case errors.Is(err, context.DeadlineExceeded) && errors.Is(ctx.Err(), context.DeadlineExceeded):
		// rg was killed at the deadline: what it printed until then
		// stands, with a note.
		run.timedOut = true
	case err != nil:
		return rgRun{}, err
	}
	run.unreadable = p.Unreadable()
	return run, nil
}

// scrubHostPaths rewrites the root's absolute path in rg's messages (about
// an ignore file, say) as root-relative text, so that no host path reaches the
// model.
func (fs *FS) scrubHostPaths(msg string) string {
	msg = strings.ReplaceAll(msg, fs.rootDir+string(filepath.Separator), "")
	return strings.ReplaceAll(msg, fs.rootDir, ".")
}

// rgPaths checks the paths rg prints, relative to the directory it runs in
// (base). rg enters the directories below base by path as it walks, so one
// swapped for a symlink at the right moment leads it anywhere: a path is
// shown only if, when it is checked, each directory on it is a real directory
// reached from base without following a symlink and the file is a regular
// file in the last one, and if it passes the dotfile and read-level pattern
// checks. The directories are held as a stack of descriptors, which suits
// rg's output sorted by path: each is opened once while rg prints what it
// holds.
type rgPaths struct {
	fs   *FS
	base string         // canonical rel of the directory rg runs in
	c    sandbox.Cursor // at base, or below it at the directory of the last path checked
	dirs []string       // the components below base that c has entered
	at   string         // dirs joined, "." for base
	// What each directory on the stack holds: base's first, then one per
	// entry of dirs.
	lists []rgListing
	buf   []byte // for listing

	// The last path checked and the verdict: grep prints a file's lines
	// one after another.
	last, lastFull string
	lastOK, seen   bool
}

// openRGPaths holds base, reached from the root without following a
// symlink; rg is started in the directory held.
func (fs *FS) openRGPaths(base string) (*rgPaths, error) {
	c, err := fs.rgCursor(base)
	if err != nil {
		return nil, err
	}
	return &rgPaths{fs: fs, base: base, c: c, at: ".", lists: make([]rgListing, 1)}, nil
}

func (p *rgPaths) close() { p.c.Close() }

// check returns the canonical rel of the file rg printed as rel (relative to
// base), or false when it must not be shown.
func (p *rgPaths) check(rel string) (string, bool) {
	if !p.seen || rel != p.last {
		p.lastFull, p.lastOK = p.verify(rel)
		p.last, p.seen = rel, true
	}
	return p.lastFull, p.lastOK
}

func (p *rgPaths) verify(rel string) (string, bool) {
	full := sandbox.Join(p.base, rel)
	if rel == "" || hidden(full) {
		return "", false
	}
	dir, name := sandbox.Split(rel)
	if !p.enter(dir) || !p.lists[len(p.dirs)].regular(&p.c, name, &p.buf) || !p.fs.readable(full) {
		return "", false
	}
	return full, true
}

// enter moves the cursor to dir, relative to base, and reports whether every
// component on the way is a directory.
func (p *rgPaths) enter(dir string) bool {
	if dir == p.at {
		return true
	}
	var want []string
	if dir != "." {
		want = strings.Split(dir, "/")
	}
	keep := 0
	for keep < len(p.dirs) && keep < len(want) && p.dirs[keep] == want[keep] {
		keep++
	}
	for len(p.dirs) > keep {
		p.c.Up()
		p.dirs = p.dirs[:len(p.dirs)-1]
		p.lists = p.lists[:len(p.lists)-1]
	}
	ok := true
	for _, name := range want[keep:] {
		// hidden has refused "." and ".." already, but down must never
		// see them: ".." would leave the directory.
		if name == "" || name == "." || name == ".." || p.c.Down(name) != nil {
			ok = false
			break
		}
		p.dirs = append(p.dirs, name)
		p.lists = append(p.lists, rgListing{})
	}
	p.at = "."
	if len(p.dirs) > 0 {
		p.at = strings.Join(p.dirs, "/")
	}
	return ok
}
