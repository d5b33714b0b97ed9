//go:build !linux

package filesystem

// watchTarget names the directory rel for fsnotify by its real path.
func (fs *FS) watchTarget(rel string) (watchTarget, error) { return fs.pathTarget(rel) }
