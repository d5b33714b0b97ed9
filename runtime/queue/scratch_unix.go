//go:build unix

package queue

import (
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// scratchLock is the file in a worker's scratch directory that the worker
// holds an exclusive flock on for as long as it runs.
const scratchLock = ".lock"

// holdScratch takes the lock of the worker's scratch directory dir, and
// returns the function that lets it go. The lock file is locked before it
// gets its name, so that sweepScratch never finds it unlocked while its
// worker lives.
func holdScratch(dir string) (release func(), err error) {
	tmp := filepath.Join(dir, scratchLock+".new")
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		return nil, err
	}
	if err := os.Rename(tmp, filepath.Join(dir, scratchLock)); err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil
}

// sweepScratch removes the scratch directories of workers that are gone: a
// worker killed (SIGKILL, the OOM killer, a crash) could not remove its own,
// which holds copies of the specs and workspaces of the jobs it ran. A
// directory whose lock another process holds, or that has no lock yet, is
// left alone; a lock works across PID namespaces, where a process ID would
// not tell a live worker from a dead one.
func sweepScratch(own string) {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), scratchPrefix+"*"))
	for _, dir := range dirs {
		if dir == own {
			continue
		}
		f, err := os.OpenFile(filepath.Join(dir, scratchLock), os.O_RDWR, 0)
		if err != nil {
			continue
		}
		if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) == nil {
			os.RemoveAll(dir)
		}
		f.Close()
	}
}
