package native_test

import (
	"os"
	"testing"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/capabilities/native"
)

// TestMain registers the package's types in capabilities.Default, where the
// tests look them up, as a program registers them.
func TestMain(m *testing.M) {
	for _, t := range native.Types() {
		capabilities.MustRegister(t)
	}
	os.Exit(m.Run())
}
