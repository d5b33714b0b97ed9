package testmodel

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
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
// Those are the values of seed 0. As in pydantic-ai, each item of a
// uniqueItems array is followed by the next seed, which the rest of the
// value keeps: seed n takes the enum entry, example and anyOf alternative
// n (modulo their count), the nth string of a, b, ..., z, A, ..., 9, !, ...,
// ~, aa, ab, ... (repeated to minLength), the date n days after 2024-01-01,
// the minimum + n (modulo the integers up to the maximum, when there is
// one), the maximum - n, n, and false or true as n is even or odd; so
// [0,1,2], ["a","b"], [false,true].
//
// An object made is written with its keys in the order of the schema's
// properties (sorted for a schema decoded into maps, which lose the order),
// required keys the properties do not list after them; a number is written
// with a fraction (0.0), as pydantic-ai writes a float.
//
// An error names a schema it cannot satisfy (an unknown type, a $ref it
// cannot resolve).
func Generate(sch any) (any, error) {
	g := &generator{root: sch}
	return g.value(sch, 0)
}

type generator struct {
	root any
	seed int // what values are made with: 0, and one more after each item of a uniqueItems array
}

// maxRefDepth stops a recursive schema from looping.
const maxRefDepth = 32

func (g *generator) value(sch any, depth int) (any, error) {
	if depth > maxRefDepth {
		return nil, fmt.Errorf("schema nests $ref more than %d deep", maxRefDepth)
	}
	m, ok := asObject(sch)
	if !ok {
		if b, isBool := sch.(bool); isBool && !b {
			return nil, fmt.Errorf("schema false admits no value")
		}
		return g.char(), nil // true, or no schema: anything goes
	}
	if c, ok := m.lookup("const"); ok {
		return c, nil
	}
	if e, ok := m.get("enum").([]any); ok && len(e) > 0 {
		return e[g.seed%len(e)], nil
	}
	if e, ok := m.get("examples").([]any); ok && len(e) > 0 {
		return e[g.seed%len(e)], nil
	}
	if ref, ok := m.get("$ref").(string); ok {
		target, err := g.resolve(ref)
		if err != nil {
			return nil, err
		}
		return g.value(target, depth+1)
	}
	if alts, ok := m.get("anyOf").([]any); ok && len(alts) > 0 {
		return g.value(alts[g.seed%len(alts)], depth+1)
	}
	// Not pydantic-ai's: it reads neither. One alternative of a oneOf may
	// match the value made for another, so the first is always taken.
	for _, key := range []string{"oneOf", "allOf"} {
		if alts, ok := m.get(key).([]any); ok && len(alts) > 0 {
			return g.value(alts[0], depth+1)
		}
	}
	var typ string
	switch t := m.get("type").(type) {
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
		return g.char(), nil
	}
	switch typ {
	case "object":
		return g.object(m, depth)
	case "string":
		return g.stringValue(m), nil
	case "integer":
		return int64(g.numberValue(m, true)), nil
	case "number":
		return float(g.numberValue(m, false)), nil
	case "boolean":
		return g.seed%2 == 1, nil
	case "null":
		return nil, nil
	case "array":
		return g.array(m, depth)
	}
	return nil, fmt.Errorf("unknown type %q", typ)
}

func (g *generator) object(m *object, depth int) (any, error) {
	out := newObject()
	props, _ := asObject(m.get("properties"))
	if props == nil {
		props = newObject()
	}
	req, _ := m.get("required").([]any)
	required := map[string]bool{}
	for _, r := range req {
		if name, ok := r.(string); ok {
			required[name] = true
		}
	}
	// The properties' order, as pydantic-ai; then, which it leaves out,
	// the required keys they do not list, so that the value is valid.
	names := slices.DeleteFunc(slices.Clone(props.keys), func(k string) bool { return !required[k] })
	for _, r := range req {
		if name, ok := r.(string); ok && !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	for _, name := range names {
		v, err := g.value(props.get(name), depth+1)
		if err != nil {
			return nil, fmt.Errorf("property %s: %w", name, err)
		}
		out.set(name, v)
	}
	extra := false
	switch ap := m.get("additionalProperties").(type) {
	case bool:
		extra = ap
	default:
		if o, ok := asObject(ap); ok {
			extra = len(o.keys) > 0
		}
	}
	if extra {
		key := "additionalProperty"
		for {
			if _, taken := out.lookup(key); !taken {
				break
			}
			key += "_"
		}
		v, err := g.value(m.get("additionalProperties"), depth+1)
		if err != nil {
			return nil, err
		}
		out.set(key, v)
	}
	return out, nil
}

func (g *generator) array(m *object, depth int) (any, error) {
	out := []any{}
	unique, _ := m.get("uniqueItems").(bool)
	add := func(sch any) error {
		v, err := g.value(sch, depth+1)
		if err != nil {
			return err
		}
		out = append(out, v)
		if unique {
			g.seed++
		}
		return nil
	}
	if prefix, ok := m.get("prefixItems").([]any); ok {
		for _, p := range prefix {
			if err := add(p); err != nil {
				return nil, err
			}
		}
	}
	minItems, _ := intOf(m.get("minItems"))
	maxItems, hasMax := intOf(m.get("maxItems"))
	items, _ := asObject(m.get("items"))
	if len(out) < minItems {
		for len(out) < minItems {
			if err := add(m.get("items")); err != nil {
				return nil, err
			}
		}
	} else if items != nil && len(items.keys) > 0 && (!hasMax || len(out) < maxItems) {
		if err := add(items); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (g *generator) stringValue(m *object) string {
	switch m.get("format") {
	case "date":
		return firstDay.AddDate(0, 0, g.seed).Format(time.DateOnly)
	case "date-time":
		return firstDay.AddDate(0, 0, g.seed).Format(time.RFC3339)
	case "uri", "url", "iri":
		if g.seed == 0 {
			return "https://example.com"
		}
		return "https://example.com/" + strconv.Itoa(g.seed)
	case "email":
		local := g.char()
		if strings.IndexFunc(local, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) >= 0 {
			local = "a" + strconv.Itoa(g.seed)
		}
		return local + "@example.com"
	}
	if n, ok := intOf(m.get("maxLength")); ok && n == 0 {
		return ""
	}
	if n, ok := intOf(m.get("minLength")); ok && n >= 0 {
		return strings.Repeat(g.char(), n)
	}
	return g.char()
}

// firstDay is the date of seed 0, as in pydantic-ai.
var firstDay = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// chars are the characters strings are made of, in pydantic-ai's order
// (Python's ascii_letters, digits and punctuation).
const chars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"

// char is the string of the seed, numbered as pydantic-ai numbers them:
// a to ~, then aa, ab, ...
func (g *generator) char() string {
	n := len(chars)
	var s []byte
	for rem := g.seed / n; rem > 0; rem /= n {
		s = append(s, chars[(rem-1)%n])
	}
	return string(append(s, chars[g.seed%n]))
}

// numberValue is the lower bound the schema sets (the minimum, else
// exclusiveMinimum + 1) plus the seed, kept below the upper bound (the
// maximum, else exclusiveMaximum - 1) when there is one; else that upper
// bound less the seed; else the seed. As in pydantic-ai an exclusive bound
// is stepped over by 1 for numbers too. Unlike pydantic-ai's, an integer's
// range includes its upper bound, so that [5, 7] gives three different
// integers for a uniqueItems array, not 5, 6, 5.
func (g *generator) numberValue(m *object, integer bool) float64 {
	lo, hasLo := floatOf(m.get("minimum"))
	if !hasLo {
		if v, ok := floatOf(m.get("exclusiveMinimum")); ok {
			lo, hasLo = v+1, true
		}
	}
	hi, hasHi := floatOf(m.get("maximum"))
	if !hasHi {
		if v, ok := floatOf(m.get("exclusiveMaximum")); ok {
			hi, hasHi = v-1, true
		}
	}
	seed := float64(g.seed)
	switch {
	case hasLo && hasHi:
		span := hi - lo
		if integer {
			span++
		}
		if span <= 0 || seed == 0 {
			return lo
		}
		return lo + math.Mod(seed, span)
	case hasLo:
		return lo + seed
	case hasHi:
		return hi - seed
	}
	return seed
}

func (g *generator) resolve(ref string) (any, error) {
	for _, prefix := range []string{"#/$defs/", "#/definitions/"} {
		name, ok := strings.CutPrefix(ref, prefix)
		if !ok {
			continue
		}
		root, _ := asObject(g.root)
		if root == nil {
			continue
		}
		defs, _ := asObject(root.get(strings.TrimSuffix(strings.TrimPrefix(prefix, "#/"), "/")))
		if defs == nil {
			continue
		}
		if target, ok := defs.lookup(name); ok {
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
