package confine

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// Main runs the confinement helper when this process was started as one,
// and never returns then; otherwise it returns at once. Call it first
// thing in main, and in TestMain of packages that start commands: Start
// re-executes this program's file, which must come here. It costs one look
// at argv when the process is not a helper.
func Main() {
	if len(os.Args) != 2 || os.Args[1] != initArg || len(os.Environ()) != 1 || os.Environ()[0] != initEnv {
		return
	}
	os.Exit(helper())
}

// helper reads the request and runs it: unconfined it becomes the shell
// (exec, same process); confined it is the command's init. It returns the
// helper's exit status when it does not exec.
func helper() int {
	// Only fds 0-2 reach the shell: whatever this process inherited
	// besides (fds its parent got without close-on-exec) closes at exec.
	if err := unix.CloseRange(requestFD, math.MaxUint32, unix.CLOSE_RANGE_CLOEXEC); err != nil {
		for fd := requestFD; fd < 1024; fd++ {
			unix.CloseOnExec(fd)
		}
	}
	report := os.NewFile(reportFD, "report")
	in := os.NewFile(requestFD, "request")
	fail := func(err error) int { return reportFailure(report, err) }
	req, err := readRequest(in)
	if err != nil {
		return fail(err)
	}
	if req.Sandbox {
		return runInit(req, in, report)
	}
	argv, script, err := shellArgs(req.Script, req.Env)
	if err != nil {
		return fail(err)
	}
	in.Close()
	if script != nil {
		// In the request's place, which the shell is the first to have.
		if err := unix.Dup3(int(script.Fd()), scriptFD, 0); err != nil {
			return fail(fmt.Errorf("handing the command to the shell: %w", err))
		}
	}
	if err := setRlimits(req); err != nil {
		return fail(err)
	}
	if err := enterDir(req.Dir); err != nil {
		return fail(err)
	}
	// On success the report pipe closes at exec (close-on-exec), which the
	// parent reads as "started".
	err = syscall.Exec(shell, argv, req.Env)
	return fail(fmt.Errorf("starting %s: %w", shell, err))
}

// reportFailure tells the parent why the command could not start, with
// the errno behind it (0 if none) so that the parent's error still
// matches it (errors.Is(err, fs.ErrNotExist), say), and returns the
// helper's exit status.
func reportFailure(report *os.File, err error) int {
	var errno syscall.Errno
	errors.As(err, &errno)
	if me, ok := errors.AsType[*MaskError](err); ok {
		// The path too, quoted, so that the parent can name it.
		fmt.Fprintf(report, "%s%d %s %s\n", reportMaskError, int(errno), strconv.Quote(me.Path), oneLine(err.Error()))
		return 126
	}
	if _, ok := errors.AsType[*DirError](err); ok {
		fmt.Fprintf(report, "%s%d %s\n", reportDirError, int(errno), oneLine(err.Error()))
		return 126
	}
	fmt.Fprintf(report, "%s%d %s\n", reportError, int(errno), oneLine(err.Error()))
	return 126
}

// enterDir makes dir this process's working directory, which the shell
// inherits; its failure is a *DirError.
func enterDir(dir string) error {
	if err := os.Chdir(dir); err != nil {
		return &DirError{Err: fmt.Errorf("entering the command's directory: %w", err)}
	}
	return nil
}

func oneLine(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c == '\n' || c == '\r' {
			b[i] = ' '
		}
	}
	return string(b)
}

// setRlimits applies the per-command limits to this process, which the
// shell inherits: no core dumps, the file size bound, and the process
// bound when no pids cgroup holds the command.
func setRlimits(req request) error {
	if err := unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{}); err != nil {
		return fmt.Errorf("disabling core dumps: %w", err)
	}
	if n := req.Policy.MaxFileBytes; n > 0 {
		if err := lowerRlimit(unix.RLIMIT_FSIZE, uint64(n)); err != nil {
			return fmt.Errorf("Unable to apply max_file_bytes: %w", err)
		}
	}
	if req.SetNproc {
		// The count is per user namespace, and includes this init's
		// threads, which the command's room should not pay for.
		n := uint64(req.Policy.maxProcs() + ownThreads() + 4)
		if err := lowerRlimit(unix.RLIMIT_NPROC, n); err != nil {
			return fmt.Errorf("bounding the command's processes: %w", err)
		}
	}
	return nil
}

// lowerRlimit sets both limits of res to n, or leaves a lower hard limit.
func lowerRlimit(res int, n uint64) error {
	var cur unix.Rlimit
	if err := unix.Getrlimit(res, &cur); err != nil {
		return err
	}
	if cur.Max < n {
		n = cur.Max
	}
	return unix.Setrlimit(res, &unix.Rlimit{Cur: n, Max: n})
}

// ownThreads counts this process's threads.
func ownThreads() int {
	entries, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return 0
	}
	return len(entries)
}
