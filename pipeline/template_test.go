package pipeline

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestParseTemplate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in    string
		parts []string // literal text as is, references as {{TEXT}}
		bad   []bool
		elems [][]Elem
	}{
		{in: "plain", parts: []string{"plain"}},
		{in: "{{ steps.a.output.files[0].path }}", parts: []string{"{{steps.a.output.files[0].path}}"}, bad: []bool{false},
			elems: [][]Elem{{{Key: "a"}, {Key: "output"}, {Key: "files"}, {Index: 0}, {Key: "path"}}}},
		{in: "a {{x}} b {{y.z}}", parts: []string{"a ", "{{x}}", " b ", "{{y.z}}"}, bad: []bool{false, false},
			elems: [][]Elem{nil, {{Key: "z"}}}},
		{in: "json {{ {a} }} and {{ unclosed", parts: []string{"json {{ {a} }} and {{ unclosed"}},
		{in: "{{a b}}", parts: []string{"{{a b}}"}, bad: []bool{true}, elems: [][]Elem{nil}},
		{in: "{{}}", parts: []string{"{{}}"}, bad: []bool{true}, elems: [][]Elem{nil}},
		{in: "{{a[99999999999999999999]}}", parts: []string{"{{a[99999999999999999999]}}"}, bad: []bool{true}, elems: [][]Elem{nil}},
		// A backslash escapes a reference, as in Handlebars: \{{x}} is the
		// text {{x}}, and \\{{x}} a backslash and the reference; only the
		// two characters before the braces count.
		{in: `\{{x}}`, parts: []string{"{{x}}"}},
		{in: `a \{{ not a ref }} b`, parts: []string{"a {{ not a ref }} b"}},
		{in: `\\{{x}}`, parts: []string{`\`, "{{x}}"}, bad: []bool{false}, elems: [][]Elem{nil}},
		{in: `\\\{{x}}`, parts: []string{`\\`, "{{x}}"}, bad: []bool{false}, elems: [][]Elem{nil}},
		{in: `\{{x}}{{y}}`, parts: []string{"{{x}}", "{{y}}"}, bad: []bool{false}, elems: [][]Elem{nil}},
		{in: `a\b \{ {{x}}\`, parts: []string{`a\b \{ `, "{{x}}", `\`}, bad: []bool{false}, elems: [][]Elem{nil}},
		{in: `\{{ {a} }}`, parts: []string{`\{{ {a} }}`}},
	}
	for _, tt := range tests {
		parts, raws := parseTemplate(tt.in)
		var got []string
		for _, p := range parts {
			if p.Ref != nil {
				got = append(got, "{{"+p.Ref.Text+"}}")
			} else {
				got = append(got, p.Literal)
			}
		}
		assert.Equal(t, tt.parts, got, tt.in)
		var bad []bool
		var elems [][]Elem
		for _, r := range raws {
			bad = append(bad, r.bad != "")
			if r.bad == "" {
				elems = append(elems, r.elems)
			} else {
				elems = append(elems, nil)
			}
		}
		assert.Equal(t, tt.bad, bad, tt.in)
		assert.Equal(t, tt.elems, elems, tt.in)
	}
}

func TestTemplateWhole(t *testing.T) {
	t.Parallel()
	parts, _ := parseTemplate("{{steps.a.output}}")
	assert.NotNil(t, (&Template{Parts: parts}).Whole())
	parts, _ = parseTemplate(" {{steps.a.output}}")
	assert.Nil(t, (&Template{Parts: parts}).Whole())
	parts, _ = parseTemplate(`\\{{steps.a.output}}`)
	assert.Nil(t, (&Template{Parts: parts}).Whole(), "a backslash before it is text")
}
