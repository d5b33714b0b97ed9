package shell

import (
	"sync"

	"github.com/agentspec/agentspec/internal/text"
)

// ring keeps the last size bytes written to it and counts them all, so
// that a command's pipe is always drained while only a bounded tail is
// held (D15). It is safe for one writer and concurrent readers.
type ring struct {
	mu    sync.Mutex
	buf   []byte // len(buf) == size once full
	start int    // where the oldest byte is, once full
	size  int
	total int64
}

func newRing(size int) *ring { return &ring{size: size} }

// Write keeps the tail of p; it never fails.
func (r *ring) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := len(p)
	r.total += int64(n)
	if len(p) >= r.size {
		r.buf = append(r.buf[:0], p[len(p)-r.size:]...)
		r.start = 0
		return n, nil
	}
	if len(r.buf) < r.size {
		room := r.size - len(r.buf)
		if len(p) <= room {
			r.buf = append(r.buf, p...)
			return n, nil
		}
		r.buf = append(r.buf, p[:room]...)
		p = p[room:]
	}
	for len(p) > 0 {
		c := copy(r.buf[r.start:], p)
		p = p[c:]
		r.start = (r.start + c) % r.size
	}
	return n, nil
}

// Bytes returns the kept tail, oldest first.
func (r *ring) Bytes() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]byte, 0, len(r.buf))
	out = append(out, r.buf[r.start:]...)
	return append(out, r.buf[:r.start]...)
}

// release gives back the kept bytes, once nothing more is written and
// what they said is kept elsewhere; Total stays.
func (r *ring) release() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.buf, r.start = nil, 0
}

// Total is how many bytes were written in all.
func (r *ring) Total() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.total
}

// String is the kept tail decoded as UTF-8 with replacement, as the
// reference decodes the tail of a log it reads.
func (r *ring) String() string { return string(text.Decode(r.Bytes())) }
