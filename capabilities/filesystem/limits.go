package filesystem

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/capabilities/filesystem/internal/rg"
	"github.com/agentspec/agentspec/capabilities/filesystem/internal/search"
	"github.com/agentspec/agentspec/internal/sandbox"
	"github.com/agentspec/agentspec/internal/sandbox/walk"
)

// Bounds on the work one tool call does, and the notes a result ends with
// when one of them cut it short. A result that stops early always says so:
// the model must never take part of a tree for all of it.

// The longest text arguments grep and list_files pass to ripgrep, in bytes.
// A pattern gets the limit search_files has (D8); a glob the same; a file
// type is a short name such as "py".
const (
	MaxRipgrepPattern  = search.MaxPattern
	MaxRipgrepGlob     = 4096
	MaxRipgrepFileType = 64
)

// RipgrepSizeLimit is what grep passes as ripgrep's --regex-size-limit and
// --dfa-size-limit: a pattern whose compiled form is larger (\w{1000} is) is
// refused with a retry instead of costing the rg child memory and time.
const RipgrepSizeLimit = "10M"

// checkRipgrepArg refuses an argument rg cannot take or that is too long: a
// NUL byte cannot travel in an argument vector at all (exec would fail with
// "invalid argument" and end the run), and a huge one costs rg time to
// compile. Both are the model's to fix, so both are retries naming the
// argument.
func checkRipgrepArg(name, value string, limit int) error {
	if strings.IndexByte(value, 0) >= 0 {
		return capabilities.Retry("Argument %s contains a NUL byte; ripgrep cannot search for one. Remove it.", pyRepr(name))
	}
	if len(value) > limit {
		return capabilities.Retry("Argument %s is %d bytes long; the limit is %d.", pyRepr(name), len(value), limit)
	}
	return nil
}

// rgFailed is the retry for an rg run that failed, its messages scrubbed
// of host paths. For a pattern rg refused (rg's message on standard error
// starts "regex parse error", or says the compiled pattern exceeds the size
// limit) it gives the reason rg gives, with the "Invalid regex pattern:"
// prefix search_files uses (D8), without rg's advice to pass --pcre2, which
// the model cannot do; for anything else, "ripgrep failed:" and rg's
// message.
func (fs *FS) rgFailed(pattern string, f *rg.Failure) error {
	switch {
	case strings.Contains(f.Stderr, "exceeds size limit"):
		return capabilities.Retry("Invalid regex pattern: it compiles to more than ripgrep's size limit (%sB). "+
			"Use fewer alternatives or smaller repetition counts (e.g. \\w+ rather than \\w{1000}).", RipgrepSizeLimit)
	case !strings.HasPrefix(f.Stderr, "regex parse error"):
		return capabilities.Retry("ripgrep failed: %s", fs.scrubHostPaths(f.Error()))
	}
	var reason string
	var shown []string
	for line := range strings.SplitSeq(fs.scrubHostPaths(f.Stderr), "\n") {
		switch {
		case strings.HasPrefix(line, "regex parse error"), strings.TrimSpace(line) == "":
		case strings.HasPrefix(line, "error: "):
			reason = strings.TrimPrefix(line, "error: ")
		case strings.HasPrefix(line, "Consider enabling PCRE2"), strings.HasPrefix(line, "and look-around"):
		default:
			shown = append(shown, line)
		}
	}
	if reason == "" {
		reason = "ripgrep cannot compile it"
	}
	msg := "Invalid regex pattern: " + reason
	if len(shown) > 0 {
		msg += "\n" + strings.Join(shown, "\n")
	}
	if hint := re2Hint(pattern); hint != "" {
		msg += "\n" + hint // the advice search_files gives for the same pattern
	}
	return capabilities.Retry("%s", msg)
}

// incomplete says why a walk or search stopped before its end, besides its
// result cap (which listing.render marks); the zero value when nothing did.
type incomplete struct {
	timedOut   bool // the call's deadline passed
	visited    bool // the walk visited walk.MaxEntries entries
	outputCut  bool // rg printed rg.MaxOutput bytes
	unreadable int  // files or directories rg could not read
}

// withNotes appends to a rendered result the lines that say why the bounds
// cut it short.
func withNotes(out string, in incomplete) string {
	if in.visited {
		out += "\n[... stopped after visiting " + strconv.Itoa(walkLimit()) +
			" entries; the result is incomplete: narrow the path]"
	}
	if in.timedOut {
		out += "\n[... stopped at the time limit; the result is incomplete: narrow the path or pattern]"
	}
	if in.outputCut {
		out += "\n[... stopped after " + strconv.Itoa(rg.MaxOutput>>20) +
			" MiB of ripgrep output; the result is incomplete: narrow the path or pattern]"
	}
	if in.unreadable > 0 {
		what := "files or directories"
		if in.unreadable == 1 {
			what = "file or directory"
		}
		out += "\n[... ripgrep could not read " + strconv.Itoa(in.unreadable) + " " + what +
			" (gone or unreadable); their matches are missing]"
	}
	return out
}

// walkLimitOverride lowers walk.MaxEntries in tests; 0 keeps it.
var walkLimitOverride atomic.Int64

// walkLimit is how many entries a walk visits at most.
func walkLimit() int {
	if n := walkLimitOverride.Load(); n > 0 {
		return int(n)
	}
	return walk.MaxEntries
}

// newWalk starts a walk of rel, bounded by walkLimit.
func newWalk[S any](fs *FS, rel string, state S) (*walk.Walker[S], error) {
	w, err := sandbox.NewWalker(fs.dir, rel, state)
	if err == nil {
		bound(w)
	}
	return w, err
}

// bound lowers a walk's entry limit to walkLimit, when a test has.
func bound[S any](w *walk.Walker[S]) {
	if walkLimitOverride.Load() > 0 {
		w.Limit(walkLimit())
	}
}

// walkInto adds to found the line entry renders of each entry w visits,
// entry saying false for one not shown, until found refuses one or the walk
// ends, and says what cut the walk short. Past the cap what is shown is
// whole: the entries after the first one refused are neither read nor shown.
// The call's context is checked between entries: at a deadline the walk
// stops and says so (timedOut); a cancellation is the caller's error,
// returned as it is.
func walkInto[S any](ctx context.Context, w *walk.Walker[S], found *listing, entry func(*walk.Walker[S]) (string, bool)) (incomplete, error) {
	var in incomplete
	for w.Next() {
		if err := ctx.Err(); errors.Is(err, context.DeadlineExceeded) {
			in.timedOut = true
			break
		} else if err != nil {
			return in, context.Cause(ctx)
		}
		if line, ok := entry(w); ok && !found.add(line) {
			break
		}
	}
	in.visited = w.Capped()
	return in, nil
}
