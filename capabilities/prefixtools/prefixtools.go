// Package prefixtools is the PrefixTools capability type, pydantic-ai's
// serialised form included: it wraps one capability, written in any form a
// spec's capabilities list takes (nested PrefixTools too), and offers its
// tools under "<prefix>_<name>", so that two capabilities with the same tool
// names (two FileSystems over different roots) can live in one spec.
//
//	capabilities:
//	  - PrefixTools:
//	      prefix: docs
//	      capability: {FileSystem: {root_dir: ./docs, read_only: true}}
//
// Everything else the wrapped capability gives (instructions, native tools,
// what it reaches, closing) passes through unchanged: PrefixTools unwraps
// (capabilities.As).
package prefixtools

import (
	"context"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/agentspec/agentspec/capabilities"
)

// TypeName is the capability type's name in specs.
const TypeName = "PrefixTools"

const optionsSchema = `{
  "type": "object",
  "additionalProperties": false,
  "required": ["prefix", "capability"],
  "properties": {
    "prefix": {
      "type": "string",
      "pattern": "^[A-Za-z0-9_-]+$",
      "x-expected": "a prefix of letters, digits, _ and - (docs)",
      "description": "Put before each tool name, with an underscore: prefix docs turns read_file into docs_read_file."
    },
    "capability": {
      "description": "The capability whose tools are renamed, in any form of a capabilities entry (- FileSystem, FileSystem: {root_dir: ./docs}, {name: ..., arguments: ...})."
    }
  }
}`

// Type is the PrefixTools capability type, for a program to register
// (capabilities/builtin lists it with the other built-in types).
func Type() capabilities.Type {
	return capabilities.Type{
		Name:          TypeName,
		Description:   "Offers the tools of one nested capability under <prefix>_<tool name>.",
		Schema:        json.RawMessage(optionsSchema),
		NoBaseOptions: true,
		Nested:        []string{"capability"},
		New:           newCapability,
	}
}

type options struct {
	Prefix     string              `json:"prefix"`
	Capability capabilities.Nested `json:"capability"`
}

func newCapability(ctx context.Context, args capabilities.Args) (capabilities.Capability, error) {
	var opts options
	if err := args.Decode(&opts); err != nil {
		return nil, err
	}
	inner, err := args.NewNested(ctx, opts.Capability)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", opts.Capability.Name, err)
	}
	return New(opts.Prefix, inner), nil
}

// New wraps c so that its tools are named prefix + "_" + name.
func New(prefix string, c capabilities.Capability) *Capability {
	return &Capability{prefix: prefix, inner: c}
}

// Capability is a capability with its tools renamed. Its optional
// interfaces are the wrapped capability's, found through Unwrap.
type Capability struct {
	prefix string
	inner  capabilities.Capability
}

// Tools returns the wrapped capability's tools, renamed.
func (p *Capability) Tools(ctx context.Context) ([]capabilities.Tool, error) {
	tools, err := p.inner.Tools(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]capabilities.Tool, len(tools))
	for i, t := range tools {
		name := p.prefix + "_" + t.Name()
		if n := utf8.RuneCountInString(name); n > MaxToolName {
			return nil, fmt.Errorf("prefix %s makes the tool %s %s, %d characters long; providers take tool names of at most %d",
				p.prefix, t.Name(), name, n, MaxToolName)
		}
		out[i] = renamed{Tool: t, name: name}
	}
	return out, nil
}

// MaxToolName is the longest tool name the providers take (OpenAI,
// Anthropic, Gemini and Bedrock alike): a longer one has every request of
// the run refused.
const MaxToolName = 64

// Unwrap returns the wrapped capability: whatever else it gives
// (instructions, native tools, its retry budget, what it reaches, closing)
// consumers find through capabilities.As, unchanged.
func (p *Capability) Unwrap() capabilities.Capability { return p.inner }

// renamed is a tool under another name. The tool itself runs as it would
// unwrapped: its events and errors still speak of its own name.
type renamed struct {
	capabilities.Tool
	name string
}

func (r renamed) Name() string { return r.name }

// Unwrap returns the tool under its own name, so that what it says of
// itself (capabilities.HintsOf) survives the renaming.
func (r renamed) Unwrap() capabilities.Tool { return r.Tool }
