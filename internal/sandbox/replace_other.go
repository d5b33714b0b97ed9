//go:build !unix

package sandbox

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"syscall"

	"github.com/agentspec/agentspec/internal/sandbox/internal/hook"
)

// Replace replaces the content of the regular file rel with data,
// atomically, as the unix version does (see replace_unix.go), through the
// os.Root: a temporary file beside the target, synced, then renamed over it.
// Only this process's writers are serialised: there is no directory flock,
// and a file that appears where none was expected is replaced.
func (d *Dir) Replace(rel string, data []byte, x Expect) error {
	root := d.root
	lk := fileLocks.lock(root.Name() + "\x00" + rel)
	defer lk.Unlock()
	dir, _ := Split(rel)
	if sweptDirs.first(root.Name() + "\x00" + dir) {
		if entries, err := fs.ReadDir(root.FS(), dir); err == nil {
			for _, e := range entries {
				if IsTempName(e.Name()) {
					root.Remove(path.Join(dir, e.Name()))
				}
			}
		}
	}

	var mode fs.FileMode = 0o666
	st, err := root.Lstat(rel)
	exists := err == nil
	switch {
	case errors.Is(err, os.ErrNotExist):
		if !x.Create {
			return err
		}
	case err != nil:
		return err
	case !st.Mode().IsRegular():
		if st.IsDir() {
			return &os.PathError{Op: "open", Path: rel, Err: syscall.EISDIR}
		}
		return &os.PathError{Op: "open", Path: rel, Err: ErrNotRegular}
	default:
		mode = st.Mode().Perm()
	}
	if exists && x.Check != nil {
		if err := x.check(d, rel); err != nil {
			return err
		}
	}

	tmp := path.Join(dir, tempName())
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	err = hook.Fault(hook.Write)
	if err == nil {
		_, err = f.Write(data)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = hook.Fault(hook.BeforeRename)
	}
	if err == nil && exists {
		root.Chmod(tmp, mode)
	}
	if err == nil {
		err = root.Rename(tmp, rel)
	}
	if err != nil {
		root.Remove(tmp)
		return WriteError{err}
	}
	return nil
}

// check gives x.Check the content of rel; with x.Soft, a file the process
// may not read is not checked.
func (x *Expect) check(d *Dir, rel string) error {
	r, err := d.OpenReader(rel)
	switch {
	case x.Soft && errors.Is(err, os.ErrPermission):
		return nil
	case err != nil:
		return err
	}
	defer r.Close()
	return x.Check(r, false)
}
