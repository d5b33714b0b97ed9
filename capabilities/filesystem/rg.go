package filesystem

import (
	"bufio"
	"context"
	"errors"
	iofs "io/fs"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/capabilities/filesystem/internal/rg"
	"github.com/agentspec/agentspec/internal/sandbox"
)

// The ripgrep tools run rg through package rg (never a shell, always
// --no-config), the pattern always through --regexp (so it is never read as
// a flag). rg applies its own ignore rules (.gitignore inside a git
// repository, .ignore anywhere; an explicit glob overrides them).
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

// runRipgrep runs rg with args in dir, a canonical rel, and hands each output
// record (as split cuts them) to record, adding the line it returns, if any,
// to found until found refuses one, which stops rg. A record too long to be
// a path or a line also ends the output, as truncated. path is dir as the
// model gave it (or the file in it), and gone the error for a dir that is no
// longer a directory; pattern is grep's pattern, for the message when rg
// refuses it. It returns how the run ended short of failing.
func (fs *FS) runRipgrep(ctx context.Context, path, dir string, gone error, split bufio.SplitFunc, args []string, pattern string, found *listing, record func([]byte, *rgPaths) (string, bool)) (in incomplete, err error) {
	paths, err := fs.openRGPaths(dir)
	switch {
	case errors.Is(err, syscall.ELOOP):
		return in, changedToSymlink(path)
	case errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ENOTDIR):
		return in, gone
	case err != nil:
		return in, osError(&iofs.PathError{Op: "open", Path: dir, Err: err})
	}
	defer paths.close()
	p, err := rg.Start(ctx, fs.rgWorkDir(paths.trail.Cursor(), dir), split, args...)
	var chdir *iofs.PathError
	switch {
	case errors.Is(err, rg.ErrNotInstalled):
		return in, errNoRipgrep
	case errors.As(err, &chdir) && chdir.Op == "chdir":
		// The directory went away since it was checked; name it as the
		// model knows it, never by its host path.
		return in, osError(&iofs.PathError{Op: "chdir", Path: dir, Err: chdir.Err})
	case err != nil:
		return in, err
	}
	for {
		rec, ok := p.Next()
		if !ok {
			found.truncated = p.Truncated()
			in.outputCut = p.OutputCut()
			break
		}
		if line, ok := record(rec, paths); ok && !found.add(line) {
			p.Stop()
			break
		}
	}
	var failure *rg.Failure
	switch err := p.Wait(); {
	case errors.As(err, &failure):
		return incomplete{}, fs.rgFailed(pattern, failure)
	case errors.Is(err, context.DeadlineExceeded) && errors.Is(ctx.Err(), context.DeadlineExceeded):
		// rg was killed at the deadline: what it printed until then
		// stands, with a note.
		in.timedOut = true
	case err != nil:
		return incomplete{}, err
	}
	in.unreadable = p.Unreadable()
	return in, nil
}

// rgWorkDir names the directory c is at, the canonical rel dir, as rg's
// working directory: through c's descriptor where the system can name one
// (Linux), by its host path otherwise, where the checks of what rg prints
// are all that stand between rg and a swapped path.
func (fs *FS) rgWorkDir(c *sandbox.Cursor, dir string) string {
	if p, ok := c.WorkDir(); ok && !rgByPath.Load() {
		return p
	}
	return filepath.Join(fs.rootDir, filepath.FromSlash(dir))
}

// rgByPath starts rg by host path even where a descriptor can name its
// directory: tests set it to show that the checks of what rg prints hold on
// their own, as they must on systems without such names.
var rgByPath atomic.Bool

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
// checks.
//
// rg prints paths sorted, so those of one directory come together, and the
// checks are arranged around that. The directories are held by a
// sandbox.Trail, each entered once while rg prints what it holds; what the
// read-level patterns say of a directory (denied, or below a denied one)
// is worked out once for all its files; and a directory rg prints many files
// of is listed once (rgListing) instead of looking up each file.
type rgPaths struct {
	fs    *FS
	base  string                    // canonical rel of the directory rg runs in
	trail *sandbox.Trail[rgListing] // at base, or below it at the directory of the last path checked
	buf   []byte                    // for listing

	// The directory of the last path checked, relative to base, and
	// whether the patterns deny what it holds (fs.deniedBelow).
	dir                string
	dirDenied, seenDir bool

	// The last path checked and the verdict: grep prints a file's lines
	// one after another. The zero values are the verdict on "".
	last, lastFull string
	lastOK         bool
}

// openRGPaths holds base, reached from the root without following a
// symlink; rg is started in the directory held.
func (fs *FS) openRGPaths(base string) (*rgPaths, error) {
	c, err := fs.dir.Walk(base)
	if err != nil {
		return nil, err
	}
	return &rgPaths{fs: fs, base: base, trail: sandbox.NewTrail[rgListing](c)}, nil
}

func (p *rgPaths) close() { p.trail.Close() }

// check returns the canonical rel of the file rg printed as rel (relative to
// base), or false when it must not be shown.
func (p *rgPaths) check(rel string) (string, bool) {
	if rel != p.last {
		p.lastFull, p.lastOK = p.verify(rel)
		p.last = rel
	}
	return p.lastFull, p.lastOK
}

func (p *rgPaths) verify(rel string) (string, bool) {
	full := sandbox.Join(p.base, rel)
	if rel == "" || hidden(full) {
		return "", false
	}
	// hidden has refused "." and ".." components; Enter refuses them too,
	// and empty ones.
	dir, name := sandbox.Split(rel)
	if !p.trail.Enter(dir) || !p.trail.State().regular(p.trail.Cursor(), name, &p.buf) {
		return "", false
	}
	if !p.seenDir || dir != p.dir {
		p.dir, p.seenDir = dir, true
		p.dirDenied = p.fs.deniedBelow(sandbox.Join(p.base, dir))
	}
	if !p.fs.readableIn(p.dirDenied, full) {
		return "", false
	}
	return full, true
}

// rgListing is what a directory the rg checks entered holds: its regular
// files, listed (sandbox.Cursor.ListRegular) once a few paths rg printed in
// it have been checked. Listing a directory costs a few system calls where
// checking a file costs one, so a directory rg prints many files of
// (list_files prints them all) is listed, and one it prints a file or two of
// (grep, mostly) is not, however large.
type rgListing struct {
	looked int // names looked up one by one
	read   bool
	// name -> true for a regular file, false for a type the file system
	// does not report (looked up with fstatat); nil if it could not be
	// listed, or where there is no listing, when every name is looked up.
	names map[string]bool
}

// rgListAfter is how many names are looked up one by one in a directory
// before it is listed instead.
const rgListAfter = 4

// regular reports whether name, in the directory c is at (which l
// describes), is a regular file.
func (l *rgListing) regular(c *sandbox.Cursor, name string, buf *[]byte) bool {
	if !l.read && l.looked == rgListAfter {
		l.read = true
		l.names = c.ListRegular(buf)
	}
	if l.names == nil {
		l.looked++
		return c.Regular(name)
	}
	known, ok := l.names[name]
	return ok && (known || c.Regular(name))
}
