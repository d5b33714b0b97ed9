//go:build !linux

package confine

import (
	"context"
	"errors"
	"time"
)

// Available reports that commands cannot be confined here: confinement is
// built from Linux namespaces, Landlock and seccomp. It gives no advice to
// run them unconfined, which cannot be done here either (Runs).
func Available() error { return errUnsupported }

// Runs reports that no command runs here, confined or not: Start refuses.
func Runs() error { return errUnsupported }

// errUnsupported is Start's answer here.
var errUnsupported = errors.New("Shell cannot run commands on this system: agentspec runs them on Linux only, " +
	"confined with Linux namespaces, Landlock and seccomp, or with `sandbox: off` unconfined")

// Process is a running command; none is ever started here.
type Process struct{}

// Start refuses: this package runs commands on Linux only.
func Start(ctx context.Context, c Command) (*Process, error) { return nil, errUnsupported }

// Wait returns at once: no process was started.
func (p *Process) Wait() (Exit, error) { return Exit{}, errUnsupported }

// Terminate does nothing: no process was started.
func (p *Process) Terminate(grace time.Duration) {}

// Kill does nothing: no process was started.
func (p *Process) Kill() {}

// Main returns at once: this process is never re-executed as the
// confinement init here.
func Main() {}
