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
	"os/exec"
	"strings"
	"sync"
)

// MaxRecord is the longest record Next returns. A longer one ends the output
// (see Truncated): something is wrong with an output line that long.
const MaxRecord = 1 << 20

// ErrNotInstalled is returned by Start when no rg executable is on PATH.
var ErrNotInstalled = errors.New("ripgrep (rg) is not installed")

// Failure is an rg run that exited with a status other than 0 (something
// found) or 1 (nothing found).
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
type Proc struct {
	ctx     context.Context
	cmd     *exec.Cmd
	out     io.ReadCloser
	sc      *bufio.Scanner
	stderr  limitedBuffer
	stopped bool
	long    bool
}

// Start runs rg with args (after --no-config) in dir, a path or what DirOf
// names; split cuts its output into records: SplitPaths for --files --null,
// SplitMatches for matches.
func Start(ctx context.Context, dir string, split bufio.SplitFunc, args ...string) (*Proc, error) {
	cmd := exec.CommandContext(ctx, "rg", append([]string{"--no-config"}, args...)...)
	cmd.Dir = dir
	p := &Proc{ctx: ctx, cmd: cmd}
	cmd.Stderr = &p.stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return nil, ErrNotInstalled
		}
		return nil, fmt.Errorf("starting rg: %w", err)
	}
	p.out = out
	p.sc = bufio.NewScanner(out)
	p.sc.Buffer(make([]byte, 64<<10), MaxRecord+1)
	p.sc.Split(split)
	return p, nil
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

// Stop ends rg early; Wait then reports no failure.
func (p *Proc) Stop() {
	p.stopped = true
	p.cmd.Process.Kill()
}

// Wait waits for rg to exit. It returns nil when rg found something or
// nothing (status 0 or 1) or was stopped, a *Failure for any other status,
// and the context's error when the context ended the run.
func (p *Proc) Wait() error {
	if p.long {
		p.Stop()
	}
	// Drain what rg still writes so that it can exit, then reap it.
	io.Copy(io.Discard, p.out)
	err := p.cmd.Wait()
	if p.stopped {
		return nil
	}
	if ctxErr := context.Cause(p.ctx); ctxErr != nil {
		return ctxErr
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		if code := exit.ExitCode(); code != 1 {
			return &Failure{Code: code, Stderr: strings.TrimSpace(p.stderr.String())}
		}
		return nil
	}
	return err
}

// limitedBuffer keeps the first 64 KiB written to it: enough for any error
// rg reports, bounded when it reports one per file.
type limitedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

const stderrLimit = 64 << 10

func (b *limitedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := stderrLimit - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
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
