package capabilities

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type askEvent struct{}

func (askEvent) Kind() string { return "test.ask" }

// A listener that takes longer than the call's limit, a person answering a
// question, holds its clock: the call goes on with the time it had left,
// and then ends with the cause it was given.
func TestWithCallTimeoutStopsWhileTheListenerRuns(t *testing.T) {
	t.Parallel()
	const limit = 50 * time.Millisecond
	tooLate := errors.New("the call's time limit passed")
	answered := false
	ctx := WithListener(context.Background(), func(ctx context.Context, _ Event) error {
		// The answer comes after the call's deadline, had its clock gone
		// on: when the call's context ends, or well past its limit.
		select {
		case <-ctx.Done():
		case <-time.After(4 * limit):
			answered = true
		}
		return ctx.Err()
	})
	ctx, stop := WithCallTimeout(ctx, limit, tooLate)
	defer stop()
	require.NoError(t, Emit(ctx, askEvent{}))
	assert.True(t, answered)
	assert.NoError(t, ctx.Err(), "the call has time left")
	<-ctx.Done()
	assert.Equal(t, context.DeadlineExceeded, ctx.Err())
	assert.Equal(t, tooLate, context.Cause(ctx))
}

// Without a listener nothing holds the clock, and none is added: the call
// is not made inside a run. It ends at its limit, with its cause; with no
// time at all, it has ended from the start, listener or not.
func TestWithCallTimeoutWithoutListener(t *testing.T) {
	t.Parallel()
	tooLate := errors.New("the call's time limit passed")
	ctx, stop := WithCallTimeout(context.Background(), time.Millisecond, tooLate)
	defer stop()
	assert.False(t, Emitting(ctx))
	<-ctx.Done()
	assert.Equal(t, context.DeadlineExceeded, ctx.Err())
	assert.Equal(t, tooLate, context.Cause(ctx))

	heard := WithListener(context.Background(), func(context.Context, Event) error { return nil })
	for _, parent := range []context.Context{context.Background(), heard} {
		ctx, stop := WithCallTimeout(parent, 0, tooLate)
		defer stop()
		assert.Equal(t, context.DeadlineExceeded, ctx.Err(), "no time at all has ended at once")
		assert.Equal(t, tooLate, context.Cause(ctx))
	}
}

// A call's context ends as context.WithTimeout's would: as timed out, for
// itself, for context.Cause and for a context made from it, and a listener
// heard after its time ran out does not bring it back.
func TestCallDeadlineEndsAsWithTimeout(t *testing.T) {
	t.Parallel()
	c, stop := withCallDeadline(context.Background(), time.Millisecond, nil)
	defer stop()
	child, cancel := context.WithCancel(c)
	defer cancel()
	<-child.Done()
	assert.Equal(t, context.DeadlineExceeded, c.Err())
	assert.Equal(t, context.DeadlineExceeded, context.Cause(c))
	assert.Equal(t, context.DeadlineExceeded, child.Err(), "a context made from it timed out too")
	assert.False(t, c.hold(), "an ended call is not held")
	assert.Equal(t, context.DeadlineExceeded, c.Err())

	c, stop = withCallDeadline(context.Background(), time.Hour, nil)
	stop()
	<-c.Done()
	assert.Equal(t, context.Canceled, c.Err(), "stopped, it is cancelled")
}

// The run's end (Ctrl-C) ends the call while a listener holds its clock,
// with the run's cause, and a call made after it has ended from the start.
func TestCallDeadlineEndsWithTheRunWhileHeld(t *testing.T) {
	t.Parallel()
	run, interrupt := context.WithCancelCause(context.Background())
	c, stop := withCallDeadline(run, time.Hour, nil)
	defer stop()
	require.True(t, c.hold())
	defer c.release()
	ctrlC := errors.New("interrupted")
	interrupt(ctrlC)
	<-c.Done()
	assert.Equal(t, context.Canceled, c.Err())
	assert.Equal(t, ctrlC, context.Cause(c))

	late, stop := withCallDeadline(run, time.Hour, nil)
	defer stop()
	assert.Equal(t, context.Canceled, late.Err(), "a call made after the run ended has ended")
}

// Deadline moves on while a listener holds the clock, never back, and is
// never past the run's.
func TestCallDeadlineReportsWhenTheCallWouldEnd(t *testing.T) {
	t.Parallel()
	runEnds := time.Now().Add(time.Hour)
	run, cancel := context.WithDeadline(context.Background(), runEnds)
	defer cancel()
	c, stop := withCallDeadline(run, time.Minute, nil)
	defer stop()
	first, ok := c.Deadline()
	require.True(t, ok)
	assert.True(t, first.Before(runEnds))
	require.True(t, c.hold())
	held, _ := c.Deadline()
	assert.False(t, held.Before(first), "held %v, was %v", held, first)
	c.release()
	after, _ := c.Deadline()
	assert.False(t, after.Before(held), "after %v, held %v", after, held)

	long, stop := withCallDeadline(run, 2*time.Hour, nil)
	defer stop()
	dl, _ := long.Deadline()
	assert.Equal(t, runEnds, dl)
}

// Seconds saturates where a Duration ends, keeps a positive number a bound,
// and converts the rest as they are.
func TestSeconds(t *testing.T) {
	for s, want := range map[float64]time.Duration{
		0:                    0,
		1.5:                  1500 * time.Millisecond,
		1e-12:                time.Nanosecond,
		9223372036.854775:    9223372036854774784, // the float64 nearest below 2^63 ns
		9223372036.854775807: math.MaxInt64,
		1e10:                 math.MaxInt64,
		1e300:                math.MaxInt64,
		math.Inf(1):          math.MaxInt64,
	} {
		assert.Equal(t, want, Seconds(s), "%v", s)
	}
}
