//go:build unix

package cache

import (
	"io"
	"io/fs"
	"math/rand/v2"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/agentspec/agentspec/internal/sandbox"
)

// writeEntry puts data in the file name of dir as writeAtomic does without
// syncing (see Cache.write), in bare system calls: os.CreateTemp opens an
// os.File, which on Linux costs five more calls while the runtime offers a
// regular file to its poller and is refused, and os.Rename looks at the
// target first. Four calls remain: open, write, close, rename.
func writeEntry(dir, name string, data []byte) error {
	tmp, fd, err := createTemp(dir, name)
	if err != nil {
		return err
	}
	err = writeAll(fd, data)
	if cerr := unix.Close(fd); err == nil {
		err = cerr
	}
	if err == nil {
		err = sandbox.RetryEINTR(func() error { return unix.Rename(tmp, filepath.Join(dir, name)) })
	}
	if err != nil {
		unix.Unlink(tmp)
		return &fs.PathError{Op: "write", Path: filepath.Join(dir, name), Err: err}
	}
	return nil
}

// createTemp creates a new file beside name in dir, named as os.CreateTemp
// would (tempPrefix, name, a dash and a random number), so that Clear
// recognises it when a crash leaves it behind.
func createTemp(dir, name string) (string, int, error) {
	var err error
	for range 10000 {
		tmp := filepath.Join(dir, tempPrefix+name+"-"+strconv.FormatUint(uint64(rand.Uint32()), 10))
		var fd int
		err = sandbox.RetryEINTR(func() (err error) {
			fd, err = unix.Open(tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o600)
			return err
		})
		if err == nil {
			return tmp, fd, nil
		}
		if err != unix.EEXIST {
			break
		}
	}
	return "", -1, &fs.PathError{Op: "createtemp", Path: filepath.Join(dir, tempPrefix+name+"-*"), Err: err}
}

func writeAll(fd int, data []byte) error {
	for len(data) > 0 {
		n, err := unix.Write(fd, data)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if n == 0 {
			return io.ErrShortWrite
		}
		data = data[n:]
	}
	return nil
}
