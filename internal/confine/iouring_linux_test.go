package confine_test

import (
	"fmt"
	"os"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// ioURing tries to set up an io_uring and says how it went.
func ioURing() int {
	var params [120]byte // struct io_uring_params
	fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, 4, uintptr(unsafe.Pointer(&params[0])), 0)
	if errno != 0 {
		fmt.Println("io_uring:", errno)
		return 1
	}
	unix.Close(int(fd))
	fmt.Println("io_uring ready")
	return 0
}

// TestIOURingIsRefused: io_uring's socket and connect operations would
// pass the seccomp filter by, so without network there is no io_uring.
func TestIOURingIsRefused(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	require.NoError(t, err)
	if b, err := os.ReadFile("/proc/sys/kernel/io_uring_disabled"); err == nil && string(b) != "0\n" {
		t.Skip("io_uring is disabled on this system")
	}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			needSandbox(t, m.sandbox)
			needVisible(t, m.sandbox, exe)
			a := newArena(t)
			c := a.command(t, m.sandbox, "exec '"+exe+"'")
			c.Env = append(c.Env, dialVar+"=io_uring")
			r := run(t, t.Context(), c)
			if m.sandbox {
				assert.Equal(t, "io_uring: function not implemented\n", r.stdout)
			} else {
				assert.Equal(t, "io_uring ready\n", r.stdout)
			}
		})
	}
}
