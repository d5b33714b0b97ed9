package cli

import (
	"os"
	"testing"

	"github.com/agentspec/agentspec/internal/confine"
)

// TestMain lets a Shell command start: confine re-executes this test
// binary as the command's helper.
func TestMain(m *testing.M) {
	confine.Main()
	os.Exit(m.Run())
}
