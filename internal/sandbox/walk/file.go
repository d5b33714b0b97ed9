package walk

import (
	"errors"
	"os"

	"github.com/agentspec/agentspec/internal/text"
)

var (
	// ErrNotRegular is returned for an entry that is no longer a regular file
	// when it is opened (a FIFO, a directory, a symlink swapped in).
	ErrNotRegular = errors.New("not a regular file")
	// ErrBinary is returned, when asked, for a file with a NUL byte in its
	// first text.BinaryProbe bytes.
	ErrBinary = errors.New("binary file")
)

// File is a regular file found by a walk, opened through its directory when
// it is read.
type File struct {
	d    *dir
	name string
	path string
}

// Path returns the file's path in the walk.
func (f *File) Path() string { return f.path }

// Read reads the whole file into buf's storage (growing it when too small) and
// returns the bytes read. The file is opened without following a symlink and
// without blocking, and must be a regular file. With skipBinary, a binary file
// yields ErrBinary, having read little more than its first text.BinaryProbe bytes.
func (f *File) Read(buf []byte, skipBinary bool) ([]byte, error) {
	if f.d == nil {
		return nil, &os.PathError{Op: "read", Path: f.path, Err: os.ErrClosed}
	}
	return f.d.sys.readFile(f.name, f.path, buf, skipBinary)
}

// Close lets go of the file's directory.
func (f *File) Close() {
	if f.d != nil {
		f.d.release()
		f.d = nil
	}
}

// bigFile is the size above which a binary check precedes reading the rest,
// so that skipping a large binary costs one small read.
const bigFile = 256 << 10

// reader is how one platform reads a file it has open.
type reader interface {
	// read reads into p, as io.Reader does, but returns 0, nil at the end.
	read(p []byte) (int, error)
}

// readAll reads a regular file of the given size (as stat reported it) into
// buf's storage with as few reads as the file allows: one of its whole size
// plus a byte, the short count of which marks the end, for a file that does
// not change meanwhile.
func readAll(r reader, name string, size int, buf []byte, skipBinary bool) ([]byte, error) {
	if cap(buf) < size+1 {
		buf = make([]byte, 0, size+1)
	}
	data := buf[:0]
	if skipBinary && size > bigFile {
		n, err := readFull(r, buf[:text.BinaryProbe])
		if err != nil {
			return nil, &os.PathError{Op: "read", Path: name, Err: err}
		}
		data = buf[:n]
		if text.IsBinary(data) {
			return data, ErrBinary
		}
		if n < text.BinaryProbe {
			return data, nil
		}
	}
	for {
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)] // the file grew: make room
		}
		want := cap(data) - len(data)
		n, err := r.read(data[len(data):cap(data)])
		if err != nil {
			return nil, &os.PathError{Op: "read", Path: name, Err: err}
		}
		data = data[:len(data)+n]
		// A regular file returns fewer bytes than asked only at its end
		// (reads are capped near 2 GiB, hence the second test).
		if n == 0 || (n < want && n < 1<<30) {
			break
		}
	}
	if skipBinary && text.IsBinary(data) {
		return data, ErrBinary
	}
	return data, nil
}

func readFull(r reader, p []byte) (int, error) {
	got := 0
	for got < len(p) {
		n, err := r.read(p[got:])
		if err != nil {
			return got, err
		}
		if n == 0 {
			break
		}
		got += n
	}
	return got, nil
}
