package capabilities

import (
	"net/http"
)

// Remote is implemented by a capability whose tools live behind the network
// (an MCP server's): listing them means connecting. `agentspec validate`
// builds such a capability with Setup.CheckOnly and does not ask for its
// tools, so it checks their names only when the run does. It is optional,
// discovered with As.
type Remote interface {
	Remote() bool
}

// Setup is how the caller has capabilities built: the same for every
// capability of a spec, nested ones included. It reaches each factory in
// its Args.
type Setup struct {
	// Dir is the directory relative paths in the options resolve against:
	// the run's workspace, or the process's working directory when there is
	// none.
	Dir string
	// CheckOnly builds capabilities to be checked, not used: one whose
	// tools live behind the network checks its options but neither starts
	// nor reaches a server, and reports Remote. `agentspec validate`, and a
	// queue worker asking what a job's capabilities reach, build so.
	CheckOnly bool
	// Transport is how capabilities reach their remote servers (an MCP
	// server named by url): a proxy, a transport with the organisation's
	// trust roots, or, in a test, a local server standing in for the spec's
	// host. Nil means http.DefaultTransport.
	Transport http.RoundTripper
	// Protected are files and directories no capability may change.
	Protected *Protected
	// ReadOnly and Env are what the run's workspace says when a capability
	// set it (Workspace): capabilities offer only what reads, and commands
	// they start get Env.
	ReadOnly bool
	Env      map[string]string
}

// HTTPTransport is s.Transport, or http.DefaultTransport when it is nil.
func (s Setup) HTTPTransport() http.RoundTripper {
	if s.Transport != nil {
		return s.Transport
	}
	return http.DefaultTransport
}
