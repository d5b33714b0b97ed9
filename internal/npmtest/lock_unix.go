//go:build unix

package npmtest

import (
	"os"
	"syscall"
)

// lockFile holds an exclusive lock on f until the returned function runs.
func lockFile(f *os.File) (func(), error) {
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return nil, err
	}
	return func() { syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }, nil
}
