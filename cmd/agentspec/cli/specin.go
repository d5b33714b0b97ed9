package cli

import (
	"fmt"
	"io"

	"github.com/agentspec/agentspec/spec"
)

// stdinArg is the argument that stands for the standard input.
const stdinArg = "-"

// loadSpec loads the spec at path, or from stdin when path is "-": it is
// then named <stdin> in messages and its relative paths resolve from the
// current directory.
func loadSpec(stdin io.Reader, path string) (*spec.Spec, error) {
	if path != stdinArg {
		return spec.LoadFile(path)
	}
	data, err := io.ReadAll(stdin)
	if err != nil {
		return nil, fmt.Errorf("reading the spec from stdin: %w", err)
	}
	return spec.LoadStdin(data)
}
