package shell

import (
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agentspec/agentspec/internal/confine"
)

func TestMain(m *testing.M) {
	confine.Main()
	os.Exit(m.Run())
}

func stringsReader(s string) io.Reader { return strings.NewReader(s) }

// Bounds of require.Eventually: how long a background command may take to
// get somewhere, and how often to look.
const (
	timeoutForEventually = 20 * time.Second
	pollEvery            = 20 * time.Millisecond
)
