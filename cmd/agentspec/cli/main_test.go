package cli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/agentspec/agentspec/internal/confine"
)

// TestMain lets a Shell command start: confine re-executes this test
// binary as the command's helper. The built-in capability types are
// registered as Main registers them, for the tests that call a command's
// code directly.
func TestMain(m *testing.M) {
	confine.Main()
	if err := registerBuiltins(); err != nil {
		panic(err)
	}
	code := m.Run()
	if binaryPath != "" {
		os.RemoveAll(filepath.Dir(binaryPath)) // the binary agentspecBinary built
	}
	os.Exit(code)
}
