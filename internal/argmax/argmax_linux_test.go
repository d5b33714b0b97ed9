package argmax

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// envOfSize is an environment that makes Size(path, argv, env) exactly
// size, of variables no longer than one may be.
func envOfSize(t *testing.T, path string, argv []string, size int) []string {
	t.Helper()
	var env []string
	for i := 0; ; i++ {
		left := size - Size(path, argv, env)
		// A variable costs its text, its NUL and a pointer.
		const most = 100_000
		name := fmt.Sprintf("V%05d=", i)
		n := left - 1 - int(unsafe.Sizeof(uintptr(0))) - len(name)
		if n <= most {
			require.GreaterOrEqual(t, n, 0)
			env = append(env, name+strings.Repeat("x", n))
			require.Equal(t, size, Size(path, argv, env))
			return env
		}
		env = append(env, name+strings.Repeat("x", most))
	}
}

// Limit and Size are the kernel's: a program whose strings take exactly
// Limit starts, one byte more fails with E2BIG, whatever the stack limit.
func TestLimitIsTheKernels(t *testing.T) {
	var was unix.Rlimit
	require.NoError(t, unix.Getrlimit(unix.RLIMIT_STACK, &was))
	t.Cleanup(func() { unix.Setrlimit(unix.RLIMIT_STACK, &was) })
	for _, tc := range []struct {
		stack uint64
		limit int
	}{
		{8 << 20, 2 << 20},
		{256 << 10, 128 << 10}, // never less than ARG_MAX
		{1 << 20, 256 << 10},
		{64 << 20, 6 << 20}, // never more than 3/4 of 8 MiB
		{unix.RLIM_INFINITY, 6 << 20},
	} {
		if tc.stack > was.Max {
			continue // beyond the hard limit, which only a privilege raises
		}
		require.NoError(t, unix.Setrlimit(unix.RLIMIT_STACK, &unix.Rlimit{Cur: tc.stack, Max: was.Max}))
		assert.Equal(t, tc.limit, Limit(), "stack %d", tc.stack)
		path, argv := "/bin/true", []string{"/bin/true"}
		for _, size := range []int{Limit(), Limit() + 1} {
			cmd := exec.Command(path)
			cmd.Env = envOfSize(t, path, argv, size)
			err := cmd.Run()
			if size <= Limit() {
				assert.NoError(t, err, "stack %d, size %d", tc.stack, size)
			} else {
				assert.True(t, errors.Is(err, syscall.E2BIG), "stack %d, size %d: %v", tc.stack, size, err)
			}
		}
	}
}
