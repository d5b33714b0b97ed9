// Package confine runs one shell command, confined by the kernel (D13 to
// D15 of the Shell reference).
//
// Start re-executes this program (its file, which must call Main first
// thing) as a helper, and gives it the command through a pipe, never
// through argv or the environment, which the command could read.
//
// # Confined (Command.Sandbox)
//
// The helper is the command's init: PID 1 of new user (the caller's uid and
// gid mapped to themselves), mount, PID, IPC and, without Policy.Network,
// network namespaces. Before anything of the command runs it builds the
// command's view: mounts made private; a fresh /proc; W (Policy.Root) and T
// (Policy.Temp) bound onto themselves; each mask a read-only /dev/null
// (file, or a symlink itself, which then leads nowhere) or empty read-only
// tmpfs (directory); each ReadOnly path bound
// read-only (both opened below W without following a symlink, a piece at a
// time, so a path longer than PATH_MAX is covered too; one that cannot be
// covered fails Start with a *MaskError, and nothing of the command runs);
// /dev replaced by a read-only tmpfs with only null, zero, full, random,
// urandom and tty bound read-only from the host's (a command of root could
// otherwise read a disk raw, past every mask, or chmod the host's
// /dev/null), and W and T, where they lie below /dev (a TMPDIR or a
// workspace on /dev/shm), put back at their paths with their masks and
// read-only binds; /proc/sys read-only; then every other mount, /sys included,
// made read-only, which keeps the flags the host locked. It then confines
// the one thread it forks the shell from: no_new_privs; Landlock at the
// kernel's ABI, any from 1, or the command fails (read and execute
// everywhere, write below W and T, with REFER from ABI 2, write to
// /dev/null, /dev/zero, /dev/full; without
// network TCP bind and connect denied, and from ABI 9 and 10 pathname Unix
// sockets and UDP; abstract Unix sockets and signals scoped from ABI 6); a
// seccomp filter that refuses the kernel's keyrings (add_key, request_key
// and keyctl fail with ENOSYS; /proc/keys reads as empty) and, without
// network, fails with EACCES socket(2) of any family but IP and netlink
// (AF_UNIX, AF_VSOCK); the rlimits; no capabilities at all. It forks
// /bin/sh -c (a script longer than one argument may be is read by sh
// from a sealed memfd, fd 3, which it closes before it evaluates the
// script), reaps everything, and reports the shell's status; when it
// exits, the kernel kills every process left in the namespace, so nothing
// of a command outlives Wait, setsid and double forks included. Terminate
// has it pass SIGTERM to every process of the namespace; Kill kills it.
//
// What it stops, as the tests show (escape_linux_test.go, network_ and
// procs_): writes, renames, links, deletes, chmod and utime outside W and
// T, whatever the path (.., absolute, symlink, hard link, /proc/self/root,
// $HOME, /tmp, /var/tmp, /dev/shm); reading a masked file or directory by
// any route (cat, symlink, copy, tar, grep -r, unmounting it, even from a
// nested user namespace); changes to .git; TCP, UDP and Unix sockets to the
// host, loopback included, and vsock to a virtual machine's host; seeing,
// signalling or reading the process that started it; the host's System V
// IPC; the keys of the user's keyrings, which no namespace separates; more
// than Policy.MaxProcs processes (a pids cgroup when this process is root,
// which the kernel otherwise exempts; RLIMIT_NPROC in the user namespace
// else).
//
// What it does not stop: reading any file not masked (the command sees the
// system as this user does, which is how it runs compilers and tools);
// a file created after the command started is not masked, nor a masked
// file's contents reached through another hard link made before; with
// Network the command has this host's network, abstract Unix sockets
// included; CPU, memory and disk use inside W and T are not bounded
// (only the size of one file, Policy.MaxFileBytes); no pseudo-terminals
// (/dev/pts is empty) or POSIX shared memory (/dev/shm is read-only).
//
// # Unconfined (`sandbox: off`)
//
// The helper sets the command's limits and becomes /bin/sh -c: a new
// session with stdin /dev/null, only fds 0-2, exactly Command.Env, no core
// dumps, RLIMIT_FSIZE, and a pids cgroup bounding its processes when this
// process is root. When the shell ends its process group is killed (and,
// as root, whatever is left in its pids cgroup); processes that called
// setsid are missed otherwise. Nothing else is confined: the command may
// write, read and connect anywhere this user may.
//
// Elsewhere than Linux, Available says why nothing can be confined and
// Start refuses.
package confine
