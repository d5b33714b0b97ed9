package spec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"
)

// YAML tags a spec may use.
const (
	strTag       = "!!str"
	nullTag      = "!!null"
	boolTag      = "!!bool"
	intTag       = "!!int"
	floatTag     = "!!float"
	timestampTag = "!!timestamp"
	mergeTag     = "!!merge"
)

// parseYAML parses a YAML spec into a document, expanding environment
// references in string values as it goes. Aliases are resolved, merge keys
// (<<) applied, and duplicate keys reported.
func parseYAML(file string, src []byte, lookup func(string) (string, bool)) *document {
	d := newDocument(file, src)
	d.yaml = true
	dec := yaml.NewDecoder(bytes.NewReader(src))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			d.add("", Position{File: file, Line: 1, Col: 1}, emptyFileMsg)
		} else {
			d.yamlSyntax(err)
		}
		return d
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case err == nil:
		d.add("", Position{File: file, Line: next.Line, Col: next.Column},
			"a spec file holds a single YAML document; remove the second one starting here")
	case !errors.Is(err, io.EOF):
		d.yamlSyntax(err)
	}

	c := &yamlConverter{d: d, lookup: lookup, active: map[*yaml.Node]bool{}}
	root := doc.Content[0]
	target := root
	for target.Kind == yaml.AliasNode {
		target = target.Alias
	}
	if target.Kind != yaml.MappingNode {
		d.add("", c.pos(root), notMappingMsg(nodeWord(target)))
		return d
	}
	if c.refuseExpansion(root) {
		return d
	}
	d.root = c.value(root, "", 0)
	return d
}

const emptyFileMsg = "the file is empty: an agent spec is a mapping with keys such as model, instructions and capabilities"

func notMappingMsg(found string) string {
	return "an agent spec must be a mapping (model: ..., instructions: ...), found " + found
}

// yamlConverter turns yaml.v3 nodes into JSON values, recording positions.
type yamlConverter struct {
	d      *document
	lookup func(string) (string, bool)
	active map[*yaml.Node]bool // anchored nodes being converted: an alias to one is a cycle
	nodes  int                 // values converted so far
	cut    bool                // conversion was cut short by maxNodes, maxDepth or the document's size

	// alias is the outermost alias being expanded, at aliasPtr: a bound
	// crossed inside it is reported there, where the file says to copy.
	alias    *yaml.Node
	aliasPtr string
}

func (c *yamlConverter) pos(n *yaml.Node) Position {
	return Position{File: c.d.file, Line: n.Line, Col: n.Column}
}

// value converts n, the value at ptr, and records where it is.
func (c *yamlConverter) value(n *yaml.Node, ptr string, depth int) any {
	// The pointer is kept, with the position. Past maxDepth, build says so.
	if depth <= maxDepth && !c.grow(len(ptr)+1, n, ptr) {
		return nil
	}
	c.d.values[ptr] = c.pos(n)
	return c.build(n, ptr, depth)
}

// grow counts size more bytes of text in the document, and reports the
// document too large, once, if that takes it past its bound.
func (c *yamlConverter) grow(size int, n *yaml.Node, ptr string) bool {
	if c.cut {
		return false
	}
	if c.d.grow(size) {
		return true
	}
	c.stop(n, ptr, c.d.tooLarge())
	return false
}

// stop cuts the conversion short, reporting why at the outermost alias being
// expanded, or else at n.
func (c *yamlConverter) stop(n *yaml.Node, ptr, msg string) {
	c.cut = true
	if c.alias != nil {
		n, ptr = c.alias, c.aliasPtr
		msg = fmt.Sprintf("alias *%s expands to too much: %s; are YAML aliases nested in each other?", n.Value, msg)
	}
	c.d.add(ptr, c.pos(n), prefixed(ptr, msg))
}

// expanding notes that alias n, at ptr, is being expanded; the function it
// returns is to be called when it is done.
func (c *yamlConverter) expanding(n *yaml.Node, ptr string) func() {
	if c.alias != nil {
		return func() {}
	}
	c.alias, c.aliasPtr = n, ptr
	return func() { c.alias = nil }
}

// over counts one more value, n at ptr, and tells whether the conversion
// is to stop: it has been cut short, or is now, by maxNodes or maxDepth.
func (c *yamlConverter) over(n *yaml.Node, ptr string, depth int) bool {
	if c.cut {
		return true
	}
	switch c.nodes++; {
	case depth > maxDepth:
		c.stop(n, ptr, fmt.Sprintf("nested more than %d levels deep", maxDepth))
	case c.nodes > maxNodes:
		c.stop(n, ptr, fmt.Sprintf("the spec expands to more than %d values", maxNodes))
	}
	return c.cut
}

func (c *yamlConverter) build(n *yaml.Node, ptr string, depth int) any {
	if c.over(n, ptr, depth) {
		return nil
	}
	if n.Kind == yaml.AliasNode {
		if c.active[n.Alias] {
			c.d.add(ptr, c.pos(n), prefixed(ptr, fmt.Sprintf("alias *%s refers to a value that contains it", n.Value)))
			return nil
		}
		// The alias's own position is recorded; what it expands to keeps the
		// positions of the anchored text, where a mistake would be fixed.
		defer c.expanding(n, ptr)()
		return c.build(n.Alias, ptr, depth+1)
	}
	if n.Anchor != "" {
		c.active[n] = true
		defer delete(c.active, n)
	}
	switch n.Kind {
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		c.mapping(m, n, ptr, depth, false)
		return m
	case yaml.SequenceNode:
		list := make([]any, len(n.Content))
		for i, e := range n.Content {
			list[i] = c.value(e, index(ptr, i), depth+1)
		}
		return list
	case yaml.ScalarNode:
		if !c.grow(len(n.Value), n, ptr) {
			return nil
		}
		return c.scalar(n, ptr)
	}
	return nil
}

// mapping adds the members of n to m. Merged members (from << keys, and all
// of them when merged is set) never replace a key already present: explicit
// keys win over merged ones, and earlier merges over later ones.
func (c *yamlConverter) mapping(m map[string]any, n *yaml.Node, ptr string, depth int, merged bool) {
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.ShortTag() == mergeTag {
			merges = append(merges, v)
			continue
		}
		key, ok := c.key(k, ptr)
		if !ok {
			continue
		}
		p := child(ptr, key)
		if _, dup := m[key]; dup {
			if !merged {
				// The message counts towards the document's size: an
				// aliased mapping repeats it with every use.
				msg := prefixed(ptr, fmt.Sprintf("duplicate key %s (already set on line %d)", quoteShort(key), c.d.keys[p].Line))
				if !c.grow(len(msg), k, ptr) {
					return
				}
				c.d.add(noValue, c.pos(k), msg)
			}
			continue
		}
		c.d.keys[p] = c.pos(k)
		m[key] = c.value(v, p, depth+1)
	}
	for _, v := range merges {
		c.merge(m, v, ptr, depth)
	}
}

// merge applies the value of a << key: a mapping, or a list of mappings.
func (c *yamlConverter) merge(m map[string]any, v *yaml.Node, ptr string, depth int) {
	if c.over(v, ptr, depth) {
		return
	}
	src := v
	for src.Kind == yaml.AliasNode {
		if c.active[src.Alias] {
			c.d.add(ptr, c.pos(v), prefixed(ptr, fmt.Sprintf("alias *%s refers to a value that contains it", src.Value)))
			return
		}
		defer c.expanding(src, ptr)()
		src = src.Alias
	}
	switch src.Kind {
	case yaml.MappingNode:
		c.active[src] = true
		c.mapping(m, src, ptr, depth+1, true)
		delete(c.active, src)
	case yaml.SequenceNode: // a list of mappings to merge, in order
		c.active[src] = true
		for _, e := range src.Content {
			c.merge(m, e, ptr, depth+1)
		}
		delete(c.active, src)
	default:
		c.d.add(ptr, c.pos(v), prefixed(ptr, "<<: expected a mapping or a list of mappings to merge, found "+nodeWord(src)))
	}
}

// key returns the text of a mapping key. JSON keys are strings, so a key that
// is itself a list or a mapping is an error.
func (c *yamlConverter) key(k *yaml.Node, ptr string) (string, bool) {
	for k.Kind == yaml.AliasNode {
		k = k.Alias
	}
	if k.Kind == yaml.ScalarNode {
		return k.Value, true
	}
	msg := "a key must be a plain value, found " + nodeWord(k)
	if !c.grow(len(msg), k, ptr) { // as a duplicate key's message does
		return "", false
	}
	if k.Kind == yaml.MappingNode && k.Style&yaml.FlowStyle != 0 {
		msg += `; YAML reads an unquoted {{placeholder}} as a mapping, so quote the whole string: "{{name}} ..."`
	}
	c.d.add(ptr, c.pos(k), prefixed(ptr, msg))
	return "", false
}

func (c *yamlConverter) scalar(n *yaml.Node, ptr string) any {
	switch tag := n.ShortTag(); tag {
	case strTag, timestampTag:
		if n.Style == 0 && beyondFloat(n.Value) { // yaml.v3 leaves 1e400 a string
			c.d.add(ptr, c.pos(n), prefixed(ptr, nonFiniteMsg(n.Value)))
			return nil
		}
		if b, ok := yaml11Bools[n.Value]; ok && n.Style == 0 && tag == strTag {
			// pydantic-ai reads specs as YAML 1.1 (PyYAML), where an
			// unquoted yes, no, on or off is a boolean; yaml.v3 follows
			// YAML 1.2, where it is a string.
			if c.d.retyped == nil {
				c.d.retyped = map[string]string{}
			}
			c.d.retyped[ptr] = n.Value
			return b
		}
		if num, ok := sexagesimal(n.Value); ok && n.Style == 0 && tag == strTag {
			// As for the booleans: YAML 1.1 reads 1:30 as 1*60 + 30.
			if c.d.retyped == nil {
				c.d.retyped = map[string]string{}
			}
			c.d.retyped[ptr] = n.Value
			return num
		}
		return c.str(n, ptr)
	case nullTag:
		return nil
	case boolTag:
		var b bool
		if err := n.Decode(&b); err == nil {
			return b
		}
	case intTag, floatTag:
		num, ok := yamlNumber(n)
		if !ok {
			c.d.add(ptr, c.pos(n), prefixed(ptr, nonFiniteMsg(n.Value)))
			return nil
		}
		if n.Value != num.String() {
			c.d.numbers[ptr] = n.Value
		}
		return num
	default:
		c.d.add(ptr, c.pos(n), prefixed(ptr, fmt.Sprintf("unsupported YAML tag %s; remove it, or quote the value", n.Tag)))
		return nil
	}
	return n.Value
}

// yaml11Bools are YAML 1.1's boolean words beyond YAML 1.2's true and false,
// as PyYAML reads them.
var yaml11Bools = map[string]bool{
	"yes": true, "Yes": true, "YES": true, "on": true, "On": true, "ON": true,
	"no": false, "No": false, "NO": false, "off": false, "Off": false, "OFF": false,
}

// sexagesimalRE is YAML 1.1's base-60 integer (PyYAML's int resolver):
// 1:30 is 90, 1:02:03 is 3723. It is compiled on first use, not when the
// package is initialised.
var sexagesimalRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+$`)
})

// sexagesimal reads s as a YAML 1.1 base-60 integer.
func sexagesimal(s string) (json.Number, bool) {
	// Most scalars are words: only one with a colon and a digit or sign
	// first is matched against the pattern.
	if s == "" || !strings.Contains(s, ":") || !strings.ContainsRune("+-0123456789", rune(s[0])) || !sexagesimalRE().MatchString(s) {
		return "", false
	}
	digits := strings.ReplaceAll(strings.TrimLeft(s, "+-"), "_", "")
	var n int64
	for _, part := range strings.Split(digits, ":") {
		d, err := strconv.ParseInt(part, 10, 64)
		if err != nil || n > (math.MaxInt64-d)/60 {
			return "", false
		}
		n = n*60 + d
	}
	if s[0] == '-' {
		n = -n
	}
	return json.Number(strconv.FormatInt(n, 10)), true
}

// str expands environment references in a string scalar. An unquoted
// reference takes the type its expansion reads as, so that
// `max_tool_rounds: ${ROUNDS:-20}` is a number; a quoted one stays a string.
func (c *yamlConverter) str(n *yaml.Node, ptr string) any {
	s, problems := expandEnv(n.Value, c.lookup)
	if len(s) > len(n.Value) && !c.grow(len(s)-len(n.Value), n, ptr) {
		return nil
	}
	if len(problems) > 0 {
		quoted := n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0
		block := n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0
		for _, p := range problems {
			var at Position
			if block {
				at = c.d.refineBlock(c.pos(n), p.ref, strings.Count(n.Value[:p.offset], p.ref))
			} else {
				at = c.d.refine(c.pos(n), quoted, n.Value[:p.offset], p.ref)
			}
			c.d.add(ptr, at, prefixed(ptr, p.msg))
		}
		return s
	}
	if s == n.Value {
		return s
	}
	if n.Style != 0 {
		if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 && wholeRef(n.Value) {
			c.d.quotedRef(ptr, n.Value)
		}
		return s
	}
	v := yaml12Scalar(s)
	if v == nil {
		if wholeRef(n.Value) {
			// yes, off or 1:30 stay text where text is wanted: YAML 1.1
			// reads them as a boolean or a number, which the value is
			// only where one is wanted (retypeRefs).
			c.d.quotedRef(ptr, n.Value)
		}
		return s
	}
	if c.d.retyped == nil {
		c.d.retyped = map[string]string{}
	}
	c.d.retyped[ptr] = n.Value
	return v
}

// typedScalar reads s as an unquoted YAML scalar: a number or a boolean,
// nil when it is neither. YAML 1.1's booleans and base-60 integers are read
// as the loader reads them written in a file (see scalar).
func typedScalar(s string) any {
	if b, ok := yaml11Bools[s]; ok {
		return b
	}
	if num, ok := sexagesimal(s); ok {
		return num
	}
	return yaml12Scalar(s)
}

// yaml12Scalar reads s as YAML 1.2 reads an unquoted scalar: a number or a
// boolean (true, false), nil when it is neither.
func yaml12Scalar(s string) any {
	r := yaml.Node{Kind: yaml.ScalarNode, Value: s}
	switch r.ShortTag() {
	case intTag, floatTag:
		if num, ok := yamlNumber(&r); ok {
			return num
		}
	case boolTag:
		var b bool
		if err := r.Decode(&b); err == nil {
			return b
		}
	}
	return nil
}

// yamlNumber converts a YAML int or float (0x1F, 1_000, 1e3 ...) to a JSON
// number. Integral values are written as integers, so that 10.0 decodes into
// an int field. Infinities and NaN have no JSON form.
func yamlNumber(n *yaml.Node) (json.Number, bool) {
	var v any
	if err := n.Decode(&v); err != nil {
		return "", false
	}
	switch v := v.(type) {
	case int:
		return json.Number(strconv.Itoa(v)), true
	case int64:
		return json.Number(strconv.FormatInt(v, 10)), true
	case uint64:
		return json.Number(strconv.FormatUint(v, 10)), true
	case float64:
		return floatNumber(v)
	}
	return "", false
}

func floatNumber(f float64) (json.Number, bool) {
	switch {
	case math.IsInf(f, 0) || math.IsNaN(f):
		return "", false
	case f == math.Trunc(f) && f >= math.MinInt64 && f < math.MaxInt64:
		return json.Number(strconv.FormatInt(int64(f), 10)), true
	}
	return json.Number(strconv.FormatFloat(f, 'g', -1, 64)), true
}

// beyondFloat tells whether s is a number too large for a float64 (1e400).
func beyondFloat(s string) bool {
	_, err := strconv.ParseFloat(strings.ReplaceAll(s, "_", ""), 64)
	return errors.Is(err, strconv.ErrRange)
}

func nonFiniteMsg(text string) string {
	return "expected a finite number JSON can represent, found " + text
}

// nodeWord names a node the way describeValue names values, with its
// kind: it is used where the kind is the problem.
func nodeWord(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case nullTag:
			return describeValue(nil, true)
		case strTag, timestampTag:
			return describeValue(n.Value, true)
		case intTag, floatTag:
			return n.Value + " (a number)"
		case boolTag:
			return n.Value + " (a boolean)"
		}
		return n.Value
	}
	return "nothing"
}
