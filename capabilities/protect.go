package capabilities

import (
	"context"
	"slices"
)

type protectedKey struct{}

// WithProtectedFiles returns a context whose capabilities, built from it,
// must never change the files at paths (absolute, or relative to the
// process's working directory): the spec being run and the files it names,
// so that an agent cannot rewrite its own instructions. The paths add to
// those ctx already carries.
func WithProtectedFiles(ctx context.Context, paths ...string) context.Context {
	if len(paths) == 0 {
		return ctx
	}
	return context.WithValue(ctx, protectedKey{}, slices.Concat(ProtectedFiles(ctx), paths))
}

// ProtectedFiles returns the paths WithProtectedFiles put in ctx.
func ProtectedFiles(ctx context.Context) []string {
	p, _ := ctx.Value(protectedKey{}).([]string)
	return p
}
