package shell

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"time"
	"unicode/utf8"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/internal/confine"
)

// job is a background command: its output kept in memory rings, never in
// the workspace, while it runs; once it has ended, only what a result can
// still show of it (shown).
type job struct {
	id, command, dir string
	proc             *confine.Process
	stdout, stderr   *ring
	began            time.Time

	// events is the start call's context without its cancellation: the
	// run's listener, to which Close reports the command killed.
	events context.Context

	done chan struct{} // closed once the process is reaped
	exit confine.Exit  // valid after done
	err  error         // waiting failed
	// shownOut and shownErr, valid after done, are the tails of the
	// streams that check_command and stop_command can still show (shown).
	shownOut, shownErr string
}

// output is the command's output as its results show it, and whether it
// had ended when it was read. A command that has ended keeps only the
// tails its results can show, its rings given back.
func (j *job) output() (stdout, stderr string, ended bool) {
	if j.finished() {
		return j.shownOut, j.shownErr, true
	}
	stdout, stderr = j.stdout.String(), j.stderr.String()
	if j.finished() {
		// It ended while its rings were read, which it may have emptied.
		return j.shownOut, j.shownErr, true
	}
	return stdout, stderr, false
}

// end records, once the process is reaped and its output all written,
// what a result can still show of it, and gives back its rings: a run
// that starts many background commands holds no more of each that ended
// than its results can show.
func (j *job) end(exit confine.Exit, err error, max int) {
	j.exit, j.err = exit, err
	j.shownOut, j.shownErr = shown(j.stdout.String(), j.stderr.String(), max)
	close(j.done)
	// After done, so that a reader that finds the rings empty finds the
	// job ended too (output).
	j.stdout.release()
	j.stderr.release()
}

// shown is what of a background command's stdout and stderr its results
// can show: check_command's and stop_command's are "[stdout]\n" + stdout,
// "\n[stderr]\n" + stderr, then lines of their own, cut by truncateTail to
// their last limit code points. So no more than the last limit of stderr
// is ever seen, and of stdout no more than the last limit less what is
// seen of stderr, which follows it. Kept so (stdout at least one code
// point when it has any, so that its section stays), a result that was
// not cut reads the same, and one that was is still longer than limit and
// cut to the same tail.
func shown(stdout, stderr string, limit int) (string, string) {
	stderr = lastRunes(stderr, limit)
	return lastRunes(stdout, max(limit-utf8.RuneCountInString(stderr), 1)), stderr
}

// lastRunes is the last n code points of s.
func lastRunes(s string, n int) string {
	if total := utf8.RuneCountInString(s); total > n {
		return tailRunes(s, total, n)
	}
	return s
}

func (j *job) finished() bool {
	select {
	case <-j.done:
		return true
	default:
		return false
	}
}

// runningJobs counts the background commands still running. c.mu is held.
func (c *Capability) runningJobs() int {
	n := 0
	for _, j := range c.jobs {
		if !j.finished() {
			n++
		}
	}
	return n
}

// newID is 32 lowercase hex digits.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}

// validID reports whether id has the shape of an ID: 32 lowercase hex digits.
func validID(id string) bool {
	if len(id) != 32 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if !('0' <= id[i] && id[i] <= '9' || 'a' <= id[i] && id[i] <= 'f') {
			return false
		}
	}
	return true
}

// startCommand is start_command. The command lives until it exits,
// stop_command stops it or Close kills it.
func (c *Capability) startCommand(ctx context.Context, raw json.RawMessage) (string, error) {
	a, err := decodeArgs(raw, "command")
	if err != nil {
		return "", err
	}
	l, result, err := c.prepare(ctx, a, true, nil)
	if l == nil {
		return result, err
	}
	if err := ctx.Err(); err != nil {
		c.release(true)
		return "", err // ended while the listeners heard of it: nothing ran
	}
	size := 4 * c.cfg.maxOutputChars
	j := &job{id: newID(), command: l.command, dir: l.dir, stdout: newRing(size), stderr: newRing(size),
		began: time.Now(), done: make(chan struct{}), events: context.WithoutCancel(ctx)}
	p, err := c.start(context.Background(), l, j.stdout, j.stderr)
	if err != nil {
		c.release(true)
		return "", err
	}
	j.proc = p
	go func() {
		defer c.running.Done()
		exit, err := p.Wait()
		j.end(exit, err, c.cfg.maxOutputChars)
	}()
	c.mu.Lock()
	c.starting--
	if c.closed {
		c.mu.Unlock()
		p.Kill()
		return "", ErrClosed
	}
	c.jobs[j.id] = j
	c.mu.Unlock()
	out := "Started background command: " + pyRepr(j.command) + "\nID: " + j.id
	ev := &CommandEvent{Command: j.command, ID: j.id, Cwd: c.relDir(j.dir), RootDir: c.root,
		Background: true, Sandboxed: c.cfg.sandbox, started: true,
		Truncated: utf8.RuneCountInString(out) > c.cfg.maxOutputChars}
	if err := capabilities.Emit(ctx, ev); err != nil {
		return "", err
	}
	return out, nil
}

// lookup finds a job by ID; the string is the result for an unknown or
// malformed one.
func (c *Capability) lookup(raw json.RawMessage) (*job, string, error) {
	a, err := decodeArgs(raw, "command_id")
	if err != nil {
		return nil, "", err
	}
	id := *a.CommandID
	c.mu.Lock()
	j := c.jobs[id]
	c.mu.Unlock()
	if j == nil || !validID(id) {
		return nil, "[Error: unknown command ID " + pyRepr(id) + "]", nil
	}
	return j, "", nil
}

// checkCommand is check_command.
func (c *Capability) checkCommand(_ context.Context, raw json.RawMessage) (string, error) {
	j, result, err := c.lookup(raw)
	if j == nil {
		return result, err
	}
	stdout, stderr, ended := j.output()
	out := labelled(stdout, stderr, "(no output yet)", "")
	if !ended {
		return out + "\n[status: running]", nil
	}
	out += "\n[status: finished]"
	if j.err == nil {
		out += "\n" + exitLines(exitCode(j.exit), c.cfg.maxFileBytes)
	}
	return out, nil
}

// stopCommand is stop_command: SIGTERM to every process of the command,
// SIGKILL after stopGrace; then the command is forgotten.
func (c *Capability) stopCommand(ctx context.Context, raw json.RawMessage) (string, error) {
	j, result, err := c.lookup(raw)
	if j == nil {
		return result, err
	}
	if !j.finished() {
		j.proc.Terminate(stopGrace)
		<-j.done
	}
	// The one that takes the job from the table reports its end: a
	// concurrent stop_command of the same ID, or Close, may have.
	c.mu.Lock()
	_, mine := c.jobs[j.id]
	delete(c.jobs, j.id)
	c.mu.Unlock()
	stdout, stderr, _ := j.output() // ended: it was waited for
	out := labelled(stdout, stderr, "(no output)", "") + "\n[stopped]"
	ev := c.endEvent(j)
	// A command the stop had to kill (SIGKILL after the grace) has no
	// exit status, as in the reference, whose wrapper dies with it; any
	// other keeps its own, even a death by a SIGKILL sent from elsewhere,
	// before the stop or during its grace.
	if j.err == nil && !j.exit.Killed {
		code := exitCode(j.exit)
		out += "\n" + exitLines(code, c.cfg.maxFileBytes)
		ev.ExitCode = &code
	}
	ev.Truncated = utf8.RuneCountInString(out) > c.cfg.maxOutputChars
	if mine {
		if err := capabilities.Emit(ctx, ev); err != nil {
			return "", err
		}
	}
	return out, nil
}

// endEvent is the shell.command event of a background command that ended,
// without its exit code.
func (c *Capability) endEvent(j *job) *CommandEvent {
	return &CommandEvent{Command: j.command, ID: j.id, Cwd: c.relDir(j.dir), RootDir: c.root,
		DurationMS: time.Since(j.began).Milliseconds(), StdoutBytes: j.stdout.Total(), StderrBytes: j.stderr.Total(),
		Background: true, Sandboxed: c.cfg.sandbox}
}
