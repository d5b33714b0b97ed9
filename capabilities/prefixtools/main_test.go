package prefixtools_test

import (
	"os"
	"testing"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/capabilities/filesystem"
	"github.com/agentspec/agentspec/capabilities/prefixtools"
)

// TestMain registers PrefixTools, and FileSystem which the tests' specs
// nest, in capabilities.Default, where the specs find them, as a program
// registers them.
func TestMain(m *testing.M) {
	capabilities.MustRegister(prefixtools.Type())
	capabilities.MustRegister(filesystem.Type())
	os.Exit(m.Run())
}
