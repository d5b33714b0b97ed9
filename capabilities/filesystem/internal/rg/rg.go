// Package rg runs ripgrep and streams its --null output record by record, so
// that a caller can stop it as soon as it has seen enough.
//
// rg is always run directly, never through a shell, with --no-config first so
// that no RIPGREP_CONFIG_PATH can add arguments.
package rg

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/agentspec/agentspec/internal/childproc"
)

// MaxRecord is the longest record Next returns. A longer one ends the output
// (see Truncated): something is wrong with an output line that long.
const MaxRecord = 1 << 20

// MaxOutput is how many bytes of one rg's standard output are read at most.
// Past it rg is stopped and the output ends there (see OutputCut): the
// caller keeps only so many results, but it drops the records that fail its
// checks without counting them, so without this bound an rg printing
// nothing but such records would be read for ever.
const MaxOutput = 64 << 20

// WaitDelay is how long Wait waits, once rg is gone or killed, for the
// descriptors rg handed to processes of its own to close.
const WaitDelay = 2 * time.Second

// ErrNotInstalled is returned by Start when no rg executable is on PATH.
var ErrNotInstalled = errors.New("ripgrep (rg) is not installed")

// Failure is an rg run that exited with a status other than 0 (something
// found) or 1 (nothing found), for a reason other than files it could not
// read (see Proc.Unreadable).
type Failure struct {
	Code   int
	Stderr string // trimmed
}

func (f *Failure) Error() string {
	if f.Stderr != "" {
		return f.Stderr
	}
	return fmt.Sprintf("exit code %d", f.Code)
}

// Proc is a running rg.
//
// rg runs in a process group of its own (where the system has them), and
// the whole group is killed when the context ends or Stop is called, so that
// nothing rg started outlives the call.
type Proc struct {
	ctx     context.Context
	cmd     *exec.Cmd
	out     *io.LimitedReader // N <= 0: the bound is spent (see OutputCut)
	sc      *bufio.Scanner
	stderr  limitedBuffer
	stopped bool
	long    bool
	// unhook undoes the context hook that closes the output when the
	// context ends, so that Next never waits on a pipe that some process
	// outside rg's group still holds open.
	unhook func() bool
}

// Start runs rg with args (after --no-config) in dir, a path or the
// /proc/self/fd name of a directory the caller holds open
// (sandbox.Cursor.WorkDir); split cuts its output into records: SplitPaths for --files --null,
// SplitMatches for matches.
func Start(ctx context.Context, dir string, split bufio.SplitFunc, args ...string) (*Proc, error) {
	return start(ctx, dir, split, MaxOutput, args)
}

func start(ctx context.Context, dir string, split bufio.SplitFunc, maxOutput int64, args []string) (*Proc, error) {
	cmd := exec.CommandContext(ctx, "rg", append([]string{"--no-config"}, args...)...)
	cmd.Dir = dir
	// rg needs nothing of agentspec's environment, which holds the
	// provider keys: PATH alone, for a wrapper script named rg to find
	// what it runs. childproc.Start keeps it from reading ours through
	// /proc too.
	cmd.Env = childEnv()
	ownGroup(cmd)
	cmd.Cancel = func() error { return killGroup(cmd.Process) }
	cmd.WaitDelay = WaitDelay
	p := &Proc{ctx: ctx, cmd: cmd}
	cmd.Stderr = &p.stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := childproc.Start(cmd); err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return nil, ErrNotInstalled
		}
		return nil, fmt.Errorf("starting rg: %w", err)
	}
	p.out = &io.LimitedReader{R: out, N: maxOutput}
	p.unhook = context.AfterFunc(ctx, func() { out.Close() })
	p.sc = bufio.NewScanner(p.out)
	p.sc.Buffer(make([]byte, 64<<10), MaxRecord+1)
	// A record cut by the output bound is no record: the split function
	// is not told that the output ended there.
	p.sc.Split(func(data []byte, atEOF bool) (int, []byte, error) {
		return split(data, atEOF && !p.OutputCut())
	})
	return p, nil
}

// childEnv is the environment rg runs with: PATH, and on Windows the
// variables a process needs to start at all.
func childEnv() []string {
	env := []string{}
	for _, name := range []string{"PATH", "SYSTEMROOT", "PATHEXT"} {
		if v, ok := os.LookupEnv(name); ok {
			env = append(env, name+"="+v)
		}
	}
	return env
}

// SplitPaths splits --files --null output: paths, each ended by a NUL.
func SplitPaths(data []byte, atEOF bool) (int, []byte, error) {
	if i := bytes.IndexByte(data, 0); i >= 0 {
		return i + 1, data[:i], nil
	}
	if atEOF && len(data) > 0 {
		return len(data), data, nil
	}
	return 0, nil, nil
}

// SplitMatches splits --null match output into records
// "path\x00N:text": a path may hold a newline, so a record ends at the first
// newline after a NUL. Lines without a NUL ("--" between context groups)
// stay at the start of the record that follows; ParseLine drops them.
func SplitMatches(data []byte, atEOF bool) (int, []byte, error) {
	if i := bytes.IndexByte(data, 0); i >= 0 {
		if j := bytes.IndexByte(data[i:], '\n'); j >= 0 {
			return i + j + 1, data[:i+j], nil
		}
	}
	if atEOF && len(data) > 0 {
		return len(data), bytes.TrimSuffix(data, []byte{'\n'}), nil
	}
	return 0, nil, nil
}

// Next returns the next record without its delimiter, valid until the next
// call, or false at the end of the output.
func (p *Proc) Next() ([]byte, bool) {
	if p.sc.Scan() {
		return p.sc.Bytes(), true
	}
	p.long = errors.Is(p.sc.Err(), bufio.ErrTooLong)
	return nil, false
}

// Truncated reports whether the output ended at a record longer than
// MaxRecord, rather than at its end.
func (p *Proc) Truncated() bool { return p.long }

// OutputCut reports whether the output ended at MaxOutput bytes, rather than
// at its end. A record too long ends it first when the bytes read to find
// that out spend the bound exactly: no read was refused then.
func (p *Proc) OutputCut() bool { return p.out.N <= 0 && !p.long }

// Unreadable returns how many files or directories rg reported it could not
// read (gone since it listed them, not permitted, a name too long): their
// matches are missing from the output. It is known once Wait has returned.
func (p *Proc) Unreadable() int { return p.stderr.osErrors() }

// Stop ends rg early, and whatever it started; Wait then reports no failure.
func (p *Proc) Stop() {
	p.stopped = true
	killGroup(p.cmd.Process)
}

// Wait waits for rg to exit. It returns nil when rg found something or
// nothing (status 0 or 1), could only not read some files (status 2 with
// nothing but such errors: see Unreadable), or was stopped; a *Failure for
// any other status; and the context's error when the context ended the run.
func (p *Proc) Wait() error {
	defer p.unhook()
	switch {
	case p.long || p.OutputCut():
		// The output was not read to its end: rg may be blocked writing.
		p.Stop()
	case p.sc.Err() != nil:
		// Reading failed, most likely because the context's end closed
		// the pipe: rg is being killed; make sure of it, but let the
		// context's error, not Stop, be the answer.
		killGroup(p.cmd.Process)
	}
	err := p.cmd.Wait()
	if p.stopped {
		return nil
	}
	if ctxErr := context.Cause(p.ctx); ctxErr != nil {
		return ctxErr
	}
	// rg's status is the answer when it exited, also when something it
	// started held on to its output after that (exec.ErrWaitDelay).
	var exit *exec.ExitError
	if errors.As(err, &exit) || errors.Is(err, exec.ErrWaitDelay) && p.cmd.ProcessState != nil {
		switch code := p.cmd.ProcessState.ExitCode(); {
		case code == 0 || code == 1:
			return nil
		case code == 2 && p.stderr.onlyOSErrors():
			return nil
		default:
			return &Failure{Code: code, Stderr: strings.TrimSpace(p.stderr.String())}
		}
	}
	return err
}

// limitedBuffer keeps the first 64 KiB written to it: enough for any error
// rg reports, bounded when it reports one per file. It sorts every line
// written, kept or not: rg reports a file or directory it cannot read as
// "<path>: <reason> (os error N)" and goes on with the others.
type limitedBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	line    []byte // the line being written, its last lineKeep bytes
	lineLen int    // its length so far
	os      int    // lines that are an OS error about a path
	other   int    // other non-empty lines
}

const (
	stderrLimit = 64 << 10
	// lineKeep is how much of a line is kept to sort it: only its end
	// matters, so a longer line keeps its last lineKeep bytes.
	lineKeep = 256
)

func (b *limitedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := stderrLimit - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(len(p), room)])
	}
	for rest := p; len(rest) > 0; {
		chunk, more, ended := bytes.Cut(rest, []byte{'\n'})
		b.lineLen += len(chunk)
		b.line = append(b.line, chunk...)
		if len(b.line) > lineKeep {
			// Keep the last lineKeep bytes: the reason is at the end.
			b.line = append(b.line[:0], b.line[len(b.line)-lineKeep:]...)
		}
		if !ended {
			break
		}
		b.endLine()
		rest = more
	}
	return len(p), nil
}

func (b *limitedBuffer) endLine() {
	switch {
	case b.lineLen == 0:
	case osErrorLine(b.line):
		b.os++
	default:
		b.other++
	}
	b.line, b.lineLen = b.line[:0], 0
}

// osErrorLine reports whether the end of a line is rg's " (os error N)".
func osErrorLine(line []byte) bool {
	i := bytes.LastIndex(line, []byte(" (os error "))
	if i < 0 {
		return false
	}
	digits, ok := bytes.CutSuffix(line[i+len(" (os error "):], []byte(")"))
	return ok && len(digits) > 0 && len(bytes.TrimLeft(digits, "0123456789")) == 0
}

// osErrors returns how many complete lines were OS errors about a path.
func (b *limitedBuffer) osErrors() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.os
}

// onlyOSErrors reports whether every line written is an OS error about a
// path, and there is at least one; an unfinished last line counts.
func (b *limitedBuffer) onlyOSErrors() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.lineLen > 0 {
		b.endLine()
	}
	return b.os > 0 && b.other == 0
}

func (b *limitedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

var separator = []byte("--\n")

// Previewed ends a line that --max-columns-preview cut: rg prints the start
// of the line, then this.
const Previewed = " [... omitted end of long line]"

// Line is one line of rg's match output (--null --line-number
// --with-filename): "path\x00N:text" for a match, "path\x00N-text" for a
// context line.
type Line struct {
	Path    []byte
	Number  []byte // decimal digits
	Context bool
	Text    []byte // without its line terminator
}

// ParseLine parses a record of match output, as SplitMatches cuts it, for a
// search whose targets all start with "./". It drops the "--" lines between
// groups of context ahead of a record, and reports false for anything that is
// not a line of a file, such as a note about a binary file.
func ParseLine(rec []byte) (Line, bool) {
	i := bytes.IndexByte(rec, 0)
	if i < 0 {
		return Line{}, false
	}
	path := rec[:i]
	for bytes.HasPrefix(path, separator) {
		path = path[len(separator):]
	}
	if !bytes.HasPrefix(path, []byte("./")) {
		return Line{}, false
	}
	l := Line{Path: path}
	rest := rec[i+1:]
	j := 0
	for j < len(rest) && rest[j] >= '0' && rest[j] <= '9' {
		j++
	}
	if j == 0 || j == len(rest) || (rest[j] != ':' && rest[j] != '-') {
		return Line{}, false
	}
	l.Number, l.Context = rest[:j], rest[j] == '-'
	l.Text = bytes.TrimSuffix(rest[j+1:], []byte{'\r'})
	return l, true
}
