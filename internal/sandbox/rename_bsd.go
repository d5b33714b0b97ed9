//go:build unix && !linux

package sandbox

// RenameNoReplace renames from to to in the directory dirfd, failing with
// EEXIST when to exists.
func RenameNoReplace(dirfd int, from, to string) error { return LinkNoReplace(dirfd, from, to) }
