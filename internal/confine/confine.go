package confine

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"

	"github.com/agentspec/agentspec/internal/argmax"
)

// DefaultMaxProcs bounds the processes of a command whose Policy leaves
// MaxProcs at 0.
const DefaultMaxProcs = 512

// MaxScript is the longest Command.Script Start runs: the helper reads a
// command of a bounded size before it trusts it.
const MaxScript = 32 << 20

// shell runs every command.
const shell = "/bin/sh"

// readScript is what sh -c runs in place of a script too long to be its
// argument (or to go beside the environment): it reads the script from
// scriptFD and evaluates it in the same shell, $0 and the arguments
// unchanged, with scriptFD closed, so that the command and what it starts
// have fds 0-2 only. A script is never read from stdin, which the
// command's programs read (/dev/null). The script loses its trailing
// newlines, as the shell's parser ignores them; without cat the command
// fails with 127, as a program not found does.
const readScript = `eval "$(cat <&3 || echo exit 127)" 3<&-`

// ExecSize is what exec counts (argmax.Size) of the shell of a command
// whose environment is env, at the least: a script that would not fit
// beside env as sh's argument is read from a file, and the argument is
// then readScript, whatever the script. A command runs when this is at
// most argmax.Limit().
func ExecSize(env []string) int { return argmax.Size(shell, []string{"sh", "-c", readScript}, env) }

// ErrScriptTooLong is Start's error for a Command.Script longer than
// MaxScript. The command did not run.
var ErrScriptTooLong = fmt.Errorf("the command is longer than %d MiB", MaxScript>>20)

// Policy says what a confined command may do.
type Policy struct {
	// Root is the absolute workspace root W: the command may write below it.
	Root string
	// Temp is the command's absolute private temp directory T (0700): the
	// command may write below it. The caller creates and removes it.
	Temp string
	// Masks are absolute paths the command reads as empty: a regular file
	// becomes a read-only bind of /dev/null, a directory an empty read-only
	// tmpfs, and a symlink, itself and not what it leads to, a read-only
	// bind of /dev/null too (it then leads nowhere). No component but the
	// last is followed. Paths that no longer exist are skipped; one that
	// exists but cannot be covered fails Start with a *MaskError. A path
	// below Root may be longer than PATH_MAX.
	Masks []string
	// ReadOnly are absolute paths below Root bound read-only (a workspace's
	// .git directories and files), skipped and failing as Masks are; a
	// symlink is skipped.
	ReadOnly []string
	// Network lets the command use the network. Without it the command gets
	// a network namespace of its own (no interfaces up), Landlock denies TCP
	// bind and connect, and socket(2) of any family but IP and netlink
	// (AF_UNIX, AF_VSOCK) fails with EACCES.
	Network bool
	// MaxProcs bounds the command's processes (threads included); 0 means
	// DefaultMaxProcs.
	MaxProcs int
	// MaxFileBytes bounds the size of any file the command writes
	// (RLIMIT_FSIZE); 0 means no bound.
	MaxFileBytes int64
}

// Command is one shell command to run.
type Command struct {
	// Script runs as /bin/sh -c Script (one longer than an argument may
	// be is read by the shell from a file it is given, and evaluated).
	Script string
	// Dir is the absolute working directory (inside Policy.Root).
	Dir string
	// Env is the command's whole environment; nothing of this process's
	// environment is added.
	Env []string
	// Stdout and Stderr receive the command's output as it arrives, written
	// from goroutines of this package; nil discards.
	Stdout, Stderr io.Writer
	// Sandbox confines the command as Policy says. Without it (`sandbox:
	// off`) the command still runs in a new session with stdin /dev/null,
	// only fds 0-2, and the rlimits, but with no namespaces, Landlock or
	// seccomp; its processes are bounded only when this process is root
	// (a pids cgroup), RLIMIT_NPROC counting every process of the user.
	Sandbox bool
	// Policy is what the command may do.
	Policy Policy
}

// Exit is how a command ended.
type Exit struct {
	// Code is the exit status as a shell reports it: 128+N after death by
	// signal N.
	Code int
	// Signal is the signal that killed the shell, 0 when it exited.
	Signal syscall.Signal
	// Killed says the Process's own SIGKILL (Kill, a cancelled context,
	// Terminate's escalation) ended the command before it ended on its
	// own: Code and Signal then say that SIGKILL, not a status of the
	// shell's. A SIGKILL from anywhere else is the shell's status.
	Killed bool
}

// String renders the exit as a shell would describe it.
func (e Exit) String() string {
	if e.Signal != 0 {
		return fmt.Sprintf("killed by signal %d (%v), exit code %d", int(e.Signal), e.Signal, e.Code)
	}
	return fmt.Sprintf("exit code %d", e.Code)
}

// MaskError is Start's error when a path of Policy.Masks or
// Policy.ReadOnly exists but could not be covered. The command did not run:
// no command runs with a mask missing.
type MaskError struct {
	// Path is the path of the Policy, as the kernel names it (W's and T's
	// symlinks resolved).
	Path string
	// Err says why; errors.Is finds the errno behind it.
	Err error
}

func (e *MaskError) Error() string { return e.Err.Error() }

func (e *MaskError) Unwrap() error { return e.Err }

// DirError is Start's error when the command's directory (Command.Dir)
// cannot be entered: it is gone, no longer a directory, or the command may
// not search it. The command did not run.
type DirError struct {
	// Err says why; errors.Is finds the errno behind it.
	Err error
}

func (e *DirError) Error() string { return e.Err.Error() }

func (e *DirError) Unwrap() error { return e.Err }

// signalled is the Exit of a death by signal sig.
func signalled(sig syscall.Signal) Exit { return Exit{Code: 128 + int(sig), Signal: sig} }

// unavailable builds Available's error from what is missing.
func unavailable(missing []string) error {
	if len(missing) == 0 {
		return nil
	}
	return errors.New("Shell cannot confine commands on this system: " + strings.Join(missing, "; ") +
		". Set `sandbox: off` on the Shell entry to run them unconfined.")
}

func (p Policy) maxProcs() int {
	if p.MaxProcs <= 0 {
		return DefaultMaxProcs
	}
	return p.MaxProcs
}
