//go:build !linux

package walk

// trackedDir is a tracked directory; only Linux tracks directories.
type trackedDir struct{}

func (d sysDir) track() (*trackedDir, uint64) { return nil, 0 }

func (d sysDir) watchFile(*trackedDir, string) bool { return false }
