package pipeline

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/agentspec/agentspec/spec"
)

// Template is a string value of the pipeline that may hold {{references}}:
// a step's input, a vars value, a for_each, a when, an output.
type Template struct {
	Text  string        // as written (${VAR} filled)
	Pos   spec.Position // where the value starts
	Parts []Part        // the text cut into literal text and references, in order
}

// Part is a piece of a Template: literal text, or a reference.
type Part struct {
	Literal string
	Ref     *Ref // nil for literal text
}

// Refs returns the template's references, in order.
func (t *Template) Refs() []*Ref {
	var refs []*Ref
	for _, p := range t.Parts {
		if p.Ref != nil {
			refs = append(refs, p.Ref)
		}
	}
	return refs
}

// Whole returns the reference the template consists of, when it is exactly
// one reference and nothing else ("{{steps.triage.output.files}}"): its
// value keeps its JSON type. Otherwise nil: the references are inserted into
// the text, strings as they are and other values as compact JSON.
func (t *Template) Whole() *Ref {
	if len(t.Parts) == 1 {
		return t.Parts[0].Ref
	}
	return nil
}

// RefKind is what a reference names.
type RefKind int

const (
	// RefInput is {{inputs.NAME...}}: a value of the pipeline's inputs.
	RefInput RefKind = iota + 1
	// RefOutput is {{steps.S.output...}}: a step's final answer.
	RefOutput
	// RefOutputs is {{steps.S.outputs...}}: a fan-out step's answers, an array
	// in item order.
	RefOutputs
	// RefItem is {{ITEM...}}: the current for_each item, named by the step's as.
	RefItem
)

func (k RefKind) String() string {
	switch k {
	case RefInput:
		return "input"
	case RefOutput:
		return "output"
	case RefOutputs:
		return "outputs"
	case RefItem:
		return "item"
	}
	return "RefKind(" + strconv.Itoa(int(k)) + ")"
}

// Ref is one {{reference}} in a template, checked against the pipeline.
type Ref struct {
	Text string        // between the braces, trimmed: "steps.triage.output.files[0]"
	Pos  spec.Position // where its {{ is, or where the template starts when the source does not show it
	Kind RefKind
	// Name is the input's name for RefInput, the step's name for RefOutput
	// and RefOutputs, and the item's name (as) for RefItem.
	Name string
	// Path is the rest of the reference, into the value named: [a b 0] for
	// steps.S.output.a.b[0].
	Path []Elem
	// Type is the value's static type, from the schema that describes it.
	Type Type
	// Optional says why the value may be absent: a property on its path
	// that its schema does not require (nor, on an input's path, give a
	// default), or an input that the inputs schema does not require and
	// gives no default ("a's output_schema does not
	// require 'count'"); "" when it is always there. An absent value is
	// null: "null" when inserted in text, as any value is written there in
	// JSON, null where a whole reference keeps its JSON type, no items for a
	// for_each.
	Optional string
}

// prefix is ref's text up to its k-th path element: the value that element
// is taken from.
func (ref *Ref) prefix(k int) string {
	var b strings.Builder
	switch ref.Kind {
	case RefInput:
		b.WriteString("inputs." + ref.Name)
	case RefOutput:
		b.WriteString("steps." + ref.Name + ".output")
	case RefOutputs:
		b.WriteString("steps." + ref.Name + ".outputs")
	default:
		b.WriteString(ref.Name)
	}
	for _, e := range ref.Path[:k] {
		b.WriteString(e.String())
	}
	return b.String()
}

// Elem is one step of a reference's path: a member (Key) or an array element
// (Index, when Key is "").
type Elem struct {
	Key   string
	Index int
}

func (e Elem) String() string {
	if e.Key == "" {
		return "[" + strconv.Itoa(e.Index) + "]"
	}
	return "." + e.Key
}

// refSyntax is a reference: a name, then .members and [indexes].
var refSyntax = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]+|\[[0-9]+\])*$`)
})

var elemSyntax = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`\.([A-Za-z0-9_-]+)|\[([0-9]+)\]`)
})

// rawRef is a reference as parsed, before it is checked.
type rawRef struct {
	text   string // trimmed
	offset int    // byte offset of {{ in the template
	raw    string // "{{ ... }}" as written
	root   string
	elems  []Elem
	bad    string // why it is not a reference, when it is not: the whole message, "{{...}} is not ..."
}

// parseTemplate cuts s into literal text and references. Text between {{
// and }} that holds no brace is a reference, and must read as one; anything
// else is literal text. A backslash escapes a reference, as in Handlebars
// and as in a spec's placeholders (spec.EscapedAt): \{{...}} is the literal
// text {{...}}, never checked, and \\{{...}} a backslash and the reference.
func parseTemplate(s string) ([]Part, []*rawRef) {
	var parts []Part
	var refs []*rawRef
	lit := strings.Builder{}
	for i := 0; i < len(s); {
		open := strings.Index(s[i:], "{{")
		if open < 0 {
			lit.WriteString(s[i:])
			break
		}
		open += i
		end := strings.Index(s[open+2:], "}}")
		inner := ""
		if end >= 0 {
			inner = s[open+2 : open+2+end]
		}
		if end < 0 || strings.ContainsAny(inner, "{}") {
			lit.WriteString(s[i : open+2])
			i = open + 2
			continue
		}
		closing := open + 2 + end + 2
		// s[i-1] is a brace, so a backslash before open is in s[i:open].
		literal, drop := spec.EscapedAt(s, open)
		if drop {
			lit.WriteString(s[i : open-1])
		} else {
			lit.WriteString(s[i:open])
		}
		if literal {
			lit.WriteString(s[open:closing])
			i = closing
			continue
		}
		if lit.Len() > 0 {
			parts = append(parts, Part{Literal: lit.String()})
			lit.Reset()
		}
		r := &rawRef{text: strings.TrimSpace(inner), offset: open, raw: s[open:closing]}
		r.parse()
		refs = append(refs, r)
		parts = append(parts, Part{Ref: &Ref{Text: r.text}})
		i = closing
	}
	if lit.Len() > 0 {
		parts = append(parts, Part{Literal: lit.String()})
	}
	return parts, refs
}

func (r *rawRef) parse() {
	if !refSyntax().MatchString(r.text) {
		r.bad = "{{" + r.text + "}} is not a reference: expected {{inputs.NAME}}, {{steps.STEP.output}}, {{steps.STEP.outputs}} " +
			"or the for_each item, with .member and [index] after it"
		return
	}
	end := strings.IndexAny(r.text, ".[")
	if end < 0 {
		r.root = r.text
		return
	}
	r.root = r.text[:end]
	for _, m := range elemSyntax().FindAllStringSubmatch(r.text[end:], -1) {
		if m[1] != "" {
			r.elems = append(r.elems, Elem{Key: m[1]})
			continue
		}
		n, err := strconv.Atoi(m[2])
		if err != nil {
			// The syntax allows digits only: the index is past what an int holds.
			r.bad = fmt.Sprintf("{{%s}}: index %s is too large: an index is at most %d", r.text, m[2], math.MaxInt)
			return
		}
		r.elems = append(r.elems, Elem{Index: n})
	}
}
