// Package shell is the Shell capability: tools that run the model's shell
// commands in the run's workspace, as pydantic-ai harness's Shell does, with
// its options, checks, messages and output formats; and, beyond it, confined
// by the kernel (package internal/confine) to the workspace and a private
// temporary directory, with secrets read as empty, no network unless the
// spec says so, and nothing left running when the run ends.
//
// The checks on a command's text (interactive programs, denied operators,
// the first program against the allowed and denied lists) are the reference's
// guardrail and answer the model as it does; the confinement is the
// boundary.
package shell

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/capabilities/filesystem"
	"github.com/agentspec/agentspec/internal/confine"
	"github.com/agentspec/agentspec/internal/sandbox"
)

// Main makes this program able to run Shell commands: each command starts
// as the program re-executed, which must become the command's helper
// before anything else runs. Call it first thing in main (and in TestMain
// of tests that run commands) of any program that builds a Shell; it
// returns at once in a program not started as a helper.
func Main() { confine.Main() }

// TypeName is the capability's name in specs.
const TypeName = "Shell"

// Type is the Shell capability type, for a program to register
// (capabilities/builtin lists it with the other built-in types).
func Type() capabilities.Type {
	return capabilities.Type{
		Name:        TypeName,
		Description: "Runs the model's shell commands in the workspace, confined by the kernel to it (run_command, start_command, check_command, stop_command).",
		Schema:      []byte(optionsSchema),
		New:         newFromArgs,
	}
}

func newFromArgs(_ context.Context, args capabilities.Args) (capabilities.Capability, error) {
	var opts Options
	if err := args.Decode(&opts); err != nil {
		return nil, err
	}
	c, err := New(opts, args.Dir)
	if err != nil {
		return nil, err
	}
	// The workspace's env (LocalWorkspace's) comes first, the Shell's own
	// on top of it (D14); a read-only workspace runs no commands.
	if ws := workspaceEnvWarnings(args.Env, c.cfg.env); len(ws) > 0 && !args.ReadOnly {
		// After the Shell's own env's warnings, before the sandbox's.
		at := len(c.cfg.warnings)
		if !c.cfg.sandbox {
			at--
		}
		c.cfg.warnings = slices.Insert(c.cfg.warnings, at, ws...)
	}
	c.cfg.env, c.cfg.envNames = layerEnv(args.Env, c.cfg.env)
	if args.ReadOnly {
		c.tools = nil
	} else if err := c.checkEnvSize(); err != nil {
		return nil, err // the workspace's env with the Shell's own
	}
	return c, nil
}

// Capability is a configured Shell. It holds the background commands and
// the private temporary directory of one run; Close ends them.
type Capability struct {
	cfg   *config
	root  string // W: the workspace, absolute and real
	tools []capabilities.Tool

	guard     capabilities.PathGuard // the first peer PathGuard; nil when none
	guardRoot string                 // the directory it guards, when it says; "" else
	fallback  func() capabilities.PathGuard

	mu       sync.Mutex
	temp     string   // T, created at the first command; "" before
	stale    []string // earlier Ts a command made unusable, removed by Close
	cwd      string   // persist_cwd: where the next command starts; "" is root
	jobs     map[string]*job
	starting int            // background commands past the checks, not yet in jobs
	running  sync.WaitGroup // every process started, until it is reaped
	closed   bool
	captures int // persist_cwd capture files made, for unique names
	// stores are the home's credentials that commands found in the
	// workspace, masked wherever a command moves them (findHidden).
	stores map[fileID]bool
	// foreground are the processes of run_command calls, which Close
	// kills as it kills background commands.
	foreground map[*confine.Process]bool
}

var (
	_ capabilities.Capability   = (*Capability)(nil)
	_ capabilities.Reacher      = (*Capability)(nil)
	_ capabilities.Warner       = (*Capability)(nil)
	_ capabilities.OptionWarner = (*Capability)(nil)
	_ capabilities.Peered       = (*Capability)(nil)
)

// New builds a Shell over the workspace dir (empty: the process's working
// directory). It fails where no command runs (confine.Runs: elsewhere than
// Linux, with the sandbox off too) and, with the sandbox on, when the
// system cannot confine commands (confine.Available's refusal). Errors
// about one option are *capabilities.ArgError.
func New(opts Options, dir string) (*Capability, error) {
	cfg, err := configure(opts)
	if err != nil {
		return nil, err
	}
	if err := confine.Runs(); err != nil {
		return nil, err
	}
	if cfg.sandbox {
		if err := confine.Available(); err != nil {
			return nil, err
		}
	}
	root, err := workspaceRoot(dir)
	if err != nil {
		return nil, err
	}
	c := &Capability{cfg: cfg, root: root, jobs: map[string]*job{}}
	if err := c.checkEnvSize(); err != nil {
		return nil, err
	}
	c.fallback = sync.OnceValue(func() capabilities.PathGuard {
		// D10's defaults over the workspace, matched as FileSystem matches.
		fs, err := filesystem.New(filesystem.Options{}, root)
		if err != nil {
			return nil
		}
		fs.Close() // GuardPath needs the patterns alone
		return fs
	})
	for _, name := range cfg.tools {
		c.tools = append(c.tools, c.newTool(name))
	}
	return c, nil
}

// checkEnvSize refuses an env with which no command could start, too large
// for exec to take: the environment a command gets (environ), its private
// temporary directory where os.MkdirTemp makes it, at its longest, and its
// directory the workspace, or with persist_cwd a directory as long as one
// may be kept, beside sh's shortest command line (confine.ExecSize: one
// that would not fit goes to the shell through a file).
func (c *Capability) checkEnvSize() error {
	tmp := os.TempDir()
	if real, err := filepath.EvalSymlinks(tmp); err == nil {
		tmp = real
	}
	temp := filepath.Join(tmp, "agentspec-shell-4294967295")
	dir := c.root
	if c.cfg.persistCwd && len(dir) < maxCapture {
		dir = strings.Repeat("d", maxCapture)
	}
	return capabilities.CheckEnvSize(confine.ExecSize(environ(temp, dir, c.cfg.env, c.cfg.envNames)))
}

// workspaceRoot is dir made absolute with its symlinks resolved.
func workspaceRoot(dir string) (string, error) {
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", fmt.Errorf("shell: the working directory: %w", err)
		}
		dir = wd
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("shell: workspace %s: %w", dir, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", fmt.Errorf("shell: workspace directory %s does not exist or cannot be read: %w", abs, err)
	}
	return real, nil
}

// Tools returns the selected tools, in DefaultToolNames order.
func (c *Capability) Tools(context.Context) ([]capabilities.Tool, error) {
	return slices.Clone(c.tools), nil
}

// RootDir returns the workspace commands run in (W), absolute and real.
func (c *Capability) RootDir() string { return c.root }

// Sandboxed reports whether commands are confined.
func (c *Capability) Sandboxed() bool { return c.cfg.sandbox }

// Warnings are the cwd option's deprecation, provider keys named in env,
// and, with the sandbox off, that commands are not confined.
func (c *Capability) Warnings() []string { return slices.Clone(c.cfg.warnings) }

// OptionWarnings are the Warnings, the one of cwd and those of the Shell's
// own env said of those options.
func (c *Capability) OptionWarnings() []capabilities.Warning {
	out := make([]capabilities.Warning, len(c.cfg.warnings))
	for i, msg := range c.cfg.warnings {
		out[i].Msg = msg
		switch {
		case msg == cwdWarning:
			out[i].Option = "cwd"
		case strings.HasPrefix(msg, envWarningPrefix):
			out[i].Option = "env"
		}
	}
	return out
}

// Peers takes the first other capability that is a PathGuard (a
// FileSystem): the files it keeps from the model are masked for commands.
func (c *Capability) Peers(all []capabilities.Capability) error {
	for _, p := range all {
		if p == capabilities.Capability(c) {
			continue
		}
		if g, ok := capabilities.As[capabilities.PathGuard](p); ok {
			c.guard = g
			if r, ok := capabilities.As[rooted](p); ok {
				c.guardRoot = r.RootDir()
			}
			return nil
		}
	}
	return nil
}

// rooted is a capability that says which directory it works in, as a
// FileSystem says its root_dir (absolute and real).
type rooted interface{ RootDir() string }

// access says what the spec keeps from the model at path, a path below
// the workspace: the first FileSystem's lists apply to every file of the
// workspace (D13.2). Where its root_dir reaches, it answers as its tools
// do; elsewhere its patterns are matched against the path from the
// workspace, as if its root were the workspace. Without a FileSystem (or
// with one that does not say its root), D10's defaults answer, matched the
// same way.
func (c *Capability) access(path string) capabilities.PathAccess {
	if c.guard != nil {
		if a := c.guard.GuardPath(path); a.Covered {
			return a
		}
		if rel, err := filepath.Rel(c.root, path); err == nil && c.guardRoot != "" {
			return c.guard.GuardPath(filepath.Join(c.guardRoot, rel))
		}
	}
	if fb := c.fallback(); fb != nil {
		return fb.GuardPath(path)
	}
	return capabilities.PathAccess{}
}

// Reach: the programs the model chooses; the workspace, written; the
// network when the spec allows it. With the sandbox off a command reaches
// whatever this process may: every path and the network.
func (c *Capability) Reach() capabilities.Reach {
	r := capabilities.Reach{
		Processes: []string{capabilities.Anywhere},
		Paths:     []capabilities.PathReach{{Path: c.root, Write: true}},
	}
	if !c.cfg.sandbox {
		r.Paths = []capabilities.PathReach{{Path: string(filepath.Separator), Write: true}}
	}
	if c.cfg.network || !c.cfg.sandbox {
		r.Network = []string{capabilities.Anywhere}
	}
	return r
}

// ErrClosed is the fatal error of a tool called after Close.
var ErrClosed = errors.New("the Shell capability is closed")

// Close kills every background command and every run_command's command
// (whose call then fails with ErrClosed), waits until every process the
// capability started is dead, reports each background command that was
// still known with a shell.command event to the run's listener, and removes
// the private temporary directory.
// Closing twice is harmless.
func (c *Capability) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	jobs := make([]*job, 0, len(c.jobs))
	for _, j := range c.jobs {
		jobs = append(jobs, j)
	}
	c.jobs = map[string]*job{}
	for p := range c.foreground {
		p.Kill()
	}
	c.mu.Unlock()
	for _, j := range jobs {
		j.proc.Kill()
	}
	c.running.Wait()
	for _, j := range jobs {
		// The run is ending: a listener's error has nothing left to stop.
		ev := c.endEvent(j)
		// One that had ended before keeps the code check_command showed,
		// 128+N after a death by signal N; the one killed here has none.
		if j.err == nil && !j.exit.Killed {
			code := exitCode(j.exit)
			ev.ExitCode = &code
		}
		_ = capabilities.Emit(j.events, ev)
	}
	for _, t := range append(c.stale, c.temp) {
		// What took the path of a T a command removed is not ours.
		if fi, err := os.Lstat(t); t == "" || err != nil || !fi.IsDir() || !ownedBySelf(fi) {
			continue
		}
		if err := removeTree(t); err != nil {
			return fmt.Errorf("shell: removing the temporary directory: %w", err)
		}
	}
	return nil
}

// removeTree removes dir and all below it, even where a command took away
// its own write or search permission on a directory of its temp (chmod 000
// is allowed there), never changing anything outside dir.
func removeTree(dir string) error { return sandbox.RemoveTree(dir) }

// tempDir is T: a 0700 directory of its own under the system's temporary
// directory, with an empty home inside, created at the first command. A
// command may remove T's home, and, unconfined, T itself (rm -rf
// "$TMPDIR"): what is gone is made again, T at its own path where it
// can be, so that the next command has the HOME and TMPDIR it is given, and
// persist_cwd a place for the directory it ends in. Another T is made when
// that path is taken by something else (a directory of another user's
// among them), which is not this Shell's to remove, and when T is a directory in which no home can be made (its
// permissions taken away), which Close removes. c.mu is held.
func (c *Capability) tempDir() (string, error) {
	if c.temp != "" {
		fi, err := os.Lstat(c.temp)
		// Only a directory of this user's: once T is gone, anyone may make
		// one at its path, which the system's temporary directory shows.
		ours := err == nil && fi.IsDir() && ownedBySelf(fi)
		if errors.Is(err, fs.ErrNotExist) {
			ours = os.Mkdir(c.temp, 0o700) == nil
		}
		if ours {
			err := os.Mkdir(filepath.Join(c.temp, "home"), 0o700)
			if err == nil || errors.Is(err, fs.ErrExist) {
				return c.temp, nil
			}
			c.stale = append(c.stale, c.temp)
		}
		c.temp = ""
	}
	t, err := os.MkdirTemp("", "agentspec-shell-")
	if err != nil {
		return "", fmt.Errorf("shell: creating the private temporary directory: %w", err)
	}
	if real, err := filepath.EvalSymlinks(t); err == nil {
		t = real
	}
	if err := os.Mkdir(filepath.Join(t, "home"), 0o700); err != nil {
		os.RemoveAll(t)
		return "", fmt.Errorf("shell: creating the private home directory: %w", err)
	}
	c.temp = t
	return t, nil
}

// stopGrace is how long stop_command waits after SIGTERM before SIGKILL.
const stopGrace = 2 * time.Second
