package capabilities

// Hints say how a tool behaves, as the MCP tool annotations do
// (readOnlyHint, destructiveHint, idempotentHint, openWorldHint). Whoever
// must keep a boundary filters on them: `agentspec mcp --read-only` offers
// only the tools whose hints say ReadOnly, whatever wraps their capability.
//
// They are what the tool's author claims, not a sandbox: a capability
// enforces its own limits. A tool that says nothing gets ToolDefaultHints,
// MCP's defaults, which assume the worst.
type Hints struct {
	// ReadOnly: the tool changes nothing in its environment.
	ReadOnly bool `json:"read_only"`
	// Destructive: when not read-only, the tool may overwrite or delete
	// what is there, rather than only add to it.
	Destructive bool `json:"destructive"`
	// Idempotent: calling it again with the same arguments has no further
	// effect.
	Idempotent bool `json:"idempotent"`
	// OpenWorld: the tool reaches beyond a closed domain it owns (the web,
	// a remote service), as opposed to files under one root.
	OpenWorld bool `json:"open_world"`
}

// ToolDefaultHints are the hints of a tool that gives none: it may change
// anything, destructively, anywhere.
var ToolDefaultHints = Hints{Destructive: true, OpenWorld: true}

// Hinted is implemented by a tool that describes its behaviour.
type Hinted interface {
	Hints() Hints
}

// HintsOf returns what t says of its behaviour, through any wrapper (see
// As), or ToolDefaultHints when it says nothing.
func HintsOf(t Tool) Hints {
	if h, ok := As[Hinted](t); ok {
		return h.Hints()
	}
	return ToolDefaultHints
}
