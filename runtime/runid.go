package runtime

import (
	"context"
	"crypto/rand"
	"encoding/hex"
)

type runIDKey struct{}

// RunIDFrom returns the id of the run whose context ctx is (or derives
// from): every event of one run, the capabilities' included, is delivered
// with a context that carries it. Each run, and each job of a batch, gets
// its own.
func RunIDFrom(ctx context.Context) (string, bool) {
	id, ok := ctx.Value(runIDKey{}).(string)
	return id, ok
}

// NewRunID returns a fresh run id, for WithRunID.
func NewRunID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand panics instead)
	return hex.EncodeToString(b[:])
}

type presetRunIDKey struct{}

// WithRunID gives ctx the run id id: events delivered with it carry id, and
// the next run started with ctx takes id as its own instead of a fresh one
// (the runs that run starts in turn get fresh ids). A caller that reports on
// a run before it starts and after it ends, as a queue worker does with
// job.start and job.retry, does so under the run's own id.
func WithRunID(ctx context.Context, id string) context.Context {
	return context.WithValue(context.WithValue(ctx, runIDKey{}, id), presetRunIDKey{}, id)
}

// withRunID gives ctx the id of the run about to start: the one WithRunID
// set for it, else a fresh one.
func withRunID(ctx context.Context) context.Context {
	if id, ok := ctx.Value(presetRunIDKey{}).(string); ok && id != "" {
		if cur, _ := RunIDFrom(ctx); cur == id {
			// Taken: a run this one starts gets its own.
			return context.WithValue(ctx, presetRunIDKey{}, "")
		}
	}
	return context.WithValue(ctx, runIDKey{}, NewRunID())
}

type outerRunIDKey struct{}

// WithOuterRunID gives ctx a fresh id for a run made of many runs, such as a
// pipeline's, and returns it. JSONLines writes it as the "run_id" of every
// event delivered with ctx or a context derived from it, the events of each
// run started under it included, which carry their own run's id as
// "job_id".
func WithOuterRunID(ctx context.Context) (context.Context, string) {
	id := NewRunID()
	return context.WithValue(ctx, outerRunIDKey{}, id), id
}

func outerRunIDFrom(ctx context.Context) (string, bool) {
	id, ok := ctx.Value(outerRunIDKey{}).(string)
	return id, ok
}

type sessionIDKey struct{}

// WithSessionID returns a context whose events are of the client session
// id (an MCP session over streamable HTTP, its Mcp-Session-Id): JSONLines
// writes it as "session_id", so that the calls of several clients of one
// server can be told apart in one events file.
func WithSessionID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, sessionIDKey{}, id)
}

// SessionIDFrom returns the client session that ctx's events are of
// (WithSessionID), if any.
func SessionIDFrom(ctx context.Context) (string, bool) {
	id, ok := ctx.Value(sessionIDKey{}).(string)
	return id, ok && id != ""
}
