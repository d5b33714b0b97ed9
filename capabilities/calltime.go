package capabilities

import (
	"context"
	"math"
	"sync"
	"time"
)

// Seconds is s seconds, an option's timeout, as a time.Duration: one longer
// than a Duration holds (about 292 years), which a schema's "number" allows,
// is the longest Duration, where converted as it is it would be a negative
// one that ends a wait at once; a positive one below a nanosecond is a
// nanosecond, where the zero Duration often means no bound.
func Seconds(s float64) time.Duration {
	switch d := s * float64(time.Second); {
	case d >= math.MaxInt64: // 2^63 as a float64, exactly
		return math.MaxInt64
	case d < 1 && s > 0:
		return time.Nanosecond
	default:
		return time.Duration(d)
	}
}

// WithCallTimeout returns a context for one tool call that ends after d of
// the call's own time, with cause as its context.Cause (nil gives
// context.DeadlineExceeded), and a function to stop it that must be called,
// as context.WithTimeoutCause does. Its clock stops while the listener ctx
// carries hears an event sent through the returned context: the time a
// listener takes, a person asked to approve a change, is not the tool
// running late, and pydantic-ai asks for approvals outside the tool call.
// The runtime's tool_timeout and a capability's own limit on a call (the
// FileSystem's DefaultToolTimeout) are both kept so.
//
// The returned context carries, in place of ctx's listener, one that holds
// the clock while it calls ctx's. When ctx carries no listener, nothing can
// stop the clock, and the context is context.WithTimeoutCause's.
func WithCallTimeout(ctx context.Context, d time.Duration, cause error) (context.Context, context.CancelFunc) {
	l, ok := ctx.Value(listenerKey{}).(Listener)
	if !ok || l == nil {
		return context.WithTimeoutCause(ctx, d, cause)
	}
	var c *callDeadline
	held := func(evCtx context.Context, ev Event) error {
		if c.hold() {
			defer c.release()
		}
		return l(evCtx, ev)
	}
	var stop context.CancelFunc
	c, stop = withCallDeadline(WithListener(ctx, held), d, cause)
	return c, stop
}

// callDeadline is the context WithCallTimeout gives a call. It ends when the
// call's time runs out (Err is context.DeadlineExceeded), when its parent
// ends (the parent's Err), or when its stop function is called
// (context.Canceled), as context.WithTimeout's does, but its clock stops
// while a listener hears one of the call's events: pydantic-ai asks for
// approvals outside the tool call, so a person's time to answer never counts
// against the call's time limit either. Events a tool sends from several
// goroutines at once stop the clock until the last listener returns.
//
// Deadline reports when the call ends if no listener holds it from then on,
// and never later than the parent's deadline: while a listener runs, that is
// now plus the time left; after one returns, it is later than it was before
// the event by the time the listener took. A tool that turns it into a
// deadline of its own (a socket's, a subprocess's) before emitting an event
// keeps the earlier one.
type callDeadline struct {
	// inner is the parent with a cancellation of its own, ended with the
	// same cause as this context: it carries the values, and the cause
	// context.Cause finds through them.
	inner       context.Context
	cancelInner context.CancelCauseFunc
	done        chan struct{}
	cause       error // the cause when the time runs out

	mu    sync.Mutex
	err   error
	end   time.Time     // when the time runs out, while no listener holds the clock
	left  time.Duration // the time left, while one does
	holds int           // listeners running
	timer *time.Timer   // nil until the clock first runs; then reset, not made again
}

// withCallDeadline returns a context for one call that ends after d of the
// call's own time, with cause (context.DeadlineExceeded when nil) as its
// context.Cause, and a function to stop it that must be called.
func withCallDeadline(parent context.Context, d time.Duration, cause error) (*callDeadline, context.CancelFunc) {
	if cause == nil {
		cause = context.DeadlineExceeded
	}
	inner, cancelInner := context.WithCancelCause(parent)
	c := &callDeadline{inner: inner, cancelInner: cancelInner, done: make(chan struct{}), cause: cause, left: d}
	c.mu.Lock()
	if d <= 0 {
		c.end = time.Now().Add(d)
		c.finishLocked(context.DeadlineExceeded, cause)
	} else {
		c.run()
	}
	c.mu.Unlock()
	// Watched here rather than through inner: this context's Err must be
	// set before its Done channel closes.
	unwatch := context.AfterFunc(parent, func() { c.finish(parent.Err(), context.Cause(parent)) })
	if err := parent.Err(); err != nil {
		c.finish(err, context.Cause(parent))
	}
	return c, func() {
		unwatch()
		c.finish(context.Canceled, context.Canceled)
	}
}

// run starts the clock with the time left. c.mu is held. The one timer is
// reset each time: a batch's jobs make several calls each, and each event
// stops the clock and starts it again.
func (c *callDeadline) run() {
	c.end = time.Now().Add(c.left)
	if c.timer == nil {
		c.timer = time.AfterFunc(c.left, c.fire)
		return
	}
	c.timer.Reset(c.left)
}

// fire ends the call when its time has run out. A firing meant for an
// earlier end, which a hold stopped too late to prevent, finds the clock
// held or its end moved, and does nothing.
func (c *callDeadline) fire() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.holds == 0 && !time.Now().Before(c.end) {
		c.finishLocked(context.DeadlineExceeded, c.cause)
	}
}

// hold stops the clock until release is called, and reports whether it
// did: a clock already stopped stays so until every hold is released; a
// call that has ended, or whose time ran out before, is left ended, and is
// not to be released.
func (c *callDeadline) hold() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return false
	}
	if c.holds == 0 {
		c.timer.Stop()
		c.left = time.Until(c.end)
		if c.left <= 0 {
			// The timer was due and had not yet said so.
			c.finishLocked(context.DeadlineExceeded, c.cause)
			return false
		}
	}
	c.holds++
	return true
}

// release ends a hold that hold reported; the last one starts the clock
// again with the time that was left.
func (c *callDeadline) release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.holds--
	if c.holds == 0 && c.err == nil {
		c.run()
	}
}

func (c *callDeadline) finish(err, cause error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.finishLocked(err, cause)
}

// finishLocked ends the context, unless it has ended. c.mu is held; inner
// is ended before Done closes, so that whoever sees it closed finds the
// cause too.
func (c *callDeadline) finishLocked(err, cause error) {
	if c.err != nil {
		return
	}
	c.err = err
	if c.timer != nil {
		c.timer.Stop()
	}
	c.cancelInner(cause)
	close(c.done)
}

func (c *callDeadline) Deadline() (time.Time, bool) {
	c.mu.Lock()
	dl := c.end
	if c.holds > 0 {
		dl = time.Now().Add(c.left)
	}
	c.mu.Unlock()
	if p, ok := c.inner.Deadline(); ok && p.Before(dl) {
		dl = p
	}
	return dl, true
}

func (c *callDeadline) Done() <-chan struct{} { return c.done }

func (c *callDeadline) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func (c *callDeadline) Value(key any) any { return c.inner.Value(key) }
