// Package hook holds what tests may change in the sandbox's behaviour: the
// points where a replacement can be made to fail, and whether walks use
// openat2. Only the sandbox reads them, and only sandboxtest sets them, so
// no program can.
package hook

import "sync/atomic"

// Fault-injection points of a replacement.
const (
	Write        = "write"         // before each chunk is written to the temporary file
	BeforeRename = "before-rename" // once the temporary file is complete
)

var fault atomic.Pointer[func(point string) error]

// SetFault makes h run at each fault-injection point (nil removes it).
func SetFault(h func(point string) error) { fault.Store(&h) }

// Fault runs the fault hook at point; an error it returns fails the
// replacement there as the OS would.
func Fault(point string) error {
	if h := fault.Load(); h != nil && *h != nil {
		return (*h)(point)
	}
	return nil
}

// NoOpenat2 is set once the kernel (or a seccomp filter) has refused
// openat2, which Linux has had since 5.6, or by a test that walks as if it
// had.
var NoOpenat2 atomic.Bool
