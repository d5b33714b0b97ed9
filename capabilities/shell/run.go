package shell

import (
	"context"
	"encoding/json"
	"fmt"
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
	l, result, err := c.prepare(ctx, a, false, &timeout)
	if l == nil {
		return result, err
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
	timer := time.NewTimer(time.Duration(timeout * float64(time.Second)))
	defer timer.Stop()
	var (
		w        waited
		timedOut bool
	)
	select {
	case w = <-done:
	case <-timer.C:
		p.Kill()
		w, timedOut = <-done, true
	case <-ctx.Done():
		p.Kill()
		<-done
		return "", ctx.Err()
	}
	if w.err != nil && !timedOut {
		return "", fmt.Errorf("shell: waiting for the command: %w", w.err)
	}
	ev := &CommandEvent{
		Command: l.command, Cwd: c.relDir(l.dir), RootDir: c.root,
		DurationMS: time.Since(began).Milliseconds(), TimedOut: timedOut, Timeout: timeout,
		StdoutBytes: stdout.Total(), StderrBytes: stderr.Total(), Sandboxed: c.cfg.sandbox,
	}
	var out string
	if timedOut {
		out = labelled(stdout.String(), stderr.String(), "", timeoutTrailer(timeout))
	} else {
		code := exitCode(w.exit)
		ev.ExitCode = &code
		trailer := ""
		if code != 0 {
			trailer = exitLine(code)
			if c.cfg.maxFileBytes > 0 {
				trailer += "\n" + fileLimitNote(code, c.cfg.maxFileBytes)
			}
		}
		out = labelled(stdout.String(), stderr.String(), "(no output)", trailer)
		if code == 0 && l.capture != "" {
			c.keepCwd(l.capture)
		}
	}
	if l.capture != "" {
		os.Remove(l.capture)
	}
	ev.Truncated = utf8.RuneCountInString(out) > c.cfg.maxOutputChars
	if err := capabilities.Emit(ctx, ev); err != nil {
		return "", err
	}
	return out, nil
}

// keepCwd makes the directory a command ended in, as written to capture,
// where the next one starts, when it is an existing absolute directory.
func (c *Capability) keepCwd(capture string) {
	b, err := os.ReadFile(capture)
	if err != nil {
		return
	}
	dir := strings.TrimSuffix(string(b), "\n")
	if !filepath.IsAbs(dir) {
		return
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	c.cwd = dir
	if dir == c.root {
		c.cwd = ""
	}
}
