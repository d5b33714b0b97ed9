package capabilities

// Remote is implemented by a capability whose tools live behind the network
// (an MCP server's): listing them means connecting. `agentspec validate`
// builds such a capability but does not ask for its tools, so it checks
// their names only when the run does. It is optional, discovered by type
// assertion.
type Remote interface {
	Remote() bool
}
