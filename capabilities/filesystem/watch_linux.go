package filesystem

import (
	"os"
	"syscall"
)

// watchTarget names the directory rel for fsnotify by a descriptor the
// no-follow walk reached (sandbox.Dir.NameDir): inotify follows the
// /proc/self/fd link to exactly that directory, whatever the path leads to by
// then. The descriptor is held until release, so the name stays unique while
// the watch lives, and the directory's inode number cannot be reused
// meanwhile. Without procfs the directory is watched by its path.
func (fs *FS) watchTarget(rel string) (watchTarget, error) {
	n, ok, err := fs.dir.NameDir(rel)
	switch {
	case !ok:
		return fs.pathTarget(rel)
	case err != nil:
		return watchTarget{}, err
	}
	return watchTarget{path: n.Path, id: dirID{dev: n.Dev, ino: n.Ino}, release: n.Release}, nil
}

// pathID identifies the directory st by device and inode: inotify keeps one
// watch per inode, whatever name it was set through.
func pathID(_ string, st os.FileInfo) dirID {
	s := st.Sys().(*syscall.Stat_t)
	return dirID{dev: uint64(s.Dev), ino: uint64(s.Ino)}
}
