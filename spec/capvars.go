package spec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/agentspec/agentspec/internal/expansion"
)

// Capability arguments are templates too, as in pydantic-ai: a {{name}}
// placeholder in a string value of a capability's options (a nested
// capability's included) is filled from the run's variables before the
// capability is built, so that one spec can narrow its FileSystem to the
// file a job is about (allowed_patterns: ['{{path}}']).

// MaxFilled is the most text filling placeholders may make, in bytes: for
// a spec's instructions, and for all its capabilities' options together. A
// job's vars are chosen by whoever submits it, as its spec is, and a few
// bytes of {{x}} written many times, with a large x, would otherwise build
// gigabytes before anything looked at them.
const MaxFilled = expansion.Max

// FillPlaceholders returns text with each {{name}} placeholder that vars
// has a value for replaced by the value; missing is called with the name of
// each placeholder it has none for, which is left as written. An escaped
// placeholder is text, as in Handlebars (EscapedAt): \{{name}} is written
// {{name}}, and \\{{name}} a backslash and the value. budget is what the
// filled text may add to text, in bytes, and is spent by what it adds; past
// it, the error says so and nothing is built.
func FillPlaceholders(text string, vars map[string]string, missing func(name string), budget *int) (string, error) {
	if !strings.Contains(text, "{{") {
		return text, nil
	}
	matches := placeholderRE().FindAllStringSubmatchIndex(text, -1)
	for _, m := range matches {
		if literal, _ := EscapedAt(text, m[0]); literal {
			continue
		}
		if v, ok := vars[text[m[2]:m[3]]]; ok {
			if *budget -= len(v) - (m[1] - m[0]); *budget < 0 {
				return "", fmt.Errorf("the placeholders' values would add more than %s (%d bytes) to the text, the most they may add "+
					"({{%s}} is filled with %s, %d bytes, each time it is used)",
					expansion.ByteSize(MaxFilled), MaxFilled, text[m[2]:m[3]], expansion.ByteSize(len(v)), len(v))
			}
		}
	}
	var b strings.Builder
	last := 0
	for _, m := range matches {
		literal, drop := EscapedAt(text, m[0])
		start := m[0]
		if drop {
			start--
		}
		name := text[m[2]:m[3]]
		v, ok := vars[name]
		switch {
		case literal:
			b.WriteString(text[last:start])
			b.WriteString(text[m[0]:m[1]])
		case ok:
			b.WriteString(text[last:start])
			b.WriteString(v)
		default:
			if missing != nil {
				missing(name)
			}
			b.WriteString(text[last:m[1]])
		}
		last = m[1]
	}
	b.WriteString(text[last:])
	return b.String(), nil
}

// VarNames returns the names of every placeholder a variable can fill: in
// the instructions, the description and the string values of the
// capabilities' options, each once, in order of first use.
func (s *Spec) VarNames() []string {
	names := Placeholders(append(slices.Clone(s.Instructions), s.Description)...)
	for _, n := range s.CapabilityPlaceholders() {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return names
}

// CapabilityPlaceholders returns the names of the placeholders the string
// values of the capabilities' options use, each once, in order of first
// use.
func (s *Spec) CapabilityPlaceholders() []string {
	var texts []string
	for _, c := range s.Capabilities {
		texts = c.appendTexts(texts)
	}
	return Placeholders(texts...)
}

// Placeholders returns the names of the placeholders the string values of
// the capability's options use, each once, in order of first use.
func (c Capability) Placeholders() []string { return Placeholders(c.appendTexts(nil)...) }

// appendTexts appends the string values of the options that may hold a
// placeholder.
func (c Capability) appendTexts(texts []string) []string {
	if !bytes.Contains(c.Options, []byte("{{")) {
		return texts
	}
	var v any
	if json.Unmarshal(c.Options, &v) == nil {
		texts = appendStrings(texts, v)
	}
	return texts
}

// TemplatedCapabilityNotes returns a warning, at each capability whose
// options use a placeholder, that a check made without values leaves it
// unbuilt (WithoutTemplatedCapabilities); how says where its values come
// from ("--var NAME=VALUE gives them").
func (s *Spec) TemplatedCapabilityNotes(how string) []*Error {
	var notes []*Error
	for _, c := range s.Capabilities {
		names := c.Placeholders()
		if len(names) == 0 {
			continue
		}
		for i, n := range names {
			names[i] = "{{" + n + "}}"
		}
		notes = append(notes, &Error{Pos: c.Pos, Msg: "warning: " + prefixed(c.Pointer, fmt.Sprintf(
			"not built here: its options use %s (%s)", strings.Join(names, ", "), how))})
	}
	return notes
}

// WithoutTemplatedCapabilities returns s without the capabilities whose
// options use a placeholder, and with the escaped placeholders (\{{name}})
// of the others made the text they stand for: a copy when it has any of
// either, s itself otherwise. A capability with a placeholder can only be
// built once its values are known (run's --var, a pipeline's job), so a
// check made without them passes it over.
func (s *Spec) WithoutTemplatedCapabilities() *Spec {
	kept := slices.DeleteFunc(slices.Clone(s.Capabilities), func(c Capability) bool {
		return len(c.Placeholders()) > 0
	})
	out := s
	if len(kept) < len(s.Capabilities) {
		absFileMu.Lock() // Instantiate writes the fields this copies
		c := *s
		absFileMu.Unlock()
		c.Capabilities = kept
		out = &c
	}
	// No placeholder is left to need a value: this only drops the escapes'
	// backslashes, as a run does.
	if slices.ContainsFunc(kept, Capability.escapes) {
		if filled, err := out.WithCapabilityVars(nil); err == nil {
			out = filled
		}
	}
	return out
}

// escapes tells whether a string value of the capability's options holds
// an escaped placeholder (\{{name}}).
func (c Capability) escapes() bool {
	for _, text := range c.appendTexts(nil) {
		for _, m := range placeholderRE().FindAllStringIndex(text, -1) {
			if literal, _ := EscapedAt(text, m[0]); literal {
				return true
			}
		}
	}
	return false
}

// appendStrings appends the strings of a decoded JSON value, in document
// order for lists and in key order for objects.
func appendStrings(texts []string, v any) []string {
	switch v := v.(type) {
	case string:
		return append(texts, v)
	case []any:
		for _, e := range v {
			texts = appendStrings(texts, e)
		}
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			texts = appendStrings(texts, v[k])
		}
	}
	return texts
}

// WithCapabilityVars returns s with the placeholders of its capabilities'
// options filled from vars: a copy when any is used, s itself otherwise. A
// placeholder without a value is an error at its capability's position,
// all of them in one Errors: the capability would otherwise be built with
// the placeholder's text as its value.
func (s *Spec) WithCapabilityVars(vars map[string]string) (*Spec, error) {
	var (
		caps   []Capability
		errs   Errors
		budget = MaxFilled // for all the options together
	)
	for i, c := range s.Capabilities {
		if !bytes.Contains(c.Options, []byte("{{")) {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(c.Options))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("capability %s: %w", c.Name, err)
		}
		var missing []string
		filled, err := fillStrings(v, vars, func(name string) {
			if !slices.Contains(missing, name) {
				missing = append(missing, name)
			}
		}, &budget)
		if err != nil {
			return nil, Errors{{Pos: c.Pos, Msg: prefixed(entryPointer(c), err.Error())}}
		}
		for _, name := range missing {
			errs = append(errs, &Error{Pos: c.Pos, Var: name, Msg: prefixed(entryPointer(c),
				fmt.Sprintf("the options use {{%s}}, but no value was given for it", name))})
		}
		b, err := json.Marshal(filled)
		if err != nil {
			return nil, err
		}
		if caps == nil {
			caps = slices.Clone(s.Capabilities)
		}
		caps[i].Options = b
	}
	if len(errs) > 0 {
		return nil, errs
	}
	if caps == nil {
		return s, nil
	}
	absFileMu.Lock() // Instantiate writes the fields this copies
	out := *s
	absFileMu.Unlock()
	out.Capabilities = caps
	return &out, nil
}

// fillStrings returns v with FillPlaceholders applied to every string in it.
func fillStrings(v any, vars map[string]string, missing func(string), budget *int) (any, error) {
	switch v := v.(type) {
	case string:
		return FillPlaceholders(v, vars, missing, budget)
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			var err error
			if out[i], err = fillStrings(e, vars, missing, budget); err != nil {
				return nil, err
			}
		}
		return out, nil
	case map[string]any:
		out := make(map[string]any, len(v))
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys) // missing names come in a fixed order
		for _, k := range keys {
			var err error
			if out[k], err = fillStrings(v[k], vars, missing, budget); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	return v, nil
}
