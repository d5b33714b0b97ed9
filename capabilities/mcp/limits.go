package mcp

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
)

// Bounds on what one server may cost a run.
const (
	// MaxMessageBytes bounds one message read from a server: a line of a
	// local server's stdout; from a remote one an SSE event (the bytes up
	// to the blank line that ends it), or the whole body of any other
	// response. It is WebFetch's MaxBodyBytes, and below
	// the SDK's own 16 MiB event bound, which does not stop a server that
	// goes on sending after it (the SDK reads such a body to its end). A
	// stream of many events of any total length is not bounded by it; the
	// read timeout bounds a call's stream. A message over the bound is
	// fatal (ErrMessageTooLarge): it was not read, and every request to the
	// server fails from then on.
	MaxMessageBytes = 10 << 20
	// MaxResultBytes bounds the text of one tool result given to the
	// model (about 250,000 tokens, more than most models take). A longer
	// result is refused with a retry that says so: the server is sound and
	// the model can usually ask for less (a narrower query, a page).
	MaxResultBytes = 1 << 20
	// DefaultReadTimeout bounds one tool call when read_timeout is not
	// given: pydantic-ai's MCPServer read_timeout. A call it ends is a
	// retry for the model, as pydantic-ai makes the MCP SDK's timeout error.
	DefaultReadTimeout = 300 * time.Second
)

// ErrMessageTooLarge is wrapped by the error of a start or a call when the
// server sent a message larger than MaxMessageBytes.
var ErrMessageTooLarge = errors.New("the MCP server sent a message larger than the limit")

// bodyGuard bounds every response body of one remote server, and keeps the
// first bound it broke: the SDK reports a body it could not read as a
// closed connection or a request without response, so the reason is kept
// here for the errors to give.
type bodyGuard struct {
	limit int64
	err   atomic.Pointer[error]
}

func (g *bodyGuard) tripped() error {
	if g == nil {
		return nil
	}
	if p := g.err.Load(); p != nil {
		return *p
	}
	return nil
}

func (g *bodyGuard) trip(what string) error {
	err := fmt.Errorf("%w: %s over %d MiB", ErrMessageTooLarge, what, g.limit>>20)
	g.err.CompareAndSwap(nil, &err)
	return *g.err.Load()
}

// boundTransport gives every response a body that fails once it passes the
// guard's limit, and refuses every request once a body has.
type boundTransport struct {
	guard *bodyGuard
	base  http.RoundTripper
}

func (t *boundTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := t.guard.tripped(); err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	sse := strings.HasPrefix(strings.ToLower(strings.TrimSpace(resp.Header.Get("Content-Type"))), "text/event-stream")
	resp.Body = &boundedBody{rc: resp.Body, sse: sse, guard: t.guard}
	return resp, nil
}

// boundedBody counts the bytes of one response: for an event stream, those
// since the last event ended (a line that is empty but for carriage
// returns, as the SDK reads lines up to a newline); for any other body, all
// of them. Past the limit every Read fails, so that a reader draining the
// body to its end (the SDK does, after a bad event) stops at once.
type boundedBody struct {
	rc      io.ReadCloser
	sse     bool
	guard   *bodyGuard
	n       int64 // bytes of the current event, or of the body
	content bool  // sse: the current line has a byte other than '\r'
	err     error
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if !b.sse && int64(len(p)) > b.guard.limit-b.n+1 {
		p = p[:b.guard.limit-b.n+1] // enough to see the limit passed
	}
	n, err := b.rc.Read(p)
	if !b.sse {
		b.n += int64(n)
		if b.n > b.guard.limit {
			return b.fail("a response body")
		}
		return n, err
	}
	for _, c := range p[:n] {
		b.n++
		switch c {
		case '\n':
			if !b.content {
				b.n = 0 // a blank line: the event ended
			}
			b.content = false
		case '\r':
		default:
			b.content = true
		}
		if b.n > b.guard.limit {
			return b.fail("an SSE event")
		}
	}
	return n, err
}

func (b *boundedBody) fail(what string) (int, error) {
	b.err = b.guard.trip(what)
	b.rc.Close() // nothing more of it is wanted
	return 0, b.err
}

func (b *boundedBody) Close() error { return b.rc.Close() }

// boundedLines is a local server's stdout, each line of which (one
// message) the guard bounds. Past the limit every Read fails, as the bytes
// before the line that broke it are read.
type boundedLines struct {
	rc    io.ReadCloser
	guard *bodyGuard
	n     int64 // bytes of the current line
	err   error
}

func (b *boundedLines) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	n, err := b.rc.Read(p)
	for i, c := range p[:n] {
		if c == '\n' {
			b.n = 0
			continue
		}
		if b.n++; b.n > b.guard.limit {
			b.err = b.guard.trip("a line")
			return i, nil
		}
	}
	return n, err
}

func (b *boundedLines) Close() error { return b.rc.Close() }
