package childproc

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/internal/childproc/childproctest"
)

// The test binary plays three parts, chosen by modeVar: the reader (a child
// that tries to read its parent's environment and memory), and a parent
// that starts the reader either through Start or with a plain cmd.Start.
// The parent is a fresh process so that the marker is in the environment it
// was started with, which is what /proc/<pid>/environ shows (os.Setenv does
// not change it), and so that Harden's effect does not leak into the tests.
const (
	modeVar   = "AGENTSPEC_CHILDPROC_TEST_MODE"
	markerVar = "AGENTSPEC_CHILDPROC_TEST_MARKER"
)

func TestMain(m *testing.M) {
	switch os.Getenv(modeVar) {
	case "reader":
		childproctest.ReadParent(os.Stdout, markerVar)
		os.Exit(0)
	case "start", "plain":
		cmd := exec.Command(os.Args[0])
		cmd.Env = []string{modeVar + "=reader"} // the marker is not passed on
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		start := Start
		if os.Getenv(modeVar) == "plain" {
			start = (*exec.Cmd).Start
		}
		if err := start(cmd); err != nil {
			fmt.Println("start:", err)
			os.Exit(1)
		}
		if err := cmd.Wait(); err != nil {
			fmt.Println("wait:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// readerSees runs a parent in the given mode, with a marker in its
// environment, and returns what its child could read of it.
func readerSees(t *testing.T, mode, marker string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), modeVar+"="+mode, markerVar+"="+marker)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	return string(out)
}

func TestChildCannotReadTheParent(t *testing.T) {
	t.Parallel()
	marker := "secret-" + strconv.FormatInt(time.Now().UnixNano(), 36)

	plain := readerSees(t, "plain", marker)
	if !assert.Contains(t, plain, marker, "a child started plainly reads its parent's environment here, which is what Start prevents") {
		t.Skip("this system already keeps a child from reading its parent's environment")
	}

	out := readerSees(t, "start", marker)
	assert.NotContains(t, out, marker)
	assert.Contains(t, out, "environ: open /proc/", "the child tried, and the open was refused")
	assert.Contains(t, out, "mem: open /proc/", "the maps, which locate the stack, are refused too")
}
