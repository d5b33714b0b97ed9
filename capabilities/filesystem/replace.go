package filesystem

import (
	"errors"
	"io"

	"github.com/agentspec/agentspec/internal/sandbox"
)

// writeThrough replaces the content of the regular file rel with data,
// atomically and under the file's lock (sandbox.Dir.Replace), once the file
// there passes g. When g has a hash, the file's content must still hash to
// it (a mismatch is a *staleError); absentHash refuses a file that appeared
// where none was. create false refuses to create a file that is gone.
func (fs *FS) writeThrough(path, rel string, data []byte, g guard, create bool) error {
	x := sandbox.Expect{Create: create, Absent: g.hash == absentHash, Soft: g.soft}
	if g.hash != "" {
		x.Check = g.check
	}
	err := fs.dir.Replace(rel, data, x)
	var stale *staleError
	var we sandbox.WriteError
	switch {
	case err == nil, errors.As(err, &stale):
		return err
	case errors.As(err, &we):
		return osError(we.Err)
	}
	return writeOpenError(path, rel, err, create)
}

// check compares the content r reads with the guard's hash. A file that
// appeared where none was is stale whatever it holds (nil r: it could not
// be read).
func (g guard) check(r io.Reader, appeared bool) error {
	var got string
	if r != nil {
		h, err := hashRest(nil, r)
		switch {
		case err == nil:
			got = h
		case !appeared:
			return err
		}
	}
	if appeared || g.hash == absentHash || got != g.hash {
		return &staleError{want: g.hash, got: got}
	}
	return nil
}
