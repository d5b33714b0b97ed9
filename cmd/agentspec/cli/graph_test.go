package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestGraph(t *testing.T) {
	t.Parallel()
	file := filepath.Join(repoRoot, "pipeline", "testdata", "review-fix", "pipeline.yaml")
	golden := func(name string) string {
		b, err := os.ReadFile(filepath.Join(repoRoot, "pipeline", "testdata", "review-fix", name))
		require.NoError(t, err)
		return string(b)
	}
	for _, tc := range []struct {
		args   []string
		golden string
	}{
		{[]string{"graph", file}, "graph.mmd"},
		{[]string{"graph", "-o", "mermaid", file}, "graph.mmd"},
		{[]string{"graph", "--output", "dot", file}, "graph.dot"},
		{[]string{"graph", file, "-o", "json"}, "graph.json"},
	} {
		t.Run(strings.Join(tc.args[1:], " "), func(t *testing.T) {
			code, stdout, stderr := runCLI(t, "", tc.args...)
			require.Equal(t, 0, code, stderr)
			assert.Empty(t, stderr)
			assert.Equal(t, golden(tc.golden), stdout)
		})
	}

	code, stdout, _ := runCLI(t, "", "graph", "-o", "json", file)
	require.Equal(t, 0, code)
	var g struct{ Order []string }
	require.NoError(t, json.Unmarshal([]byte(stdout), &g))
	assert.Equal(t, []string{"triage", "fix", "review"}, g.Order)
}

func TestGraphRefuses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := writeFile(t, filepath.Join(dir, "p.yaml"), `steps:
  a:
    spec: {model: test, output_schema: {type: object, properties: {files: {type: array}}}}
  b:
    spec: {model: test}
    for_each: "{{steps.a.output.file}}"
`)
	spec := writeFile(t, filepath.Join(dir, "agent.yaml"), "model: test\n")
	unclosed := writeFile(t, filepath.Join(dir, "unclosed.yaml"), "steps:\n  a: {spec: agent.yaml\n")
	good := filepath.Join(repoRoot, "pipeline", "testdata", "docs-report", "pipeline.yaml")
	for _, tc := range []struct {
		name   string
		args   []string
		stderr string
	}{
		{"a problem at its position, as validate prints it", []string{"graph", bad},
			bad + ":6:16: steps.a.output.file: a's output_schema has no property 'file'; did you mean 'files'?\n"},
		{"a spec is not a pipeline", []string{"graph", spec},
			spec + ": not a pipeline: a pipeline is a mapping with steps: at its top level\n"},
		{"a pipeline that is not YAML, at the mistake's position", []string{"graph", unclosed},
			unclosed + ":2:6: invalid YAML: did not find expected ',' or '}' (is the { opened here closed?)\n"},
		{"a missing file", []string{"graph", filepath.Join(dir, "none.yaml")},
			"agentspec: " + filepath.Join(dir, "none.yaml") + ": no such file\n"},
		{"an unknown format", []string{"graph", "-o", "svg", good},
			"agentspec: --output must be one of mermaid, dot, json, not \"svg\"\n"},
		{"no file", []string{"graph"}, "agentspec: accepts 1 arg(s), received 0 (usage: agentspec graph PIPELINE [flags]; see agentspec graph --help)\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, "", tc.args...)
			assert.Equal(t, exitUsage, code)
			assert.Empty(t, stdout)
			assert.Equal(t, tc.stderr, stderr)
		})
	}
}

func TestGraphCompletesFormats(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := runCLI(t, "", "__complete", "graph", "-o", "")
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, []string{"mermaid", "dot", "json", ":4"}, strings.Fields(stdout))
}

// The graph the README and docs/pipelines.md show is what agentspec graph
// prints for the review-fix example.
func TestDocumentedGraphIsCurrent(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := runCLI(t, "", "graph", filepath.Join(repoRoot, "examples", "pipelines", "review-fix", "pipeline.yaml"))
	require.Equal(t, 0, code, stderr)
	for _, doc := range []string{"README.md", filepath.Join("docs", "pipelines.md")} {
		data, err := os.ReadFile(filepath.Join(repoRoot, doc))
		require.NoError(t, err)
		block := "```mermaid\n" + stdout + "```"
		if doc != "README.md" { // docs/pipelines.md indents it in a list
			block = "  " + strings.ReplaceAll(strings.TrimSuffix(block, "\n"), "\n", "\n  ")
		}
		assert.Contains(t, string(data), block, doc)
	}
}
