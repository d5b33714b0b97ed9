package confine

import (
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Wait waits for the command to end and for its output to be written, and
// returns how the shell ended. Confined, nothing of the command is alive
// after it returns; unconfined, the shell's process group is killed when
// the shell ends (processes that left it with setsid are missed). Later
// calls return the first call's answer.
func (p *Process) Wait() (Exit, error) {
	p.waitOnce.Do(func() {
		p.exit, p.err = p.wait()
		if p.stopCtx != nil {
			p.stopCtx()
		}
		p.mu.Lock()
		if p.timer != nil {
			p.timer.Stop()
		}
		p.mu.Unlock()
		if p.lifeline != nil {
			p.lifeline.Close()
		}
		p.reportF.Close()
		if p.cg != nil {
			p.cg.remove()
		}
	})
	return p.exit, p.err
}

func (p *Process) wait() (Exit, error) {
	if !p.sandbox {
		// Wait for the shell without reaping it, so that its pid, the
		// process group's id, cannot be reused while the group is killed.
		var info unix.Siginfo
		for {
			err := unix.Waitid(unix.P_PID, p.cmd.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
			if err != unix.EINTR {
				break
			}
		}
		p.mu.Lock()
		_ = unix.Kill(-p.cmd.Process.Pid, unix.SIGKILL)
		p.reaped = true
		p.mu.Unlock()
	}
	err := p.cmd.Wait()
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) && !errors.Is(err, exec.ErrWaitDelay) {
		return Exit{}, fmt.Errorf("waiting for the command: %w", err)
	}
	st, _ := p.cmd.ProcessState.Sys().(syscall.WaitStatus)
	p.mu.Lock()
	killed := p.killed && st.Signaled() && st.Signal() == syscall.SIGKILL
	p.mu.Unlock()
	if p.sandbox {
		// The init reports the shell's status; without a report the init
		// itself was killed (Kill, the escalation after Terminate, or a
		// SIGKILL from outside).
		rest, _ := io.ReadAll(p.report)
		for _, line := range strings.Split(string(rest), "\n") {
			if s, ok := strings.CutPrefix(line, reportStatus); ok {
				if n, err := strconv.Atoi(s); err == nil {
					st = syscall.WaitStatus(n)
					killed = false // the shell had ended: the status is its own
				}
			}
		}
	}
	e := exitOf(st)
	e.Killed = killed
	return e, nil
}

// exitOf renders a wait status as a shell reports it.
func exitOf(st syscall.WaitStatus) Exit {
	if st.Signaled() {
		return signalled(st.Signal())
	}
	return Exit{Code: st.ExitStatus()}
}

// Terminate sends SIGTERM to every process of the command, and SIGKILL to
// what is left after grace (see Kill). It does not wait.
func (p *Process) Terminate(grace time.Duration) {
	p.signal(unix.SIGTERM)
	p.mu.Lock()
	if p.timer == nil {
		p.timer = time.AfterFunc(grace, p.Kill)
	}
	p.mu.Unlock()
}

// Kill kills every process of the command: confined, the init, with which
// the kernel kills the whole PID namespace; unconfined, the shell's
// process group.
func (p *Process) Kill() { p.signal(unix.SIGKILL) }

func (p *Process) signal(sig unix.Signal) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.sandbox {
		// The init passes SIGTERM on to every process of its namespace;
		// SIGKILL ends it, and the kernel then kills the rest. Whether the
		// shell had ended first, the init's report says (wait).
		p.killed = p.killed || sig == unix.SIGKILL
		_ = p.cmd.Process.Signal(sig)
		return
	}
	if p.reaped {
		return
	}
	if sig == unix.SIGKILL && !p.killed {
		// A shell that has already ended, not yet reaped, keeps its
		// status: this SIGKILL only clears its process group.
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, p.cmd.Process.Pid, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
		// (Linux leaves infop zeroed when WNOHANG finds nothing; an ended
		// child's has si_signo SIGCHLD.)
		p.killed = err == nil && info.Signo == 0
	}
	_ = unix.Kill(-p.cmd.Process.Pid, sig)
}
