package confine

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentspec/agentspec/internal/childproc"
)

// outputGrace is how long Wait keeps reading output after the command's
// processes are gone (or, unconfined, after its process group was
// killed): only a process that escaped can still hold the pipes then.
const outputGrace = 2 * time.Second

// Process is a running command.
type Process struct {
	cmd      *exec.Cmd
	sandbox  bool
	report   *bufio.Reader
	reportF  *os.File
	lifeline *os.File // confined: closing it makes the init end the command
	cg       *cgroup

	mu     sync.Mutex
	reaped bool // unconfined: the shell is reaped, its pid may be reused
	killed bool // Kill sent SIGKILL before the shell (unconfined) had ended
	timer  *time.Timer

	stopCtx  func() bool
	waitOnce sync.Once
	exit     Exit
	err      error
}

// Start starts c. Cancelling ctx kills the command (Kill). Start returns
// once the shell runs, or an error that says what could not be set up.
func Start(ctx context.Context, c Command) (*Process, error) {
	if len(c.Script) > MaxScript {
		return nil, ErrScriptTooLong
	}
	c, err := c.resolved()
	if err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("starting the command: %w", context.Cause(ctx))
	}
	req := request{Script: c.Script, Dir: c.Dir, Env: c.Env, Sandbox: c.Sandbox, Policy: c.Policy}
	var cg *cgroup
	if os.Geteuid() == 0 {
		if cg, err = newCgroup(c.Policy.maxProcs()); err != nil && c.Sandbox {
			return nil, fmt.Errorf("bounding the command's processes: %w", err)
		}
	} else {
		// Unconfined, RLIMIT_NPROC would count every process of the user,
		// not the command's: only a user namespace makes it per command.
		req.SetNproc = c.Sandbox
	}
	p, err := start(ctx, c, req, cg)
	if err != nil {
		if cg != nil {
			cg.remove()
		}
		return nil, err
	}
	return p, nil
}

func start(ctx context.Context, c Command, req request, cg *cgroup) (*Process, error) {
	reqR, reqW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("creating the command's pipes: %w", err)
	}
	repR, repW, err := os.Pipe()
	if err != nil {
		reqR.Close()
		reqW.Close()
		return nil, fmt.Errorf("creating the command's pipes: %w", err)
	}
	self, err := executable()
	if err != nil {
		reqR.Close()
		reqW.Close()
		repR.Close()
		repW.Close()
		return nil, err
	}
	cmd := &exec.Cmd{
		Path:       self,
		Args:       []string{initArg, initArg},
		Env:        []string{initEnv},
		Dir:        "/",
		Stdout:     c.Stdout,
		Stderr:     c.Stderr,
		ExtraFiles: []*os.File{reqR, repW},
		WaitDelay:  outputGrace,
	}
	cmd.Args[0] = "agentspec-confine"
	if c.Sandbox {
		cmd.SysProcAttr, req.MapIDs = sandboxAttr(c.Policy)
	} else {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	}
	var prepare func() error
	var cgFiles []*os.File
	switch {
	case cg != nil && c.Sandbox:
		// The init's thread joins the cgroup just to fork the shell, so
		// that the init's other threads do not count against the command.
		if cgFiles, err = cg.taskFiles(); err != nil {
			reqR.Close()
			reqW.Close()
			repR.Close()
			repW.Close()
			return nil, err
		}
		cmd.ExtraFiles = append(cmd.ExtraFiles, cgFiles...)
		req.Cgroup = true
	case cg != nil:
		prepare = cg.join
	}
	err = childproc.StartWith(cmd, prepare)
	if cg != nil {
		cg.evictSelf()
	}
	for _, f := range cgFiles {
		f.Close()
	}
	reqR.Close()
	repW.Close()
	if err != nil {
		reqW.Close()
		repR.Close()
		return nil, fmt.Errorf("starting the command's helper (%s): %w", cmd.Path, err)
	}
	p := &Process{cmd: cmd, sandbox: c.Sandbox, reportF: repR, report: bufio.NewReader(repR), cg: cg}
	// From here a cancelled ctx kills the helper, during its setup too.
	p.stopCtx = context.AfterFunc(ctx, p.Kill)
	if err := writeRequest(reqW, req); err != nil {
		reqW.Close()
		p.abort()
		return nil, err
	}
	if c.Sandbox {
		p.lifeline = reqW
	} else {
		reqW.Close()
	}
	line, err := p.report.ReadString('\n')
	switch {
	case strings.HasPrefix(line, reportError):
		p.abort()
		return nil, parseFailure(strings.TrimPrefix(line, reportError))
	case strings.HasPrefix(line, reportMaskError):
		p.abort()
		return nil, parseMaskFailure(strings.TrimPrefix(line, reportMaskError))
	case strings.HasPrefix(line, reportDirError):
		p.abort()
		return nil, &DirError{Err: parseFailure(strings.TrimPrefix(line, reportDirError))}
	case c.Sandbox && line == reportStarted+"\n":
		return p, nil
	case !c.Sandbox && err == io.EOF && line == "":
		return p, nil // the helper became the shell
	}
	p.abort()
	if ctx.Err() != nil {
		return nil, fmt.Errorf("starting the command: %w", context.Cause(ctx))
	}
	if err != nil && err != io.EOF {
		return nil, fmt.Errorf("reading the command's helper: %w", err)
	}
	return nil, fmt.Errorf("the command's helper ended before the command started (%s)", p.cmd.ProcessState)
}

// executable is this program's file, which runs the helper. The path,
// not /proc/self/exe: this process is not dumpable (childproc.Harden), and
// a child that has entered a user namespace of its own may then no longer
// follow its /proc/self/exe.
func executable() (string, error) {
	path, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return "", fmt.Errorf("finding this program's file to run the confinement helper: %w", err)
	}
	if strings.HasSuffix(path, " (deleted)") {
		return "", fmt.Errorf("this program's file %s was removed or replaced since it started; restart it to run commands", strings.TrimSuffix(path, " (deleted)"))
	}
	return path, nil
}

// abort ends a helper that did not start the command.
func (p *Process) abort() {
	p.stopCtx()
	_ = p.cmd.Process.Kill()
	_ = p.cmd.Wait()
	p.reportF.Close()
	if p.lifeline != nil {
		p.lifeline.Close()
	}
}
