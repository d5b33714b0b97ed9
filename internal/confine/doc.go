// Package confine runs one shell command, confined by the kernel.
//
// Start re-executes this program (/proc/self/exe, which must call Main
// first thing) as a small helper, given the command through a pipe, never
// through argv or the environment. Unconfined (`sandbox: off`) the helper
// sets the command's limits and becomes /bin/sh -c: a new session with
// stdin /dev/null, only fds 0-2, exactly the environment the caller built,
// no core dumps, RLIMIT_FSIZE, and, when this process is root, a pids
// cgroup bounding its processes; when the shell ends, its process group is
// killed, which misses processes that called setsid. Nothing else is
// confined then: the command may write, read and connect anywhere this
// user may.
package confine
