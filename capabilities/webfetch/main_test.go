package webfetch

import (
	"os"
	"testing"

	"github.com/agentspec/agentspec/capabilities"
)

// TestMain registers the type in capabilities.Default, where the tests
// look it up, as a program registers it.
func TestMain(m *testing.M) {
	capabilities.MustRegister(Type())
	os.Exit(m.Run())
}
