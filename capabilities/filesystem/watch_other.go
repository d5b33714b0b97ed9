//go:build !linux

package filesystem

import "os"

// watchTarget names the directory rel for fsnotify by its real path.
func (fs *FS) watchTarget(rel string) (watchTarget, error) { return fs.pathTarget(rel) }

// pathID identifies the directory at path by that path: the root's is real
// (symlinks resolved), so one directory has one path, and fsnotify watches
// by path.
func pathID(path string, _ os.FileInfo) dirID { return dirID{path: path} }
