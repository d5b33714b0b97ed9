// Package native holds the capability types that only configure the model
// provider: WebSearch and NativeTool ask it for tools it runs on its own
// side (capabilities.NativeTooler), Thinking turns its reasoning on. Types
// returns them, with pydantic-ai's option names, for a program to register
// (capabilities/builtin lists them with the other built-in types).
//
// The runtime sends a native tool to a provider that has its kind; on one
// that does not, the spec is refused before any request, naming the
// providers that have it (NativeTool's optional: true drops it instead).
package native

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/internal/lax"
)

// Type names, as specs write them.
const (
	WebSearchType  = "WebSearch"
	NativeToolType = "NativeTool"
	ThinkingType   = "Thinking"
)

// Kinds are the native tool kinds agentspec can send to a provider.
var Kinds = []string{"web_search", "web_fetch", "code_execution"}

// otherKinds are pydantic-ai's kinds no provider served here runs yet.
var otherKinds = []string{"x_search", "image_generation", "memory", "mcp_server", "file_search", "advisor", "tool_search"}

// Capability asks the provider for native tools and offers no tools of its
// own: with no local fallback, a provider without the kind refuses the spec.
type Capability struct {
	tools []capabilities.NativeTool
}

// Tools implements capabilities.Capability: a native tool is the
// provider's, so there is nothing to run here.
func (c *Capability) Tools(context.Context) ([]capabilities.Tool, error) { return nil, nil }

// NativeTools implements capabilities.NativeTooler.
func (c *Capability) NativeTools() []capabilities.NativeTool { return c.tools }

// Reach is nothing on this machine: the provider runs the tools.
func (c *Capability) Reach() capabilities.Reach { return capabilities.Reach{} }

// Thinking sets the unified thinking model setting. It wins over the spec's
// model_settings.thinking; provider-prefixed keys (anthropic_thinking,
// openai_reasoning_effort, ...) still win over it.
type Thinking struct {
	set     bool
	enabled bool
	effort  string
}

// Tools implements capabilities.Capability.
func (t *Thinking) Tools(context.Context) ([]capabilities.Tool, error) { return nil, nil }

// Reach is nothing: thinking is a model setting.
func (t *Thinking) Reach() capabilities.Reach { return capabilities.Reach{} }

// ThinkingSetting is what the capability sets: set is false for `- Thinking:
// null`, which leaves thinking unset and hides model_settings.thinking.
func (t *Thinking) ThinkingSetting() (enabled bool, effort string, set bool) {
	return t.enabled, t.effort, t.set
}

const webSearchSchema = `{
  "type": "object",
  "additionalProperties": false,
  "properties": {
    "native": {"type": "boolean", "default": true, "description": "Use the provider's web search (true, the default). agentspec runs no local search, so false leaves WebSearch nothing to do."},
    "local": {"enum": [false, null, true, "duckduckgo"], "x-expected": "duckduckgo, true (duckduckgo), false or null", "description": "The local fallback search pydantic-ai runs on a provider without a native one (duckduckgo). agentspec runs none: on such a provider the spec is refused, naming the providers that have one."},
    "search_context_size": {"enum": ["low", "medium", "high"], "description": "How much context the search gathers (OpenAI Responses)."},
    "user_location": {"type": "object", "additionalProperties": false, "properties": {"city": {"type": "string"}, "country": {"type": "string"}, "region": {"type": "string"}, "timezone": {"type": "string"}}, "description": "Where results should be local to."},
    "blocked_domains": {"type": "array", "items": {"type": "string"}, "description": "Domains never searched (Anthropic)."},
    "allowed_domains": {"type": "array", "items": {"type": "string"}, "description": "The only domains searched."},
    "max_uses": {"type": "integer", "minimum": 1, "description": "Most searches per request (Anthropic)."},
    "external_web_access": {"type": "boolean", "description": "Whether the search may reach the live web (OpenAI Responses)."}
  }
}`

// kindOptions are the options each kind takes, typed as pydantic-ai's
// tool dataclasses type them (WebSearchTool, WebFetchTool) and as the
// providers' APIs take them, so that a mistyped value is refused when the
// spec loads, at the value, rather than by the provider at the first
// request. pydantic-ai validates a NativeTool in pydantic's lax mode, so an
// integer option also takes a string holding a positive integer
// (max_uses: '3', see laxPositiveInt), and a boolean option a word or a
// number pydantic reads as a bool (optional: 'yes', see laxBool);
// WebSearch's options reach its capability unconverted and are not coerced. null is an option left out.
// An option a kind does not take is not declared here: the provider check
// refuses it, naming the provider (runtime/providers.CheckNative).
var kindOptions = map[string]string{
	"web_search": `{
    "search_context_size": {"enum": ["low", "medium", "high", null], "x-expected": "one of \"low\", \"medium\", \"high\"", "description": "How much context the search gathers (OpenAI Responses)."},
    "user_location": {"type": ["object", "null"], "additionalProperties": false, "properties": {"city": {"type": "string"}, "country": {"type": "string"}, "region": {"type": "string"}, "timezone": {"type": "string"}}, "x-expected": "a mapping", "description": "Where results should be local to: city, country, region, timezone."},
    "blocked_domains": {"type": ["array", "null"], "items": {"type": "string"}, "x-expected": "a list of strings", "description": "Domains never searched (Anthropic)."},
    "allowed_domains": {"type": ["array", "null"], "items": {"type": "string"}, "x-expected": "a list of strings", "description": "The only domains searched."},
    "max_uses": {"type": ["integer", "null"], "minimum": 1, "x-expected": "a positive integer", "description": "Most searches per request (Anthropic)."},
    "external_web_access": {"type": ["boolean", "null"], "x-expected": "true or false", "description": "Whether the search may reach the live web (OpenAI Responses)."}
  }`,
	"web_fetch": `{
    "allowed_domains": {"type": ["array", "null"], "items": {"type": "string"}, "x-expected": "a list of strings", "description": "The only domains fetched from."},
    "blocked_domains": {"type": ["array", "null"], "items": {"type": "string"}, "x-expected": "a list of strings", "description": "Domains never fetched from."},
    "max_uses": {"type": ["integer", "null"], "minimum": 1, "x-expected": "a positive integer", "description": "Most fetches per request."},
    "enable_citations": {"type": ["boolean", "null"], "x-expected": "true or false", "description": "Cite the fetched content."},
    "max_content_tokens": {"type": ["integer", "null"], "minimum": 1, "x-expected": "a positive integer", "description": "Most tokens of fetched content."}
  }`,
	"code_execution": `{}`,
}

// laxPositiveInt matches what pydantic's lax mode reads as a positive
// integer in a string, as spec reads retries: "3": spaces around, a +,
// underscores anywhere, a fraction of zeros ("3", " +3 ", "1_000",
// "3.0"). "2.5", "0" and "three" do not match.
const laxPositiveInt = `^\s*_*\+?[0-9_]*[1-9][0-9_]*(\.[0_]*)?\s*$`

// laxBoolWord matches the strings pydantic's lax mode reads as a boolean
// (see lax.Bool), in any case; it is spelt without (?i), which an editor's
// ECMAScript regular expressions do not have.
const laxBoolWord = `^([01tTfFyYnN]|[oO][nN]|[nN][oO]|[oO][fF][fF]|[yY][eE][sS]|[tT][rR][uU][eE]|[fF][aA][lL][sS][eE])$`

// laxBool makes p, a boolean option's schema, take what pydantic's lax mode
// reads as a boolean too: a string matching laxBoolWord, the number 0 or 1.
func laxBool(p map[string]any) {
	p["type"] = append(slices.Clone(p["type"].([]any)), "string", "number")
	p["pattern"] = laxBoolWord
	p["minimum"], p["maximum"], p["multipleOf"] = 0, 1, 1
}

// kindSchemas are the option schemas of kindOptions, decoded, each integer
// option taking a string that matches laxPositiveInt too, and each boolean
// option what laxBool lets it take.
var kindSchemas = sync.OnceValue(func() map[string]map[string]any {
	out := map[string]map[string]any{}
	for kind, text := range kindOptions {
		var props map[string]any
		if err := json.Unmarshal([]byte(text), &props); err != nil {
			panic(fmt.Sprintf("native: the options schema of %s is not JSON: %v", kind, err)) // a build that ships it broken
		}
		for _, name := range laxOptions(props, "integer") {
			p := props[name].(map[string]any)
			p["type"] = append(p["type"].([]any), "string")
			p["pattern"] = laxPositiveInt
		}
		for _, name := range laxOptions(props, "boolean") {
			laxBool(props[name].(map[string]any))
		}
		out[kind] = props
	}
	return out
})

// laxOptions are the options of props, a kind's option schemas, that take
// a value of the JSON type typ.
func laxOptions(props map[string]any, typ string) []string {
	var names []string
	for name, p := range props {
		if t, ok := p.(map[string]any)["type"].([]any); ok && slices.Contains(t, any(typ)) {
			names = append(names, name)
		}
	}
	return names
}

// laxInt is the positive integer s holds in pydantic's lax mode, as the
// number it is sent as (see lax.Integer).
func laxInt(s string) (json.Number, bool) {
	n, ok := lax.Integer(s)
	if !ok || n == "0" || strings.HasPrefix(string(n), "-") {
		return "", false
	}
	return n, true
}

// nativeToolSchema is NativeTool's options schema: the kind, optional, and
// the kind's options, written beside the kind or under tool.
func nativeToolSchema() json.RawMessage {
	kinds := make([]any, len(Kinds))
	for i, k := range Kinds {
		kinds[i] = k
	}
	optional := map[string]any{"type": []any{"boolean"}, "x-expected": "true or false", "description": "Drop the tool silently on a provider without it, instead of refusing the spec."}
	laxBool(optional)
	common := func() map[string]any {
		return map[string]any{
			"kind":     map[string]any{"enum": kinds, "x-expected": "web_search, web_fetch or code_execution (agentspec sends no other native tool kind to a provider yet)", "description": "The native tool's kind."},
			"optional": optional,
		}
	}
	// Each kind's options apply when kind names it; an if/then per kind
	// reports a mistyped option as that option's mistake.
	var byKind []any
	for _, k := range Kinds {
		byKind = append(byKind, map[string]any{
			"if":   map[string]any{"required": []any{"kind"}, "properties": map[string]any{"kind": map[string]any{"const": k}}},
			"then": map[string]any{"properties": kindSchemas()[k]},
		})
	}
	options := map[string]any{"$ref": "#/$defs/options"}
	tool := map[string]any{"type": "object", "properties": common(), "allOf": []any{options}, "x-expected": "a native tool: {kind: web_search, ...}",
		"description": "The tool, when written as {tool: {kind: ..., ...}}."}
	top := common()
	top["tool"] = tool
	b, err := json.Marshal(map[string]any{
		"type":       "object",
		"properties": top,
		"allOf":      []any{options},
		"x-expected": "a native tool: {kind: web_search, ...}",
		"$defs":      map[string]any{"options": map[string]any{"allOf": byKind}},
	})
	if err != nil {
		panic(err)
	}
	return b
}

const thinkingSchema = `{
  "type": "object",
  "additionalProperties": false,
  "properties": {
    "effort": {"anyOf": [{"type": "boolean"}, {"enum": ["minimal", "low", "medium", "high", "xhigh"]}, {"type": "null"}], "default": true,
      "description": "true (the provider's default effort), false (off), or an effort; null leaves thinking unset."}
  }
}`

// Types are the capability types of this package (WebSearch, NativeTool
// and Thinking), for a program to register (capabilities/builtin lists
// them with the other built-in types).
func Types() []capabilities.Type {
	return []capabilities.Type{
		{
			Name:        WebSearchType,
			Pure:        true,
			Description: "The provider's own web search (Anthropic, OpenAI Responses); refused on a provider without one.",
			Schema:      json.RawMessage(webSearchSchema),
			New:         newWebSearch,
		},
		{
			Name:        NativeToolType,
			Pure:        true,
			Description: "One provider-native tool by kind (web_search, web_fetch, code_execution).",
			Schema:      nativeToolSchema(),
			// As in pydantic-ai, where the long form's one-element list
			// (arguments: [{kind: ...}]) gives the tool positionally.
			Positional: "tool",
			New:        newNativeTool,
		},
		{
			Name:        ThinkingType,
			Pure:        true,
			Description: "Turns the model's reasoning on (or off) with an effort, as model_settings.thinking does.",
			Schema:      json.RawMessage(thinkingSchema),
			Positional:  "effort",
			New:         newThinking,
		},
	}
}

func newWebSearch(_ context.Context, args capabilities.Args) (capabilities.Capability, error) {
	var opts map[string]any
	if err := args.Decode(&opts); err != nil {
		return nil, err
	}
	var fallback string
	switch local := opts["local"].(type) {
	case string:
		fallback = local
	case bool:
		if local {
			fallback = "duckduckgo"
		}
	}
	if native, ok := opts["native"].(bool); ok && !native {
		if fallback != "" {
			return nil, capabilities.ArgErrorf("native", "false asks for the local %s search alone, which agentspec does not run; remove native: false to use the provider's search", fallback)
		}
		return nil, capabilities.ArgErrorf("native", "false leaves WebSearch nothing to do: agentspec runs no local search")
	}
	// pydantic-ai's local fallback runs only on a provider without a
	// native search; agentspec has none to run, so on such a provider the
	// spec is refused (NativeTool.Fallback names it), and elsewhere the
	// provider's search is used, as pydantic-ai uses it.
	tool := capabilities.NativeTool{Kind: "web_search", Options: map[string]any{}, Fallback: fallback}
	for k, v := range opts {
		if k != "native" && k != "local" && v != nil {
			tool.Options[k] = v
		}
	}
	return &Capability{tools: []capabilities.NativeTool{tool}}, nil
}

func newNativeTool(_ context.Context, args capabilities.Args) (capabilities.Capability, error) {
	var opts map[string]any
	if err := args.Decode(&opts); err != nil {
		return nil, err
	}
	at := "kind" // the option a problem with the kind is said of
	if inner, ok := opts["tool"].(map[string]any); ok {
		if len(opts) > 1 {
			return nil, capabilities.ArgErrorf("tool", "give the tool either as {tool: {kind: ...}} or as {kind: ...}, not both")
		}
		opts, at = inner, "tool"
	}
	kind, _ := opts["kind"].(string)
	switch {
	case kind == "":
		return nil, capabilities.ArgErrorf(at, "NativeTool needs a kind: one of %s", strings.Join(Kinds, ", "))
	case slices.Contains(otherKinds, kind):
		return nil, capabilities.ArgErrorf(at, "agentspec sends no native %s tool to any provider yet; it sends %s", kind, strings.Join(Kinds, ", "))
	case !slices.Contains(Kinds, kind):
		return nil, capabilities.ArgErrorf(at, "unknown native tool kind %q; agentspec sends %s", kind, strings.Join(Kinds, ", "))
	}
	optional, _ := lax.Bool(opts["optional"])
	tool := capabilities.NativeTool{Kind: kind, Options: map[string]any{}, LocalFallback: optional}
	for k, v := range opts {
		if k != "kind" && k != "optional" && v != nil {
			tool.Options[k] = v
		}
	}
	for _, name := range laxOptions(kindSchemas()[kind], "integer") {
		if s, ok := tool.Options[name].(string); ok {
			if n, ok := laxInt(s); ok {
				tool.Options[name] = n
			}
		}
	}
	for _, name := range laxOptions(kindSchemas()[kind], "boolean") {
		if b, ok := lax.Bool(tool.Options[name]); ok {
			tool.Options[name] = b
		}
	}
	return &Capability{tools: []capabilities.NativeTool{tool}}, nil
}

func newThinking(_ context.Context, args capabilities.Args) (capabilities.Capability, error) {
	var opts struct {
		Effort json.RawMessage `json:"effort"`
	}
	if err := args.Decode(&opts); err != nil {
		return nil, err
	}
	t := &Thinking{set: true, enabled: true}
	switch raw := strings.TrimSpace(string(opts.Effort)); raw {
	case "":
	case "null":
		t.set = false
	case "true":
	case "false":
		t.enabled = false
	default:
		if err := json.Unmarshal(opts.Effort, &t.effort); err != nil {
			return nil, capabilities.ArgErrorf("effort", "%v", fmt.Errorf("expected true, false or an effort, got %s", raw))
		}
	}
	return t, nil
}
