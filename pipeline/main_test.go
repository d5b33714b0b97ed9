package pipeline

import (
	"os"
	"testing"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/capabilities/builtin"
)

// TestMain registers the built-in capability types the tests' specs name,
// as a program registers them.
func TestMain(m *testing.M) {
	if err := builtin.Register(capabilities.Default()); err != nil {
		panic(err)
	}
	os.Exit(m.Run())
}
