package confine

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The seccomp filter of every confined command: the kernel's keyrings,
// which no namespace separates (a key or keyring of the caller's uid that
// the uid may read or write, the user's own keyrings among them, would be
// the command's to read, fill or clear), are not there: add_key,
// request_key and keyctl fail with ENOSYS, as where keys are not built in.
// Without network, also: socket(2) makes only IP and netlink sockets,
// which the command's network namespace holds, and fails with EACCES for
// every other family: AF_UNIX, so that no pathname Unix socket
// (docker.sock, D-Bus, X11) can be connected to, which Landlock cannot
// stop below ABI 9 and the read-only mounts never do; AF_VSOCK, which no
// network namespace holds and which reaches the host of a virtual
// machine; and any family that may be the same. socketpair(2) stays
// allowed. io_uring fails with ENOSYS (programs then fall back to plain
// system calls): its IORING_OP_SOCKET and IORING_OP_CONNECT never pass
// through this filter. A system call of another ABI than this binary's
// (x86's i386 and x32 entry points, say), whose numbers the filter does
// not know, fails with ENOSYS.

// seccompData offsets (struct seccomp_data).
const (
	offNr   = 0
	offArch = 4
	offArg0 = 16 // low 32 bits on little-endian machines
)

func stmt(code uint16, k uint32) unix.SockFilter { return unix.SockFilter{Code: code, K: k} }

func jump(code uint16, k uint32, jt, jf uint8) unix.SockFilter {
	return unix.SockFilter{Code: code, Jt: jt, Jf: jf, K: k}
}

// seccompFilter builds the program for this architecture, for a command
// with or without network; ok is false where there is none.
func seccompFilter(network bool) (prog []unix.SockFilter, ok bool) {
	if nativeArch == 0 {
		return nil, false
	}
	const (
		ld     = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq    = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jge    = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
		ret    = unix.BPF_RET | unix.BPF_K
		allow  = unix.SECCOMP_RET_ALLOW
		enosys = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
		eacces = unix.SECCOMP_RET_ERRNO | uint32(unix.EACCES)
	)
	prog = []unix.SockFilter{
		stmt(ld, offArch),
		jump(jeq, nativeArch, 1, 0),
		stmt(ret, enosys),
		stmt(ld, offNr),
		jump(jge, foreignNrBase, 0, 1), // x32 numbers on x86-64
		stmt(ret, enosys),
	}
	absent := []uint32{unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY, unix.SYS_KEYCTL}
	if !network {
		absent = append(absent, unix.SYS_IO_URING_SETUP, unix.SYS_IO_URING_ENTER, unix.SYS_IO_URING_REGISTER)
	}
	// Each matching number jumps to the ENOSYS after the last test; the
	// last one's miss jumps over it.
	for i, nr := range absent {
		var miss uint8
		if i == len(absent)-1 {
			miss = 1
		}
		prog = append(prog, jump(jeq, nr, uint8(len(absent)-1-i), miss))
	}
	prog = append(prog, stmt(ret, enosys))
	if !network {
		prog = append(prog,
			jump(jeq, unix.SYS_SOCKET, 0, 5),
			stmt(ld, offArg0),
			jump(jeq, unix.AF_INET, 3, 0),
			jump(jeq, unix.AF_INET6, 2, 0),
			jump(jeq, unix.AF_NETLINK, 1, 0),
			stmt(ret, eacces),
		)
	}
	return append(prog, stmt(ret, allow)), true
}

// installSeccomp filters the calling thread's system calls (only its: no
// TSYNC), and what it forks after. The thread must have no_new_privs set.
func installSeccomp(network bool) error {
	prog, ok := seccompFilter(network)
	if !ok {
		return fmt.Errorf("no seccomp filter for this architecture")
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if _, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&fprog))); errno != 0 {
		return fmt.Errorf("installing the seccomp filter: %w", errno)
	}
	return nil
}
