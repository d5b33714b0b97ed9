package cli

import (
	"sync"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/capabilities/builtin"
)

// registerBuiltins registers the built-in capability types in
// capabilities.Default, once per process, before a command runs: a program
// that adds its own types registers them there before it calls Main.
var registerBuiltins = sync.OnceValue(func() error { return builtin.Register(capabilities.Default()) })
