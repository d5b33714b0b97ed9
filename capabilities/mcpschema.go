package capabilities

import (
	"context"
	"encoding/json"
	"errors"
)

// The MCP capability type's options, in pydantic-ai's form, so that specs
// using MCP servers validate. This is a placeholder until agentspec speaks
// MCP: a run that reaches an MCP capability's tools fails saying so. The
// real type replaces this file.

const mcpSchema = `{
  "type": "object",
  "additionalProperties": false,
  "required": ["url"],
  "properties": {
    "url": {"type": "string", "pattern": "^https?://", "x-expected": "an http:// or https:// URL", "description": "The MCP server's URL (Streamable HTTP, or SSE for a path ending in /sse)."},
    "native": {"type": "boolean", "description": "Also offer the server to the provider as a native MCP tool."},
    "local": {
      "x-expected": "true, false, or an http:// or https:// URL",
      "anyOf": [{"type": "null"}, {"type": "boolean"}, {"type": "string", "pattern": "^https?://"}],
      "description": "true (or absent): connect to url from agentspec; false: no local connection; a URL: connect there instead of url."
    },
    "id": {"type": "string", "minLength": 1, "description": "The server's id (default: <host>-<last path segment> of url)."},
    "authorization_token": {"type": "string", "description": "Sent as the Authorization header, verbatim (include Bearer yourself)."},
    "headers": {"type": "object", "additionalProperties": {"type": "string"}, "description": "HTTP headers sent to the server."},
    "allowed_tools": {"type": "array", "items": {"type": "string"}, "description": "Offer only these of the server's tools."},
    "description": {"type": "string", "description": "What the server is for."},
    "defer_loading": {"type": "boolean", "description": "pydantic-ai: hide the server's tools until the model loads them (needs an id). Accepted; agentspec offers every tool from the start."}
  }
}`

// ErrMCPUnavailable is what a run reaching an MCP capability's tools gets
// while agentspec has no MCP client.
var ErrMCPUnavailable = errors.New("MCP: this build of agentspec cannot connect to MCP servers yet")

func init() {
	MustRegister(Type{
		Name:        "MCP",
		Description: "The tools of an MCP server (Streamable HTTP or SSE).",
		Schema:      json.RawMessage(mcpSchema),
		Positional:  "url",
		New: func(_ context.Context, args Args) (Capability, error) {
			var opts struct {
				Native *bool `json:"native"`
				Local  any   `json:"local"`
			}
			if err := json.Unmarshal(args.Options, &opts); err != nil {
				return nil, err
			}
			if opts.Local == false && (opts.Native == nil || !*opts.Native) {
				return nil, ArgErrorf("local", "local: false leaves the server with no connection at all; set native: true, or drop local")
			}
			return mcpPlaceholder{}, nil
		},
	})
}

type mcpPlaceholder struct{}

func (mcpPlaceholder) Tools(context.Context) ([]Tool, error) { return nil, ErrMCPUnavailable }

// Remote says listing the tools means connecting to the server.
func (mcpPlaceholder) Remote() bool { return true }
