//go:build unix

package shell

import "syscall"

// captureFlags open a persist_cwd capture without following a symlink or
// waiting for a FIFO's writer.
const captureFlags = syscall.O_NOFOLLOW | syscall.O_NONBLOCK
