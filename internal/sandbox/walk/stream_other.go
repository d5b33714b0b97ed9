//go:build !unix

package walk

import "os"

// Stream is a regular file open for reading.
type Stream struct {
	*os.File
	size int64
}

// NewStream reads the regular file f, of the given size, which the Stream
// owns.
func NewStream(f *os.File, size int64) *Stream { return &Stream{f, size} }

// Size returns the file's size when it was opened.
func (s *Stream) Size() int64 { return s.size }

func (d sysDir) openStream(name, path string) (*Stream, error) {
	if typ, _, err := d.lstat(name); err != nil || typ != Regular {
		if err == nil {
			err = ErrNotRegular
		}
		return nil, err
	}
	f, err := d.r.Open(name)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		f.Close()
		if err == nil {
			err = ErrNotRegular
		}
		return nil, err
	}
	return NewStream(f, st.Size()), nil
}
