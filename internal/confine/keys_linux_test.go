package confine_test

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// keyVar makes the test binary a keyring client: "key keyring" reads the
// key and clears the keyring, both given by serial number.
const keyVar = "CONFINE_TEST_KEY"

func keyClient(spec string) int {
	var key, ring int
	if _, err := fmt.Sscan(spec, &key, &ring); err != nil {
		fmt.Println("bad", keyVar, err)
		return 2
	}
	buf := make([]byte, 64)
	if n, err := unix.KeyctlBuffer(unix.KEYCTL_READ, key, buf, 0); err != nil {
		fmt.Println("read:", err)
	} else {
		fmt.Printf("read: %s\n", buf[:n])
	}
	if _, err := unix.KeyctlInt(unix.KEYCTL_CLEAR, ring, 0, 0, 0); err != nil {
		fmt.Println("clear:", err)
	} else {
		fmt.Println("clear: ok")
	}
	return 0
}

// TestUserKeysAreOutOfReach: the kernel's keyrings are not namespaced. A
// key of the user who runs the command, which that user may read (made
// here in a keyring of the test's own), would be read, and the keyring
// cleared, by a command whose uid maps to the user's, network or not;
// /proc/keys would list it.
func TestUserKeysAreOutOfReach(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	require.NoError(t, err)
	type mode struct {
		name             string
		sandbox, network bool
	}
	modes := []mode{{"unconfined", false, false}, {"confined", true, false}, {"confined with network", true, true}}
	keys, err := userKeys(t, len(modes))
	if err != nil {
		t.Skipf("no kernel keyrings here: %v", err)
	}
	for i, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			needSandbox(t, m.sandbox)
			needVisible(t, m.sandbox, exe)
			k := keys[i]
			a := newArena(t)
			c := a.command(t, m.sandbox, "cat /proc/keys; exec '"+exe+"'")
			c.Env = append(c.Env, fmt.Sprintf("%s=%d %d", keyVar, k.key, k.ring))
			c.Policy.Network = m.network
			r := run(t, t.Context(), c)
			held, err := unix.KeyctlBuffer(unix.KEYCTL_READ, k.ring, make([]byte, 16), 0)
			require.NoError(t, err)
			if m.sandbox {
				// The client ran: a command that could not exec it would
				// read no key, and pass, having tried nothing.
				assert.Contains(t, r.stdout, "\nclear: ", "the test's binary did not run: %+v", r)
				assert.NotContains(t, r.stdout, "hunter2", "%+v", r)
				assert.NotContains(t, r.stdout, k.name, "listed in /proc/keys: %+v", r)
				assert.NotContains(t, r.stdout, "clear: ok", "%+v", r)
				assert.Equal(t, 4, held, "the keyring still holds its key")
				t.Log(r.stdout)
			} else {
				assert.True(t, strings.Contains(r.stdout, "read: hunter2\n") && strings.Contains(r.stdout, k.name), "%+v", r)
				assert.Equal(t, 0, held, "the unconfined command cleared its keyring")
			}
		})
	}
}

// userKey is a keyring of the test's, holding a key of value hunter2, both
// open to the user.
type userKey struct {
	name      string
	key, ring int
}

// userKeys makes n of them, in the process keyring of a thread kept for
// them until the test ends: a thread that possesses a key may set its
// rights, and a thread the runtime ends would take them along.
func userKeys(t *testing.T, n int) ([]userKey, error) {
	made := make(chan error)
	end := make(chan struct{})
	var keys []userKey
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the test
		made <- func() error {
			for i := range n {
				k := userKey{name: fmt.Sprintf("agentspec-confine-test-%d-%d", os.Getpid(), i)}
				var err error
				if k.ring, err = unix.AddKey("keyring", k.name, nil, unix.KEY_SPEC_PROCESS_KEYRING); err != nil {
					return err
				}
				if k.key, err = unix.AddKey("user", k.name+"-secret", []byte("hunter2"), k.ring); err != nil {
					return err
				}
				const userMayAll = 0x3f3f0000 // possessor and user: every right
				for _, id := range []int{k.ring, k.key} {
					if err := unix.KeyctlSetperm(id, userMayAll); err != nil {
						return err
					}
				}
				keys = append(keys, k)
			}
			return nil
		}()
		<-end
		for _, k := range keys {
			_, _ = unix.KeyctlInt(unix.KEYCTL_INVALIDATE, k.ring, 0, 0, 0)
		}
	}()
	t.Cleanup(func() { close(end) })
	return keys, <-made
}
