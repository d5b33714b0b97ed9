//go:build !unix

package walk

import (
	"os"
	"path/filepath"
	"syscall"
)

// sysDir is a directory opened as an os.Root: lookups below it cannot leave
// it, though, unlike the Unix walk, they follow symlinks that appear inside
// it after it was listed.
type sysDir struct{ r *os.Root }

// NewAt starts a walk of the directory dir below root, as its Unix
// counterpart does below a descriptor.
func NewAt[S any](root *os.Root, dir string, state S) (*Walker[S], error) {
	w, _, err := newAt(root, dir, state, nil)
	return w, err
}

// NewTrackedAt starts a walk like NewAt and returns the directory's stamp
// (see its Unix counterpart), which is always zero here.
func NewTrackedAt[S any](root *os.Root, dir string, state S, last Stamp) (*Walker[S], Stamp, error) {
	return newAt(root, dir, state, &last)
}

// newAt opens root again for the walk begin starts.
func newAt[S any](root *os.Root, dir string, state S, last *Stamp) (*Walker[S], Stamp, error) {
	top, err := root.OpenRoot(".")
	if err != nil {
		return nil, Stamp{}, err
	}
	return begin(sysDir{top}, dir, state, last)
}

func (d sysDir) openDir(name string) (sysDir, error) {
	st, err := d.r.Lstat(name)
	if err != nil {
		return sysDir{}, err
	}
	if !st.IsDir() {
		// ENOTDIR as on Unix, so that callers test for one error only.
		return sysDir{}, &os.PathError{Op: "open", Path: name, Err: syscall.ENOTDIR}
	}
	r, err := d.r.OpenRoot(name)
	return sysDir{r}, err
}

// dirFile opens the directory for listing.
func (d sysDir) dirFile() (*os.File, error) { return d.r.Open(".") }

func (d sysDir) lstat(name string) (Type, int64, error) {
	st, err := d.r.Lstat(filepath.FromSlash(name))
	if err != nil {
		return 0, 0, err
	}
	return typeOf(st.Mode()), st.Size(), nil
}

func (d sysDir) close() { d.r.Close() }
