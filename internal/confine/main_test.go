package confine_test

import (
	"os"
	"testing"

	"github.com/agentspec/agentspec/internal/confine"
)

func TestMain(m *testing.M) {
	confine.Main()
	if code, ok := role(); ok {
		os.Exit(code)
	}
	os.Exit(m.Run())
}
