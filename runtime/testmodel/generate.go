package testmodel

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
)

// Generate returns a value valid against the JSON Schema sch (a decoded JSON
// value), deterministically, the way pydantic-ai's TestModel builds tool
// arguments. The rules, first match wins:
//
//   - const: the const; enum: its first entry; examples: the first example
//   - $ref "#/$defs/X" (or "#/definitions/X"): the value for X
//   - anyOf / oneOf: the first alternative; allOf: the first part
//   - object: each required property (others are left out); when
//     additionalProperties is true or a non-empty schema, one extra key
//     "additionalProperty" (underscores appended while taken)
//   - string: "a", repeated to minLength (so "" for 0), "" for maxLength 0; format date
//     gives "2024-01-01", date-time "2024-01-01T00:00:00Z", uri and url
//     "https://example.com", email "a@example.com"
//   - integer and number: the minimum, else exclusiveMinimum + 1, else the
//     maximum, else exclusiveMaximum - 1, else 0
//   - boolean: false; null: null
//   - array: each prefixItems entry, then items up to minItems; when
//     the prefixItems meet minItems already, one more item if items is a
//     non-empty schema and maxItems allows it
//   - a list of types: the first that is not "null"; no type: the string
//     "a", even beside properties
//
// An error names a schema it cannot satisfy (an unknown type, a $ref it
// cannot resolve).
func Generate(sch any) (any, error) {
	g := generator{root: sch}
	return g.value(sch, 0)
}

type generator struct {
	root any
}

// maxRefDepth stops a recursive schema from looping.
const maxRefDepth = 32

func (g generator) value(sch any, depth int) (any, error) {
	if depth > maxRefDepth {
		return nil, fmt.Errorf("schema nests $ref more than %d deep", maxRefDepth)
	}
	m, ok := sch.(map[string]any)
	if !ok {
		if b, isBool := sch.(bool); isBool && !b {
			return nil, fmt.Errorf("schema false admits no value")
		}
		return "a", nil // true, or no schema: anything goes
	}
	if c, ok := m["const"]; ok {
		return c, nil
	}
	if e, ok := m["enum"].([]any); ok && len(e) > 0 {
		return e[0], nil
	}
	if e, ok := m["examples"].([]any); ok && len(e) > 0 {
		return e[0], nil
	}
	if ref, ok := m["$ref"].(string); ok {
		target, err := g.resolve(ref)
		if err != nil {
			return nil, err
		}
		return g.value(target, depth+1)
	}
	for _, key := range []string{"anyOf", "oneOf", "allOf"} {
		if alts, ok := m[key].([]any); ok && len(alts) > 0 {
			return g.value(alts[0], depth+1)
		}
	}
	var typ string
	switch t := m["type"].(type) {
	case string:
		typ = t
	case []any:
		for _, e := range t {
			if s, ok := e.(string); ok && s != "null" {
				typ = s
				break
			}
		}
		if typ == "" && len(t) > 0 {
			typ = "null"
		}
	case nil: // properties or not, as pydantic-ai
		return "a", nil
	}
	switch typ {
	case "object":
		return g.object(m, depth)
	case "string":
		return stringValue(m), nil
	case "integer":
		return int64(numberValue(m, 1)), nil
	case "number":
		// As pydantic-ai, an exclusive bound is stepped over by 1 for
		// numbers too.
		return numberValue(m, 1), nil
	case "boolean":
		return false, nil
	case "null":
		return nil, nil
	case "array":
		return g.array(m, depth)
	}
	return nil, fmt.Errorf("unknown type %q", typ)
}

func (g generator) object(m map[string]any, depth int) (any, error) {
	out := map[string]any{}
	props, _ := m["properties"].(map[string]any)
	req, _ := m["required"].([]any)
	for _, r := range req {
		name, ok := r.(string)
		if !ok {
			continue
		}
		v, err := g.value(props[name], depth+1)
		if err != nil {
			return nil, fmt.Errorf("property %s: %w", name, err)
		}
		out[name] = v
	}
	extra := false
	switch ap := m["additionalProperties"].(type) {
	case bool:
		extra = ap
	case map[string]any:
		extra = len(ap) > 0
	}
	if extra {
		key := "additionalProperty"
		for {
			if _, taken := out[key]; !taken {
				break
			}
			key += "_"
		}
		v, err := g.value(m["additionalProperties"], depth+1)
		if err != nil {
			return nil, err
		}
		out[key] = v
	}
	return out, nil
}

func (g generator) array(m map[string]any, depth int) (any, error) {
	out := []any{}
	if prefix, ok := m["prefixItems"].([]any); ok {
		for _, p := range prefix {
			v, err := g.value(p, depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
	}
	minItems, _ := intOf(m["minItems"])
	maxItems, hasMax := intOf(m["maxItems"])
	items, _ := m["items"].(map[string]any)
	if len(out) < minItems {
		for len(out) < minItems {
			v, err := g.value(m["items"], depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
	} else if len(items) > 0 && (!hasMax || len(out) < maxItems) {
		v, err := g.value(items, depth+1)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

func stringValue(m map[string]any) string {
	switch m["format"] {
	case "date":
		return "2024-01-01"
	case "date-time":
		return "2024-01-01T00:00:00Z"
	case "uri", "url", "iri":
		return "https://example.com"
	case "email":
		return "a@example.com"
	}
	if n, ok := intOf(m["maxLength"]); ok && n == 0 {
		return ""
	}
	if n, ok := intOf(m["minLength"]); ok && n >= 0 {
		return strings.Repeat("a", n)
	}
	return "a"
}

// numberValue is the first bound the schema sets, stepped inside by step
// when it is exclusive, or 0.
func numberValue(m map[string]any, step float64) float64 {
	if v, ok := floatOf(m["minimum"]); ok {
		return v
	}
	if v, ok := floatOf(m["exclusiveMinimum"]); ok {
		return v + step
	}
	if v, ok := floatOf(m["maximum"]); ok {
		return v
	}
	if v, ok := floatOf(m["exclusiveMaximum"]); ok {
		return v - step
	}
	return 0
}

func (g generator) resolve(ref string) (any, error) {
	for _, prefix := range []string{"#/$defs/", "#/definitions/"} {
		name, ok := strings.CutPrefix(ref, prefix)
		if !ok {
			continue
		}
		root, _ := g.root.(map[string]any)
		defs, _ := root[strings.TrimSuffix(strings.TrimPrefix(prefix, "#/"), "/")].(map[string]any)
		if target, ok := defs[name]; ok {
			return target, nil
		}
	}
	if ref == "#" {
		return g.root, nil
	}
	return nil, fmt.Errorf("cannot resolve $ref %q", ref)
}

func floatOf(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

func intOf(v any) (int, bool) {
	f, ok := floatOf(v)
	if !ok || f != math.Trunc(f) {
		return 0, false
	}
	return int(f), true
}
