package spec

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/agentspec/agentspec/capabilities"
)

// The tests use a private registry with stand-ins for real capability types,
// so that they depend on nothing but the registry's contract.

// fileSystemSchema mirrors the options of the FileSystem capability.
const fileSystemSchema = `{
  "type": "object",
  "properties": {
    "root_dir": {"type": "string", "description": "Directory the tools are confined to."},
    "cwd": {"type": ["string", "null"]},
    "allowed_patterns": {"type": "array", "items": {"type": "string"}},
    "denied_patterns": {"type": "array", "items": {"type": "string"}},
    "protected_patterns": {"type": "array", "items": {"type": "string"}},
    "max_read_lines": {"type": "integer", "minimum": 1},
    "max_read_chars": {"type": ["integer", "null"], "minimum": 1},
    "max_list_results": {"type": "integer", "minimum": 1},
    "max_search_results": {"type": "integer", "minimum": 1},
    "max_find_results": {"type": "integer", "minimum": 1},
    "read_only": {"type": "boolean"},
    "content_hashes": {"type": "boolean"},
    "tools": {
      "type": "array",
      "uniqueItems": true,
      "items": {"enum": ["read_file", "write_file", "edit_file", "list_directory", "search_files",
                         "find_files", "create_directory", "file_info", "list_files", "grep"]}
    }
  },
  "additionalProperties": false
}`

// thinkingSchema has options but no positional one.
const thinkingSchema = `{
  "type": "object",
  "properties": {
    "effort": {"enum": ["low", "medium", "high"]},
    "budget": {"type": "integer", "minimum": 1024}
  },
  "additionalProperties": false
}`

// searchSchema has a required option, which is also its positional one.
const searchSchema = `{
  "type": "object",
  "properties": {
    "engine": {"type": "string", "minLength": 1},
    "max_results": {"type": "integer", "minimum": 1, "maximum": 50}
  },
  "required": ["engine"],
  "additionalProperties": false
}`

// stub is the capability the stand-in factories build.
type stub struct {
	name   string
	opts   json.RawMessage
	closed *atomic.Int32
}

func (s *stub) Tools(context.Context) ([]capabilities.Tool, error) { return nil, nil }

func (s *stub) Close() error {
	s.closed.Add(1)
	return nil
}

// testRegistry returns a registry with FileSystem (positional root_dir),
// Thinking (options, no positional), Memory (no options) and WebSearch (a
// required positional option), and a counter of closed capabilities.
//
// The FileSystem factory fails like the real one for a cwd outside the root
// (an *ArgError) and with a plain error for root_dir "unreadable".
func testRegistry(t testing.TB) (*capabilities.Registry, *atomic.Int32) {
	t.Helper()
	reg := capabilities.NewRegistry()
	closed := new(atomic.Int32)
	factory := func(name string) capabilities.Factory {
		return func(_ context.Context, args capabilities.Args) (capabilities.Capability, error) {
			return &stub{name: name, opts: args.Options, closed: closed}, nil
		}
	}
	types := []capabilities.Type{
		{
			Name:        "FileSystem",
			Description: "Sandboxed file tools.",
			Schema:      json.RawMessage(fileSystemSchema),
			Positional:  "root_dir",
			New: func(ctx context.Context, args capabilities.Args) (capabilities.Capability, error) {
				var o struct {
					RootDir string  `json:"root_dir"`
					Cwd     *string `json:"cwd"`
				}
				if err := args.Decode(&o); err != nil {
					return nil, err
				}
				switch {
				case o.Cwd != nil && *o.Cwd == "../outside":
					return nil, capabilities.ArgErrorf("cwd", "cwd %q is outside root_dir %q", *o.Cwd, o.RootDir)
				case o.RootDir == "unreadable":
					return nil, errors.New("root_dir: permission denied")
				}
				return factory("FileSystem")(ctx, args)
			},
		},
		{Name: "Thinking", Description: "Extended thinking.", Schema: json.RawMessage(thinkingSchema), New: factory("Thinking")},
		{Name: "Memory", Description: "Remembers things.", New: factory("Memory")},
		{Name: "WebSearch", Description: "Searches the web.", Schema: json.RawMessage(searchSchema), Positional: "engine", New: factory("WebSearch")},
	}
	for _, typ := range types {
		if err := reg.Register(typ); err != nil {
			t.Fatal(err)
		}
	}
	return reg, closed
}

// testEnv is the environment the tests load specs in.
func testEnv(name string) (string, bool) {
	v, ok := map[string]string{
		"MODEL":    "openai:gpt-5",
		"ROUNDS":   "12",
		"EMPTY":    "",
		"API_BASE": "https://proxy.example.com/v1",
		"WORKDIR":  "./work",
		"FLAG":     "true",
	}[name]
	return v, ok
}

func testLoader(t testing.TB) *Loader {
	reg, _ := testRegistry(t)
	return &Loader{Registry: reg, LookupEnv: testEnv}
}
