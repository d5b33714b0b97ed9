package prefixtools_test

import (
	"os"
	"testing"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/capabilities/prefixtools"
)

// TestMain registers PrefixTools in capabilities.Default, where the tests'
// specs find it, as a program registers it (FileSystem, which the specs
// nest, still registers itself).
func TestMain(m *testing.M) {
	capabilities.MustRegister(prefixtools.Type())
	os.Exit(m.Run())
}
