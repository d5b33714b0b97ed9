package capabilities

import (
	"context"
	"path/filepath"
	"slices"
	"sync"
)

type protectedKey struct{}

// protectedSet is what WithProtectedFiles puts in a context: the paths, and
// their resolution, made once for every context derived from this one.
type protectedSet struct {
	paths []string
	real  func() []string
}

// WithProtectedFiles returns a context whose capabilities, built from it,
// must never change the files at paths (absolute, or relative to the
// process's working directory): the spec being run and the files it names,
// so that an agent cannot rewrite its own instructions. The paths add to
// those ctx already carries; when it carries them all, ctx is returned as it
// is, and so is what RealProtectedFiles resolved for it.
func WithProtectedFiles(ctx context.Context, paths ...string) context.Context {
	var have []string
	if set, ok := ctx.Value(protectedKey{}).(*protectedSet); ok {
		have = set.paths
	}
	all := have
	for _, p := range paths {
		if !slices.Contains(all, p) {
			all = append(slices.Clip(all), p)
		}
	}
	if len(all) == len(have) {
		return ctx
	}
	set := &protectedSet{paths: all}
	set.real = sync.OnceValue(func() []string {
		real := make([]string, len(all))
		for i, p := range all {
			real[i] = p
			if !filepath.IsAbs(p) {
				continue
			}
			if r, err := filepath.EvalSymlinks(p); err == nil {
				real[i] = r
			}
		}
		return real
	})
	return context.WithValue(ctx, protectedKey{}, set)
}

// ProtectedFiles returns the paths WithProtectedFiles put in ctx.
func ProtectedFiles(ctx context.Context) []string {
	if set, ok := ctx.Value(protectedKey{}).(*protectedSet); ok {
		return slices.Clone(set.paths)
	}
	return nil
}

// RealProtectedFiles returns the paths of ProtectedFiles, in that order,
// each absolute one with its symlinks resolved (filepath.EvalSymlinks) where
// it resolves; relative ones are as given. The files are resolved once, the
// first time this is asked of a context that WithProtectedFiles made or one
// derived from it: the jobs of a batch, whose contexts all derive from the
// batch's, share one answer instead of each stating every directory above
// the spec again. A capability that confines writes to a directory compares
// these against its own real paths.
func RealProtectedFiles(ctx context.Context) []string {
	if set, ok := ctx.Value(protectedKey{}).(*protectedSet); ok {
		return slices.Clone(set.real())
	}
	return nil
}
