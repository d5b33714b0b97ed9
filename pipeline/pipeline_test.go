package pipeline

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/spec"
)

func names(steps []*Step) []string {
	out := make([]string, len(steps))
	for i, s := range steps {
		out[i] = s.Name
	}
	return out
}

func TestLoadReviewFix(t *testing.T) {
	t.Parallel()
	file := filepath.Join("testdata", "review-fix", "pipeline.yaml")
	p, err := LoadFile(file)
	require.NoError(t, err)

	assert.Equal(t, "fix-issues", p.Name)
	assert.Equal(t, &Cache{Enabled: true}, p.Cache)
	require.NotNil(t, p.Inputs)
	assert.NoError(t, p.Inputs.Compiled.Validate(map[string]any{"issue": "crash on empty input"}))
	assert.Error(t, p.Inputs.Compiled.Validate(map[string]any{}), "issue is required")

	assert.Equal(t, []string{"triage", "fix", "review"}, names(p.Steps))
	assert.Equal(t, []string{"triage", "fix", "review"}, names(p.Order))
	triage, fix, review := p.Step("triage"), p.Step("fix"), p.Step("review")
	assert.Empty(t, triage.Deps)
	assert.Equal(t, []string{"triage"}, fix.Deps)
	assert.Equal(t, []string{"triage", "fix"}, review.Deps, "when's reference and needs")
	assert.Equal(t, []string{"fix"}, review.Needs)
	assert.Equal(t, filepath.Join("testdata", "review-fix", "agents", "fix.yaml"), fix.Spec.File)
	assert.Equal(t, "agents/fix.yaml", fix.SpecPath)

	// triage's input is the pipeline's input, a string.
	in := triage.Input.Whole()
	require.NotNil(t, in)
	assert.Equal(t, RefInput, in.Kind)
	assert.Equal(t, "issue", in.Name)
	assert.Equal(t, []string{"string"}, in.Type.JSON())
	assert.Equal(t, spec.Position{File: file, Line: 13, Col: 13}, in.Pos)

	// fix fans out over triage's files, each a $ref'd object.
	require.True(t, fix.FanOut())
	assert.Equal(t, "file", fix.As)
	assert.Equal(t, 4, fix.MaxParallel)
	assert.Equal(t, "fail", fix.OnItemError)
	over := fix.ForEach.Template.Whole()
	require.NotNil(t, over)
	assert.Equal(t, RefOutput, over.Kind)
	assert.Equal(t, []Elem{{Key: "files"}}, over.Path)
	assert.True(t, over.Type.Is("array"))
	assert.Equal(t, []string{"object"}, fix.ForEach.Item.JSON())
	require.Len(t, fix.Vars, 2)
	assert.Equal(t, "path", fix.Vars[0].Name)
	path := fix.Vars[0].Value.Whole()
	require.NotNil(t, path)
	assert.Equal(t, RefItem, path.Kind)
	assert.Equal(t, []string{"string"}, path.Type.JSON())

	// review gets fix's answers, an array of fix's output_schema objects.
	changes := review.Vars[0].Value.Whole()
	require.NotNil(t, changes)
	assert.Equal(t, RefOutputs, changes.Kind)
	assert.Equal(t, []string{"array"}, changes.Type.JSON())
	item, ok := changes.Type.Items()
	require.True(t, ok)
	summary, _, ok := item.Property("summary")
	require.True(t, ok)
	assert.Equal(t, []string{"string"}, summary.JSON())

	// when keeps its text; its reference is checked and typed.
	require.NotNil(t, review.When)
	assert.Equal(t, "{{steps.triage.output.files}} != []", review.When.Text)
	require.Len(t, review.When.Refs(), 1)
	assert.Nil(t, review.When.Whole())
	assert.Equal(t, " != []", review.When.Parts[1].Literal)
	assert.True(t, review.When.Refs()[0].Type.Is("array"))

	require.Len(t, p.Outputs, 2)
	approved := p.Outputs[0].Value.Whole()
	require.NotNil(t, approved)
	assert.Equal(t, "approved", p.Outputs[0].Name)
	assert.Equal(t, []string{"boolean"}, approved.Type.JSON())
}

func TestLoadDocsReport(t *testing.T) {
	t.Parallel()
	file := filepath.Join("testdata", "docs-report", "pipeline.yaml")
	p, err := LoadFile(file)
	require.NoError(t, err)

	assert.Nil(t, p.Inputs)
	assert.Nil(t, p.Cache)
	assert.Equal(t, []string{"extract", "merge", "report"}, names(p.Order))

	extract := p.Step("extract")
	require.True(t, extract.FanOut())
	assert.Equal(t, "inbox/*.md", extract.ForEach.Glob)
	assert.Nil(t, extract.ForEach.Template)
	assert.Equal(t, []string{"string"}, extract.ForEach.Item.JSON(), "a glob's items are paths")
	assert.Equal(t, "skip", extract.OnItemError)
	assert.Equal(t, "doc", extract.As)
	require.Len(t, extract.Input.Parts, 3)
	assert.Equal(t, "Extract the facts of ", extract.Input.Parts[0].Literal)
	assert.Equal(t, RefItem, extract.Input.Parts[1].Ref.Kind)

	merge := p.Step("merge")
	assert.Empty(t, merge.SpecPath, "an inline spec")
	assert.Equal(t, file, merge.Spec.File)
	assert.Equal(t, spec.Position{File: file, Line: 15, Col: 21}, merge.Spec.Position("/instructions"))
	assert.Equal(t, []string{"extract"}, merge.Deps)
	facts, _, ok := merge.Output.Property("facts")
	require.True(t, ok)
	assert.True(t, facts.Is("array"))

	report := p.Step("report")
	assert.Equal(t, []string{"string"}, report.Output.JSON(), "no output_schema: a text answer")
	require.Len(t, p.Outputs, 2)
	assert.Equal(t, []string{"string"}, p.Outputs[1].Value.Whole().Type.JSON())
}

func TestOrderRunsIndependentStepsInFileOrder(t *testing.T) {
	t.Parallel()
	src := `steps:
  report:
    spec: {model: test}
    input: "{{steps.b.output}} {{steps.a.output}}"
  b:
    spec: {model: test}
    needs: [a]
  c:
    spec: {model: test}
  a:
    spec: {model: test}
`
	p, err := Load(filepath.Join(t.TempDir(), "p.yaml"), []byte(src))
	require.NoError(t, err)
	assert.Equal(t, []string{"report", "b", "c", "a"}, names(p.Steps))
	assert.Equal(t, []string{"c", "a", "b", "report"}, names(p.Order))
	assert.Equal(t, []string{"b", "a"}, p.Step("report").Deps)
}

func TestIsPipeline(t *testing.T) {
	t.Parallel()
	tests := []struct {
		src  string
		want bool
	}{
		{"steps:\n  a: {spec: a.yaml}\n", true},
		{`{"steps": {}}`, true},
		{"steps:\n", true},
		{"model: test\ninstructions: hi\n", false},
		{"model: test\nx-steps: 1\n", false},
		{"- steps\n", false},
		{"", false},
		{"steps: [\n", false},
		{"model: test\nnested:\n  steps: 1\n", false},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, IsPipeline([]byte(tt.src)), "%q", tt.src)
	}
}

func TestLoaderFillsEnvironmentReferences(t *testing.T) {
	t.Parallel()
	env := func(name string) (string, bool) {
		v, ok := map[string]string{"GREETING": "Hello there,", "MODEL": "test"}[name]
		return v, ok
	}
	l := &Loader{Specs: &spec.Loader{LookupEnv: env}}
	src := "steps:\n  a:\n    spec: {model: \"${MODEL}\"}\n    input: \"${GREETING} {{inputs.who}}\"\n  b:\n    spec: {model: test}\n    input: \"${GREETING} {{inputs.who.name}}\"\n"
	file := filepath.Join(t.TempDir(), "p.yaml")
	_, err := l.Load(file, []byte(src))
	// The text moved by the expansion is not where the file shows it: the
	// error is at the value.
	require.EqualError(t, err, file+":7:12: inputs.who.name: the pipeline has no inputs schema, so inputs.who is a string, which has no property 'name'")

	p, err := l.Load(file, []byte(src[:strings.Index(src, "  b:")]))
	require.NoError(t, err)
	a := p.Step("a")
	assert.Equal(t, "test", a.Spec.Model)
	assert.Equal(t, "Hello there, {{inputs.who}}", a.Input.Text)
	assert.Equal(t, "Hello there, ", a.Input.Parts[0].Literal)
}

// A step's vars as written: text is its value, a reference stands as
// written for each job's value, and an escaped one is text.
func TestVarsAsWritten(t *testing.T) {
	t.Parallel()
	p := loadPipeline(t, map[string]string{
		"pipeline.yaml": `
steps:
  a:
    spec: {model: test, instructions: "{{x}} {{y}} {{z}}"}
    for_each: {glob: "*.go"}
    vars: {x: plain, y: "src/{{item}}.go", z: '\{{item}}'}
`,
	})
	vars, perJob := p.Step("a").VarsAsWritten()
	assert.Equal(t, map[string]string{"x": "plain", "y": "src/{{item}}.go", "z": "{{item}}"}, vars)
	assert.Equal(t, []string{"y"}, perJob)
}
