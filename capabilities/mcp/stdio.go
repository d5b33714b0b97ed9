package mcp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/internal/childproc"
)

// How a local server is stopped: its stdin is closed (the MCP way of asking
// it to exit), then after graceTerm its group gets SIGTERM, then after
// graceKill SIGKILL. The group is killed in the end whatever happened, so
// children the server left behind go too (on Linux as soon as the server
// exits, while the group's id is still its own: see process.wait).
const (
	graceTerm = 2 * time.Second
	graceKill = 2 * time.Second
	// ioWait bounds how long Wait waits for the server's output once it
	// has exited, when a child it started still holds the pipes open.
	ioWait = 500 * time.Millisecond
	// stderrLines is how many of the last stderr lines an error shows.
	stderrLines = 20
)

// inheritedEnv are the variables a local server gets from agentspec's
// environment, as the official MCP SDKs do: enough to find programs and a
// home directory, nothing secret.
var inheritedEnv = []string{
	"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "TZ",
	"XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_RUNTIME_DIR",
	"NODE_OPTIONS", "NPM_CONFIG_CACHE", "npm_config_cache", "NPM_CONFIG_REGISTRY", "npm_config_registry",
	"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy",
	"SYSTEMROOT", "COMSPEC", "APPDATA", "LOCALAPPDATA", "USERPROFILE", "PATHEXT",
}

// process is a local server's process.
type process struct {
	cmd     *exec.Cmd
	stdin   *pipeWriter
	stderr  *tail
	exited  chan struct{} // closed when Wait returned
	err     error         // Wait's error, valid once exited is closed
	once    sync.Once
	stopErr error
	// signalled is set once stop sent a signal: an exit by that signal is
	// agentspec's doing, not the server's.
	signalled atomic.Bool
	// kill sends the group SIGTERM, or SIGKILL when kill is set
	// (signalGroup; tests see when). It is sent only while reaped is
	// false, under mu.
	kill func(kill bool)
	// reaped is set, where awaitExit can tell, once the process has exited
	// and its group been killed, just before it is reaped: the group's id
	// may then become another group's, which a signal must not reach.
	mu     sync.Mutex
	reaped bool
}

// connectStdio starts a local server and initializes a session over its
// stdin and stdout, whose every line (a message) guard bounds.
func connectStdio(ctx context.Context, client *sdk.Client, opts Options, dir string, guard *bodyGuard) (*sdk.ClientSession, *process, error) {
	cwd, err := serverDir(opts.Cwd, dir)
	if err != nil {
		return nil, nil, err
	}
	prog, err := program(opts, cwd)
	if err != nil {
		return nil, nil, err
	}
	cmd := exec.Command(prog, opts.Command[1:]...)
	cmd.Args[0] = opts.Command[0] // the name as the spec gives it, as a shell passes it
	cmd.Dir = cwd
	cmd.Env = serverEnv(opts.Env)
	cmd.WaitDelay = ioWait
	setGroup(cmd)
	p := newProcess(cmd)
	cmd.Stderr = p.stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	// The server must not read agentspec's environment, which holds the
	// provider keys its own environment was built without.
	if err := childproc.Start(cmd); err != nil {
		return nil, nil, err
	}
	// From here on the process exists and must be stopped on any failure.
	p.stdin = &pipeWriter{w: stdin}
	go p.wait()
	// The bound is agentspec's, as for a remote server, not the SDK's
	// larger one, which the server took for an exit: it stopped reading,
	// and the server died of the SIGPIPE that brought.
	transport := &sdk.IOTransport{Reader: &boundedLines{rc: stdout, guard: guard}, Writer: p.stdin, MaxLineLength: -1}
	session, err := client.Connect(ctx, cancelStdio{transport, p.stdin}, nil)
	if err != nil {
		p.stopWithin(0) // it never became a server: no need to wait for it
		return nil, p, err
	}
	return session, p, nil
}

// program is the server's program as exec.Command is given it, in cwd:
// made absolute when it names a directory, else found in the PATH of
// opts.Env when that sets one.
func program(opts Options, cwd string) (string, error) {
	prog := opts.Command[0]
	switch {
	case strings.ContainsRune(prog, filepath.Separator):
		if !filepath.IsAbs(prog) {
			prog = filepath.Join(cwd, prog)
		}
	case runtime.GOOS != "windows":
		// The server's PATH, which env may set, is where its program is
		// looked for, as a shell and Python's subprocess (pydantic-ai's
		// MCPServerStdio) look for it; exec.Command would look in
		// agentspec's.
		if path, ok := opts.Env["PATH"]; ok {
			return lookPath(prog, path)
		}
	}
	return prog, nil
}

// execPath is the path exec will be given for the server's program, whose
// every byte it counts (argmax.Size): program's, found in agentspec's PATH
// as exec.Command finds it when it names no directory. One not found is
// its name, as the spec gives it: starting it fails anyway.
func execPath(opts Options, cwd string) string {
	prog, err := program(opts, cwd)
	if err != nil {
		return opts.Command[0]
	}
	if !strings.ContainsRune(prog, filepath.Separator) {
		if found, err := exec.LookPath(prog); err == nil {
			return found
		}
	}
	return prog
}

// lookPath finds prog in the directories of path as exec.LookPath finds it
// in $PATH, relative directories skipped as exec refuses what they find.
func lookPath(prog, path string) (string, error) {
	for _, dir := range filepath.SplitList(path) {
		if !filepath.IsAbs(dir) {
			continue
		}
		p := filepath.Join(dir, prog)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", &exec.Error{Name: prog, Err: exec.ErrNotFound}
}

func serverDir(cwd, dir string) (string, error) {
	base, err := filepath.Abs(dir) // "" is the working directory
	if err != nil {
		return "", err
	}
	if cwd == "" {
		return base, nil
	}
	if !filepath.IsAbs(cwd) {
		cwd = filepath.Join(base, cwd)
	}
	st, err := os.Stat(cwd)
	switch {
	case err != nil:
		return "", capabilities.ArgErrorf("cwd", "cwd %s: %v", cwd, errors.Unwrap(err))
	case !st.IsDir():
		return "", capabilities.ArgErrorf("cwd", "cwd %s is not a directory", cwd)
	}
	return cwd, nil
}

func serverEnv(extra map[string]string) []string {
	env := []string{} // never nil, which exec.Cmd reads as all of agentspec's
	for _, k := range inheritedEnv {
		if _, override := extra[k]; override {
			continue
		}
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	for k, v := range extra {
		env = append(env, k+"="+v)
	}
	return env
}

func newProcess(cmd *exec.Cmd) *process {
	p := &process{cmd: cmd, stderr: newTail(stderrLines), exited: make(chan struct{})}
	p.kill = func(kill bool) { signalGroup(cmd, kill) }
	return p
}

// wait waits for the started process to exit, and reaps it. Where
// awaitExit can hold it unreaped, what it left in its group is killed
// first, while the group's id is still its own: once the server is gone,
// its session is over, and nothing it started is of use.
func (p *process) wait() {
	if awaitExit(p.pid()) {
		p.mu.Lock()
		p.kill(true)
		p.reaped = true
		p.mu.Unlock()
	}
	p.err = p.cmd.Wait()
	close(p.exited)
}

// signal sends the group SIGTERM, or SIGKILL when kill is set, unless the
// process is reaped, or about to be.
func (p *process) signal(kill bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.reaped {
		p.kill(kill)
	}
}

func (p *process) pid() int { return p.cmd.Process.Pid }

// exitStatus reports whether the process exited of its own accord, waiting
// a moment for an exit that is under way (the pipe closes just before Wait
// returns).
func (p *process) exitStatus() (bool, string) {
	select {
	case <-p.exited:
	case <-time.After(ioWait + 100*time.Millisecond):
		return false, ""
	}
	if p.err == nil {
		return true, "exit status 0"
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && p.signalled.Load() {
			return false, ""
		}
		return true, ee.ProcessState.String()
	}
	return true, p.err.Error()
}

// stderrTail returns the last lines the server wrote to stderr, as a
// message suffix, or "" when it wrote none.
func (p *process) stderrTail() string {
	lines := p.stderr.lines()
	if len(lines) == 0 {
		return "; it wrote nothing to stderr"
	}
	return "; the last lines of its stderr:\n  " + strings.Join(lines, "\n  ")
}

// stop ends the process and its group: stdin is closed already by the
// session; the process gets graceTerm to exit, then SIGTERM, then SIGKILL;
// the group is killed whatever happened.
func (p *process) stop() error { return p.stopWithin(graceTerm) }

// stopWithin is stop with the given time to exit after stdin closes.
func (p *process) stopWithin(grace time.Duration) error {
	p.once.Do(func() {
		p.stdin.Close() // mostly closed already, with the session
		waited := func(d time.Duration) bool {
			select {
			case <-p.exited:
				return true
			case <-time.After(d):
				return false
			}
		}
		if !waited(grace) {
			p.signalled.Store(true)
			p.signal(false)
			if !waited(graceKill) {
				p.signal(true)
				if !waited(graceKill) {
					p.stopErr = fmt.Errorf("process %d did not exit after SIGKILL", p.pid())
				}
			}
		}
		// Whatever the server itself did, nothing it started stays: the
		// group is killed here unless wait has killed it already.
		p.signalled.Store(true)
		p.signal(true)
	})
	return p.stopErr
}

// pipeWriter is a local server's stdin as the session writes to it, which
// knows the write under way. The SDK writes a request whatever the call's
// context, so that to a server that stopped reading blocks once the pipe is
// full, and outlasts the call that gave up on it; its connection writes one
// message at a time, so every later write waits behind it, whole, not
// interleaved with it.
type pipeWriter struct {
	mu        sync.Mutex
	w         io.WriteCloser
	current   chan struct{} // closed when the write under way ends; nil when none is
	abandoned chan struct{} // current, when a call gave up while it was under way
	what      abandonedWrite
}

// abandonedWrite is what the write a call gave up on was sending.
type abandonedWrite int

const (
	abandonedRequest abandonedWrite = iota // a request, the call's or another's
	abandonedCancel                        // the call's notifications/cancelled
)

func (p *pipeWriter) Write(b []byte) (int, error) {
	done := make(chan struct{})
	p.mu.Lock()
	p.current = done
	w := p.w
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		if p.current == done {
			p.current = nil
		}
		p.mu.Unlock()
		close(done)
	}()
	return w.Write(b)
}

func (p *pipeWriter) Close() error {
	p.mu.Lock()
	w := p.w
	p.mu.Unlock()
	return w.Close()
}

// abandon notes that a call gave up while a write was under way, sending
// what; a write already noted keeps what it was noted as.
func (p *pipeWriter) abandon(what abandonedWrite) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.current != nil && p.abandoned != p.current {
		p.abandoned, p.what = p.current, what
	}
}

// stuck returns a channel closed when a write a call gave up on ends, or
// nil when none is under way: it ends when the server reads it or when
// Close closes the pipe.
func (p *pipeWriter) stuck() <-chan struct{} {
	ch, _ := p.stuckWith()
	return ch
}

// stuckWith is stuck, and what the write was sending.
func (p *pipeWriter) stuckWith() (<-chan struct{}, abandonedWrite) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.abandoned != nil && p.abandoned != p.current {
		p.abandoned = nil
	}
	return p.abandoned, p.what
}

// tail keeps the last n lines written to it.
type tail struct {
	mu      sync.Mutex
	n       int
	buf     []string
	partial []byte
}

func newTail(n int) *tail { return &tail{n: n} }

func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	data := append(t.partial, b...)
	for {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break
		}
		t.add(strings.TrimRight(string(data[:i]), "\r"))
		data = data[i+1:]
	}
	if len(data) > 4096 { // a line without end is kept in part
		data = data[len(data)-4096:]
	}
	t.partial = append([]byte(nil), data...)
	return len(b), nil
}

func (t *tail) add(line string) {
	if strings.TrimSpace(line) == "" {
		return
	}
	t.buf = append(t.buf, line)
	if len(t.buf) > t.n {
		t.buf = t.buf[len(t.buf)-t.n:]
	}
}

func (t *tail) lines() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := append([]string(nil), t.buf...)
	if p := strings.TrimSpace(string(t.partial)); p != "" {
		out = append(out, p)
		if len(out) > t.n {
			out = out[1:]
		}
	}
	return out
}
