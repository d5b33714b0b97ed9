// Package childproc starts child processes that cannot read agentspec's
// memory or environment.
//
// A process agentspec starts (an MCP server's command, later a shell
// command) is code agentspec does not trust, running as the same user. On
// Linux such a process could read /proc/<agentspec>/environ, where the
// provider keys are, and /proc/<agentspec>/mem, even though the child's own
// environment was built without them. Two things close that:
//
//   - Harden marks agentspec's process not dumpable (PR_SET_DUMPABLE 0):
//     the kernel then lets only a process with CAP_SYS_PTRACE read its
//     /proc files of that kind, whatever the uid. It is process-wide and
//     lasts; a program's child gets the default back at execve, so only
//     agentspec's own process changes.
//   - Start starts a child without CAP_SYS_PTRACE, CAP_SYS_ADMIN and
//     CAP_PERFMON: where agentspec runs as root (containers, CI), a child
//     would otherwise have them, and any of them lets it past the first
//     step. They are dropped from the bounding set (and the inheritable and
//     ambient sets) of one dedicated OS thread, which forks the child and
//     then ends, so no other thread of agentspec loses anything.
//
// Start calls Harden itself, so a Go program that embeds agentspec gets both
// before its first child; the agentspec command also calls Harden when it
// starts, so children started by other means (ripgrep) are covered too.
//
// Elsewhere than Linux both are no-ops: the /proc files do not exist, and a
// same-user process's memory is guarded by the system's own rules.
package childproc
