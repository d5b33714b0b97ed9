package pipeline

import (
	"encoding/json"
	"maps"
	"math"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Type is the static type of a reference's value: the JSON Schema the value
// conforms to, as the producing step's output_schema or the pipeline's inputs
// schema says. The zero Type is unknown: any JSON value, and any path into it
// is accepted (it is what a schema that constrains nothing gives).
type Type struct {
	schema map[string]any // resolved: not a $ref; nil when unknown
	root   map[string]any // the schema document, for resolving $ref
	origin string         // what the schema is, for messages: "triage's output_schema"
	// desc says what the value is when no schema describes it (a step's
	// text answer), for messages: "triage has no output_schema, so its output".
	desc string
	// itemDesc is desc for the items of an array of such values.
	itemDesc string
}

// stringType is the type of a step's text answer, of an input without an
// inputs schema and of a glob's items; desc says which, for messages.
func stringType(desc string) Type {
	return Type{schema: map[string]any{"type": "string"}, desc: desc}
}

// schemaType is the type a schema document gives its top-level value.
func schemaType(root map[string]any, origin string) Type {
	return Type{root: root, origin: origin}.at(root, 0)
}

// maxRefs bounds how many $ref a type follows in a row: schemas that refer
// to themselves in a loop have no type.
const maxRefs = 32

// at returns the type of the sub-schema v of t's document, $ref resolved.
func (t Type) at(v any, refs int) Type {
	m, ok := v.(map[string]any)
	if !ok {
		return Type{origin: t.origin} // true, or no schema: anything
	}
	if ref, ok := m["$ref"].(string); ok {
		besides := constraints(m)
		def, hasDefault := m["default"]
		if len(besides) > 0 || hasDefault {
			// In draft 2020-12 the keywords beside a $ref apply as well as
			// its target: a value matches both, as of an allOf; and a
			// default beside it is the value's, whatever its target says.
			all := []any{map[string]any{"$ref": ref}}
			if len(besides) > 0 {
				all = append(all, besides)
			}
			s := map[string]any{"allOf": all}
			if hasDefault {
				s["default"] = def
			}
			return Type{schema: s, root: t.root, origin: t.origin}
		}
		target, found := t.resolve(ref)
		if !found || refs >= maxRefs {
			return Type{origin: t.origin}
		}
		return t.at(target, refs+1)
	}
	if len(m) == 0 {
		return Type{origin: t.origin}
	}
	return Type{schema: m, root: t.root, origin: t.origin}
}

// annotations are the keywords of a schema that do not constrain its value.
var annotations = []string{"$ref", "$defs", "definitions", "$schema", "$id", "$anchor", "$comment", "title", "description", "examples", "default", "deprecated", "readOnly", "writeOnly"}

// constraints is m without its $ref and its annotations: the keywords beside
// a $ref that constrain the value; nil when there are none.
func constraints(m map[string]any) map[string]any {
	var out map[string]any
	for k, v := range m {
		if slices.Contains(annotations, k) {
			continue
		}
		if out == nil {
			out = map[string]any{}
		}
		out[k] = v
	}
	return out
}

// resolve finds a local $ref ("#/$defs/file") in the schema document.
func (t Type) resolve(ref string) (any, bool) {
	ptr, ok := strings.CutPrefix(ref, "#")
	if !ok || t.root == nil {
		return nil, false
	}
	var v any = t.root
	if ptr == "" {
		return v, true
	}
	if !strings.HasPrefix(ptr, "/") {
		return nil, false
	}
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
		switch c := v.(type) {
		case map[string]any:
			if v, ok = c[tok]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			v = c[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// Known tells whether the schema says anything of the value.
func (t Type) Known() bool { return t.schema != nil }

// Schema is the JSON Schema of the value, its top-level $ref resolved; nil
// when the type is unknown. $ref inside it resolve in Type's own document:
// walk it with Property and Items rather than by hand.
func (t Type) Schema() map[string]any { return t.schema }

// JSON lists the JSON types ("object", "array", "string", "number",
// "integer", "boolean", "null") a value of this type may have, sorted; nil
// when it may be any.
func (t Type) JSON() []string {
	if t.schema == nil {
		return nil
	}
	set := map[string]bool{}
	if !t.kinds(set, 0) {
		return nil
	}
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// kinds adds the JSON types t allows to set; false when it allows any.
func (t Type) kinds(set map[string]bool, depth int) bool {
	m := t.schema
	if m == nil || depth > maxRefs {
		return false
	}
	switch ty := m["type"].(type) {
	case string:
		set[ty] = true
		return true
	case []any:
		for _, e := range ty {
			if s, ok := e.(string); ok {
				set[s] = true
			}
		}
		return len(set) > 0
	}
	if c, ok := m["const"]; ok {
		set[jsonKind(c)] = true
		return true
	}
	if e, ok := m["enum"].([]any); ok && len(e) > 0 {
		for _, v := range e {
			set[jsonKind(v)] = true
		}
		return true
	}
	for _, key := range []string{"anyOf", "oneOf"} {
		if branches, ok := m[key].([]any); ok && len(branches) > 0 {
			for _, b := range branches {
				if !t.at(b, 0).kinds(set, depth+1) {
					return false
				}
			}
			return true
		}
	}
	if branches, ok := m["allOf"].([]any); ok {
		// A value matches every branch: the types they all allow.
		var both map[string]bool
		for _, b := range branches {
			bs := map[string]bool{}
			if !t.at(b, 0).kinds(bs, depth+1) {
				continue
			}
			if both == nil {
				both = bs
				continue
			}
			next := map[string]bool{}
			for k := range both {
				switch {
				case bs[k], k == "integer" && bs["number"]:
					next[k] = true
				case k == "number" && bs["integer"]:
					next["integer"] = true
				}
			}
			both = next
		}
		if len(both) > 0 {
			for k := range both {
				set[k] = true
			}
			return true
		}
	}
	if _, ok := m["properties"]; ok {
		set["object"] = true
		return true
	}
	if _, ok := m["items"]; ok {
		set["array"] = true
		return true
	}
	return false
}

func jsonKind(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case json.Number:
		if _, err := v.Int64(); err == nil {
			return "integer"
		}
		return "number"
	case float64:
		return "number"
	}
	return "null"
}

// Is tells whether every value of the type is of the JSON type kind.
func (t Type) Is(kind string) bool {
	j := t.JSON()
	return len(j) > 0 && !slices.ContainsFunc(j, func(k string) bool {
		return k != kind && !(kind == "number" && k == "integer")
	})
}

// String names the type: "string", "array", "object", "string or null", or
// "any value" when unknown.
func (t Type) String() string {
	j := t.JSON()
	if j == nil {
		return "any value"
	}
	return strings.Join(j, " or ")
}

// branches are the schemas a value of t matches one or all of: t itself,
// and its anyOf, oneOf and allOf alternatives.
// A schema that is a branch of itself, through $ref, is listed once.
func (t Type) branches() []Type { return t.branchesOf(map[uintptr]bool{}) }

func (t Type) branchesOf(seen map[uintptr]bool) []Type {
	out := []Type{t}
	if t.schema != nil {
		p := reflect.ValueOf(t.schema).Pointer()
		if seen[p] {
			return nil
		}
		seen[p] = true
	}
	for _, key := range []string{"anyOf", "oneOf", "allOf"} {
		if list, ok := t.schema[key].([]any); ok {
			for _, b := range list {
				if bt := t.at(b, 0); bt.schema != nil {
					out = append(out, bt.branchesOf(seen)...)
				} else {
					out = append(out, bt)
				}
			}
		}
	}
	return out
}

// Property returns the type of the member name of an object of this type.
// ok is false when the schema has no such property; names then lists the
// properties it has, for a suggestion. An unknown type has every property,
// of unknown type.
func (t Type) Property(name string) (prop Type, names []string, ok bool) {
	return t.property(name, map[uintptr]bool{})
}

// property is Property, where seen are the schemas whose alternatives are
// being looked through already.
func (t Type) property(name string, seen map[uintptr]bool) (prop Type, names []string, ok bool) {
	if t.schema == nil {
		return Type{origin: t.origin}, nil, true
	}
	if u, ok := t.alternatives(name, seen); ok {
		return u, nil, true
	}
	open := true // nothing in the schema lists the members
	for _, b := range t.branches() {
		if b.schema == nil {
			return Type{origin: t.origin}, nil, true
		}
		props, listed := b.schema["properties"].(map[string]any)
		if listed {
			open = false
			if p, found := props[name]; found {
				return t.at(p, 0), nil, true
			}
			for k := range props {
				if !slices.Contains(names, k) {
					names = append(names, k)
				}
			}
		}
		switch ap := b.schema["additionalProperties"].(type) {
		case map[string]any:
			return t.at(ap, 0), nil, true
		case bool:
			if !ap {
				open = false
			}
		}
	}
	if j := t.JSON(); open && (j == nil || slices.Contains(j, "object")) {
		return Type{origin: t.origin}, nil, true
	}
	sort.Strings(names)
	return Type{}, names, false
}

// alternatives is the type of the member name when the schema's own
// properties do not list it and its anyOf or oneOf alternatives do, in more
// than one: a value of any one of their types. ok is false otherwise, for
// Property to look further.
func (t Type) alternatives(name string, seen map[uintptr]bool) (Type, bool) {
	self := reflect.ValueOf(t.schema).Pointer()
	if seen[self] {
		return Type{}, false // an alternative that is its own, through $ref
	}
	seen[self] = true
	defer delete(seen, self)
	if props, ok := t.schema["properties"].(map[string]any); ok && props[name] != nil {
		return Type{}, false
	}
	for _, key := range []string{"anyOf", "oneOf"} {
		list, _ := t.schema[key].([]any)
		var found []any
		for _, b := range list {
			bt := t.at(b, 0)
			if bt.schema == nil {
				return Type{origin: t.origin}, true // an alternative that is anything
			}
			p, _, ok := bt.property(name, seen)
			switch {
			case !ok:
				continue
			case p.schema == nil:
				return Type{origin: t.origin}, true
			}
			if !slices.ContainsFunc(found, func(f any) bool { return reflect.DeepEqual(f, any(p.schema)) }) {
				found = append(found, p.schema)
			}
		}
		if len(found) > 1 {
			return Type{schema: map[string]any{"anyOf": found}, root: t.root, origin: t.origin}, true
		}
	}
	return Type{}, false
}

// Properties lists the members the schema names for an object of this
// type: its properties, through $ref and its anyOf, oneOf and allOf
// branches; sorted.
func (t Type) Properties() []string {
	var names []string
	for _, b := range t.branches() {
		props, _ := b.schema["properties"].(map[string]any)
		for k := range props {
			if !slices.Contains(names, k) {
				names = append(names, k)
			}
		}
	}
	sort.Strings(names)
	return names
}

// Requires tells whether every object of this type has the member name:
// the schema's required lists it (or an allOf branch's does, or every anyOf
// or oneOf branch's does).
func (t Type) Requires(name string) bool { return t.requires(name, 0) }

func (t Type) requires(name string, depth int) bool {
	if t.schema == nil || depth > maxRefs {
		return false
	}
	if req, ok := t.schema["required"].([]any); ok && slices.Contains(req, any(name)) {
		return true
	}
	if list, ok := t.schema["allOf"].([]any); ok {
		for _, b := range list {
			if t.at(b, 0).requires(name, depth+1) {
				return true
			}
		}
	}
	for _, key := range []string{"anyOf", "oneOf"} {
		if list, ok := t.schema[key].([]any); ok && len(list) > 0 &&
			!slices.ContainsFunc(list, func(b any) bool { return !t.at(b, 0).requires(name, depth+1) }) {
			return true
		}
	}
	return false
}

// Default is the schema's default value, when it gives one.
func (t Type) Default() (any, bool) {
	v, ok := t.schema["default"]
	return v, ok
}

// nonNull is the type of the values of t that are not null: t itself when
// it does not allow null; unknown when that cannot be told.
func (t Type) nonNull() Type {
	if !slices.Contains(t.JSON(), "null") {
		return t
	}
	if list, ok := t.schema["type"].([]any); ok {
		rest := slices.DeleteFunc(slices.Clone(list), func(e any) bool { return e == "null" })
		m := maps.Clone(t.schema)
		m["type"] = rest
		if len(rest) == 1 {
			m["type"] = rest[0]
		}
		u := t
		u.schema = m
		return u
	}
	for _, key := range []string{"anyOf", "oneOf"} {
		list, _ := t.schema[key].([]any)
		var keep []Type
		for _, b := range list {
			if bt := t.at(b, 0); !bt.Is("null") {
				keep = append(keep, bt)
			}
		}
		if len(keep) == 1 && len(list) > 1 {
			return keep[0]
		}
	}
	return Type{origin: t.origin}
}

// Items returns the type of the elements of an array of this type; ok is
// false when the type is not an array's. An unknown type's items are
// unknown, and so are a tuple's (prefixItems), which differ by index.
func (t Type) Items() (Type, bool) { return t.element(-1) }

// Item returns the type of the element at index i of an array of this
// type: its prefixItems schema, or its items schema past them. ok is false
// when the type is not an array's; most is how many items such an array
// has at most (maxItems, or prefixItems with items: false), -1 when the
// schema does not bound them.
func (t Type) Item(i int) (item Type, most int, ok bool) {
	if item, ok = t.element(i); !ok {
		return item, -1, false
	}
	return item, t.most(0), true
}

// element is the type of the element at index i, or of any element when i
// is negative.
func (t Type) element(i int) (Type, bool) {
	if t.schema == nil {
		return Type{origin: t.origin}, true
	}
	if j := t.JSON(); j != nil && !slices.Contains(j, "array") {
		return Type{}, false
	}
	for _, b := range t.branches() {
		prefix, _ := b.schema["prefixItems"].([]any)
		switch {
		case i < 0 && len(prefix) > 0:
			return Type{origin: t.origin}, true
		case i >= 0 && i < len(prefix):
			it := t.at(prefix[i], 0)
			it.desc = t.itemDesc
			return it, true
		}
		if items, ok := b.schema["items"]; ok {
			it := t.at(items, 0)
			it.desc = t.itemDesc
			return it, true
		}
	}
	return Type{origin: t.origin}, true // an array of anything
}

// most is how many items an array of this type has at most, -1 when
// unbounded: every allOf branch bounds it, and an anyOf or oneOf bounds it
// by its largest branch (one that is not an array's has none).
func (t Type) most(depth int) int {
	if t.schema == nil || depth > maxRefs {
		return -1
	}
	n := -1
	limit := func(m int) {
		if m >= 0 && (n < 0 || m < n) {
			n = m
		}
	}
	if m, ok := t.schema["maxItems"].(json.Number); ok {
		if f, err := m.Float64(); err == nil && f >= 0 && f == math.Trunc(f) && f < math.MaxInt32 {
			limit(int(f))
		}
	}
	if items, ok := t.schema["items"].(bool); ok && !items {
		prefix, _ := t.schema["prefixItems"].([]any)
		limit(len(prefix))
	}
	if list, ok := t.schema["allOf"].([]any); ok {
		for _, b := range list {
			limit(t.at(b, 0).most(depth + 1))
		}
	}
	for _, key := range []string{"anyOf", "oneOf"} {
		list, _ := t.schema[key].([]any)
		largest := 0
		for _, b := range list {
			bt := t.at(b, 0)
			if j := bt.JSON(); j != nil && !slices.Contains(j, "array") {
				continue
			}
			m := bt.most(depth + 1)
			if m < 0 {
				largest = -1
				break
			}
			largest = max(largest, m)
		}
		if len(list) > 0 {
			limit(largest)
		}
	}
	return n
}

// arrayOf is the type of an array whose items are of type item.
func arrayOf(item Type, origin string) Type {
	s := map[string]any{"type": "array"}
	if item.schema != nil {
		s["items"] = item.schema
	}
	return Type{schema: s, root: item.root, origin: origin, itemDesc: item.desc}
}

// what names a value of type t, written as label, for messages.
func (t Type) what(label string) string {
	if t.desc != "" {
		return t.desc
	}
	return label
}
