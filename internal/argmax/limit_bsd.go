//go:build darwin || dragonfly || freebsd || netbsd || openbsd

package argmax

import "golang.org/x/sys/unix"

// Limit is the most exec takes of a process's strings: the kernel's
// kern.argmax (ARG_MAX), which Size's pointers, counted or not there,
// only make safer. 0 when it cannot be read: then nothing is refused.
func Limit() int {
	n, err := unix.SysctlUint32("kern.argmax")
	if err != nil {
		return 0
	}
	return int(n)
}

// Rule says where Limit comes from, for a message.
const Rule = "the system's kern.argmax"
