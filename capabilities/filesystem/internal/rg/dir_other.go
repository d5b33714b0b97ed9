//go:build !linux

package rg

// DirOf reports that there is no name for a directory held by a descriptor
// here: the caller passes Start a path.
func DirOf(int) (string, bool) { return "", false }
