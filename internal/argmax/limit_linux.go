package argmax

import "golang.org/x/sys/unix"

// Limit is the most exec takes of a process's strings and their pointers
// (Size), by Linux's rule (fs/exec.c, since 4.13): a quarter of the stack's
// soft limit (RLIMIT_STACK, which the process started inherits from this
// one), but no more than three quarters of 8 MiB (_STK_LIM) and no less
// than 128 KiB (ARG_MAX). With the usual 8 MiB stack that is
// 2 MiB; with an unlimited one, 6 MiB.
func Limit() int {
	const (
		most  = 8 << 20 / 4 * 3
		least = 32 * 4096
	)
	var r unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_STACK, &r); err != nil {
		return least
	}
	return max(least, int(min(uint64(most), r.Cur/4)))
}

// Rule says where Limit comes from, for a message.
const Rule = "a quarter of the stack size limit, `ulimit -s`, but no less than 128 KiB and no more than 6 MiB"
