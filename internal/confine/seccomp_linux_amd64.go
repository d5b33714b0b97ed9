package confine

import "golang.org/x/sys/unix"

// nativeArch is the audit architecture of this binary's system calls.
const nativeArch = unix.AUDIT_ARCH_X86_64

// foreignNrBase is where system call numbers of another ABI sharing the
// architecture start: x32's, which set bit 30.
const foreignNrBase = 0x40000000
