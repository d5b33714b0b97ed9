package pipeline

import (
	"context"
	"slices"
	"sync"
)

// slots are the run's job slots, Concurrency in all, given to the jobs
// waiting for one in the order of their steps in the file, and of their
// items in a step, each step running at most its own limit at once.
//
// Which jobs wait must not depend on how goroutines are scheduled: a job
// that ends makes its dependents ready (or skipped, or not run) and lets
// its step's next item go, and those must be waiting before its slot is
// given again. So whoever is working out what is ready holds the slots
// (hold), and none is given while anything holds them: Run holds them for
// each step without dependencies, a step's end for each step it leaves with
// nothing more to wait for, and a job's end while it gives its slot back
// and records how it ended. A step lets go (unhold) once it waits for its
// slots, or has ended without a job.
type slots struct {
	mu      sync.Mutex
	free    int
	held    int
	waiting [][]*ticket // by step position in the file, each in item order
	running []int       // by step position
	limit   []int       // by step position; 0 is no limit but the run's
}

// ticket is one job's place in the line for a slot.
type ticket struct {
	pos     int
	granted bool          // under slots.mu
	ready   chan struct{} // closed once granted, or dropped
}

func newSlots(n, steps int) *slots {
	return &slots{free: n, waiting: make([][]*ticket, steps), running: make([]int, steps), limit: make([]int, steps)}
}

func (q *slots) hold() {
	q.mu.Lock()
	q.held++
	q.mu.Unlock()
}

func (q *slots) unhold() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.held--
	q.give()
}

// request puts n jobs of the step at pos in line, in item order, at most
// limit of them running at once (0: no limit of the step's own).
func (q *slots) request(pos, n, limit int) []*ticket {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.limit[pos] = limit
	ts := make([]*ticket, n)
	for i := range ts {
		ts[i] = &ticket{pos: pos, ready: make(chan struct{})}
	}
	q.waiting[pos] = append(q.waiting[pos], ts...)
	q.give()
	return ts
}

// wait waits for t's slot; false when ctx ended first, or t was dropped (no
// slot is then taken).
func (q *slots) wait(ctx context.Context, t *ticket) bool {
	select {
	case <-t.ready:
	case <-ctx.Done():
	}
	q.mu.Lock()
	if !t.granted {
		q.remove(t)
		q.mu.Unlock()
		return false
	}
	q.mu.Unlock()
	if ctx.Err() != nil {
		q.release(t)
		return false
	}
	return true
}

// drop takes the jobs of the step at pos that wait for a slot out of line:
// their waits return false.
func (q *slots) drop(pos int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, t := range q.waiting[pos] {
		close(t.ready)
	}
	q.waiting[pos] = nil
}

// release gives back the slot t was granted.
func (q *slots) release(t *ticket) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.free++
	q.running[t.pos]--
	q.give()
}

// remove takes t out of line, if it is in it. The caller holds mu. A
// step's items leave it in item order, when the run stops: the first of
// the line goes in constant time, so that a long line empties in time in
// proportion to its length.
func (q *slots) remove(t *ticket) {
	line := q.waiting[t.pos]
	if len(line) > 0 && line[0] == t {
		line[0] = nil
		q.waiting[t.pos] = line[1:]
		return
	}
	if i := slices.Index(line, t); i >= 0 {
		q.waiting[t.pos] = slices.Delete(line, i, i+1)
	}
}

// give gives the free slots to the waiting jobs, the earliest step's first,
// unless something holds them. The caller holds mu.
func (q *slots) give() {
	if q.held > 0 {
		return
	}
	for pos := range q.waiting {
		for q.free > 0 && len(q.waiting[pos]) > 0 && (q.limit[pos] == 0 || q.running[pos] < q.limit[pos]) {
			t := q.waiting[pos][0]
			q.waiting[pos] = q.waiting[pos][1:]
			t.granted = true
			close(t.ready)
			q.free--
			q.running[pos]++
		}
		if q.free == 0 {
			return
		}
	}
}
