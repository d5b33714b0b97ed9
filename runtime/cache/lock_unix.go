//go:build unix

package cache

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// locksLogs is true: lockLog locks here.
const locksLogs = true

// lockLog takes a lock on the log open as f, shared to append to it and
// exclusive to rewrite it, held until f is closed. Processes sharing a cache
// take it as the Cache's writing mutex is taken within one. Where the file
// system does not support it (some network file systems), nothing is
// locked, as before it was taken: a record appended while its log is being
// rewritten may then be lost, and stored again by the run that misses it.
func lockLog(f *os.File, exclusive bool) error {
	how := unix.LOCK_SH
	if exclusive {
		how = unix.LOCK_EX
	}
	for {
		err := unix.Flock(int(f.Fd()), how)
		switch {
		case err == unix.EINTR:
			continue
		case errors.Is(err, unix.ENOLCK), errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.ENOSYS):
			return nil
		case err != nil:
			return &os.PathError{Op: "flock", Path: f.Name(), Err: err}
		}
		return nil
	}
}
