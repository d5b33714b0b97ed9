// Package ordered runs work on several goroutines and delivers the results in
// the order the work was handed out, so that a parallel search prints what a
// sequential one would.
package ordered

import "sync"

// window bounds how far the fastest worker may run ahead of the oldest
// unfinished item, and so how many results wait to be delivered.
const window = 64

// Run calls next for items until it reports none is left, calls work on each
// item on one of workers goroutines (the caller's included), and calls emit
// with each result in the order next produced the items. When emit returns
// false, Run stops taking items and returns once the workers are idle;
// results not yet delivered are dropped.
//
// next and emit are called with a lock held, never concurrently with
// themselves or each other; work is called concurrently, with the index
// (0 to workers-1) of the goroutine calling it, for per-worker scratch space.
func Run[In, Out any](workers int, next func() (In, bool), work func(worker int, in In) Out, emit func(Out) bool) {
	r := &runner[In, Out]{next: next, work: work, emit: emit}
	r.cond.L = &r.mu
	var wg sync.WaitGroup
	for w := 1; w < max(workers, 1); w++ {
		wg.Go(func() { r.loop(w) })
	}
	r.loop(0)
	wg.Wait()
}

type runner[In, Out any] struct {
	next func() (In, bool)
	work func(int, In) Out
	emit func(Out) bool

	mu      sync.Mutex
	cond    sync.Cond // signalled when delivery advances or the run ends
	taken   int       // items handed out
	emitted int       // results delivered (or dropped after a stop)
	over    bool      // no more items will be handed out
	stopped bool      // emit asked to stop: drop what is left
	slots   [window]slot[Out]
}

type slot[Out any] struct {
	out  Out
	done bool
}

func (r *runner[In, Out]) loop(worker int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for {
		for !r.over && r.taken-r.emitted >= window {
			r.cond.Wait()
		}
		if r.over {
			return
		}
		in, ok := r.next()
		if !ok {
			r.over = true
			r.cond.Broadcast()
			return
		}
		seq := r.taken
		r.taken++

		r.mu.Unlock()
		out := r.work(worker, in)
		r.mu.Lock()

		r.slots[seq%window] = slot[Out]{out: out, done: true}
		advanced := false
		for r.emitted < r.taken && r.slots[r.emitted%window].done {
			s := &r.slots[r.emitted%window]
			out := s.out
			*s = slot[Out]{}
			r.emitted++
			advanced = true
			if !r.stopped && !r.emit(out) {
				r.stopped, r.over = true, true
			}
		}
		if advanced {
			r.cond.Broadcast()
		}
	}
}
