package confine_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/internal/confine"
)

// landlockVar makes the test binary enter the Landlock domain of an ABI
// and then write inside W, outside it, and rename across W's directories:
// "abi root temp outside" (no spaces in the fields).
const landlockVar = "CONFINE_TEST_LANDLOCK"

func landlocked(spec string) int {
	f := strings.Fields(spec)
	if len(f) != 4 {
		fmt.Println("bad", landlockVar)
		return 2
	}
	abi, err := strconv.Atoi(f[0])
	if err != nil {
		fmt.Println("bad", landlockVar, err)
		return 2
	}
	root, temp, outside := f[1], f[2], f[3]
	runtime.LockOSThread() // never unlocked: the domain is this thread's
	if err := confine.EnterLandlock(confine.Policy{Root: root, Temp: temp}, abi); err != nil {
		fmt.Println("enter:", err)
		return 1
	}
	show := func(what string, err error) {
		if errno, ok := errors.AsType[syscall.Errno](err); ok {
			fmt.Printf("%s: %v\n", what, errno)
		} else if err != nil {
			fmt.Printf("%s: %v\n", what, err)
		} else {
			fmt.Printf("%s: ok\n", what)
		}
	}
	show("inside", os.WriteFile(filepath.Join(root, "a", "f"), []byte("x"), 0o644))
	show("outside", os.WriteFile(filepath.Join(outside, "f"), []byte("x"), 0o644))
	show("across", os.Rename(filepath.Join(root, "a", "f"), filepath.Join(root, "b", "f")))
	return 0
}

// The ruleset of every ABI this kernel has, ABI 1's (Linux 5.13 to 5.18)
// among them, confines writes to W and T; below ABI 2 a rename across
// directories is refused too, as docs/shell.md says.
func TestEachABIsLandlockDomainConfinesWrites(t *testing.T) {
	t.Parallel()
	kernel, err := ll.LandlockGetABIVersion()
	if err != nil || kernel < 1 {
		t.Skip("this kernel has no Landlock")
	}
	self, err := os.Executable()
	require.NoError(t, err)
	for _, abi := range []int{1, 2, kernel} {
		if abi > kernel {
			continue
		}
		t.Run(fmt.Sprint("abi ", abi), func(t *testing.T) {
			t.Parallel()
			b := newBox(t)
			outside := t.TempDir()
			for _, d := range []string{"a", "b"} {
				require.NoError(t, os.Mkdir(filepath.Join(b.root, d), 0o755))
			}
			cmd := exec.Command(self)
			cmd.Env = append(os.Environ(), landlockVar+"="+strings.Join([]string{strconv.Itoa(abi), b.root, b.temp, outside}, " "))
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "%s", out)
			across := "ok"
			if abi < 2 {
				across = "invalid cross-device link"
			}
			assert.Equal(t, "inside: ok\noutside: permission denied\nacross: "+across+"\n", string(out))
			assert.NoFileExists(t, filepath.Join(outside, "f"))
		})
	}
}
