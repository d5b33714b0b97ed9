package childproc

import (
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"sync"

	"golang.org/x/sys/unix"
)

var (
	hardenOnce sync.Once
	hardenErr  error
)

// Harden makes this process not dumpable, so processes of the same user
// without CAP_SYS_PTRACE can read neither its memory nor its environment
// through /proc (nor attach a debugger to it). It does the work once;
// later calls return the first call's result.
func Harden() error {
	hardenOnce.Do(func() {
		if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
			hardenErr = fmt.Errorf("making the process not dumpable: %w", err)
		}
	})
	return hardenErr
}

// Start hardens this process (see Harden) and starts cmd, as cmd.Start
// does, without the capabilities that read another process (readers) in
// the child's capability sets, when this process has them to lose.
func Start(cmd *exec.Cmd) error { return StartWith(cmd, nil) }

// StartWith is Start, with prepare run first on the OS thread that then
// forks the child, for per-thread settings the child must inherit (a
// cgroup v1 task's membership, say). The thread ends with the call, so
// what prepare changes never reaches the rest of this process; a nil
// prepare is Start.
func StartWith(cmd *exec.Cmd, prepare func() error) error {
	if err := Harden(); err != nil {
		return err
	}
	if !mayRead() && prepare == nil {
		return cmd.Start()
	}
	done := make(chan error, 1)
	go func() {
		// Capability sets are per thread and a child inherits the forking
		// thread's: this goroutine keeps its thread, drops the capabilities
		// there and forks from it (exec.Cmd.Start forks from the calling
		// thread). The thread is never unlocked, so the runtime ends it with
		// the goroutine instead of handing the reduced thread to others.
		runtime.LockOSThread()
		if mayRead() {
			if err := dropReaders(); err != nil {
				done <- err
				return
			}
		}
		if prepare != nil {
			if err := prepare(); err != nil {
				done <- err
				return
			}
		}
		done <- cmd.Start()
	}()
	return <-done
}

// readers are the capabilities with which a process reads a non-dumpable
// one of the same user through /proc. CAP_SYS_PTRACE is the documented one;
// on Linux 6.18, measured, either CAP_SYS_ADMIN or CAP_PERFMON also opens
// environ, maps and smaps, and only without all three are they refused.
// A process agentspec starts has no use for any of them.
var readers = []uintptr{unix.CAP_SYS_PTRACE, unix.CAP_SYS_ADMIN, unix.CAP_PERFMON}

// mayRead reports whether one of the readers is in this thread's bounding
// set, where every thread starts (only Start's threads ever drop them).
func mayRead() bool {
	for _, c := range readers {
		if in, err := unix.PrctlRetInt(unix.PR_CAPBSET_READ, c, 0, 0, 0); err == nil && in == 1 {
			return true
		}
	}
	return false
}

// dropReaders removes the readers from the calling thread's bounding,
// inheritable and ambient sets. A root child gets at execve whatever is in
// the bounding set, plus the inheritable set, so both must lose them. A
// process that may not change its bounding set (no CAP_SETPCAP: it is not
// root, and its children get no capabilities at execve anyway) is left as
// it is, as is a capability the kernel does not know (EINVAL: CAP_PERFMON
// before Linux 5.8).
func dropReaders() error {
	for _, c := range readers {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, c, 0, 0, 0); err != nil {
			if errors.Is(err, unix.EPERM) {
				return nil
			}
			if !errors.Is(err, unix.EINVAL) {
				return fmt.Errorf("dropping capability %d from the bounding set: %w", c, err)
			}
		}
		// Lowering an ambient capability is always allowed; EINVAL means
		// the kernel has no ambient sets, or does not know c.
		if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_LOWER, c, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("dropping capability %d from the ambient set: %w", c, err)
		}
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("reading the thread's capabilities: %w", err)
	}
	changed := false
	for _, c := range readers {
		if bit := uint32(1) << (c % 32); data[c/32].Inheritable&bit != 0 {
			data[c/32].Inheritable &^= bit
			changed = true
		}
	}
	if changed {
		if err := unix.Capset(&hdr, &data[0]); err != nil {
			return fmt.Errorf("dropping capabilities from the inheritable set: %w", err)
		}
	}
	return nil
}
