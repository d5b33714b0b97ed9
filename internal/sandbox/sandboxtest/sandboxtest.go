// Package sandboxtest is the tests' handle on the sandbox: it fails a
// replacement at a chosen point and makes walks go as on a kernel without
// openat2. Only tests import it.
package sandboxtest

import "github.com/agentspec/agentspec/internal/sandbox/internal/hook"

// Fault-injection points of a replacement.
const (
	HookWrite        = hook.Write        // before each chunk is written to the temporary file
	HookBeforeRename = hook.BeforeRename // once the temporary file is complete
)

// SetFaultHook makes h run at each fault-injection point (nil removes it);
// an error h returns fails the replacement there as the OS would.
func SetFaultHook(h func(point string) error) { hook.SetFault(h) }

// SetOpenat2Missing makes walks behave as on a kernel without openat2
// (missing true) or try it again (false), so that a test can check that
// both ways give the same answers.
func SetOpenat2Missing(missing bool) { hook.NoOpenat2.Store(missing) }
