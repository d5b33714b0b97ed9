package script

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/agentspec/agentspec/internal/suggest"
)

// Error is a problem in a script file, at a position.
type Error struct {
	File string
	Line int // 0 when unknown
	Col  int // 0 when unknown
	Msg  string
}

// Error returns "FILE:LINE:COL: message".
func (e *Error) Error() string {
	pos := e.File
	if e.Line > 0 {
		pos += ":" + strconv.Itoa(e.Line)
		if e.Col > 0 {
			pos += ":" + strconv.Itoa(e.Col)
		}
	}
	return pos + ": " + e.Msg
}

// Errors is every problem found in a script file, in file order. Parse
// returns it (as an error) whenever a script is invalid.
type Errors []*Error

// Error returns one "FILE:LINE:COL: message" line per problem.
func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap lets errors.As find an individual *Error.
func (es Errors) Unwrap() []error {
	errs := make([]error, len(es))
	for i, e := range es {
		errs[i] = e
	}
	return errs
}

// shape is what a node of a script file must be, described in the words a
// person writing the file uses: the check walks the YAML tree against it
// before decoding, so a mistake is reported at its position instead of as a
// decoder's message about Go types.
type shape struct {
	what   string            // "a list of turns", "a whole number", ...
	noun   string            // what one element of a sequence is called: "turn"
	kind   yaml.Kind         // 0: any node
	count  bool              // a scalar that must be a whole number
	dur    bool              // a scalar that must be a duration such as "250ms"
	fields map[string]*shape // the keys of a mapping
	elem   *shape            // the elements of a sequence
}

var (
	anyValue = &shape{what: "any value"}
	str      = &shape{what: "a string", kind: yaml.ScalarNode}
	count    = &shape{what: "a whole number", kind: yaml.ScalarNode, count: true}
	duration = &shape{what: `a duration such as "250ms" or "2s"`, kind: yaml.ScalarNode, dur: true}
	usage    = &shape{what: "a mapping with input_tokens and output_tokens", kind: yaml.MappingNode, fields: map[string]*shape{
		"input_tokens": count, "output_tokens": count,
	}}
	toolCall = &shape{what: "a mapping with name and arguments", kind: yaml.MappingNode, fields: map[string]*shape{
		"id": str, "name": str, "arguments": anyValue,
	}}
	expect = &shape{what: "a mapping of expectations", kind: yaml.MappingNode, fields: map[string]*shape{
		"tool_result_contains": str, "message_contains": str, "system_contains": str, "tool_choice": str,
		"tools": {what: "a list of tool names", noun: "tool name", kind: yaml.SequenceNode, elem: str},
	}}
	turn = &shape{what: "a mapping with text, tool_calls or error", kind: yaml.MappingNode, fields: map[string]*shape{
		"text": str, "usage": usage, "stop_reason": str, "error": str, "expect": expect, "delay": duration,
		"tool_calls": {what: "a list of tool calls", noun: "tool call", kind: yaml.SequenceNode, elem: toolCall},
	}}
	scriptFile = &shape{what: "a mapping with dialect and turns", kind: yaml.MappingNode, fields: map[string]*shape{
		"dialect": str,
		"turns":   {what: "a list of turns", noun: "turn", kind: yaml.SequenceNode, elem: turn},
	}}
)

// checker collects the problems of one file.
type checker struct {
	file string
	errs Errors
}

func (c *checker) add(n *yaml.Node, format string, args ...any) {
	e := &Error{File: c.file, Msg: fmt.Sprintf(format, args...)}
	if n != nil {
		e.Line, e.Col = n.Line, n.Column
	}
	c.errs = append(c.errs, e)
}

// walk checks n, named name in messages ("turns", "usage"), against s.
// Messages say what was found by its kind, never by its text: a spec can
// name any file as its script, and what the file holds is not for the
// messages to show.
func (c *checker) walk(n *yaml.Node, name string, s *shape) {
	n = resolve(n)
	if s.kind != 0 && n.Kind != s.kind && !isNull(n) {
		c.add(n, "%s must be %s, not %s", name, s.what, describe(n))
		return
	}
	switch {
	case s.count && !isNull(n):
		if _, err := strconv.Atoi(n.Value); err != nil || n.ShortTag() != "!!int" {
			found := describe(n)
			if found == "a number" {
				found = "a number with a fraction, an exponent, another base or too many digits"
			}
			c.add(n, "%s must be %s, not %s", name, s.what, found)
		}
	case s.dur && !isNull(n):
		// A number is refused even where Go reads it (0): the decoder
		// takes a duration from text only.
		number := n.ShortTag() == "!!int" || n.ShortTag() == "!!float"
		if d, err := time.ParseDuration(n.Value); err != nil || d < 0 || number {
			found := describe(n)
			switch {
			case number:
				found = "a number: write its unit, as in 2s"
			case err == nil:
				found = "a negative one"
			case n.ShortTag() == "!!str":
				found = "other text"
			}
			c.add(n, "%s must be %s, not %s", name, s.what, found)
		}
	case s.fields != nil:
		c.fields(n, name, s)
	case s.elem != nil:
		for i, el := range n.Content {
			c.walk(el, fmt.Sprintf("%s %d", s.noun, i+1), s.elem)
		}
	}
}

// fields checks the keys of the mapping n, named name, against s; the
// mappings a merge key (<<) brings in are checked as if written in n, as
// the decoder takes them.
func (c *checker) fields(n *yaml.Node, name string, s *shape) {
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, value := n.Content[i], n.Content[i+1]
		if isMerge(key) {
			for _, m := range merged(value) {
				if m.Kind != yaml.MappingNode {
					c.add(m, "<< must be a mapping or a list of mappings to merge, not %s", describe(m))
					continue
				}
				c.fields(m, name, s)
			}
			continue
		}
		field, ok := s.fields[key.Value]
		if !ok {
			c.add(key, "%s", unknownKey(key.Value, name, s))
			continue
		}
		c.walk(value, key.Value, field)
	}
}

func isMerge(key *yaml.Node) bool {
	return key.Kind == yaml.ScalarNode && key.ShortTag() == "!!merge"
}

// merged returns what the value of a merge key merges: one mapping, or
// each of a list's, in order; anything else is returned for a message.
func merged(v *yaml.Node) []*yaml.Node {
	v = resolve(v)
	if v.Kind != yaml.SequenceNode {
		return []*yaml.Node{v}
	}
	out := make([]*yaml.Node, len(v.Content))
	for i, e := range v.Content {
		out[i] = resolve(e)
	}
	return out
}

// unknownKey reports a key s does not have. The key is not quoted: the
// position shows it, and the message shows nothing of the file; the nearest
// known key is, as it is no text of the file.
func unknownKey(key, in string, s *shape) string {
	known := make([]string, 0, len(s.fields))
	for k := range s.fields {
		known = append(known, k)
	}
	slices.Sort(known)
	msg := "unknown key in " + in
	if near := suggest.Closest(key, known); near != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", near)
	}
	return msg + "; the keys are " + strings.Join(known, ", ")
}

func resolve(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" }

// describe names what kind of node n is, for "must be X, not Y". It never
// quotes the node's text.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!str":
			return "a string"
		case "!!int", "!!float":
			return "a number"
		case "!!bool":
			return "a boolean"
		case "!!null":
			return "null"
		case "!!timestamp":
			return "a date"
		case "!!binary":
			return "binary data"
		}
		return "a value with a tag"
	}
	return "an empty document"
}

// mapValue returns the value of key in mapping n, or nil: a key written in
// n wins over a merged one, and an earlier merged mapping over a later one.
func mapValue(n *yaml.Node, key string) *yaml.Node {
	n = resolve(n)
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		switch k := n.Content[i]; {
		case isMerge(k):
			merges = append(merges, merged(n.Content[i+1])...)
		case k.Value == key:
			return resolve(n.Content[i+1])
		}
	}
	for _, m := range merges {
		if m.Kind != yaml.MappingNode {
			continue
		}
		if v := mapValue(m, key); v != nil {
			return v
		}
	}
	return nil
}

// asWritten converts n to a value that marshals to JSON as the file writes
// it: a key is its text (JSON has no other keys, and the decoder's
// map[interface{}]interface{} does not marshal), a date the date written
// rather than a time at midnight UTC; merge keys are applied as mapValue
// finds them.
func asWritten(n *yaml.Node) any {
	n = resolve(n)
	switch n.Kind {
	case yaml.MappingNode:
		m := map[string]any{}
		var merges []*yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if isMerge(k) {
				merges = append(merges, merged(n.Content[i+1])...)
				continue
			}
			m[resolve(k).Value] = asWritten(n.Content[i+1])
		}
		for _, mm := range merges {
			if mm.Kind != yaml.MappingNode {
				continue
			}
			for k, v := range asWritten(mm).(map[string]any) {
				if _, set := m[k]; !set {
					m[k] = v
				}
			}
		}
		return m
	case yaml.SequenceNode:
		list := make([]any, len(n.Content))
		for i, e := range n.Content {
			list[i] = asWritten(e)
		}
		return list
	}
	if n.ShortTag() == "!!timestamp" {
		return n.Value
	}
	var v any
	if err := n.Decode(&v); err != nil {
		return n.Value
	}
	return v
}

// yamlLine reads the line out of a yaml.v3 syntax error, "yaml: line 3: ...".
var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// syntaxError turns a YAML parser error into an Error at its line, without
// the text of the file (see quoted).
func syntaxError(file string, err error) *Error {
	msg := err.Error()
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return &Error{File: file, Line: line, Msg: "invalid YAML: " + withoutText(m[2])}
	}
	return &Error{File: file, Msg: "invalid YAML: " + withoutText(strings.TrimPrefix(msg, "yaml: "))}
}

// quoted finds what a yaml.v3 message quotes: a character it expected
// (',' or ']'), or a name out of the file ('anchor').
var quoted = regexp.MustCompile("'[^']*'|`[^`]*`|\"[^\"]*\"")

// withoutText removes from a yaml.v3 message the text of the file it
// quotes, an anchor's name, keeping the characters of YAML's syntax it
// quotes as expected.
func withoutText(msg string) string {
	if strings.HasPrefix(msg, "unknown anchor ") {
		return "an alias refers to an anchor that is not defined before it"
	}
	return quoted.ReplaceAllStringFunc(msg, func(q string) string {
		if inner := q[1 : len(q)-1]; len(inner) == 1 && strings.ContainsAny(inner, ",:]}[{-?") {
			return q
		}
		return "a name"
	})
}
