package confine

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// runInit is the confined command's init: PID 1 of the command's PID
// namespace, in its user, mount and network namespaces. It builds the
// command's view of the filesystem, confines its own main thread (D13's
// order: Landlock, seccomp, rlimits, no capabilities, no_new_privs), forks
// the shell from that thread, reaps everything until the shell ends and
// reports its status. When it exits, for whatever reason, the kernel kills
// every process left in the namespace.
func runInit(req request, lifeline, report *os.File) int {
	// The main goroutine keeps this thread, which alone is confined and
	// forks the shell; the runtime's other threads never run it.
	runtime.LockOSThread()
	fail := func(err error) int { return reportFailure(report, err) }
	if req.MapIDs != nil {
		if err := mapIDs(*req.MapIDs); err != nil {
			return fail(err)
		}
	}
	// Nothing of the command may read this process's memory.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fail(fmt.Errorf("making the init not dumpable: %w", err))
	}
	if err := setupMounts(req.Policy); err != nil {
		return fail(err)
	}
	argv, script, err := shellArgs(req.Script, req.Env)
	if err != nil {
		return fail(err)
	}
	files := []*os.File{os.Stdin, os.Stdout, os.Stderr}
	if script != nil {
		files = append(files, script) // scriptFD
	}
	if err := setRlimits(req); err != nil {
		return fail(err)
	}
	if err := confineThread(req.Policy); err != nil {
		return fail(err)
	}
	// SIGTERM (Terminate) goes on to every process of the namespace; it is
	// caught before the shell exists, so none is lost.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, unix.SIGTERM, unix.SIGINT, unix.SIGHUP)
	if req.Cgroup {
		if err := moveThread(cgroupTasksFD); err != nil {
			return fail(fmt.Errorf("entering the command's pids cgroup: %w", err))
		}
	}
	// The directory is entered here, with the shell's credentials and
	// Landlock domain, so that a directory the shell could not enter is
	// told apart from any other failure to start it.
	if err := enterDir(req.Dir); err != nil {
		return fail(err)
	}
	proc, err := os.StartProcess(shell, argv, &os.ProcAttr{
		Env:   req.Env,
		Files: files,
		Sys:   &syscall.SysProcAttr{},
	})
	if err != nil {
		return fail(fmt.Errorf("starting %s: %w", shell, err))
	}
	if script != nil {
		script.Close()
	}
	if req.Cgroup {
		// The shell stays; this thread leaves, and fails the command
		// rather than take the command's room.
		if err := moveThread(parentTasksFD); err != nil {
			return fail(fmt.Errorf("leaving the command's pids cgroup: %w", err))
		}
		unix.Close(cgroupTasksFD)
		unix.Close(parentTasksFD)
	}
	go func() {
		for s := range sigs {
			_ = unix.Kill(-1, s.(syscall.Signal))
		}
	}()
	// The parent holds the request pipe open until it is done with the
	// command; end of file means it died (or gave up): end everything.
	go func() {
		_, _ = io.Copy(io.Discard, lifeline)
		os.Exit(128 + int(unix.SIGKILL))
	}()
	fmt.Fprintln(report, reportStarted)
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, 0, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fail(fmt.Errorf("waiting for the shell: %w", err))
		}
		if pid != proc.Pid {
			continue // an orphan the namespace's init inherits
		}
		fmt.Fprintf(report, "%s%d\n", reportStatus, int(ws))
		if ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ws.ExitStatus()
	}
}

// confineThread confines the calling thread, from which the shell is
// forked: no_new_privs, Landlock, seccomp, then no capabilities.
func confineThread(p Policy) error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("setting no_new_privs: %w", err)
	}
	if err := restrictLandlock(p, landlockABI()); err != nil {
		return err
	}
	if err := installSeccomp(p.Network); err != nil {
		return err
	}
	return dropCapabilities()
}
