package confine

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// EnterLandlock puts the calling thread, which must stay locked to its
// goroutine, in the Landlock domain of ABI abi, as the init does.
func EnterLandlock(p Policy, abi int) error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("setting no_new_privs: %w", err)
	}
	return restrictLandlock(p, abi)
}
