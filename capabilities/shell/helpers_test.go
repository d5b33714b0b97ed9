package shell

import (
	"io"
	"os"
	"strings"
	"testing"

	"github.com/agentspec/agentspec/internal/confine"
)

func TestMain(m *testing.M) {
	confine.Main()
	os.Exit(m.Run())
}

func stringsReader(s string) io.Reader { return strings.NewReader(s) }
