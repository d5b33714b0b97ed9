package spec

import (
	"encoding/json"
	"errors"
	"io/fs"
	"slices"
	"strings"
	"syscall"
)

// Error is one problem in a spec file, at a position.
type Error struct {
	Pos Position
	Msg string
	// Var is the {{placeholder}} whose value was not given, for that
	// problem, so that a program can say how its values are given (the
	// CLI's --var); "" for any other problem.
	Var string
}

// Error returns "FILE:LINE:COL: message".
func (e *Error) Error() string { return e.Pos.String() + ": " + e.Msg }

// MarshalJSON gives the form `agentspec validate --format json` prints:
// {"file", "line", "column", "message"}, line and column left out when unknown.
func (e *Error) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		File    string `json:"file"`
		Line    int    `json:"line,omitempty"`
		Column  int    `json:"column,omitempty"`
		Message string `json:"message"`
	}{e.Pos.File, e.Pos.Line, e.Pos.Col, e.Msg})
}

// Errors is every problem found in a spec file, sorted by position. The loader
// returns it (as an error) whenever a spec is invalid.
type Errors []*Error

// Error returns one "FILE:LINE:COL: message" line per problem.
func (es Errors) Error() string {
	var b strings.Builder
	for i, e := range es {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(e.Error())
	}
	return b.String()
}

// Unwrap lets errors.As find an individual *Error.
func (es Errors) Unwrap() []error {
	errs := make([]error, len(es))
	for i, e := range es {
		errs[i] = e
	}
	return errs
}

// sortErrors orders errors by position and drops exact duplicates, which
// arise when an aliased YAML node is reported through each of its uses.
func sortErrors(es Errors) Errors {
	slices.SortStableFunc(es, func(a, b *Error) int {
		if a.Pos.Line != b.Pos.Line {
			return a.Pos.Line - b.Pos.Line
		}
		if a.Pos.Col != b.Pos.Col {
			return a.Pos.Col - b.Pos.Col
		}
		return strings.Compare(a.Msg, b.Msg)
	})
	return slices.CompactFunc(es, func(a, b *Error) bool { return *a == *b })
}

// fileError is an I/O failure reading a spec: "agent.yaml: no such file".
// It is not an Errors: nothing in the file is wrong.
type fileError struct {
	path string
	err  error
}

func (e *fileError) Error() string {
	var msg string
	switch {
	case errors.Is(e.err, fs.ErrNotExist):
		msg = "no such file"
	case errors.Is(e.err, fs.ErrPermission):
		msg = "permission denied"
	case errors.Is(e.err, syscall.EISDIR):
		msg = "is a directory, not a spec file"
	default:
		msg = e.err.Error()
		var pe *fs.PathError
		if errors.As(e.err, &pe) {
			msg = pe.Err.Error()
		}
	}
	return e.path + ": " + msg
}

func (e *fileError) Unwrap() error { return e.err }
