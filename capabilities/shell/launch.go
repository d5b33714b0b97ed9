package shell

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/internal/confine"
)

// launch is a command that passed the checks and its listeners, about to
// start.
type launch struct {
	command    string
	dir        string // where it starts, absolute
	background bool
	capture    string // persist_cwd: the file its final directory is written to
}

// prepare checks a command (and timeout, when given) and asks the
// listeners. It returns the launch, or, when a listener cancelled the
// command, the result saying so. Refusals are retries; a closed capability
// is fatal.
func (c *Capability) prepare(ctx context.Context, a args, background bool, timeout *float64) (*launch, string, error) {
	command := *a.Command
	// Before the checks, which would read it all, and before the
	// listeners, who would be asked about a command that cannot run.
	if len(command) > confine.MaxScript {
		return nil, "", tooLong(len(command))
	}
	if err := c.cfg.check(command, a.badEncoding); err != nil {
		return nil, "", err
	}
	if timeout != nil {
		switch t := *timeout; {
		case t <= 0:
			return nil, "", capabilities.Retry("timeout_seconds must be greater than zero.")
		case t > c.cfg.maxTimeout:
			return nil, "", capabilities.Retry("timeout_seconds must be at most %s seconds.", pyFloat(c.cfg.maxTimeout))
		}
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, "", ErrClosed
	}
	if background && c.runningJobs()+c.starting >= c.cfg.maxBackground {
		c.mu.Unlock()
		return nil, "", capabilities.Retry("Too many background commands are running (%d); stop one with stop_command first.", c.cfg.maxBackground)
	}
	dir, err := c.startDir()
	if err == nil && background {
		c.starting++ // its place is kept until it runs or does not
	}
	c.mu.Unlock()
	if err != nil {
		return nil, "", err
	}
	req := &CommandRequestEvent{
		Command: command, Cwd: c.relDir(dir), RootDir: c.root,
		Background: background, Sandboxed: c.cfg.sandbox,
	}
	if err := capabilities.Emit(ctx, req); err != nil {
		c.release(background)
		return nil, "", err
	}
	if cancelled, reason := req.Cancelled(); cancelled {
		c.release(background)
		return nil, notRun(reason), nil
	}
	return &launch{command: command, dir: dir, background: background}, "", nil
}

// release gives back the place prepare kept for a background command
// that does not start.
func (c *Capability) release(background bool) {
	if background {
		c.mu.Lock()
		c.starting--
		c.mu.Unlock()
	}
}

// startDir is where the next command starts: the directory persist_cwd
// kept, else the workspace. A kept directory that is gone is forgotten,
// with the reference's retry; a workspace that is gone is the reference's
// retry too. c.mu is held.
func (c *Capability) startDir() (string, error) {
	dir := c.root
	if c.cwd != "" {
		dir = c.cwd
	}
	st, err := os.Stat(dir)
	switch {
	case err == nil && st.IsDir():
		return dir, nil
	case c.cwd != "" && err == nil:
		err = syscall.ENOTDIR
		fallthrough
	case c.cwd != "":
		c.cwd = ""
		return "", c.cwdRetry(err)
	case err == nil:
		return "", capabilities.Retry("The working directory is no longer a directory.")
	case errors.Is(err, os.ErrNotExist):
		return "", capabilities.Retry("The working directory no longer exists.")
	case errors.Is(err, syscall.ENOTDIR):
		return "", capabilities.Retry("The working directory is no longer a directory.")
	case errors.Is(err, os.ErrPermission):
		return "", capabilities.Retry("%v", err)
	}
	return "", fmt.Errorf("shell: the working directory: %w", err)
}

// forgetCwd forgets the directory persist_cwd kept when it is dir, which
// the command could not enter (err), and returns the reference's retry;
// nil when dir was not the kept one.
func (c *Capability) forgetCwd(dir string, err error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cwd == "" || c.cwd != dir {
		return nil
	}
	c.cwd = ""
	return c.cwdRetry(err)
}

// cwdRetry is the reference's retry for a kept directory that cannot be
// entered for err: removed when it is gone or no longer a directory, as
// the reference says of both; lost for anything else (its permissions).
func (c *Capability) cwdRetry(err error) error {
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return capabilities.Retry("The previous directory was removed; now in %s.", c.root)
	}
	return capabilities.Retry("The saved working directory was lost; now in the workspace working directory.")
}

// relDir is dir as events show it: relative to the workspace, "." for it,
// absolute when outside.
func (c *Capability) relDir(dir string) string {
	rel, err := filepath.Rel(c.root, dir)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return dir
	}
	return filepath.ToSlash(rel)
}

// start starts l with its output going to stdout and stderr; ctx bounds
// the process's life. The process counts in c.running: whoever waits for
// it calls Done.
func (c *Capability) start(ctx context.Context, l *launch, stdout, stderr *ring) (*confine.Process, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, ErrClosed
	}
	temp, err := c.tempDir()
	if err != nil {
		c.mu.Unlock()
		return nil, err
	}
	if c.cfg.persistCwd && !l.background {
		c.captures++
		l.capture = filepath.Join(temp, fmt.Sprintf("cwd-%d", c.captures))
	}
	stores := maps.Clone(c.stores)
	// Counted before the lock is let go, so that Close, once it holds
	// the lock, waits for every process started.
	c.running.Add(1)
	c.mu.Unlock()
	script := l.command
	if l.capture != "" {
		script = l.command + "\n__harness_ec=$?\npwd > " + shQuote(l.capture) + "\nexit $__harness_ec"
	}
	var h hidden
	if c.cfg.sandbox { // unconfined, nothing is masked: no walk to find what
		h, err = findHidden(c.root, credentialHomes(), stores, c.access, c.cfg.allowGitWrites)
		if len(h.stores) > 0 {
			c.mu.Lock()
			if c.stores == nil {
				c.stores = map[fileID]bool{}
			}
			maps.Copy(c.stores, h.stores)
			c.mu.Unlock()
		}
		if err != nil {
			c.running.Done()
			return nil, capabilities.Retry("The command was not run: the workspace directory cannot be read (%s), "+
				"so the secrets in it cannot be found and hidden from commands. Ask the user to make it readable again.", why(err))
		}
	}
	cmd := confine.Command{
		Script: script, Dir: l.dir,
		Env:    environ(temp, l.dir, c.cfg.env, c.cfg.envNames),
		Stdout: stdout, Stderr: stderr,
		Sandbox: c.cfg.sandbox,
		Policy: confine.Policy{
			Root: c.root, Temp: temp,
			Masks: h.masks, ReadOnly: h.readOnly,
			Network: c.cfg.network, MaxProcs: MaxProcs, MaxFileBytes: c.cfg.maxFileBytes,
		},
	}
	p, err := confine.Start(ctx, cmd)
	if err != nil {
		c.running.Done()
		if errors.Is(err, confine.ErrScriptTooLong) {
			return nil, tooLong(len(script)) // with persist_cwd's lines, which prepare does not count
		}
		if me, ok := errors.AsType[*confine.MaskError](err); ok {
			return nil, c.notCovered(me, slices.Contains(h.readOnly, me.Path))
		}
		if _, ok := errors.AsType[*confine.DirError](err); ok {
			if retry := c.forgetCwd(l.dir, err); retry != nil {
				return nil, retry
			}
		}
		return nil, startError(err, l.dir)
	}
	return p, nil
}

// tooLong is the retry of a command of n bytes, more than a command may
// be (confine.MaxScript).
func tooLong(n int) error {
	return capabilities.Retry("The command was not run: it is %d bytes long, and a command may be at most %d MiB. "+
		"Write long contents to a file in parts, with several commands.", n, confine.MaxScript>>20)
}

// notCovered is the retry of a command that did not run because a secret
// (or, readOnly, a .git, hooks directory or configuration file git reads)
// that the walk found could not be covered, most likely for a directory on
// its path that the command's init may not enter: the model is told what
// and why, and that the user must fix it.
func (c *Capability) notCovered(me *confine.MaskError, readOnly bool) error {
	if readOnly {
		return capabilities.Retry("The command was not run: %s cannot be made read-only for commands (%s), "+
			"and commands must not change a .git, a repository's hooks or the configuration git reads. Ask the user to make it readable again.", c.relDir(me.Path), why(me.Err))
	}
	return capabilities.Retry("The command was not run: %s cannot be hidden from commands (%s), and it may hold secrets. "+
		"Ask the user to make it readable again or move it out of the workspace.", c.relDir(me.Path), why(me.Err))
}

// startError maps a failure to start as the reference's recoverable
// errors do: a permission error or a working directory gone is a retry;
// anything else ends the run, with its own text.
func startError(err error, dir string) error {
	_, statErr := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrPermission):
		return capabilities.Retry("%v", err)
	case errors.Is(err, syscall.ENOENT) && errors.Is(statErr, syscall.ENOENT):
		return capabilities.Retry("The working directory no longer exists.")
	case errors.Is(err, syscall.ENOTDIR) && errors.Is(statErr, syscall.ENOTDIR):
		return capabilities.Retry("The working directory is no longer a directory.")
	}
	return fmt.Errorf("shell: starting the command: %w", err)
}

// why is the reason of a failed system call, "permission denied", without
// the path and operation around it; the whole text when there is no errno.
func why(err error) string {
	if errno, ok := errors.AsType[syscall.Errno](err); ok {
		return errno.Error()
	}
	return err.Error()
}

// shQuote quotes s for sh as one word.
func shQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// exitCode is a process's status as the reference reports it: the exit
// status, or 128+N for death by signal N.
func exitCode(e confine.Exit) int {
	if e.Signal != 0 {
		return 128 + int(e.Signal)
	}
	return e.Code
}
