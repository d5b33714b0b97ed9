//go:build !linux

package sandbox

// ListRegular reports that there is no directory listing at hand here: the
// caller looks each name up with Regular.
func (c *Cursor) ListRegular(*[]byte) map[string]bool { return nil }

// WorkDir reports that a directory held by a descriptor has no name here:
// a child starts in a directory by its path.
func (c *Cursor) WorkDir() (string, bool) { return "", false }

// OpenReal reports that the kernel does not name descriptors here: the
// caller resolves the path itself.
func OpenReal(string) (*Dir, string, bool) { return nil, "", false }
