package shell

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/internal/confine"
)

// runCommand is run_command.
func (c *Capability) runCommand(ctx context.Context, raw json.RawMessage) (string, error) {
	a, err := decodeArgs(raw, "command", "timeout_seconds")
	if err != nil {
		return "", err
	}
	timeout := c.cfg.defaultTimeout
	if a.TimeoutSeconds != nil {
		timeout = *a.TimeoutSeconds
	}
	// The spec's tool_timeout (the context's deadline) bounds the command
	// too, and a command it ends is reported as timed out after it:
	// measured here, at the call's start, it reads as the limit the call
	// had.
	var callLimit float64
	if dl, ok := ctx.Deadline(); ok {
		callLimit = tenthsUp(time.Until(dl))
	}
	l, result, err := c.prepare(ctx, a, false, &timeout)
	if l == nil {
		return result, err
	}
	if err := ctx.Err(); err != nil {
		return "", err // ended while the listeners heard of it: nothing ran
	}
	size := 4 * c.cfg.maxOutputChars
	stdout, stderr := newRing(size), newRing(size)
	procCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	began := time.Now()
	p, err := c.start(procCtx, l, stdout, stderr)
	if err != nil {
		return "", err
	}
	c.track(p)
	defer c.untrack(p)
	type waited struct {
		exit confine.Exit
		err  error
	}
	done := make(chan waited, 1)
	go func() {
		defer c.running.Done()
		e, err := p.Wait()
		done <- waited{e, err}
	}()
	timer := time.NewTimer(capabilities.Seconds(timeout))
	defer timer.Stop()
	var (
		w                   waited
		timedOut, cancelled bool
	)
	select {
	case w = <-done:
	case <-timer.C:
		p.Kill()
		w, timedOut = <-done, true
	case <-ctx.Done():
		p.Kill()
		w = <-done
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			timedOut, timeout = true, callLimit
		} else {
			cancelled = true
		}
	}
	// Close killed it: the run is ending, and the call with it.
	closed := !timedOut && !cancelled && w.err == nil && w.exit.Killed && c.isClosed()
	if w.err != nil && !timedOut && !cancelled {
		return "", fmt.Errorf("shell: waiting for the command: %w", w.err)
	}
	ev := &CommandEvent{
		Command: l.command, Cwd: c.relDir(l.dir), RootDir: c.root,
		DurationMS: time.Since(began).Milliseconds(), TimedOut: timedOut, Timeout: timeout,
		StdoutBytes: stdout.Total(), StderrBytes: stderr.Total(), Sandboxed: c.cfg.sandbox,
	}
	if l.capture != "" {
		defer os.Remove(l.capture)
	}
	if cancelled || closed {
		// Killed: no exit code, and no result for a call that was called
		// off, or whose run is ending; the listeners still hear that the
		// command ended.
		if err := capabilities.Emit(context.WithoutCancel(ctx), ev); err != nil {
			return "", err
		}
		if closed {
			return "", ErrClosed
		}
		return "", ctx.Err()
	}
	var out string
	if timedOut {
		out = labelled(stdout.String(), stderr.String(), "", timeoutTrailer(timeout))
	} else {
		code := exitCode(w.exit)
		ev.ExitCode = &code
		trailer := ""
		if code != 0 {
			trailer = exitLines(code, c.cfg.maxFileBytes)
		}
		out = labelled(stdout.String(), stderr.String(), "(no output)", trailer)
		if code == 0 && l.capture != "" {
			c.keepCwd(l.capture)
		}
	}
	ev.Truncated = utf8.RuneCountInString(out) > c.cfg.maxOutputChars
	// A command that hit the context's deadline still reports: the
	// listeners, and the model, get what a timeout gives.
	if err := capabilities.Emit(context.WithoutCancel(ctx), ev); err != nil {
		return "", err
	}
	return out, nil
}

// track makes p, a run_command's process, one that Close kills; one
// started as Close began is killed at once.
func (c *Capability) track(p *confine.Process) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		p.Kill()
		return
	}
	if c.foreground == nil {
		c.foreground = map[*confine.Process]bool{}
	}
	c.foreground[p] = true
}

// untrack forgets p once it has been waited for.
func (c *Capability) untrack(p *confine.Process) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.foreground, p)
}

// isClosed reports whether Close has begun.
func (c *Capability) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// tenthsUp is d in seconds, rounded up to a tenth: the time left of a
// tool_timeout of 1s, read a moment after it started, is 1.0.
func tenthsUp(d time.Duration) float64 {
	return math.Ceil(max(d.Seconds(), 0)*10) / 10
}

// keepCwd makes the directory a command ended in, as written to capture,
// where the next one starts, when it is an existing absolute directory.
// Anything else leaves the directory as it was, silently, as the reference
// drops a capture it cannot use. The path is kept as pwd wrote it, a
// symlink on it unresolved, as the reference keeps it: the next command's
// pwd says it again, and the link leads where it points then.
func (c *Capability) keepCwd(capture string) {
	dir, ok := readCapture(capture)
	if !ok || !filepath.IsAbs(dir) {
		return
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	dir = filepath.Clean(dir)
	c.cwd = dir
	if dir == c.root {
		c.cwd = ""
	}
}

// maxCapture is the most a capture holds: a path of PATH_MAX bytes (its
// NUL counted) with pwd's newline instead.
const maxCapture = 4096

// readCapture reads the directory pwd wrote to path. The file is in T,
// where the command could have put anything in its place: only a regular
// file is read, never through a symlink, never waiting on a FIFO, and no
// more than maxCapture bytes of it; anything else is no capture.
func readCapture(path string) (string, bool) {
	f, err := os.OpenFile(path, os.O_RDONLY|captureFlags, 0)
	if err != nil {
		return "", false
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return "", false
	}
	b, err := io.ReadAll(io.LimitReader(f, maxCapture+1))
	if err != nil || len(b) > maxCapture {
		return "", false
	}
	return strings.TrimSuffix(string(b), "\n"), true
}
