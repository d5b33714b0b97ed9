package spec

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/agentspec/agentspec/internal/suggest"
)

// This file turns JSON Schema validation errors into messages a person reads
// in CI: what was expected and what was found, at the value's position. Each
// error kind gets its own wording; the schema itself is consulted to describe
// expectations ("a positive integer" rather than "minimum 1"), and a schema
// may name what it expects with the "x-expected" annotation, used for
// constraints that words derived from keywords would describe badly.

// expectedKeyword is the annotation a schema uses to say, in words, what a
// value must be: "an http:// or https:// URL".
const expectedKeyword = "x-expected"

// schemaDocs returns the decoded schema document of a resource URL (no
// fragment), or nil when it is not known.
type schemaDocs func(resource string) any

// reporter adds the errors of one validation to a document.
type reporter struct {
	d    *document
	docs schemaDocs
	inst any    // the value validated
	base string // its JSON pointer in the document
	noun string // what members of mappings are called: "key", or "option" inside a capability
}

func newReporter(d *document, docs schemaDocs, inst any, base, noun string) *reporter {
	return &reporter{d: d, docs: docs, inst: inst, base: base, noun: noun}
}

// report adds the problems in err, the result of validating r.inst.
func (r *reporter) report(err error) {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		r.add(r.base, false, err.Error())
		return
	}
	r.walk(ve)
}

func (r *reporter) walk(ve *jsonschema.ValidationError) {
	switch k := ve.ErrorKind.(type) {
	case *kind.Schema, *kind.Group, *kind.AllOf, *kind.Reference:
		for _, c := range ve.Causes {
			r.walk(c)
		}
	case *kind.AnyOf:
		r.alternatives(ve)
	case *kind.OneOf:
		if len(k.Subschemas) > 1 {
			r.add(r.ptr(ve), false, fmt.Sprintf("matches more than one of the allowed forms (alternatives %d and %d)",
				k.Subschemas[0]+1, k.Subschemas[1]+1))
			return
		}
		r.alternatives(ve)
	default:
		r.leaf(ve)
	}
}

// alternatives reports a value that matched none of anyOf's or oneOf's
// schemas. Alternatives the value does not even have the type of are beside
// the point: if one alternative remains, its errors are the useful ones
// (instructions: [1] is a list, so the problem is the number in it). If none
// remains, the message lists what each alternative expects.
func (r *reporter) alternatives(ve *jsonschema.ValidationError) {
	var relevant []*jsonschema.ValidationError
	for _, c := range ve.Causes {
		if !wrongType(c, ve.InstanceLocation) {
			relevant = append(relevant, c)
		}
	}
	if len(relevant) > 0 {
		r.walk(slices.MaxFunc(relevant, func(a, b *jsonschema.ValidationError) int {
			return depth(a) - depth(b)
		}))
		return
	}
	var want, types []string
	for _, c := range ve.Causes {
		for _, l := range leaves(c) {
			if t, ok := l.ErrorKind.(*kind.Type); ok {
				want = append(want, typesPhrase(t.Want))
				types = append(types, t.Want...)
			}
		}
	}
	if s := describe(r.schemaAt(ve.SchemaURL)); s != "" {
		want = []string{s}
	}
	ptr, val := r.ptr(ve), r.value(ve)
	r.add(ptr, false, fmt.Sprintf("expected %s, found %s", joinOr(want), r.found(ptr, val, types))+r.boolHint(val, types))
}

func (r *reporter) leaf(ve *jsonschema.ValidationError) {
	ptr, val, sch := r.ptr(ve), r.value(ve), r.schemaAt(ve.SchemaURL)
	// expected is what the schema says it wants, in its own words when it
	// has some, else in the fallback's, else as derived from its keywords.
	expected := func(fallback string) string {
		if s, ok := sch[expectedKeyword].(string); ok {
			return s
		}
		if fallback != "" {
			return fallback
		}
		return describe(sch)
	}
	// found is the value as such; wrong types are described by r.found.
	found := r.d.describe(ptr, val, false)
	var msg string
	switch k := ve.ErrorKind.(type) {
	case *kind.Type:
		want := describe(sch)
		if want == "" {
			want = typesPhrase(k.Want)
		}
		msg = fmt.Sprintf("expected %s, found %s", want, r.found(ptr, val, k.Want)) + r.boolHint(val, k.Want)
		if text, ok := r.d.retyped[ptr]; ok && slices.Contains(k.Want, "string") {
			msg += fmt.Sprintf("; unquoted, %s takes the type of its value: write %q to keep it a string", text, text)
		}
	case *kind.Required:
		for _, name := range k.Missing {
			r.add(ptr, false, fmt.Sprintf("missing required %s %q", r.noun, name))
		}
		return
	case *kind.AdditionalProperties:
		for _, name := range k.Properties {
			r.unknown(ptr, name, sch)
		}
		return
	case *kind.Enum:
		msg = fmt.Sprintf("expected %s, found %s", expected("one of "+literals(k.Want)), r.found(ptr, val, typesOf(k.Want...)))
		if s, ok := val.(string); ok {
			msg += suggest.DidYouMean(s, stringsIn(k.Want))
		}
	case *kind.Const:
		msg = fmt.Sprintf("expected %s, found %s", expected(literal(k.Want)), r.found(ptr, val, typesOf(k.Want)))
	case *kind.Pattern:
		msg = fmt.Sprintf("expected %s, found %s", expected(fmt.Sprintf("a string matching the regular expression %q", k.Want)), found)
	case *kind.Format:
		if s, ok := val.(string); ok && k.Want == "regex" {
			msg = regexpMsg(s, k.Err)
			break
		}
		msg = fmt.Sprintf("expected %s, found %s: %v", expected("a valid "+k.Want), found, k.Err)
	case *kind.MaxLength:
		msg = fmt.Sprintf("expected %s, found a string of %d characters", expected(fmt.Sprintf("at most %d characters", k.Want)), k.Got)
	case *kind.Minimum, *kind.Maximum, *kind.ExclusiveMinimum, *kind.ExclusiveMaximum, *kind.MultipleOf,
		*kind.MinLength, *kind.MinItems, *kind.MaxItems, *kind.MinProperties, *kind.MaxProperties:
		if want := expected(""); want != "" {
			msg = fmt.Sprintf("expected %s, found %s", want, found)
		} else {
			msg = boundMsg(ve.ErrorKind, found)
		}
	case *kind.UniqueItems:
		msg = fmt.Sprintf("items [%d] and [%d] are the same; each item must be different", k.Duplicates[0], k.Duplicates[1])
	case *kind.DependentRequired:
		msg = fmt.Sprintf("%q needs %s to be set too", k.Prop, quoteAll(k.Missing))
	case *kind.Dependency:
		msg = fmt.Sprintf("%q needs %s to be set too", k.Prop, quoteAll(k.Missing))
	case *kind.FalseSchema:
		if toks := tokens(ptr); len(toks) > 0 && ptr != r.base {
			r.add(ptr, true, fmt.Sprintf("%s %q is not allowed here", r.noun, toks[len(toks)-1]))
			return
		}
		msg = "no value is allowed here"
	case *kind.Not:
		msg = "this value is not allowed here"
		if s, ok := sch[expectedKeyword].(string); ok {
			msg = "expected " + s
		}
	case *kind.PropertyNames:
		msg = fmt.Sprintf("invalid %s name %q", r.noun, k.Property)
		r.add(child(ptr, k.Property), true, msg)
		return
	default:
		msg = localized(ve)
	}
	r.add(ptr, false, msg)
}

// boundMsg words a bound error from the error alone, for schemas that cannot
// be consulted (a metaschema). found describes the value.
func boundMsg(k jsonschema.ErrorKind, found string) string {
	switch k := k.(type) {
	case *kind.Minimum:
		return fmt.Sprintf("expected at least %s, found %s", ratString(k.Want), found)
	case *kind.ExclusiveMinimum:
		return fmt.Sprintf("expected more than %s, found %s", ratString(k.Want), found)
	case *kind.Maximum:
		return fmt.Sprintf("expected at most %s, found %s", ratString(k.Want), found)
	case *kind.ExclusiveMaximum:
		return fmt.Sprintf("expected less than %s, found %s", ratString(k.Want), found)
	case *kind.MultipleOf:
		return fmt.Sprintf("expected a multiple of %s, found %s", ratString(k.Want), found)
	case *kind.MinLength:
		return fmt.Sprintf("expected at least %d characters, found %d", k.Want, k.Got)
	case *kind.MaxLength:
		return fmt.Sprintf("expected at most %d characters, found %d", k.Want, k.Got)
	case *kind.MinItems:
		return fmt.Sprintf("expected at least %d items, found %d", k.Want, k.Got)
	case *kind.MaxItems:
		return fmt.Sprintf("expected at most %d items, found %d", k.Want, k.Got)
	case *kind.MinProperties:
		return fmt.Sprintf("expected at least %d keys, found %d", k.Want, k.Got)
	case *kind.MaxProperties:
		return fmt.Sprintf("expected at most %d keys, found %d", k.Want, k.Got)
	}
	return k.LocalizedString(printer)
}

// ratString writes a bound as a number is written in a spec: 0.5, not 1/2.
func ratString(r *big.Rat) string {
	if r.IsInt() {
		return r.RatString()
	}
	f, _ := r.Float64()
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// boolHint explains a word that reads as a boolean to people (a quoted yes,
// no, on or off; y or n) found as a string where a boolean is wanted.
func (r *reporter) boolHint(val any, want []string) string {
	s, ok := val.(string)
	if !ok || !r.d.yaml || !slices.Contains(want, "boolean") {
		return ""
	}
	switch strings.ToLower(s) {
	case "yes", "no", "on", "off":
		return "; quoted, " + s + " is a string: write true or false, or leave it unquoted"
	case "y", "n":
		return "; YAML reads y and n as strings: write true or false"
	}
	return ""
}

// unknown reports a member that its mapping's schema does not allow,
// suggesting the allowed member it most likely misspells.
func (r *reporter) unknown(ptr, name string, sch map[string]any) {
	allowed := propertyNames(sch)
	msg := fmt.Sprintf("unknown %s %q", r.noun, name)
	switch hint := suggest.DidYouMean(name, allowed); {
	case hint != "":
		msg += hint
	case len(allowed) > 0:
		msg += fmt.Sprintf(" (valid %ss: %s)", r.noun, strings.Join(allowed, ", "))
	default:
		msg += fmt.Sprintf(" (no %ss are allowed here)", r.noun)
	}
	r.add(child(ptr, name), true, msg)
}

// found describes val, the value at ptr, for a message saying what was
// expected: with its kind when that is none of the types the schema wants,
// for then the kind is the problem ("ten" (a string), where a number is
// wanted), else as a bare value (0, where a positive number is wanted).
func (r *reporter) found(ptr string, val any, want []string) string {
	return r.d.describe(ptr, val, !ofType(val, want))
}

// add records msg about the value at ptr. A message about the value itself
// is prefixed with the value's label and reported at the value; one about a
// member as such (atKey) with its mapping's label, at the member's key.
func (r *reporter) add(ptr string, atKey bool, msg string) {
	if atKey {
		r.d.add(ptr, r.d.keyPos(ptr), prefixed(parent(ptr), msg))
		return
	}
	r.d.add(ptr, r.d.pos(ptr), prefixed(ptr, msg))
}

func (r *reporter) ptr(ve *jsonschema.ValidationError) string {
	return pointer(r.base, ve.InstanceLocation)
}

// value returns the instance value an error is about.
func (r *reporter) value(ve *jsonschema.ValidationError) any {
	return valueAt(r.inst, pointer("", ve.InstanceLocation))
}

// schemaAt returns the schema object at a location such as
// "https://host/agent.schema.json#/properties/model", or nil.
func (r *reporter) schemaAt(loc string) map[string]any {
	if r.docs == nil {
		return nil
	}
	res, frag, _ := strings.Cut(loc, "#")
	frag, err := url.PathUnescape(frag)
	if err != nil {
		return nil
	}
	m, _ := valueAt(r.docs(res), frag).(map[string]any)
	return m
}

// wrongType tells whether ve says no more than that the value at loc has
// another type than a schema wants.
func wrongType(ve *jsonschema.ValidationError, loc []string) bool {
	for _, l := range leaves(ve) {
		if _, ok := l.ErrorKind.(*kind.Type); !ok || !slices.Equal(l.InstanceLocation, loc) {
			return false
		}
	}
	return true
}

// leaves returns the errors under ve that are not mere groupings.
func leaves(ve *jsonschema.ValidationError) []*jsonschema.ValidationError {
	switch ve.ErrorKind.(type) {
	case *kind.Schema, *kind.Group, *kind.AllOf, *kind.AnyOf, *kind.OneOf, *kind.Reference:
		var out []*jsonschema.ValidationError
		for _, c := range ve.Causes {
			out = append(out, leaves(c)...)
		}
		if len(out) > 0 {
			return out
		}
	}
	return []*jsonschema.ValidationError{ve}
}

// depth is how far into the value the deepest error under ve is.
func depth(ve *jsonschema.ValidationError) int {
	d := 0
	for _, l := range leaves(ve) {
		d = max(d, len(l.InstanceLocation))
	}
	return d
}

var printer = message.NewPrinter(language.English)

func localized(ve *jsonschema.ValidationError) string {
	return ve.ErrorKind.LocalizedString(printer)
}

// Describing expectations.

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
		return kindOf(quoteShort(v), "a string")
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
