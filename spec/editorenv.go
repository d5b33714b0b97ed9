package spec

import "slices"

// The loader fills ${VAR} and ${VAR:-default} references before it checks
// types, so "max_tool_rounds: ${ROUNDS:-10}" is a number to it; an editor
// reading the schema sees a string. allowEnvStrings widens every place of
// the composed schema that takes a number, an integer or a boolean, or
// constrains a string (a pattern, a format, an enum or a const, as base_url
// and end_strategy do), to take such a string too, so the editor does not
// flag what validate accepts: "base_url: ${LLM_BASE_URL:-https://...}" is
// checked as a URL once it is filled, not as the reference.

// envString is the schema of a string holding an environment reference.
func envString() map[string]any {
	return map[string]any{
		"type":        "string",
		"pattern":     `\$\{[A-Za-z_][A-Za-z0-9_]*(:-[^}]*)?\}`,
		"description": "An environment reference, ${VAR} or ${VAR:-default}, filled when the spec loads.",
	}
}

// annotations stay on the widened schema, where editors look for them.
var annotations = []string{"title", "description", "markdownDescription", "default", "examples", "deprecated", "x-expected"}

// values are keywords whose content is data, not schemas.
var values = map[string]bool{"default": true, "examples": true, "const": true, "enum": true}

// noStringWidening are keywords whose schemas a reference must not match:
// the loader fills values, not mapping keys.
var noStringWidening = map[string]bool{"propertyNames": true}

// allowEnvStrings returns a copy of node, a decoded schema, widened; node
// itself is left alone, since parts of it may be shared with the registry.
func allowEnvStrings(node any) any { return widenEnv(node, true) }

// widenEnv is allowEnvStrings; strings is false below the keywords of
// noStringWidening, where only numbers and booleans are widened.
func widenEnv(node any, strings bool) any {
	switch n := node.(type) {
	case []any:
		out := make([]any, len(n))
		for i, v := range n {
			out[i] = widenEnv(v, strings)
		}
		return out
	case map[string]any:
		inner := make(map[string]any, len(n))
		for k, v := range n {
			if values[k] {
				inner[k] = v
			} else {
				inner[k] = widenEnv(v, strings && !noStringWidening[k])
			}
		}
		if !takesScalar(n["type"]) && !(strings && constrainsString(n)) {
			return inner
		}
		outer := map[string]any{}
		for _, k := range annotations {
			if v, ok := inner[k]; ok {
				outer[k] = v
				delete(inner, k)
			}
		}
		outer["anyOf"] = []any{inner, envString()}
		return outer
	}
	return node
}

// takesScalar reports whether a "type" keyword admits a number, an integer
// or a boolean.
func takesScalar(t any) bool {
	switch t := t.(type) {
	case string:
		return t == "number" || t == "integer" || t == "boolean"
	case []any:
		for _, v := range t {
			if takesScalar(v) {
				return true
			}
		}
	}
	return false
}

// constrainsString reports whether schema n refuses some strings that are
// not its type's business: a pattern, a format, an enum or a const. A
// schema that takes no string at all is left as it is.
func constrainsString(n map[string]any) bool {
	if t, ok := n["type"]; ok && !takesType(t, "string") {
		return false
	}
	_, pattern := n["pattern"].(string)
	_, format := n["format"].(string)
	_, enum := n["enum"].([]any)
	_, constant := n["const"]
	return pattern || format || enum || constant
}

// takesType reports whether a "type" keyword admits the type named.
func takesType(t any, name string) bool {
	switch t := t.(type) {
	case string:
		return t == name
	case []any:
		return slices.Contains(t, any(name))
	}
	return false
}
