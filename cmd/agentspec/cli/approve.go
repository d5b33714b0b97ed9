package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/internal/text"
)

// approver asks before each file change.
type approver struct {
	in       io.Reader
	out      io.Writer
	progress *progress // paused while asking; nil with -q
	echo     bool      // the answers do not come from a terminal: show them

	once    sync.Once
	answers chan answer // lines read from in, by one goroutine
}

// typedAhead is how many lines may wait to be taken, each stamped as it
// came; past it, a line is stamped when there is room for it.
const typedAhead = 256

// answer is one line read from the answers' stream, or the error that ended
// it, and when it was read.
type answer struct {
	line string
	err  error
	at   time.Time
}

// next waits for the answer to the question asked at asked. The read
// happens in a goroutine of its own, so Ctrl-C ends the wait at once: a
// read from a terminal cannot be interrupted, and would otherwise hold the
// run until a line or EOF came. On a terminal, a line read before the
// question was shown is not its answer and is dropped: typed ahead while
// the model worked, it would approve a change nobody had seen. Answers
// that do not come from a terminal (echo) are a script, read in order.
func (a *approver) next(ctx context.Context, asked time.Time) (answer, error) {
	a.start()
	for {
		select {
		case <-ctx.Done():
			return answer{}, ctx.Err()
		case ans, ok := <-a.answers:
			if !ok {
				return answer{err: io.EOF}, nil
			}
			if !a.echo && ans.err == nil && ans.at.Before(asked) {
				continue
			}
			return ans, nil
		}
	}
}

// start begins reading the answers, at once when the run starts, so that
// a line typed before the first question is read (and dropped) before it
// is asked. The lines wait in a buffer, so that each is stamped as it
// comes, not when the one before it is taken: two lines typed ahead are
// both dropped.
func (a *approver) start() {
	a.once.Do(func() {
		a.answers = make(chan answer, typedAhead)
		go func() {
			r := bufio.NewReader(a.in)
			for {
				line, err := r.ReadString('\n')
				a.answers <- answer{line, err, time.Now()}
				if err != nil {
					close(a.answers)
					return
				}
			}
		}()
	})
}

func (a *approver) listen(ctx context.Context, ev capabilities.Event) error {
	req, ok := ev.(capabilities.ChangeRequest)
	if !ok {
		return nil
	}
	a.progress.pause()
	// What is asked about is the model's: shown with every control
	// character escaped, so that none can hide a line of the change.
	change := req.Describe()
	fmt.Fprintf(a.out, "\nThe agent wants to %s:\n", text.Visible(change.Summary))
	if change.Diff != "" {
		fmt.Fprintln(a.out, indentLines(text.VisibleLines(change.Diff), "  "))
	}
	if change.Truncated {
		fmt.Fprintln(a.out, "  (diff truncated)")
	}
	asked := time.Now()
	fmt.Fprint(a.out, "Apply this change? [y/N] ")
	ans, err := a.next(ctx, asked)
	if err != nil {
		// Interrupted while asking: the change does not land, and the run
		// stops before its next step.
		fmt.Fprintln(a.out)
		req.Cancel("the run was interrupted")
		return nil
	}
	if ans.err != nil && !errors.Is(ans.err, io.EOF) {
		return fmt.Errorf("reading the answer: %w", ans.err)
	}
	line := strings.TrimSpace(ans.line)
	if a.echo || errors.Is(ans.err, io.EOF) {
		fmt.Fprintln(a.out, line)
	}
	switch strings.ToLower(line) {
	case "y", "yes":
		return nil
	}
	req.Cancel("the user declined the change")
	return nil
}

// indentLines puts prefix before every line of s.
func indentLines(s, prefix string) string {
	return prefix + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n"+prefix)
}
