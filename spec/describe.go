package spec

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/agentspec/agentspec/internal/redact"
)

// Describing expectations: what values a schema accepts, and what a value
// is, in the words a spec error uses.

// describe says in words what values a schema accepts: in the schema's own
// words (x-expected) when it has some, else from its type and bounds: "a
// positive integer", "a list of strings", "true or false, or a mapping". It
// returns "" when the schema says nothing describable.
func describe(sch map[string]any) string {
	if s, ok := sch[expectedKeyword].(string); ok {
		return s
	}
	if c, ok := sch["const"]; ok {
		return literal(c)
	}
	if e, ok := sch["enum"].([]any); ok {
		return "one of " + literals(e)
	}
	for _, kw := range []string{"anyOf", "oneOf"} {
		if alts, ok := sch[kw].([]any); ok {
			var parts []string
			for _, a := range alts {
				if m, ok := a.(map[string]any); ok {
					parts = append(parts, describe(m))
				}
			}
			return joinOr(parts)
		}
	}
	var parts []string
	for _, t := range typeNames(sch["type"]) {
		parts = append(parts, describeType(t, sch))
	}
	return joinOr(parts)
}

// typesOf returns the JSON types of values: those of an enum, say.
func typesOf(vs ...any) []string {
	types := make([]string, len(vs))
	for i, v := range vs {
		types[i] = jsonType(v)
	}
	return types
}

// jsonType names the JSON type of a value.
func jsonType(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case json.Number, float64:
		return "number"
	case bool:
		return "boolean"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "null"
}

// ofType tells whether v has one of the JSON types. An integer is a number
// like any other to the person writing it: 2.5 where an integer is wanted is
// a wrong value, not a wrong kind of value.
func ofType(v any, types []string) bool {
	t := jsonType(v)
	return slices.Contains(types, t) || t == "number" && slices.Contains(types, "integer")
}

func typeNames(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		return stringsIn(v)
	}
	return nil
}

func describeType(t string, sch map[string]any) string {
	switch t {
	case "integer", "number":
		return describeNumber(t, sch)
	case "string":
		minLen, hasMin := number(sch["minLength"])
		maxLen, hasMax := number(sch["maxLength"])
		switch {
		case hasMin && hasMax:
			return fmt.Sprintf("a string of %s to %s characters", minLen, maxLen)
		case hasMin && minLen == "1":
			return "a non-empty string"
		case hasMin:
			return fmt.Sprintf("a string of at least %s characters", minLen)
		case hasMax:
			return fmt.Sprintf("a string of at most %s characters", maxLen)
		}
		return "a string"
	case "array":
		s := "a list"
		if items, ok := sch["items"].(map[string]any); ok {
			if p := plural(describe(items)); p != "" {
				s += " of " + p
			}
		}
		minItems, hasMin := number(sch["minItems"])
		maxItems, hasMax := number(sch["maxItems"])
		switch {
		case hasMin && hasMax && minItems == maxItems:
			s += fmt.Sprintf(" with exactly %s %s", minItems, itemWord(minItems))
		case hasMin && minItems == "1" && !hasMax:
			s = "a non-empty " + strings.TrimPrefix(s, "a ")
		case hasMin && hasMax:
			s += fmt.Sprintf(" with %s to %s items", minItems, maxItems)
		case hasMin:
			s += fmt.Sprintf(" with at least %s %s", minItems, itemWord(minItems))
		case hasMax:
			s += fmt.Sprintf(" with at most %s %s", maxItems, itemWord(maxItems))
		}
		return s
	}
	return typesPhrase([]string{t})
}

func itemWord(n string) string {
	if n == "1" {
		return "item"
	}
	return "items"
}

func describeNumber(t string, sch map[string]any) string {
	lo, hasLo := number(sch["minimum"])
	elo, hasElo := number(sch["exclusiveMinimum"])
	hi, hasHi := number(sch["maximum"])
	ehi, hasEhi := number(sch["exclusiveMaximum"])
	if !hasHi && !hasEhi {
		switch {
		case hasElo && elo == "0" && !hasLo, hasLo && lo == "1" && t == "integer" && !hasElo:
			return "a positive " + t
		case hasLo && lo == "0" && !hasElo:
			return "a non-negative " + t
		}
	}
	noun := article(t)
	if hasLo && hasHi && !hasElo && !hasEhi {
		return fmt.Sprintf("%s between %s and %s", noun, lo, hi)
	}
	var bounds []string
	if hasLo {
		bounds = append(bounds, "of at least "+lo)
	}
	if hasElo {
		bounds = append(bounds, "greater than "+elo)
	}
	if hasHi {
		bounds = append(bounds, "of at most "+hi)
	}
	if hasEhi {
		bounds = append(bounds, "less than "+ehi)
	}
	if m, ok := number(sch["multipleOf"]); ok {
		bounds = append(bounds, "that is a multiple of "+m)
	}
	if len(bounds) == 0 {
		return noun
	}
	return noun + " " + strings.Join(bounds, " and ")
}

// number returns a numeric schema keyword's value as written.
func number(v any) (string, bool) {
	switch v := v.(type) {
	case json.Number:
		return jsonNumber(v).String(), true
	case float64:
		n, _ := floatNumber(v)
		return n.String(), true
	}
	return "", false
}

// typesPhrase names JSON types the way a YAML user thinks of them.
func typesPhrase(types []string) string {
	var parts []string
	for _, t := range types {
		switch t {
		case "object":
			parts = append(parts, "a mapping")
		case "array":
			parts = append(parts, "a list")
		case "boolean":
			parts = append(parts, "true or false")
		case "null":
			parts = append(parts, "an empty value")
		default:
			parts = append(parts, article(t))
		}
	}
	return joinOr(parts)
}

// plural turns a simple description into the plural used after "a list of":
// "a string" gives "strings", "a positive integer" gives "positive integers".
func plural(s string) string {
	switch {
	case s == "true or false":
		return "booleans"
	case strings.Contains(s, " or "), strings.Contains(s, " of "), strings.Contains(s, " than "),
		strings.Contains(s, " between "), strings.Contains(s, " with "):
		return ""
	}
	for _, a := range []string{"a ", "an "} {
		if rest, ok := strings.CutPrefix(s, a); ok {
			return rest + "s"
		}
	}
	return ""
}

func article(noun string) string {
	if noun != "" && strings.ContainsRune("aeiou", rune(noun[0])) {
		return "an " + noun
	}
	return "a " + noun
}

// joinOr joins alternatives: "a", "a or b", "a, b or c". When an alternative
// has an "or" of its own, the last one is set off by a comma: "true or
// false, or a mapping". Alternatives that say nothing ("") are left out;
// if all do, so does the result.
func joinOr(parts []string) string {
	parts = slices.DeleteFunc(slices.Compact(parts), func(s string) bool { return s == "" })
	switch len(parts) {
	case 0:
		return ""
	case 1:
		return parts[0]
	}
	sep := " or "
	for _, p := range parts {
		if strings.Contains(p, " or ") {
			sep = ", or "
		}
	}
	return strings.Join(parts[:len(parts)-1], ", ") + sep + parts[len(parts)-1]
}

func propertyNames(sch map[string]any) []string {
	props, _ := sch["properties"].(map[string]any)
	names := make([]string, 0, len(props))
	for n := range props {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Describing values.

// describeValue says what a value is, for "found ...": `"ten" (a string)`,
// `a list`, `an empty value`. withKind adds the kind to scalars, for messages
// about a wrong type.
func describeValue(v any, withKind bool) string {
	kindOf := func(s, k string) string {
		if withKind {
			return s + " (" + k + ")"
		}
		return s
	}
	switch v := v.(type) {
	case nil:
		return "an empty value"
	case string:
		if v == "" {
			return "an empty string"
		}
		return kindOf(quoteShort(redactURL(v)), "a string")
	case json.Number:
		return kindOf(v.String(), "a number")
	case bool:
		return kindOf(fmt.Sprint(v), "a boolean")
	case []any:
		switch {
		case len(v) == 0:
			return "an empty list"
		case withKind:
			return "a list"
		}
		return fmt.Sprintf("a list of %d %s", len(v), itemWord(fmt.Sprint(len(v))))
	case map[string]any:
		if len(v) == 0 {
			return "an empty mapping"
		}
		return "a mapping"
	}
	return fmt.Sprint(v)
}

// quoteShort quotes s, cut to a length that fits in a message.
func quoteShort(s string) string {
	const limit = 60
	if utf8.RuneCountInString(s) > limit {
		s = string([]rune(s)[:limit-3]) + "..."
	}
	return fmt.Sprintf("%q", s)
}

// literal writes a schema constant as it would appear in a spec.
func literal(v any) string {
	switch v := v.(type) {
	case string:
		return fmt.Sprintf("%q", v)
	case nil:
		return "null"
	case json.Number, bool:
		return fmt.Sprint(v)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func literals(vs []any) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = literal(v)
	}
	return strings.Join(parts, ", ")
}

func quoteAll(ss []string) string {
	parts := make([]string, len(ss))
	for i, s := range ss {
		parts[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(parts, ", ")
}

// stringsIn returns the strings among vs.
func stringsIn(vs []any) []string {
	var out []string
	for _, v := range vs {
		if s, ok := v.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// redactURL is a string that is a URL as messages show one (see
// redact.URL: without its password, query, fragment or a path segment that
// may be a token), since a spec's error lands in CI logs; any other string
// comes back as it is.
func redactURL(s string) string {
	if !strings.Contains(s, "://") {
		return s
	}
	if u, err := url.Parse(s); err != nil || u.Scheme == "" || u.Host == "" {
		return s
	}
	return redact.URL(s)
}

// urlValue describes s, the value of a field whose schema wants a URL (its
// pattern starts ^https?://), as a URL whatever it looks like: a base_url
// written without its scheme's // ("api.example.com:443/v1?api_key=...")
// is one all the same, with its secrets where a URL keeps them.
func urlValue(s string) string {
	if _, err := url.Parse(s); err != nil {
		return "an unparsable URL"
	}
	return quoteShort(redact.URL(s))
}

// wantsURL reports whether a schema's values are URLs.
func wantsURL(sch map[string]any) bool {
	p, _ := sch["pattern"].(string)
	return strings.HasPrefix(p, "^http")
}
