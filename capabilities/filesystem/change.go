package filesystem

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"syscall"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/internal/sandbox"
)

// What write_file, edit_file and create_directory share: the change request
// a listener may veto, the checks repeated after it, and the write through a
// descriptor that re-checks the content it replaces.

// absentHash guards a file announced as new: no content hashes to it, so a
// file that appears before the write opens it, even an empty one, is a
// conflict rather than overwritten.
const absentHash = "<absent>"

// maxDiffFileBytes is the largest existing file decoded for a diff; anything
// bigger cannot be within MaxDiffSourceChars.
const maxDiffFileBytes = 4 * MaxDiffSourceChars

// snapshot is an existing file's content as a change was checked against it.
type snapshot struct {
	hash string
	data []byte // nil when the file is too large to diff
}

// readSnapshot reads the regular file rel, hashing all of it and keeping its
// bytes when keepAll is set or it is small enough to diff.
func (fs *FS) readSnapshot(rel string, keepAll bool) (snapshot, error) {
	f, err := fs.dir.OpenReader(rel)
	if err != nil {
		return snapshot{}, err
	}
	defer f.Close()
	limit := int64(math.MaxInt64)
	if !keepAll {
		limit = maxDiffFileBytes + 1
	}
	// Room for one byte more than the file holds, so that one read both
	// takes it all and sees the end.
	data := make([]byte, 0, min(max(f.Size(), 0), limit-1)+1)
	for int64(len(data)) < limit {
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)] // the file grew: make room
		}
		n, err := f.Read(data[len(data):min(int64(cap(data)), limit)])
		data = data[:len(data)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return snapshot{}, err
		}
	}
	if int64(len(data)) < limit {
		return snapshot{hash: contentHash(data), data: data}, nil
	}
	hash, err := hashRest(data, f)
	if err != nil {
		return snapshot{}, err
	}
	return snapshot{hash: hash}, nil
}

// announce sends the change request to the run's listeners. A cancelled
// change returns the refusal the model gets as its (normal) result.
func (fs *FS) announce(ctx context.Context, rel, op, diff string, truncated bool) (string, error) {
	ev := &FileChangeRequestEvent{EventBase: fs.base(ctx, rel), Operation: op, Diff: diff, Truncated: truncated}
	if err := fs.emit(ctx, ev); err != nil {
		return "", err
	}
	cancelled, reason := ev.Cancelled()
	if !cancelled {
		return "", nil
	}
	verb := map[string]string{OpWrite: "written", OpEdit: "edited", OpCreateDirectory: "created"}[op]
	return fmt.Sprintf("[%s was not %s: %s]", pyRepr(rel), verb, reason), nil
}

// recheck resolves path again once the listeners approved a change: it must
// still lead to rel, or the change fails instead of landing elsewhere.
func (fs *FS) recheck(path, rel string) error {
	now, err := fs.resolve(path)
	if err != nil {
		return err
	}
	if now != rel {
		return capabilities.Retry("Path %s was replaced while the change was announced. Retry.", pyRepr(path))
	}
	return nil
}

func conflict(path, expected, got string) error {
	return capabilities.Refuse(capabilities.RefusedConflict, "Conflict: file %s has changed (expected hash:%s, got hash:%s). Re-read the file and retry.",
		pyRepr(path), expected, got)
}

// guard is what writeThrough checks the file against, under the descriptor
// it writes through, before replacing the content.
type guard struct {
	// hash is the content the file must still hold; "" checks nothing, and
	// absentHash refuses any file that appeared where none was.
	hash string
	// soft marks a hash that is only what the agent last saw, not one the
	// model asked for: a file the process cannot read is then written
	// unguarded, as it was before the agent ever saw it.
	soft bool
}

// staleError is writeThrough's refusal of a file whose content no longer
// hashes to the guard. The callers word it, since what the model is told
// depends on where the guard came from.
type staleError struct{ want, got string }

func (e *staleError) Error() string {
	return fmt.Sprintf("content changed (expected hash:%s, got hash:%s)", e.want, e.got)
}

// writeOpenError words a failed open of a write target.
func writeOpenError(path, rel string, err error, create bool) error {
	switch {
	case errors.Is(err, syscall.ELOOP):
		return changedToSymlink(path)
	case errors.Is(err, syscall.EISDIR), errors.Is(err, sandbox.ErrNotRegular):
		return capabilities.Retry("Path %s exists and is not a regular file.", pyRepr(path))
	case !create && (errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ENOTDIR)):
		return capabilities.Retry("File not found: %s", path)
	case errors.Is(err, syscall.ENOENT) && sandbox.InParent(err):
		return missingParent(rel)
	case errors.Is(err, syscall.ENOTDIR):
		return capabilities.Retry("Path %s has a parent that is not a directory.", pyRepr(path))
	}
	return osError(err)
}

func missingParent(rel string) error {
	parent, _ := sandbox.Split(rel)
	return capabilities.Retry("Parent directory %s does not exist. Use create_directory first.", pyRepr(parent))
}

// pathOf returns the root-relative name an error from the descriptor helpers
// concerns.
func pathOf(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Path
	}
	return ""
}
