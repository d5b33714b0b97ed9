package spec

import (
	"fmt"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// aliasWalk walks a YAML document as yamlConverter converts it, aliases
// expanded and merge keys applied, counting what the conversion counts
// (values against maxNodes, text and key paths against the document's
// size, nesting against maxDepth) without building anything: no value, no
// path, no position. A small file whose aliases nest in each other expands
// to millions of values ("billion laughs"); walked first, it is refused at
// the alias that passes a bound in time in proportion to the bound, before
// any of it is converted, instead of after the conversion has built
// maxNodes values, or walked again and again, uncounted, the keys a merge
// repeats.
//
// A merge counts every member of what it merges, those whose keys are
// already present too, which the conversion skips: each costs a step all
// the same. A bound passed outside any alias is left to the conversion,
// which reports it as it does, at a cost in proportion to the file.
type aliasWalk struct {
	c      *yamlConverter
	nodes  int
	size   int
	active map[*yaml.Node]bool // anchored nodes being walked: an alias to one is a cycle, which the conversion reports

	// path holds the tokens of the pointer to the value being walked, as
	// far as the outermost alias being expanded, alias.
	path  []string
	alias *yaml.Node
	// over is the bound passed, once one is.
	over string
}

// refuseExpansion walks the document rooted at root (see aliasWalk) and
// reports whether an alias expands past a bound; it then adds the problem
// at that alias, as the conversion would place it.
func (c *yamlConverter) refuseExpansion(root *yaml.Node) bool {
	e := &aliasWalk{c: c, active: map[*yaml.Node]bool{}}
	if e.value(root, 0, 0) || e.alias == nil {
		return false
	}
	ptr := ""
	for _, tok := range e.path {
		ptr += "/" + tok
	}
	c.alias, c.aliasPtr = e.alias, ptr
	c.stop(e.alias, ptr, e.over)
	c.alias = nil
	return true
}

// value walks n, the value at a pointer ptrLen bytes long, as
// yamlConverter.value does; false once a bound is passed.
func (e *aliasWalk) value(n *yaml.Node, ptrLen, depth int) bool {
	if depth <= maxDepth && !e.grow(ptrLen+1) {
		return false
	}
	return e.build(n, ptrLen, depth)
}

// grow counts size bytes of text, as yamlConverter.grow does.
func (e *aliasWalk) grow(size int) bool {
	if e.size += size; e.size > e.c.d.sizeLimit {
		e.over = e.c.d.tooLarge()
		return false
	}
	return true
}

// count counts one step, as yamlConverter.over does.
func (e *aliasWalk) count(depth int) bool {
	switch e.nodes++; {
	case depth > maxDepth:
		e.over = fmt.Sprintf("nested more than %d levels deep", maxDepth)
	case e.nodes > maxNodes:
		e.over = fmt.Sprintf("the spec expands to more than %d values", maxNodes)
	default:
		return true
	}
	return false
}

// push adds tok() to the path when the walk is outside aliases, and
// reports whether it did; pop takes it off again.
func (e *aliasWalk) push(tok func() string) bool {
	if e.alias != nil {
		return false
	}
	e.path = append(e.path, tok())
	return true
}

func (e *aliasWalk) pop(pushed bool) {
	if pushed {
		e.path = e.path[:len(e.path)-1]
	}
}

func (e *aliasWalk) build(n *yaml.Node, ptrLen, depth int) bool {
	if !e.count(depth) {
		return false
	}
	if n.Kind == yaml.AliasNode {
		if e.active[n.Alias] {
			return true
		}
		outermost := e.alias == nil
		if outermost {
			e.alias = n
		}
		if !e.build(n.Alias, ptrLen, depth+1) {
			return false // at the outermost alias, kept for the report
		}
		if outermost {
			e.alias = nil
		}
		return true
	}
	if n.Anchor != "" {
		e.active[n] = true
		defer delete(e.active, n)
	}
	switch n.Kind {
	case yaml.MappingNode:
		return e.mapping(n, ptrLen, depth)
	case yaml.SequenceNode:
		for i, item := range n.Content {
			pushed := e.push(func() string { return strconv.Itoa(i) })
			if !e.value(item, ptrLen+1+digits(i), depth+1) {
				return false
			}
			e.pop(pushed)
		}
	case yaml.ScalarNode:
		return e.grow(len(n.Value))
	}
	return true
}

// digits is the length of i, written in decimal.
func digits(i int) int {
	n := 1
	for ; i >= 10; i /= 10 {
		n++
	}
	return n
}

// mapping walks the members of n, then what its merge keys merge, as
// yamlConverter.mapping does.
func (e *aliasWalk) mapping(n *yaml.Node, ptrLen, depth int) bool {
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.ShortTag() == mergeTag {
			merges = append(merges, v)
			continue
		}
		for k.Kind == yaml.AliasNode {
			k = k.Alias
		}
		if k.Kind != yaml.ScalarNode {
			// Reported, with a message of about this size, and not
			// converted.
			if !e.count(depth+1) || !e.grow(len("a key must be a plain value, found a mapping")) {
				return false
			}
			continue
		}
		key := k.Value
		// The pointer's token, ~ and / escaped.
		tokLen := len(key) + strings.Count(key, "~") + strings.Count(key, "/")
		pushed := e.push(func() string { return child("", key)[1:] })
		if !e.value(v, ptrLen+1+tokLen, depth+1) {
			return false
		}
		e.pop(pushed)
	}
	for _, v := range merges {
		if !e.merge(v, ptrLen, depth) {
			return false
		}
	}
	return true
}

// merge walks the value of a << key, as yamlConverter.merge does.
func (e *aliasWalk) merge(v *yaml.Node, ptrLen, depth int) bool {
	if !e.count(depth) {
		return false
	}
	src := v
	outermost := false
	for src.Kind == yaml.AliasNode {
		if e.active[src.Alias] {
			return true
		}
		if e.alias == nil {
			e.alias, outermost = src, true
		}
		src = src.Alias
	}
	switch src.Kind {
	case yaml.MappingNode:
		e.active[src] = true
		ok := e.mapping(src, ptrLen, depth+1)
		delete(e.active, src)
		if !ok {
			return false
		}
	case yaml.SequenceNode:
		e.active[src] = true
		for _, item := range src.Content {
			if !e.merge(item, ptrLen, depth+1) {
				delete(e.active, src)
				return false
			}
		}
		delete(e.active, src)
	}
	if outermost {
		e.alias = nil
	}
	return true
}
