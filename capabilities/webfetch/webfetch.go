// Package webfetch is the WebFetch capability type, in pydantic-ai's
// serialised form: the provider's native URL fetching where the provider
// has it (see capabilities.NativeTooler), and, with local: true, a local
// web_fetch tool that agentspec runs itself.
//
// The local tool makes an HTTP(S) GET and returns the page as JSON
// {"url", "title", "content"}, HTML reduced to readable text. It refuses,
// on the address each connection actually dials (so a name that resolves,
// or re-resolves, to a private address is caught), loopback, private,
// link-local (cloud metadata included), unspecified, multicast and other
// non-public addresses; it follows at most 10 redirects, checking each
// target's scheme and host against allowed_domains and blocked_domains as
// it checks the first URL; it reads at most MaxBodyBytes of a body, takes at
// most Timeout per fetch, and cuts the text to MaxContentChars.
//
// Options (pydantic-ai's): native (default true), local (true: offer the
// local tool; null or false: none), allowed_domains and blocked_domains
// (exact host names, enforced by the native and the local tool), max_uses,
// enable_citations and max_content_tokens (native only; max_uses removes
// the local fallback, as in pydantic-ai).
package webfetch

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/agentspec/agentspec/capabilities"
)

// TypeName is the capability type's name in specs.
const TypeName = "WebFetch"

// ToolName is the local tool's name.
const ToolName = "web_fetch"

// NativeKind is the provider-neutral kind of the native tool.
const NativeKind = "web_fetch"

const optionsSchema = `{
  "type": "object",
  "additionalProperties": false,
  "properties": {
    "native": {"type": "boolean", "description": "Use the provider's native URL fetching where it has one (default true)."},
    "local": {"type": ["boolean", "null"], "description": "true: offer the local web_fetch tool (used instead of the native one on providers without it, or always with native: false)."},
    "allowed_domains": {"type": "array", "items": {"type": "string", "minLength": 1}, "description": "Fetch only from these host names (exact match)."},
    "blocked_domains": {"type": "array", "items": {"type": "string", "minLength": 1}, "description": "Never fetch from these host names (exact match)."},
    "max_uses": {"type": "integer", "minimum": 1, "description": "Most fetches per run; native only (it removes the local fallback)."},
    "enable_citations": {"type": "boolean", "description": "Native only: cite the fetched content."},
    "max_content_tokens": {"type": "integer", "minimum": 1, "description": "Native only: most tokens of fetched content."}
  }
}`

// Type is the WebFetch capability type, for a program to register
// (capabilities/builtin lists it with the other built-in types).
func Type() capabilities.Type {
	return capabilities.Type{
		Name:        TypeName,
		Pure:        true,
		Description: "Fetches web pages: the provider's native fetching, or with local: true a local web_fetch tool that refuses private addresses.",
		Schema:      json.RawMessage(optionsSchema),
		New:         newCapability,
	}
}

// Options are WebFetch's options.
type Options struct {
	Native           *bool    `json:"native"`
	Local            *bool    `json:"local"`
	AllowedDomains   []string `json:"allowed_domains"`
	BlockedDomains   []string `json:"blocked_domains"`
	MaxUses          *int     `json:"max_uses"`
	EnableCitations  *bool    `json:"enable_citations"`
	MaxContentTokens *int     `json:"max_content_tokens"`
}

func newCapability(_ context.Context, args capabilities.Args) (capabilities.Capability, error) {
	var opts Options
	if err := args.Decode(&opts); err != nil {
		return nil, err
	}
	return New(opts)
}

// New returns the capability the options describe.
func New(opts Options) (*Capability, error) {
	native := opts.Native == nil || *opts.Native
	local := opts.Local != nil && *opts.Local
	switch {
	case !native && opts.MaxUses != nil:
		return nil, capabilities.ArgErrorf("max_uses", "max_uses needs the provider's native fetching, and native is false")
	case !native && !local:
		return nil, capabilities.ArgErrorf("native", "native: false leaves no way to fetch; add local: true for the local web_fetch tool")
	}
	c := &Capability{opts: opts, native: native}
	if local && opts.MaxUses == nil {
		c.fetcher = newFetcher(opts.AllowedDomains, opts.BlockedDomains)
	}
	return c, nil
}

// Capability is a configured WebFetch.
type Capability struct {
	opts    Options
	native  bool
	fetcher *fetcher // nil when there is no local tool
}

// Tools returns the local web_fetch tool, when the options ask for it.
func (c *Capability) Tools(context.Context) ([]capabilities.Tool, error) {
	if c.fetcher == nil {
		return nil, nil
	}
	return []capabilities.Tool{c.fetcher}, nil
}

// Reach is any URL the model asks for, when the local tool is offered
// (within allowed_domains, when set: they are still the model's choice).
// The provider's own fetching reaches nothing from this machine.
func (c *Capability) Reach() capabilities.Reach {
	if c.fetcher == nil {
		return capabilities.Reach{}
	}
	return capabilities.Reach{Network: []string{capabilities.Anywhere}}
}

// NativeTools asks for the provider's web fetch, unless native is false;
// the local tool, when there is one, stands in for it on providers without.
func (c *Capability) NativeTools() []capabilities.NativeTool {
	if !c.native {
		return nil
	}
	o := map[string]any{}
	if len(c.opts.AllowedDomains) > 0 {
		o["allowed_domains"] = c.opts.AllowedDomains
	}
	if len(c.opts.BlockedDomains) > 0 {
		o["blocked_domains"] = c.opts.BlockedDomains
	}
	if c.opts.MaxUses != nil {
		o["max_uses"] = json.Number(itoa(*c.opts.MaxUses))
	}
	if c.opts.EnableCitations != nil {
		o["enable_citations"] = *c.opts.EnableCitations
	}
	if c.opts.MaxContentTokens != nil {
		o["max_content_tokens"] = json.Number(itoa(*c.opts.MaxContentTokens))
	}
	return []capabilities.NativeTool{{Kind: NativeKind, Options: o, LocalFallback: c.fetcher != nil}}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// normalHost is a host name as the domain rules compare it.
func normalHost(h string) string {
	return strings.TrimSuffix(strings.ToLower(h), ".")
}
