package filesystem

// How a path becomes safe to open is internal/sandbox's resolve.go: a tool
// path is resolved to a canonical root-relative rel with the semantics of
// Python's non-strict os.path.realpath, never following a symlink out of the
// root; patterns are then matched against rel (so an alias is checked as its
// target), and the I/O reaches rel again through descriptors that refuse any
// symlink swapped in after the check. Here the resolution's errors become
// what the model is told.

import (
	"errors"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/internal/sandbox"
)

var (
	errTooLong  = capabilities.Retry("The path name is too long.")
	errEncoding = capabilities.Retry("The path name contains a byte sequence the filesystem cannot represent.")
	errNUL      = capabilities.Retry("The path name contains a NUL byte.")
	errLoopOS   = capabilities.Retry("The path resolves through a symlink loop.")
)

// resolve returns the canonical root-relative form of the path p the model
// gave (relative to cwd, or absolute), or a retry error naming p.
func (fs *FS) resolve(p string) (string, error) { return fs.resolveGated(p, nil) }

// resolveGated resolves p as resolve does, then passes the result through
// gate (checkRead or checkWalkRoot), the check of every tool
// before it touches the path.
func (fs *FS) resolveGated(p string, gate func(rel string) error) (string, error) {
	rel, _, err := fs.resolveGatedFound(p, gate)
	return rel, err
}

// resolveGatedFound is resolveGated, and says what the resolution saw of
// rel's last component, which spares the caller a stat of its own.
func (fs *FS) resolveGatedFound(p string, gate func(rel string) error) (string, sandbox.Found, error) {
	rel, found, err := fs.resolver.ResolveFound(fs.cwdParts, p)
	if err != nil {
		return "", found, resolveError(p, err)
	}
	if gate != nil {
		if err := gate(rel); err != nil {
			return "", found, err
		}
	}
	return rel, found, nil
}

// resolveChange resolves p as resolveGatedFound does with the gate of a
// change (checkWrite), and also refuses a rel that a symlink named as .git
// led to (decision D11): the git directory, or gitdir file, a repository
// reaches through its .git, whatever its own name is.
func (fs *FS) resolveChange(p string) (string, sandbox.Found, error) {
	rel, found, viaGit, err := fs.resolver.ResolveGit(fs.cwdParts, p)
	if err != nil {
		return "", found, resolveError(p, err)
	}
	if viaGit {
		if err := fs.checkProtected(rel); err != nil {
			return "", found, err // a pattern is named first, as protectedBy does
		}
		return "", found, protectedError(rel, ".git")
	}
	if err := fs.checkWrite(rel); err != nil {
		return "", found, err
	}
	return rel, found, nil
}

// resolveEntry resolves a path relative to the root, such as a walker's entry,
// to the canonical rel of its target.
func (fs *FS) resolveEntry(rel string) (string, error) {
	target, err := fs.resolver.Resolve(nil, rel)
	if err != nil {
		return "", resolveError(rel, err)
	}
	return target, nil
}

// resolveError words a failure to resolve the path p for the model.
func resolveError(p string, err error) error {
	switch {
	case errors.Is(err, sandbox.ErrNUL):
		return errNUL
	case errors.Is(err, sandbox.ErrTooLong):
		return errTooLong
	case errors.Is(err, sandbox.ErrEncoding):
		return errEncoding
	case errors.Is(err, sandbox.ErrSymlinkLoop):
		return capabilities.Retry("Path %s resolves through a symlink loop.", pyRepr(p))
	case errors.Is(err, sandbox.ErrOutside):
		return capabilities.Retry("Path %s resolves outside the root directory.", pyRepr(p))
	}
	return err
}
