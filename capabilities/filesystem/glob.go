package filesystem

import (
	"errors"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/internal/glob"
)

// find_files patterns are the find_files dialect of internal/glob (Python's
// Path.glob); here a pattern it refuses becomes the model's retry error.

// maxGlobParts bounds the components of a find_files pattern.
const maxGlobParts = glob.MaxFindFilesParts

// compileGlob compiles a find_files pattern, or returns the retry error the
// model gets for it.
func compileGlob(pattern string) (*glob.FindFiles, error) {
	g, err := glob.CompileFindFiles(pattern)
	switch {
	case errors.Is(err, glob.ErrAbsolute):
		return nil, capabilities.Retry("Pattern %s must be relative to the search path, not absolute.", pyRepr(pattern))
	case err != nil:
		return nil, capabilities.Retry("Pattern %s is not a valid glob pattern.", pyRepr(pattern))
	}
	return g, nil
}
