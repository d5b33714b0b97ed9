package cli

// The built-in capability types besides FileSystem, registered on import.
import (
	_ "github.com/agentspec/agentspec/capabilities/localworkspace" // registers LocalWorkspace
	_ "github.com/agentspec/agentspec/capabilities/prefixtools"    // registers PrefixTools
	_ "github.com/agentspec/agentspec/capabilities/shell"          // registers Shell
	_ "github.com/agentspec/agentspec/capabilities/webfetch"       // registers WebFetch
)
