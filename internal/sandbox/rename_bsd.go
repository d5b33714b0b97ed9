//go:build unix && !linux

package sandbox

// renameNoReplace renames from to to in the directory dirfd, failing with
// EEXIST when to exists.
func renameNoReplace(dirfd int, from, to string) error { return linkNoReplace(dirfd, from, to) }
