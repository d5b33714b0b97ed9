package providers

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/spec"
)

// NativeTool is a provider-side tool a capability asks for.
type NativeTool = capabilities.NativeTool

// nativeKinds are the native tool kinds each API runs, by api.
var nativeKinds = map[api][]string{
	apiAnthropic: {"web_search", "web_fetch", "code_execution"},
	apiResponses: {"web_search", "code_execution"},
}

// nativeOptions are the options each kind takes, in pydantic-ai's names.
var nativeOptions = map[string][]string{
	"web_search":     {"allowed_domains", "blocked_domains", "max_uses", "user_location", "search_context_size", "external_web_access"},
	"web_fetch":      {"allowed_domains", "blocked_domains", "max_uses", "enable_citations", "max_content_tokens"},
	"code_execution": {},
}

// HasNative reports whether the provider of ref runs native tools of kind.
func HasNative(ref, kind string) bool {
	name, model, err := parseRef(ref)
	if err != nil {
		return false
	}
	p, ok := providerFor(name, model)
	return ok && runsNative(p, kind)
}

// vertexNativeKinds are the native tools Claude runs on Vertex AI, which
// serves web search but not Anthropic's beta tools (web fetch, code
// execution).
var vertexNativeKinds = []string{"web_search"}

// runsNative reports whether p runs native tools of kind.
func runsNative(p provider, kind string) bool {
	if p.vertex {
		return slices.Contains(vertexNativeKinds, kind)
	}
	return slices.Contains(nativeKinds[p.api], kind)
}

// NativeProviders lists the providers that run native tools of kind, and
// those whose Claude models alone run it (google-cloud's, on Vertex AI) as
// "NAME (Claude models)".
func NativeProviders(kind string) []string {
	var names []string
	for _, p := range table {
		if p.unavailable != "" {
			continue
		}
		if slices.Contains(nativeKinds[p.api], kind) {
			names = append(names, p.name)
		} else if c, _ := providerFor(p.name, "claude-"); c.vertex && runsNative(c, kind) {
			names = append(names, p.name+" (Claude models)")
		}
	}
	slices.Sort(names)
	return names
}

// CheckNative refuses what the provider of ref would refuse of tools when
// the model is built: a kind it does not run, an option the kind does not
// take there.
func CheckNative(ref string, tools []NativeTool) error {
	name, model, err := parseRef(ref)
	if err != nil {
		return err
	}
	p, ok := providerFor(name, model)
	if !ok {
		return unknownProvider(name)
	}
	return checkNative(p, tools)
}

// NativeUnsupportedError is a native tool the provider does not run.
type NativeUnsupportedError struct {
	Provider string
	Kind     string
}

func (e *NativeUnsupportedError) Error() string {
	return fmt.Sprintf("%s does not run the native tool %s; the providers that do: %s",
		e.Provider, e.Kind, strings.Join(NativeProviders(e.Kind), ", "))
}

// NativeOptionError is an option of a native tool the provider does not
// take, named as the spec writes it, so that the refusal is placed there.
type NativeOptionError struct {
	Option string
	Msg    string
}

func (e *NativeOptionError) Error() string { return e.Msg }

// checkNative refuses native tools p does not run, and options the kind
// does not take.
func checkNative(p provider, tools []NativeTool) error {
	var errs []error
	for _, t := range tools {
		if !runsNative(p, t.Kind) {
			errs = append(errs, &NativeUnsupportedError{Provider: p.name, Kind: t.Kind})
			continue
		}
		for k := range t.Options {
			if !slices.Contains(nativeOptions[t.Kind], k) {
				errs = append(errs, &NativeOptionError{Option: k, Msg: fmt.Sprintf("%s: the native tool %s takes no option %q", p.name, t.Kind, k)})
			}
		}
		if p.api == apiResponses {
			if _, err := responsesNative(t); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", p.name, err))
			}
		}
		if _, ok := t.Options["search_context_size"]; ok && p.api == apiAnthropic {
			errs = append(errs, &NativeOptionError{Option: "search_context_size",
				Msg: fmt.Sprintf("%s: the native tool web_search takes no search_context_size (OpenAI's)", p.name)})
		}
	}
	return errors.Join(errs...)
}

// anthropicNative is the tool definition of a native tool on the Messages API.
func anthropicNative(t NativeTool, s spec.ModelSettings) (map[string]any, error) {
	def := map[string]any{}
	switch t.Kind {
	case "web_search":
		def["type"], def["name"] = "web_search_20250305", "web_search"
	case "web_fetch":
		def["type"], def["name"] = "web_fetch_20250910", "web_fetch"
	case "code_execution":
		version := "20250825"
		if v, ok := s.Provider["anthropic_code_execution_tool_version"].(string); ok && v != "" {
			version = v
		}
		def["type"], def["name"] = "code_execution_"+version, "code_execution"
	default:
		return nil, fmt.Errorf("the native tool %s is not run by the Messages API", t.Kind)
	}
	for k, v := range t.Options {
		switch k {
		case "enable_citations":
			def["citations"] = map[string]any{"enabled": plain(v)}
		case "user_location":
			def[k] = approximate(v)
		default:
			def[k] = plain(v)
		}
	}
	return def, nil
}

// approximate is a web search's user_location (the place the spec gives)
// with the type both APIs take for it, "approximate": Anthropic refuses one
// without it.
func approximate(v any) any {
	loc, ok := plain(v).(map[string]any)
	if !ok {
		return plain(v)
	}
	loc["type"] = "approximate"
	return loc
}

func asAPIError[T error](err error, target *T) bool { return errors.As(err, target) }

func base64Of(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// plain turns the json.Number of decoded spec values into int64 or float64,
// which the SDKs' encoders write as numbers (they write json.Number as a
// string).
func plain(v any) any {
	switch v := v.(type) {
	case json.Number:
		if n, err := v.Int64(); err == nil {
			return n
		}
		f, _ := v.Float64()
		return f
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = plain(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = plain(e)
		}
		return out
	}
	return v
}
