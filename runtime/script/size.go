package script

import (
	"gopkg.in/yaml.v3"

	"github.com/agentspec/agentspec/internal/expansion"
)

// A script may hold expansion.Limit bytes of text, its aliases expanded.
// Each value counts valueSize bytes beyond its text, as decoding it takes
// memory however short it is.
const valueSize = 16

// checkSize measures the script rooted at root, aliases expanded, and
// reports one that holds more text than a file of fileSize bytes may: at the
// outermost alias being expanded when the bound is crossed, or else at the
// value that crosses it. An alias within the value it refers to, which
// expands without end, is reported too.
func checkSize(file string, fileSize int, root *yaml.Node) *Error {
	m := measure{limit: expansion.Limit(fileSize), active: map[*yaml.Node]bool{}}
	at := m.walk(root, nil)
	switch {
	case at == nil:
		return nil
	case m.cycle:
		return &Error{File: file, Line: at.Line, Col: at.Column, Msg: "an alias refers to a value that contains it"}
	}
	msg := expansion.Exceeded("script", "text", fileSize)
	if at.Kind == yaml.AliasNode {
		msg = "an alias expands to too much: " + msg + "; are YAML aliases nested in each other?"
	}
	return &Error{File: file, Line: at.Line, Col: at.Column, Msg: msg}
}

type measure struct {
	size, limit int
	active      map[*yaml.Node]bool // anchored nodes being measured: an alias to one is a cycle
	cycle       bool                // the walk stopped at such an alias
}

// walk adds the size of n to m's, and returns where it crosses the limit or
// finds a cycle, or nil. alias is the outermost alias being expanded, or nil.
func (m *measure) walk(n, alias *yaml.Node) *yaml.Node {
	if m.size += len(n.Value) + valueSize; m.size > m.limit {
		if alias != nil {
			return alias
		}
		return n
	}
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		if m.active[n.Alias] {
			m.cycle = true
			return n
		}
		if alias == nil {
			alias = n
		}
		return m.walk(n.Alias, alias)
	}
	if n.Anchor != "" {
		m.active[n] = true
		defer delete(m.active, n)
	}
	for _, c := range n.Content {
		if at := m.walk(c, alias); at != nil {
			return at
		}
	}
	return nil
}
