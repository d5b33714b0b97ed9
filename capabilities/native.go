package capabilities

// NativeTool is a tool the model provider runs on its own side (web search,
// web fetch, code execution) that a capability asks for, instead of a tool
// agentspec runs. The runtime sends it in the request of a provider that has
// the kind and refuses the spec, before any request, on one that does not.
type NativeTool struct {
	// Kind is the provider-neutral name: "web_search", "web_fetch" or
	// "code_execution".
	Kind string
	// Options are provider-neutral settings in pydantic-ai's names
	// (allowed_domains, blocked_domains, max_uses, ...); numbers are
	// json.Number. A provider maps the ones it has and refuses the others.
	Options map[string]any
	// LocalFallback says the capability's own Tools stand in for the native
	// tool on a provider that lacks the kind; then the local tools are offered
	// instead of an error. When the native tool is used, the local tools are
	// not offered.
	LocalFallback bool
	// Fallback names a local fallback the spec asks for that agentspec does
	// not run (WebSearch's local: duckduckgo): on a provider that lacks the
	// kind, the refusal says so. "" when there is none.
	Fallback string
}

// NativeTooler is implemented by a capability that asks the provider for
// native tools. It is optional, discovered by type assertion.
type NativeTooler interface {
	NativeTools() []NativeTool
}
