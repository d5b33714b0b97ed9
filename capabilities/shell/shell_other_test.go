//go:build !linux

package shell

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// Elsewhere than Linux no command runs, confined or not: the spec is
// refused, and the refusal does not advise `sandbox: off`, which would
// only have every command end the run.
func TestNoCommandRunsElsewhere(t *testing.T) {
	t.Parallel()
	for _, sandbox := range []string{"on", "off"} {
		_, err := New(Options{Sandbox: sandbox}, t.TempDir())
		assert.EqualError(t, err, "Shell cannot run commands on this system: agentspec runs them on Linux only, "+
			"confined with Linux namespaces, Landlock and seccomp, or with `sandbox: off` unconfined", sandbox)
	}
}
