//go:build !linux

package walk

import (
	"errors"
	"io"
	"io/fs"
)

// list returns the directory's entries, unsorted, stopping once it has more
// than max.
func (d sysDir) list(_ *[]byte, max int) ([]dirent, error) {
	f, err := d.dirFile()
	if err != nil {
		return nil, err
	}
	defer f.Close()
	des, err := f.ReadDir(max + 1)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	out := make([]dirent, 0, len(des))
	for _, de := range des {
		out = append(out, dirent{name: de.Name(), typ: typeOf(de.Type())})
	}
	return out, nil
}

func typeOf(m fs.FileMode) Type {
	switch {
	case m.IsRegular():
		return Regular
	case m&fs.ModeDir != 0:
		return Dir
	case m&fs.ModeSymlink != 0:
		return Symlink
	}
	return Other
}
