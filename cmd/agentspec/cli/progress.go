package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/internal/text"
	"github.com/agentspec/agentspec/runtime"
)

// progress reports a run on stderr: a line per tool call, the retries, and a
// live status line while the model thinks when stderr is a terminal.
type progress struct {
	mu     sync.Mutex
	w      io.Writer
	live   bool // stderr is a terminal
	status bool // a status line is showing

	pending  pendingCall // the call whose result is awaited
	received int         // characters streamed in the current response
	// changes are the file change requests of the calls under way, by tool
	// call id: a change the user or a listener cancelled ends in a normal
	// tool result, which alone would not say so.
	changes map[string]capabilities.ChangeRequest
	// outcomes say how the work of a call under way ended, by tool call
	// id, from an event that tells (a Shell command's "exit 0").
	outcomes map[string]string
}

// outcomer is an event that says how the work it reports ended, in a few
// words for the end of a progress line (a Shell command's "exit 0" or
// "timed out after 1.0s").
type outcomer interface {
	Outcome() string
}

func newProgress(w io.Writer) *progress {
	return &progress{w: w, live: isLive(w), changes: map[string]capabilities.ChangeRequest{}, outcomes: map[string]string{}}
}

// isLive reports whether progress on w may redraw a status line in place: w
// is a terminal that understands the escape codes (TERM is not "dumb").
// Anywhere else progress is plain lines, with no carriage return or escape.
func isLive(w io.Writer) bool {
	return isTerminal(w) && os.Getenv("TERM") != "dumb"
}

// isTerminal reports whether v, a stream, is a terminal.
func isTerminal(v any) bool {
	f, ok := v.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// pendingCall remembers a tool call until its result arrives.
type pendingCall struct {
	name, summary string
}

func (p *progress) listen(ctx context.Context, ev capabilities.Event) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch ev := ev.(type) {
	case runtime.ModelRequest:
		if p.live {
			p.clearStatus()
			fmt.Fprintf(p.w, "  waiting for the model (request %d)…", ev.Request)
			p.status = true
		}
	case runtime.ModelResponse:
		p.clearStatus()
		p.received = 0
	case runtime.ToolCall:
		if p.live {
			p.clearStatus()
			fmt.Fprintf(p.w, "  %s %s…", text.Visible(ev.Name), summarizeArgs(ev.Args))
			p.status = true
		}
		p.pending = pendingCall{ev.Name, summarizeArgs(ev.Args)}
	case runtime.ToolResult:
		p.clearStatus()
		line := "  " + text.Visible(ev.Name)
		if p.pending.name == ev.Name && p.pending.summary != "" {
			line += " " + p.pending.summary
		}
		line += "  " + formatDuration(ev.Duration)
		switch ev.Status {
		case runtime.ToolRetry:
			line += "  " + refusal(ev.Refusal, ev.Message)
		case runtime.ToolFatal:
			line += "  failed: " + oneLine(ev.Message)
		default:
			cancelled, reason := false, ""
			if req := p.changes[ev.ID]; req != nil {
				cancelled, reason = req.Cancelled()
			}
			switch outcome := p.outcomes[ev.ID]; {
			case cancelled:
				line += "  cancelled: " + oneLine(reason)
			case outcome != "":
				line += "  " + oneLine(outcome)
			}
		}
		delete(p.changes, ev.ID)
		delete(p.outcomes, ev.ID)
		fmt.Fprintln(p.w, line)
	case capabilities.ChangeRequest:
		if call, ok := capabilities.CallFrom(ctx); ok {
			p.changes[call.ID] = ev
		}
	case outcomer:
		if call, ok := capabilities.CallFrom(ctx); ok {
			p.outcomes[call.ID] = ev.Outcome()
		}
	case runtime.Retry:
		if ev.Type != runtime.RetryTool {
			p.clearStatus()
			fmt.Fprintf(p.w, "  answer rejected (attempt %d of %d): %s\n", ev.Attempt, ev.Limit, oneLine(ev.Message))
		}
	case runtime.ModelRetry:
		p.clearStatus()
		reason := oneLine(ev.Reason)
		if ev.Status != 0 {
			reason = fmt.Sprintf("HTTP %d: %s", ev.Status, reason)
		}
		fmt.Fprintf(p.w, "  %s: attempt %d of %d failed: %s; retrying in %s\n",
			ev.Provider, ev.Attempt, ev.MaxAttempts, reason, formatDuration(ev.Wait))
	case runtime.LimitReached:
		p.clearStatus()
		fmt.Fprintf(p.w, "  %s (%d) reached: asking for the final answer\n", ev.Limit, ev.Value)
	case runtime.CacheHit:
		p.clearStatus()
		fmt.Fprintf(p.w, "  cached result %s, stored %s\n", shortKey(ev.Key), ev.Created.UTC().Format(time.RFC3339))
	case runtime.CacheWarning:
		p.clearStatus()
		fmt.Fprintf(p.w, "  cache: %s\n", oneLine(ev.Message))
	}
	return nil
}

// refusal names what became of a tool call the model may correct: a change
// refused because the file changed since it was read (conflict) or because
// its path is protected, a command refused by its checks, as the tool's
// error says it was, or another error.
func refusal(kind capabilities.Refusal, msg string) string {
	msg = oneLine(msg)
	switch kind {
	case capabilities.RefusedConflict:
		return "conflict: " + strings.TrimSpace(strings.TrimPrefix(msg, "Conflict:"))
	case capabilities.RefusedProtected:
		return "protected: " + msg
	case capabilities.RefusedCommand:
		return "refused: " + msg
	}
	return "error: " + msg
}

// stream shows how much of the model's response has arrived.
func (p *progress) stream(_ context.Context, text string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.received += utf8.RuneCountInString(text)
	p.clearStatus()
	fmt.Fprintf(p.w, "  receiving the answer… %d characters", p.received)
	p.status = true
	return nil
}

func (p *progress) clearStatus() {
	if p.status {
		fmt.Fprint(p.w, "\r\033[K")
		p.status = false
	}
}

// pause clears the status line before someone else writes to the terminal.
func (p *progress) pause() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clearStatus()
}

// summary prints what the run consumed.
func (p *progress) summary(res *runtime.Result) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clearStatus()
	if res == nil {
		return
	}
	u := res.Usage
	if res.Cached {
		fmt.Fprintf(p.w, "cached, no model request, %s\n", formatDuration(u.Elapsed))
		return
	}
	var extra []string
	if u.CacheReadTokens > 0 {
		extra = append(extra, fmt.Sprintf("%d read from the cache", u.CacheReadTokens))
	}
	if u.CacheWriteTokens > 0 {
		extra = append(extra, fmt.Sprintf("%d written to the cache", u.CacheWriteTokens))
	}
	if u.ReasoningTokens > 0 {
		extra = append(extra, fmt.Sprintf("%d reasoning", u.ReasoningTokens))
	}
	fmt.Fprintf(p.w, "%s, %s, %s, %s\n",
		plural(u.Requests, "model request"), tokenCounts(u, extra), plural(u.ToolCalls, "tool call"), formatDuration(u.Elapsed))
}

// tokenCounts writes u's input and output tokens, with the parts of them
// in parts. Counts that leave out responses which came with no usage are
// written as the lower bounds they are, saying how many they leave out.
func tokenCounts(u runtime.Usage, parts []string) string {
	tokens := fmt.Sprintf("%d input + %d output tokens", u.InputTokens, u.OutputTokens)
	note := strings.Join(parts, ", ")
	if n := u.RequestsWithoutUsage; n > 0 {
		tokens = "at least " + tokens
		unknown := plural(n, "request") + " reported no usage"
		if note != "" {
			note += "; "
		}
		note += unknown
	}
	if note != "" {
		tokens += " (" + note + ")"
	}
	return tokens
}

// shortKey abbreviates a cache key as git does a commit.
func shortKey(key string) string {
	if len(key) > 12 {
		return key[:12]
	}
	return key
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// formatDuration prints a duration short: 0.4ms, 12.3ms, 2.1s.
func formatDuration(d time.Duration) string {
	if d < time.Second {
		return fmt.Sprintf("%.1fms", float64(d.Microseconds())/1000)
	}
	return fmt.Sprintf("%.1fs", d.Seconds())
}

// summarizeArgs picks what identifies a tool call on one line: its path and
// pattern when it has them, else its first string argument.
func summarizeArgs(args json.RawMessage) string {
	var fields map[string]any
	if json.Unmarshal(args, &fields) != nil {
		return ""
	}
	var parts []string
	for _, key := range []string{"path", "pattern"} {
		if s, ok := fields[key].(string); ok && s != "" {
			parts = append(parts, s)
		}
	}
	if len(parts) == 0 {
		keys := make([]string, 0, len(fields))
		for k := range fields {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if s, ok := fields[k].(string); ok && s != "" {
				parts = append(parts, s)
				break
			}
		}
	}
	return clip(oneLine(strings.Join(parts, " ")), 60)
}

// oneLine is s on one line, as a terminal may show it: its runs of white
// space made one space, and whatever else a terminal would act on escaped.
func oneLine(s string) string {
	return text.Visible(strings.Join(strings.Fields(s), " "))
}

func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
