package confine_test

import (
	"os"
	"testing"

	"github.com/agentspec/agentspec/internal/confine"
)

func TestMain(m *testing.M) {
	confine.Main()
	os.Exit(m.Run())
}
