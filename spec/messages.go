package spec

import (
	"errors"
	"fmt"
	"math/big"
	"net/url"
	"slices"
	"strconv"
	"strings"

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
	if s, ok := val.(string); ok && s != "" && wantsURL(sch) {
		found = urlValue(s)
	}
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
