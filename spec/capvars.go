package spec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentspec/agentspec/internal/expansion"
	"github.com/agentspec/agentspec/internal/text"
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
// placeholder without a value is an error at the first place the spec
// writes it (see placeholderAt), all of them in one Errors: the
// capability would otherwise be built with the placeholder's text as its
// value.
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
		missing := false
		filled, err := fillStrings(v, vars, func(string) { missing = true }, &budget)
		if err != nil {
			return nil, Errors{{Pos: c.Pos, Msg: prefixed(entryPointer(c), err.Error())}}
		}
		if missing {
			for _, m := range s.missingVars(c, v, vars) {
				errs = append(errs, &Error{Pos: m.at, Var: m.name, Msg: prefixed(entryPointer(c),
					fmt.Sprintf("the options use {{%s}}, but no value was given for it", m.name))})
			}
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

// missingVar is a placeholder without a value, and the first place the
// spec writes it.
type missingVar struct {
	name string
	at   Position
}

// missingVars are the placeholders of the strings in v, the options of c
// decoded, that vars has no value for, each once, at the first place the
// spec writes it, in the order of the file.
func (s *Spec) missingVars(c Capability, v any, vars map[string]string) []missingVar {
	var out []missingVar
	var walk func(v any, path []string)
	walk = func(v any, path []string) {
		switch v := v.(type) {
		case string:
			for _, m := range placeholderRE().FindAllStringSubmatchIndex(v, -1) {
				name := v[m[2]:m[3]]
				if literal, _ := EscapedAt(v, m[0]); literal {
					continue
				}
				if _, ok := vars[name]; ok {
					continue
				}
				at := s.placeholderAt(s.writtenAt(c.Pointer, path), v, m[0], m[1])
				if at.Line == 0 {
					at = c.Pos // a Spec built in Go: no value has a place
				}
				i := slices.IndexFunc(out, func(o missingVar) bool { return o.name == name })
				switch {
				case i < 0:
					out = append(out, missingVar{name, at})
				case before(at, out[i].at):
					out[i].at = at
				}
			}
		case []any:
			for i, e := range v {
				walk(e, append(path, strconv.Itoa(i)))
			}
		case map[string]any:
			for k, e := range v {
				walk(e, append(path, k))
			}
		}
	}
	walk(v, nil)
	slices.SortStableFunc(out, func(a, b missingVar) int {
		switch {
		case before(a.at, b.at):
			return -1
		case before(b.at, a.at):
			return 1
		}
		return strings.Compare(a.name, b.name)
	})
	return out
}

// before tells whether a comes before b in the file.
func before(a, b Position) bool {
	return a.Line < b.Line || a.Line == b.Line && a.Col < b.Col
}

// writtenAt is the pointer of the value at path in the options at optsPtr
// (a Capability's Pointer) where the spec writes it: a nested entry's
// options, which the options hold in its canonical form ({"name",
// "options"}), are those its entry writes, wherever its form writes them.
func (s *Spec) writtenAt(optsPtr string, path []string) string {
	ptr := optsPtr
	for i := 0; i < len(path); i++ {
		next := child(ptr, path[i])
		if inner, ok := s.nested[next]; ok && i+1 < len(path) && path[i+1] == "options" {
			ptr = inner
			i++
			continue
		}
		ptr = next
	}
	return ptr
}

// placeholderAt is where the spec writes the placeholder value[open:end]
// of value, the string at ptr: at its {{, found on its line within a
// literal or folded block scalar, and for a plain or quoted scalar on its
// first line, after the value's text before it as the scalar's style
// writes it (a single quote doubled, a backslash or a double quote
// escaped). Where the source does not read so there (a character written
// as an escape of another form, a line break folded into a space, a
// ${VAR} filled in), the place is the scalar's start: the column is not
// worked out through escapes and folding, and a place is never a guess.
func (s *Spec) placeholderAt(ptr, value string, open, end int) Position {
	start, ok := s.positions[ptr]
	if !ok || start.Line == 0 || len(s.src) == 0 {
		return s.Position(ptr)
	}
	d := &document{file: s.File, src: s.src}
	line := d.line(start.Line)
	i := text.ByteOfColumn(line, start.Col)
	if i >= len(line) {
		return start
	}
	placeholder, prefix := value[open:end], value[:open]
	switch line[i] {
	case '|', '>':
		return d.refineBlock(start, placeholder, strings.Count(prefix, placeholder))
	case '\'':
		prefix = "'" + strings.ReplaceAll(prefix, "'", "''")
	case '"':
		prefix = `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(prefix)
	}
	if j := i + len(prefix); strings.HasPrefix(line[i:], prefix) && strings.HasPrefix(line[j:], placeholder) {
		return Position{File: start.File, Line: start.Line, Col: start.Col + utf8.RuneCountInString(prefix)}
	}
	return start
}

// InstructionPlaceholderAt is where the spec first writes the placeholder
// {{name}} in its instructions, escaped ones (\{{name}}) aside: at its {{,
// as placeholderAt places one of a capability's options, or else at the
// start of the instructions. ok is false when the instructions do not use
// it, and when the Spec has no place for them: one built in Go, or whose
// Instructions were changed after it was loaded, which the file no longer
// writes.
func (s *Spec) InstructionPlaceholderAt(name string) (pos Position, ok bool) {
	var ptrs []string
	switch v := s.Document["instructions"].(type) {
	case string:
		if len(s.Instructions) == 1 && s.Instructions[0] == v {
			ptrs = []string{"/instructions"}
		}
	case []any:
		if len(v) == len(s.Instructions) {
			ptrs = make([]string, len(v))
			for i, e := range v {
				if e != s.Instructions[i] {
					return Position{}, false
				}
				ptrs[i] = "/instructions/" + strconv.Itoa(i)
			}
		}
	}
	if ptrs == nil {
		return Position{}, false
	}
	for i, text := range s.Instructions {
		for _, m := range placeholderRE().FindAllStringSubmatchIndex(text, -1) {
			if literal, _ := EscapedAt(text, m[0]); literal || text[m[2]:m[3]] != name {
				continue
			}
			pos = s.placeholderAt(ptrs[i], text, m[0], m[1])
			return pos, pos.Line > 0
		}
	}
	// Joined, the instructions may make a placeholder no one of them
	// holds whole.
	if slices.Contains(Placeholders(s.Instructions...), name) {
		pos = s.Position("/instructions")
		return pos, pos.Line > 0
	}
	return Position{}, false
}
