package pipeline

import (
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// GraphFormats are the formats WriteGraph renders, the default first.
var GraphFormats = []string{"mermaid", "dot", "json"}

// WriteGraph writes p's graph to w in format: "mermaid" (a flowchart that
// GitHub renders), "dot" (Graphviz) or "json". Every format shows each
// step with its spec, its dependencies, whether it fans out (over what, as
// what, how many at once) and its when condition; an edge that only needs:
// writes, with no data flowing along it, is dashed.
func WriteGraph(w io.Writer, p *Pipeline, format string) error {
	var out []byte
	switch format {
	case "mermaid", "":
		out = []byte(p.mermaid())
	case "dot":
		out = []byte(p.dot())
	case "json":
		b, err := json.MarshalIndent(p.graphJSON(), "", "  ")
		if err != nil {
			return err
		}
		out = append(b, '\n')
	default:
		return fmt.Errorf("unknown graph format %q; the formats are %s", format, strings.Join(GraphFormats, ", "))
	}
	_, err := w.Write(out)
	return err
}

// graphEdge is one dependency: from runs before to.
type graphEdge struct {
	from, to string
	// needsOnly: the edge is written in needs: alone; no reference of to's
	// templates names from.
	needsOnly bool
}

// graphEdges are the pipeline's dependencies, in the order of its steps
// and of each step's Deps.
func (p *Pipeline) graphEdges() []graphEdge {
	var out []graphEdge
	for _, s := range p.Steps {
		data := map[string]bool{}
		for _, t := range s.templates() {
			for _, r := range t.Refs() {
				if r.Kind == RefOutput || r.Kind == RefOutputs {
					data[r.Name] = true
				}
			}
		}
		for _, d := range s.Deps {
			out = append(out, graphEdge{from: d, to: s.Name, needsOnly: !data[d]})
		}
	}
	return out
}

// templates are every template of the step: input, vars, for_each, when.
func (s *Step) templates() []*Template {
	var out []*Template
	if s.Input != nil {
		out = append(out, s.Input)
	}
	for _, v := range s.Vars {
		out = append(out, v.Value)
	}
	if s.ForEach != nil && s.ForEach.Template != nil {
		out = append(out, s.ForEach.Template)
	}
	if s.When != nil {
		out = append(out, s.When)
	}
	return out
}

// plain is t with each {{reference}} written without its braces, as a
// person reads it: "steps.triage.output.files != []".
func (t *Template) plain() string {
	var b strings.Builder
	for _, p := range t.Parts {
		if p.Ref != nil {
			b.WriteString(p.Ref.Text)
		} else {
			b.WriteString(p.Literal)
		}
	}
	return b.String()
}

// specLabel is the step's spec as the file names it.
func (s *Step) specLabel() string {
	if s.SpecPath == "" {
		return "inline spec"
	}
	return s.SpecPath
}

// fanOutLabel says what a fan-out step iterates over:
// "for each file in steps.triage.output.files, at most 4 at once".
func (s *Step) fanOutLabel() string {
	f := s.ForEach
	var b strings.Builder
	b.WriteString("for each " + s.As + " in ")
	if f.Template != nil {
		b.WriteString(f.Template.plain())
	} else {
		b.WriteString("glob " + f.Glob)
	}
	if s.MaxParallel > 0 {
		b.WriteString(", at most " + strconv.Itoa(s.MaxParallel) + " at once")
	}
	if s.OnItemError == "skip" {
		b.WriteString(", failed items skipped")
	}
	return b.String()
}

// labelLines are the lines of a step's node: its name, its spec, then how
// it fans out and when it runs.
func (s *Step) labelLines() []string {
	lines := []string{s.Name, s.specLabel()}
	if s.FanOut() {
		lines = append(lines, s.fanOutLabel())
	}
	if s.When != nil {
		lines = append(lines, "when "+s.When.plain())
	}
	return lines
}

// mermaidWords are words a Mermaid flowchart gives a meaning, which a node
// id cannot be.
var mermaidWords = map[string]bool{
	"end": true, "graph": true, "flowchart": true, "subgraph": true, "style": true, "class": true,
	"classdef": true, "linkstyle": true, "click": true, "call": true, "href": true, "direction": true,
	"default": true, "interpolate": true,
}

var mermaidID = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z][a-z0-9_]*$`) })

// mermaidIDs names each step's node: its name where Mermaid reads that as
// an id, else "Step" and its index (step names have no capital, so the two
// never meet).
func (p *Pipeline) mermaidIDs() map[string]string {
	ids := make(map[string]string, len(p.Steps))
	for i, s := range p.Steps {
		if mermaidID().MatchString(s.Name) && !mermaidWords[s.Name] {
			ids[s.Name] = s.Name
		} else {
			ids[s.Name] = "Step" + strconv.Itoa(i+1)
		}
	}
	return ids
}

// mermaidEscaper writes text so that a quoted Mermaid label shows it as it
// is: the characters Mermaid or its HTML labels would read as syntax become
// entity codes.
var mermaidEscaper = strings.NewReplacer(
	`#`, "#35;", `"`, "#quot;", `&`, "#amp;", `<`, "#lt;", `>`, "#gt;",
	`[`, "#91;", `]`, "#93;", `{`, "#123;", `}`, "#125;", `(`, "#40;", `)`, "#41;", `|`, "#124;",
)

func (p *Pipeline) mermaid() string {
	ids := p.mermaidIDs()
	var b strings.Builder
	b.WriteString("flowchart TD\n")
	for _, s := range p.Steps {
		lines := s.labelLines()
		for i, l := range lines {
			lines[i] = mermaidEscaper.Replace(l)
		}
		label := `"` + strings.Join(lines, "<br/>") + `"`
		switch {
		case s.FanOut(): // a stack of jobs
			fmt.Fprintf(&b, "    %s[[%s]]\n", ids[s.Name], label)
		case s.When != nil: // a decision
			fmt.Fprintf(&b, "    %s{{%s}}\n", ids[s.Name], label)
		default:
			fmt.Fprintf(&b, "    %s[%s]\n", ids[s.Name], label)
		}
	}
	for _, e := range p.graphEdges() {
		arrow := "-->"
		if e.needsOnly {
			arrow = "-.->"
		}
		fmt.Fprintf(&b, "    %s %s %s\n", ids[e.from], arrow, ids[e.to])
	}
	return b.String()
}

// dotQuote is s as a Graphviz quoted string.
func dotQuote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s) + `"`
}

func (p *Pipeline) dot() string {
	var b strings.Builder
	name := p.Name
	if name == "" {
		name = "pipeline"
	}
	fmt.Fprintf(&b, "digraph %s {\n", dotQuote(name))
	b.WriteString("    rankdir=TB;\n    node [shape=box];\n")
	for _, s := range p.Steps {
		attrs := []string{"label=" + dotQuote(strings.Join(s.labelLines(), "\n"))}
		switch {
		case s.FanOut():
			attrs = append(attrs, "shape=box3d")
		case s.When != nil:
			attrs = append(attrs, "shape=hexagon")
		}
		if s.When != nil {
			attrs = append(attrs, "style=dashed")
		}
		fmt.Fprintf(&b, "    %s [%s];\n", dotQuote(s.Name), strings.Join(attrs, ", "))
	}
	for _, e := range p.graphEdges() {
		style := ""
		if e.needsOnly {
			style = " [style=dashed]"
		}
		fmt.Fprintf(&b, "    %s -> %s%s;\n", dotQuote(e.from), dotQuote(e.to), style)
	}
	b.WriteString("}\n")
	return b.String()
}

// GraphJSON is the graph as `agentspec graph -o json` prints it.
type GraphJSON struct {
	Name  string      `json:"name,omitempty"`
	Steps []GraphStep `json:"steps"`
	// Order is the steps in an order that runs each after its dependencies.
	Order []string `json:"order"`
}

// GraphStep is one step of a GraphJSON.
type GraphStep struct {
	Name string `json:"name"`
	// Spec is the spec's path as written; null for an inline spec.
	Spec *string `json:"spec"`
	// Deps are the steps it runs after, those it references and those it needs.
	Deps []string `json:"deps"`
	// Needs are the steps of its needs:, as written.
	Needs   []string      `json:"needs,omitempty"`
	ForEach *GraphForEach `json:"for_each"`
	// When is the condition as written; null when the step always runs.
	When *string `json:"when"`
}

// GraphForEach is what a fan-out step iterates over: Over (a reference, as
// written) or Glob.
type GraphForEach struct {
	Over        string `json:"over,omitempty"`
	Glob        string `json:"glob,omitempty"`
	As          string `json:"as"`
	MaxParallel int    `json:"max_parallel,omitempty"`
	OnItemError string `json:"on_item_error"`
}

func (p *Pipeline) graphJSON() GraphJSON {
	g := GraphJSON{Name: p.Name, Steps: make([]GraphStep, 0, len(p.Steps)), Order: make([]string, 0, len(p.Order))}
	for _, s := range p.Steps {
		gs := GraphStep{Name: s.Name, Deps: slices.Clone(s.Deps), Needs: s.Needs}
		if gs.Deps == nil {
			gs.Deps = []string{}
		}
		if s.SpecPath != "" {
			gs.Spec = &s.SpecPath
		}
		if f := s.ForEach; f != nil {
			gs.ForEach = &GraphForEach{Glob: f.Glob, As: s.As, MaxParallel: s.MaxParallel, OnItemError: s.OnItemError}
			if f.Template != nil {
				gs.ForEach.Over = f.Template.Text
			}
		}
		if s.When != nil {
			gs.When = &s.When.Text
		}
		g.Steps = append(g.Steps, gs)
	}
	for _, s := range p.Order {
		g.Order = append(g.Order, s.Name)
	}
	return g
}
