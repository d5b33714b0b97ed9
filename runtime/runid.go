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
