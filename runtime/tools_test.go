package runtime

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A call's context ends as context.WithTimeout's would: as timed out, for
// itself, for context.Cause and for a context made from it, and a listener
// heard after its time ran out does not bring it back.
func TestCallDeadlineEndsAsWithTimeout(t *testing.T) {
	t.Parallel()
	c, stop := withCallDeadline(context.Background(), time.Millisecond)
	defer stop()
	child, cancel := context.WithCancel(c)
	defer cancel()
	<-child.Done()
	assert.Equal(t, context.DeadlineExceeded, c.Err())
	assert.Equal(t, context.DeadlineExceeded, context.Cause(c))
	assert.Equal(t, context.DeadlineExceeded, child.Err(), "a context made from it timed out too")
	c.hold()()
	assert.Equal(t, context.DeadlineExceeded, c.Err())

	c, stop = withCallDeadline(context.Background(), time.Hour)
	stop()
	<-c.Done()
	assert.Equal(t, context.Canceled, c.Err(), "stopped, it is cancelled")
}

// The run's end (Ctrl-C) ends the call while a listener holds its clock,
// with the run's cause, and a call made after it has ended from the start.
func TestCallDeadlineEndsWithTheRunWhileHeld(t *testing.T) {
	t.Parallel()
	run, interrupt := context.WithCancelCause(context.Background())
	c, stop := withCallDeadline(run, time.Hour)
	defer stop()
	release := c.hold()
	defer release()
	ctrlC := errors.New("interrupted")
	interrupt(ctrlC)
	<-c.Done()
	assert.Equal(t, context.Canceled, c.Err())
	assert.Equal(t, ctrlC, context.Cause(c))

	late, stop := withCallDeadline(run, time.Hour)
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
	c, stop := withCallDeadline(run, time.Minute)
	defer stop()
	first, ok := c.Deadline()
	require.True(t, ok)
	assert.True(t, first.Before(runEnds))
	release := c.hold()
	held, _ := c.Deadline()
	assert.False(t, held.Before(first), "held %v, was %v", held, first)
	release()
	after, _ := c.Deadline()
	assert.False(t, after.Before(held), "after %v, held %v", after, held)

	long, stop := withCallDeadline(run, 2*time.Hour)
	defer stop()
	dl, _ := long.Deadline()
	assert.Equal(t, runEnds, dl)
}
