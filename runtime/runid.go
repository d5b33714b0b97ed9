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

// withRunID gives ctx a fresh run id.
func withRunID(ctx context.Context) context.Context {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand panics instead)
	return context.WithValue(ctx, runIDKey{}, hex.EncodeToString(b[:]))
}

type outerRunIDKey struct{}

// WithOuterRunID gives ctx a fresh id for a run made of many runs, such as a
// pipeline's, and returns it. JSONLines writes it as the "run_id" of every
// event delivered with ctx or a context derived from it, the events of each
// run started under it included, which carry their own run's id as
// "job_id".
func WithOuterRunID(ctx context.Context) (context.Context, string) {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand panics instead)
	id := hex.EncodeToString(b[:])
	return context.WithValue(ctx, outerRunIDKey{}, id), id
}

func outerRunIDFrom(ctx context.Context) (string, bool) {
	id, ok := ctx.Value(outerRunIDKey{}).(string)
	return id, ok
}
