//go:build unix

package queue

import (
	"io"
	"os"
	"path/filepath"
	"strings"

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

// copyLock ends the name of the file beside a shipped workspace's copy
// (below the workspace root) that its worker holds an exclusive flock on
// while the job runs; the file holds the worker's host name.
const copyLock = ".lock"

// newCopyDir makes a fresh directory in base, named prefix and a random
// tail, for a shipped workspace's copy, and returns the function that
// removes it and lets its lock go. The lock is held before the directory
// is made, so sweepCopies never finds a live copy unlocked.
func newCopyDir(base, prefix string) (dir string, release func(), err error) {
	f, err := os.CreateTemp(base, prefix+"*"+copyLock+".new")
	if err != nil {
		return "", nil, err
	}
	tmp := f.Name()
	fail := func(err error) (string, func(), error) {
		f.Close()
		os.Remove(tmp)
		return "", nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return fail(err)
	}
	host, _ := os.Hostname()
	if _, err := f.WriteString(host); err != nil {
		return fail(err)
	}
	dir = strings.TrimSuffix(tmp, copyLock+".new")
	lock := dir + copyLock
	if err := os.Rename(tmp, lock); err != nil {
		return fail(err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		os.Remove(lock)
		f.Close()
		return "", nil, err
	}
	return dir, func() {
		os.RemoveAll(dir)
		os.Remove(lock)
		f.Close()
	}, nil
}

// sweepCopies removes from base the shipped workspaces' copies that workers
// of this host killed while they ran (SIGKILL, the OOM killer, a crash) left
// behind, whole copies of their submitters' workspaces. A copy whose lock
// another process holds, that has none, or whose lock names another host
// (the root may be shared storage, where another machine's lock need not
// be seen here) is left alone.
func sweepCopies(base string) {
	host, _ := os.Hostname()
	locks, _ := filepath.Glob(filepath.Join(base, "*"+copyLock))
	for _, lock := range locks {
		f, err := os.OpenFile(lock, os.O_RDWR, 0)
		if err != nil {
			continue
		}
		owner, _ := io.ReadAll(io.LimitReader(f, 1024))
		if string(owner) == host && unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) == nil {
			os.RemoveAll(strings.TrimSuffix(lock, copyLock))
			os.Remove(lock)
		}
		f.Close()
	}
}
