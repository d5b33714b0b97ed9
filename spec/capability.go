package spec

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/agentspec/agentspec/capabilities"

	"github.com/agentspec/agentspec/internal/suggest"
)

// A capabilities entry takes one of the reference's forms:
//
//	- Name                          no options
//	- Name: {option: value, ...}    options
//	- Name: value                   the type's Positional option set to value
//	- {name: Name, arguments: ...}  long form; arguments a mapping, a value,
//	                                a one-element list holding the value, or absent
//
// Entries are checked one by one rather than through the composed schema's
// anyOf, so that a mistake in one option is reported as that option's mistake
// and not as "matches none of 12 alternatives".

// entry is a capabilities entry taken apart.
type entry struct {
	ptr     string // of the entry
	name    string
	namePtr string // where the name is written
	atKey   bool   // the name is a key (`- Name: ...`), not a value
	options any    // the options mapping; nil when a value was given instead
	value   any    // the positional value, when options is nil
	valPtr  string // of the positional value
	optsPtr string // pointer the options object is reported under
	null    bool   // written `- Name:`, with nothing after it
}

// readCapabilities checks the capabilities list of a spec and returns its
// entries with their options validated against their types' schemas.
func readCapabilities(d *document, reg *capabilities.Registry, docs schemaDocs, list []any) []Capability {
	var caps []Capability
	for i, item := range list {
		e, ok := parseEntry(d, index("/capabilities", i), item, reg)
		if !ok {
			continue
		}
		if c, ok := checkEntry(d, reg, docs, e); ok {
			caps = append(caps, c)
		}
	}
	return caps
}

func parseEntry(d *document, ptr string, item any, reg *capabilities.Registry) (entry, bool) {
	e := entry{ptr: ptr, optsPtr: ptr}
	switch v := item.(type) {
	case string:
		e.name, e.namePtr, e.options = v, ptr, map[string]any{}
		return e, true
	case map[string]any:
		if _, long := v["name"]; long {
			return parseLongEntry(d, e, v)
		}
		if len(v) != 1 {
			d.add(ptr, d.pos(ptr), prefixed(ptr, multiKeyMsg(d, ptr, v, reg)))
			return e, false
		}
		for name, val := range v {
			e.name, e.namePtr, e.atKey = name, child(ptr, name), true
			e.optsPtr = e.namePtr
			switch val := val.(type) {
			case nil: // `- Name:` with nothing after it; see checkEntry
				e.options, e.null = map[string]any{}, true
			case map[string]any:
				e.options = val
			default:
				e.value, e.valPtr = val, e.namePtr
			}
		}
		return e, true
	}
	d.add(ptr, d.pos(ptr), prefixed(ptr, "expected a capability: a type name (- FileSystem) or a mapping "+
		"from the type name to its options (- FileSystem: {root_dir: .}), found "+d.describe(ptr, item, true)))
	return e, false
}

// multiKeyMsg explains a mapping entry with other than one key. The common
// cause is options written level with the type's name instead of under it:
//
//	capabilities:
//	  - FileSystem:
//	    root_dir: .
func multiKeyMsg(d *document, ptr string, m map[string]any, reg *capabilities.Registry) string {
	if len(m) == 0 {
		return "expected a capability: a type name or a mapping with one key naming the type, found an empty mapping"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { // in the order they are written
		pa, pb := d.keyPos(child(ptr, a)), d.keyPos(child(ptr, b))
		if pa.Line != pb.Line {
			return pa.Line - pb.Line
		}
		return pa.Col - pb.Col
	})
	msg := fmt.Sprintf("expected a single key naming the capability type, found keys [%s]", strings.Join(keys, ", "))
	var types []string
	for _, k := range keys {
		if _, ok := reg.Lookup(k); ok {
			types = append(types, k)
		}
	}
	switch {
	case len(types) == 1 && m[types[0]] == nil:
		msg += fmt.Sprintf("; to give %s options, indent them under %q", types[0], types[0]+":")
	case len(types) == len(keys):
		msg += "; give each capability an entry of its own, starting with -"
	}
	return msg
}

func parseLongEntry(d *document, e entry, m map[string]any) (entry, bool) {
	ok := true
	for k := range m {
		if k != "name" && k != "arguments" {
			msg := fmt.Sprintf("unknown key %q in a capability's long form", k)
			if hint := suggest.DidYouMean(k, []string{"name", "arguments"}); hint != "" {
				msg += hint
			} else {
				msg += " (valid keys: name, arguments)"
			}
			d.add(child(e.ptr, k), d.keyPos(child(e.ptr, k)), prefixed(e.ptr, msg))
			ok = false
		}
	}
	e.namePtr = child(e.ptr, "name")
	name, isString := m["name"].(string)
	if !isString {
		d.add(e.namePtr, d.pos(e.namePtr), prefixed(e.namePtr, "expected a capability type name, found "+d.describe(e.namePtr, m["name"], true)))
		return e, false
	}
	e.name = name
	argPtr := child(e.ptr, "arguments")
	switch args := m["arguments"].(type) {
	case nil:
		e.options = map[string]any{}
	case map[string]any:
		e.options, e.optsPtr = args, argPtr
	case []any:
		// The reference reads arguments as a tuple of positional arguments, of
		// which a capability takes at most one.
		if len(args) != 1 {
			d.add(argPtr, d.pos(argPtr), prefixed(argPtr, fmt.Sprintf(
				"expected a mapping of options, a single value, or a list of one positional value, found %s",
				describeValue(args, false))))
			return e, false
		}
		e.value, e.valPtr, e.optsPtr = args[0], index(argPtr, 0), argPtr
	default:
		e.value, e.valPtr, e.optsPtr = args, argPtr, argPtr
	}
	return e, ok
}

// checkEntry looks up the entry's type and validates its options.
func checkEntry(d *document, reg *capabilities.Registry, docs schemaDocs, e entry) (Capability, bool) {
	namePos := d.pos(e.namePtr)
	if e.atKey {
		namePos = d.keyPos(e.namePtr)
	}
	t, ok := reg.Lookup(e.name)
	if !ok {
		msg := foreignTypeMsg(e.name)
		if msg == "" {
			msg = unknownTypeMsg(e.name, reg.Names())
		}
		d.add(e.namePtr, namePos, prefixed(e.ptr, msg))
		return Capability{}, false
	}
	if e.null && t.Positional != "" {
		// pydantic-ai passes `- Name:` on as one positional null: for
		// Thinking, that leaves thinking unset. A type whose positional
		// option takes no null reads it as no options.
		if opts := map[string]any{t.Positional: nil}; reg.ValidateOptions(e.name, opts) == nil {
			e.options = opts
		}
	}
	if e.options == nil {
		if t.Positional == "" {
			d.add(e.valPtr, d.pos(e.valPtr), prefixed(e.valPtr, noPositionalMsg(t, d.describe(e.valPtr, e.value, true))))
			return Capability{}, false
		}
		// The scalar form sets one option; errors about that option are
		// reported at the value.
		e.options = map[string]any{t.Positional: e.value}
		d.mirrorValue(child(e.optsPtr, t.Positional), e.valPtr, e.value)
	}
	optsMap, _ := e.options.(map[string]any)
	if len(t.Nested) > 0 && optsMap != nil {
		// The canonical nested entries replace the written ones in a copy:
		// the document keeps what the file says.
		optsMap = maps.Clone(optsMap)
		e.options = optsMap
	}
	for _, opt := range t.Nested {
		v, present := optsMap[opt]
		if !present {
			continue
		}
		nested, ok := checkNested(d, reg, docs, child(e.optsPtr, opt), v)
		if !ok {
			return Capability{}, false
		}
		optsMap[opt] = nested
	}
	e.options = dropRefusedNulls(reg, e.name, e.options)
	err := reg.ValidateOptions(e.name, e.options)
	if err != nil && retypeRefs(d, e.options, e.optsPtr, err) {
		err = reg.ValidateOptions(e.name, e.options)
	}
	if err != nil {
		if len(t.Schema) == 0 {
			d.add(e.optsPtr, d.pos(e.optsPtr), prefixed(e.optsPtr, fmt.Sprintf("%s takes no options, found %s", e.name, describeValue(e.options, false))))
			return Capability{}, false
		}
		newReporter(d, docs, e.options, e.optsPtr, "option").report(err)
		return Capability{}, false
	}
	if t.SetsWorkspace && !checkWorkspaceEntry(d, e, namePos) {
		return Capability{}, false
	}
	if !t.NoBaseOptions && !checkBaseOptions(d, e) {
		return Capability{}, false
	}
	warnNoEffect(d, e, t.NoEffect)
	warnDeprecated(d, e, t.Deprecated)
	opts, err := json.Marshal(e.options)
	if err != nil { // a decoded JSON value always marshals
		d.add(e.optsPtr, d.pos(e.optsPtr), prefixed(e.optsPtr, err.Error()))
		return Capability{}, false
	}
	return Capability{Name: e.name, Options: opts, Pos: d.pos(e.ptr), Pointer: e.optsPtr}, true
}

// dropRefusedNulls returns options without the options written null that
// the type's schema refuses null for: pydantic-ai's capabilities default
// their options to None, so `max_uses: null` or `id: ~` means the option
// left out there. A null the schema takes (Thinking's effort, MCP's local)
// is kept, as is the null of a required option, which has no default, and
// the options are returned as they are when none is refused; a clone is
// returned otherwise, as the document keeps what the file says.
func dropRefusedNulls(reg *capabilities.Registry, name string, options any) any {
	opts, _ := options.(map[string]any)
	var refused []string
	var ve *jsonschema.ValidationError
	if err := reg.ValidateOptions(name, opts); opts == nil || !errors.As(err, &ve) {
		return options
	}
	var walk func(*jsonschema.ValidationError)
	walk = func(ve *jsonschema.ValidationError) {
		if len(ve.InstanceLocation) == 1 {
			k := ve.InstanceLocation[0]
			if v, ok := opts[k]; ok && v == nil && !slices.Contains(refused, k) {
				refused = append(refused, k)
			}
		}
		for _, c := range ve.Causes {
			walk(c)
		}
	}
	walk(ve)
	// A required option has no default: its null is reported as it is.
	doc, _ := reg.SchemaDoc(name)
	sch, _ := doc.(map[string]any)
	required, _ := sch["required"].([]any)
	refused = slices.DeleteFunc(refused, func(k string) bool { return slices.Contains(required, any(k)) })
	if len(refused) == 0 {
		return options
	}
	opts = maps.Clone(opts)
	for _, k := range refused {
		delete(opts, k)
	}
	return opts
}

// checkNested checks a capability entry held in an option (ptr) of another
// capability, in any of the list's forms, and returns its canonical form
// (capabilities.Nested as a JSON value).
func checkNested(d *document, reg *capabilities.Registry, docs schemaDocs, ptr string, v any) (any, bool) {
	e, ok := parseEntry(d, ptr, v, reg)
	if !ok {
		return nil, false
	}
	c, ok := checkEntry(d, reg, docs, e)
	if !ok {
		return nil, false
	}
	if d.nested == nil {
		d.nested = map[string]string{}
	}
	d.nested[ptr] = c.Pointer
	var opts any
	if err := decodeJSON(c.Options, &opts); err != nil {
		d.add(ptr, d.pos(ptr), prefixed(ptr, err.Error()))
		return nil, false
	}
	return map[string]any{"name": c.Name, "options": opts}, true
}

// checkBaseOptions checks the base options of an entry whose options are
// valid against its type's schema: defer_loading needs an id, and ids are
// unique in the spec. defer_loading draws a warning: agentspec offers every
// tool from the start.
func checkBaseOptions(d *document, e entry) bool {
	opts, _ := e.options.(map[string]any)
	id, hasID := opts["id"].(string)
	if deferred, _ := opts["defer_loading"].(bool); deferred {
		ptr := child(e.optsPtr, "defer_loading")
		if !hasID {
			d.add(ptr, d.keyPos(ptr), prefixed(ptr, "needs an id (id: NAME), as in pydantic-ai, to name the capability the model loads"))
			return false
		}
		d.warnings = append(d.warnings, &Error{Pos: d.keyPos(ptr), Msg: "warning: " + prefixed(ptr,
			"has no effect in agentspec: every tool is offered to the model from the start")})
	}
	if !hasID {
		return true
	}
	ptr := child(e.optsPtr, "id")
	if d.capIDs == nil {
		d.capIDs = map[string]Position{}
	}
	if first, dup := d.capIDs[id]; dup {
		d.add(ptr, d.pos(ptr), prefixed(ptr, fmt.Sprintf("id %q is already used by the capability at %s; ids must be unique", id, first)))
		return false
	}
	d.capIDs[id] = d.pos(ptr)
	return true
}

// checkWorkspaceEntry refuses a second entry that sets the run's workspace,
// and one that asks to be loaded later: a run has one workspace, from its
// start.
func checkWorkspaceEntry(d *document, e entry, at Position) bool {
	if d.workspaceAt != nil {
		d.add(e.namePtr, at, prefixed(e.ptr, fmt.Sprintf("a run has one workspace, and the %s at %s sets it already", e.name, *d.workspaceAt)))
		return false
	}
	d.workspaceAt = &at
	opts, _ := e.options.(map[string]any)
	if deferred, _ := opts["defer_loading"].(bool); deferred {
		ptr := child(e.optsPtr, "defer_loading")
		d.add(ptr, d.keyPos(ptr), prefixed(ptr, e.name+" cannot be loaded later: the workspace is the run's from its start"))
		return false
	}
	return true
}

// warnNoEffect warns of each option in noEffect the entry sets to anything
// but false or null.
func warnNoEffect(d *document, e entry, noEffect map[string]string) {
	opts, _ := e.options.(map[string]any)
	for _, name := range slices.Sorted(maps.Keys(noEffect)) {
		v, set := opts[name]
		if !set || v == nil || v == false {
			continue
		}
		ptr := child(e.optsPtr, name)
		d.warnings = append(d.warnings, &Error{Pos: d.keyPos(ptr), Msg: "warning: " + prefixed(ptr, "has no effect in agentspec: "+noEffect[name])})
	}
}

// warnDeprecated warns of each option in deprecated the entry sets, at
// its key, saying what to write instead.
func warnDeprecated(d *document, e entry, deprecated map[string]string) {
	opts, _ := e.options.(map[string]any)
	for _, name := range slices.Sorted(maps.Keys(deprecated)) {
		if _, set := opts[name]; !set {
			continue
		}
		ptr := child(e.optsPtr, name)
		d.warnings = append(d.warnings, &Error{Pos: d.keyPos(ptr), Msg: "warning: " + prefixed(ptr, "is deprecated: "+deprecated[name])})
	}
}

func unknownTypeMsg(name string, valid []string) string {
	if len(valid) == 0 {
		return fmt.Sprintf("unknown capability type %q: no capability types are registered", name)
	}
	return fmt.Sprintf("unknown capability type %q%s; valid types: %s", name, suggest.DidYouMean(name, valid), strings.Join(valid, ", "))
}

// noPositionalMsg explains a value given to a type without a positional
// option; found describes the value.
func noPositionalMsg(t capabilities.Type, found string) string {
	if len(t.Schema) == 0 {
		return fmt.Sprintf("%s takes no options, found %s; write just - %s", t.Name, found, t.Name)
	}
	msg := fmt.Sprintf("%s takes its options as a mapping (- %s: {option: value})", t.Name, t.Name)
	var doc map[string]any
	if json.Unmarshal(t.Schema, &doc) == nil {
		if names := propertyNames(doc); len(names) > 0 {
			msg += ", with options " + strings.Join(names, ", ")
		}
	}
	return msg + "; found " + found
}
