package spec

import (
	"slices"
	"strings"
)

// Document is a parsed YAML or JSON file: its content as a JSON value and
// where every value in it sits. Formats built on agent specs (pipelines)
// parse their files with it, to report problems at FILE:LINE:COL as specs do
// and to load the specs written inline in them (Loader.LoadValue).
type Document struct{ d *document }

// ParseDocument parses data as Load parses a spec, without checking
// what it says: file names it in positions and its extension chooses the
// syntax; ${VAR} references are filled by lookup (nil means os.LookupEnv).
// Problems found in the syntax are returned as Errors, with no Document.
func ParseDocument(file string, data []byte, lookup func(string) (string, bool)) (*Document, error) {
	if lookup == nil {
		lookup = defaultLoader.lookupEnv()
	}
	d, err := parse(file, data, lookup)
	if err != nil {
		return nil, err
	}
	if errs := d.errors(); errs != nil {
		return nil, errs
	}
	return &Document{d: d}, nil
}

// File is the name positions in the document carry.
func (doc *Document) File() string { return doc.d.file }

// Root is the document's content: map[string]any, []any, string,
// json.Number, bool or nil. It is shared: do not change it.
func (doc *Document) Root() any { return doc.d.root }

// Value is the content at the JSON pointer ptr ("" for the whole), nil if
// there is none. It is shared: do not change it.
func (doc *Document) Value(ptr string) any { return valueAt(doc.d.root, ptr) }

// Pos returns where the value at the JSON pointer ptr starts, or where its
// nearest enclosing value does.
func (doc *Document) Pos(ptr string) Position { return doc.d.pos(ptr) }

// KeyPos returns where the key of the mapping member at ptr starts, falling
// back to the value's position.
func (doc *Document) KeyPos(ptr string) Position { return doc.d.keyPos(ptr) }

// Line returns the text of the document's 1-based line n, without its
// newline; "" past the end.
func (doc *Document) Line(n int) string { return doc.d.line(n) }

// CheckSchema checks the JSON Schema written at ptr in doc as a spec's
// output_schema is checked: it must compile, and be self-contained. Each
// problem is reported where it is written, labelled from the document's top
// (inputs.properties.a.type). nil when the value there is no mapping, or
// compiles.
func (doc *Document) CheckSchema(ptr string) Errors {
	sch, ok := valueAt(doc.d.root, ptr).(map[string]any)
	if !ok {
		return nil
	}
	d := doc.d
	n := len(d.errs)
	checkSchema(d, ptr, sch)
	if len(d.errs) == n {
		return nil
	}
	found := make(Errors, 0, len(d.errs)-n)
	for _, p := range d.errs[n:] {
		found = append(found, p.err)
	}
	d.errs = d.errs[:n] // the document itself is as it was
	return sortErrors(found)
}

// LoadValue loads the agent spec written as the mapping at ptr in doc, as
// Load would load it from a file of its own: every problem is reported at its
// position in doc's file, and relative paths in it resolve from that file.
// Messages label values from the inline spec's top (model, capabilities[0]).
func (l *Loader) LoadValue(doc *Document, ptr string) (*Spec, error) {
	src := doc.d
	sub := newDocument(src.file, src.src)
	sub.yaml = src.yaml
	rebase := func(from map[string]Position, to map[string]Position) {
		for p, pos := range from {
			if rel, ok := under(p, ptr); ok {
				to[rel] = pos
			}
		}
	}
	rebase(src.values, sub.values)
	rebase(src.keys, sub.keys)
	for p, text := range src.numbers {
		if rel, ok := under(p, ptr); ok {
			sub.numbers[rel] = text
		}
	}
	for p, text := range src.retyped {
		if rel, ok := under(p, ptr); ok {
			if sub.retyped == nil {
				sub.retyped = map[string]string{}
			}
			sub.retyped[rel] = text
		}
	}
	for p, text := range src.refs {
		if rel, ok := under(p, ptr); ok {
			sub.quotedRef(rel, text)
		}
	}
	v := valueAt(src.root, ptr)
	if _, ok := v.(map[string]any); !ok {
		return nil, Errors{{Pos: src.pos(ptr), Msg: prefixed(ptr, notMappingMsg(describeValue(v, true)))}}
	}
	sub.root = deepCopy(v)
	return l.check(sub)
}

// under returns p relative to the JSON pointer base, if p is base or inside it.
func under(p, base string) (string, bool) {
	if p == base {
		return "", true
	}
	rel, ok := strings.CutPrefix(p, base)
	if !ok || !strings.HasPrefix(rel, "/") {
		return "", false
	}
	return rel, true
}

func deepCopy(v any) any {
	switch v := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, e := range v {
			m[k] = deepCopy(e)
		}
		return m
	case []any:
		l := make([]any, len(v))
		for i, e := range v {
			l[i] = deepCopy(e)
		}
		return l
	}
	return v // string, json.Number, bool or nil
}

// pipelineKey is the key that makes a file a pipeline rather than an agent spec.
const pipelineKey = "steps"

// checkNotPipeline refuses a spec with steps: the two kinds of file never mix.
func checkNotPipeline(d *document, root map[string]any) {
	if _, ok := root[pipelineKey]; !ok {
		return
	}
	ptr := "/" + pipelineKey
	d.add(ptr, d.keyPos(ptr), "steps: is a pipeline's key: a file with steps is a pipeline, not an agent spec, and the two never mix")
	delete(root, pipelineKey)
}

// Placeholders returns the names of the {{name}} placeholders the texts use,
// each once, in order of first use. An escaped one (\{{name}}, EscapedAt)
// is text, not a placeholder.
func Placeholders(texts ...string) []string {
	var names []string
	text := strings.Join(texts, "\n")
	for _, m := range placeholderRE().FindAllStringSubmatchIndex(text, -1) {
		if literal, _ := EscapedAt(text, m[0]); literal {
			continue
		}
		if name := text[m[2]:m[3]]; !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	return names
}
