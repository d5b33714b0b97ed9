package confine

import (
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestUnavailableMessage(t *testing.T) {
	t.Parallel()
	assert.NoError(t, unavailable(nil))
	assert.EqualError(t, unavailable([]string{"Landlock is not enabled in this kernel", "no pids cgroup to bound processes when running as root"}),
		"Shell cannot confine commands on this system: Landlock is not enabled in this kernel; no pids cgroup to bound processes when running as root. "+
			"Set `sandbox: off` on the Shell entry to run them unconfined.")
}

func TestExitString(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "exit code 3", Exit{Code: 3}.String())
	assert.Equal(t, "killed by signal 15 (terminated), exit code 143", signalled(syscall.SIGTERM).String())
}
