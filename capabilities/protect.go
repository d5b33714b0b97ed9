package capabilities

import (
	"path/filepath"
	"slices"
	"sync"
)

// Protected is a set of files and directories that the capabilities built
// with it must never change: the spec being run and the files it names, so
// that an agent cannot rewrite its own instructions, and the result cache's
// directory. Paths are absolute, or relative to the process's working
// directory. A nil *Protected protects nothing.
//
// It is immutable, and resolves its paths once, the first time Real is
// asked: the jobs of a batch share one set, so every job's capabilities
// share one answer instead of each stating every directory above the spec
// again.
type Protected struct {
	paths []string
	real  func() []string
}

// NewProtected returns the set of paths.
func NewProtected(paths ...string) *Protected {
	return (*Protected)(nil).With(paths...)
}

// With returns the set with paths added. When p holds them all already, it
// is returned as it is, and so is what Real resolved for it.
func (p *Protected) With(paths ...string) *Protected {
	all := p.Paths() // a copy, which the new set may grow
	have := len(all)
	for _, path := range paths {
		if path != "" && !slices.Contains(all, path) {
			all = append(all, path)
		}
	}
	if len(all) == have {
		return p
	}
	set := &Protected{paths: all}
	set.real = sync.OnceValue(func() []string {
		real := make([]string, len(all))
		for i, path := range all {
			real[i] = path
			if !filepath.IsAbs(path) {
				continue
			}
			if r, err := filepath.EvalSymlinks(path); err == nil {
				real[i] = r
			}
		}
		return real
	})
	return set
}

// Paths returns the paths, as given.
func (p *Protected) Paths() []string {
	if p == nil {
		return nil
	}
	return slices.Clone(p.paths)
}

// Real returns the paths in the order of Paths, each absolute one with its
// symlinks resolved (filepath.EvalSymlinks) where it resolves; relative
// ones are as given. A capability that confines writes to a directory
// compares these against its own real paths.
func (p *Protected) Real() []string {
	if p == nil || p.real == nil {
		return nil
	}
	return slices.Clone(p.real())
}
