//go:build !unix

package cache

import "os"

// lockLog locks nothing here: a record another process appends while its
// log is being rewritten may be lost, and stored again by the run that
// misses it (see lock_unix.go).
func lockLog(*os.File, bool) error { return nil }

// locksLogs is false: lockLog locks nothing here.
const locksLogs = false
