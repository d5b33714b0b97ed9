//go:build !unix

package filesystem

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"syscall"

	"github.com/agentspec/agentspec/internal/sandbox"
)

// writeThrough replaces the content of the regular file rel with data,
// atomically, as the unix version does (see replace_unix.go), through the
// os.Root: a temporary file beside the target, synced, then renamed over it.
// Only this process's writers are serialised: there is no directory flock.
func (fsys *FS) writeThrough(p, rel string, data []byte, g guard, create bool) error {
	root, err := fsys.root.get()
	if err != nil {
		return osError(err)
	}
	lk := sandbox.LockKey(fsys.rootDir + "\x00" + rel)
	defer lk.Unlock()
	dir, _ := sandbox.Split(rel)
	if dirKey := fsys.rootDir + "\x00" + dir; sandbox.FirstSweep(dirKey) {
		if names, err := readDirNames(root, dir); err == nil {
			for _, n := range names {
				if sandbox.IsTempName(n) {
					root.Remove(path.Join(dir, n))
				}
			}
		}
	}

	var mode fs.FileMode = 0o666
	st, err := root.Lstat(rel)
	exists := err == nil
	switch {
	case errors.Is(err, os.ErrNotExist):
		if !create {
			return writeOpenError(p, rel, err, false)
		}
	case err != nil:
		return writeOpenError(p, rel, err, create)
	case !st.Mode().IsRegular():
		if st.IsDir() {
			return writeOpenError(p, rel, &os.PathError{Op: "open", Path: rel, Err: syscall.EISDIR}, create)
		}
		return writeOpenError(p, rel, &os.PathError{Op: "open", Path: rel, Err: sandbox.ErrNotRegular}, create)
	default:
		mode = st.Mode().Perm()
	}
	if exists && g.hash != "" {
		got, err := fsys.hashFile(rel)
		switch {
		case g.soft && errors.Is(err, os.ErrPermission):
		case err != nil:
			return osError(err)
		case g.hash == absentHash || got != g.hash:
			return &staleError{want: g.hash, got: got}
		}
	}

	tmp := path.Join(dir, sandbox.TempName())
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return writeOpenError(p, rel, err, create)
	}
	err = sandbox.Fault(sandbox.HookWrite)
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
		err = sandbox.Fault(sandbox.HookBeforeRename)
	}
	if err == nil && exists {
		root.Chmod(tmp, mode)
	}
	if err == nil {
		err = root.Rename(tmp, rel)
	}
	if err != nil {
		root.Remove(tmp)
		return osError(err)
	}
	return nil
}

func (fsys *FS) hashFile(rel string) (string, error) {
	f, err := fsys.dir.OpenReader(rel)
	if err != nil {
		return "", err
	}
	defer f.Close()
	return hashRest(nil, f)
}

func readDirNames(root *os.Root, dir string) ([]string, error) {
	d, err := root.Open(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.Readdirnames(-1)
}
