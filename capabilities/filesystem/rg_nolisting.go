//go:build !linux

package filesystem

// rgListing looks each name up where no directory listing is at hand.
type rgListing struct{}

// regular reports whether name, in the directory c is at, is a regular file.
func (*rgListing) regular(c *cursor, name string, _ *[]byte) bool { return regularAt(c, name) }
