//go:build unix

package walk

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// Stream is a regular file open for reading, by its bare descriptor: no
// os.File and its poller registration for each file a search reads. The
// descriptor may keep its O_NONBLOCK, which a regular file ignores.
type Stream struct {
	fd   int
	path string // for errors
	size int64  // as fstat reported it at the open
	eof  bool
}

// NewStream reads the regular file open as fd, of the given size, which the
// Stream owns; path names it in errors.
func NewStream(fd int, path string, size int64) *Stream {
	return &Stream{fd: fd, path: path, size: size}
}

func (d sysDir) openStream(name, path string) (*Stream, error) {
	fd, err := openat(int(d), name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	var st unix.Stat_t
	for {
		err = unix.Fstat(fd, &st)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "fstat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, ErrNotRegular
	}
	return NewStream(fd, path, st.Size), nil
}

// Read reads as io.Reader does. A regular file returns fewer bytes than
// asked only at its end (reads are capped near 2 GiB, hence the second
// test), so a short read also reports io.EOF, sparing the read that would
// return nothing.
func (s *Stream) Read(p []byte) (int, error) {
	if s.eof {
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	n, err := s.do(func() (int, error) { return unix.Read(s.fd, p) })
	switch {
	case err != nil:
		return 0, err
	case n == 0 || (n < len(p) && n < 1<<30):
		s.eof = true
		return n, io.EOF
	}
	return n, nil
}

// ReadAt reads as io.ReaderAt does.
func (s *Stream) ReadAt(p []byte, off int64) (int, error) {
	got := 0
	for got < len(p) {
		n, err := s.do(func() (int, error) { return unix.Pread(s.fd, p[got:], off+int64(got)) })
		switch {
		case err != nil:
			return got, err
		case n == 0:
			return got, io.EOF
		}
		got += n
	}
	return got, nil
}

// do runs a read of the descriptor until it is not interrupted. A file
// system that honours O_NONBLOCK on a regular file (a FUSE one may) answers
// EAGAIN while it has nothing yet: the descriptor blocks from then on.
func (s *Stream) do(read func() (int, error)) (int, error) {
	for {
		n, err := read()
		switch err {
		case nil:
			return n, nil
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			if err := unix.SetNonblock(s.fd, false); err != nil {
				return 0, &os.PathError{Op: "fcntl", Path: s.path, Err: err}
			}
			continue
		}
		return 0, &os.PathError{Op: "read", Path: s.path, Err: err}
	}
}

// Size returns the file's size when it was opened.
func (s *Stream) Size() int64 { return s.size }

// Close closes the descriptor.
func (s *Stream) Close() error { return unix.Close(s.fd) }
