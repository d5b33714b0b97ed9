package walk

import "os"

// Stater looks entries up by path below a directory, one system call each on
// Unix. Unlike a walk, a lookup follows symlinks in the directories leading
// to the entry (not in the entry itself): it suits checking paths another
// program printed, whose directories the caller verifies one by one.
type Stater struct {
	root *os.Root
	sys  sysDir
}

// NewStater returns a Stater for root's directory.
func NewStater(root *os.Root) (*Stater, error) {
	sys, err := openRoot(root, ".")
	if err != nil {
		return nil, err
	}
	return &Stater{root: root, sys: sys}, nil
}

// Lstat returns the type of the entry at rel (slash-separated, relative to
// the Stater's directory) without following it if it is a symlink.
func (s *Stater) Lstat(rel string) (Type, error) {
	typ, _, err := s.sys.lstat(rel)
	if err != nil {
		return 0, &os.PathError{Op: "lstat", Path: rel, Err: err}
	}
	return typ, nil
}

// Close releases the Stater's directory.
func (s *Stater) Close() error {
	s.sys.close()
	return nil
}
