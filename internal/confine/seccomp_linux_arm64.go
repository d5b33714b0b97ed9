package confine

import "golang.org/x/sys/unix"

// nativeArch is the audit architecture of this binary's system calls.
const nativeArch = unix.AUDIT_ARCH_AARCH64

// foreignNrBase is past every arm64 system call number: none other shares
// the architecture.
const foreignNrBase = 0x40000000
