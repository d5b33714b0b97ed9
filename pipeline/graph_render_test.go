package pipeline

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden graphs of testdata/*/graph.*")

// TestGraphGolden renders the graph of each testdata pipeline in every
// format and compares it with its golden file.
func TestGraphGolden(t *testing.T) {
	t.Parallel()
	ext := map[string]string{"mermaid": "mmd", "dot": "dot", "json": "json"}
	for _, dir := range []string{"review-fix", "docs-report"} {
		p, err := LoadFile(filepath.Join("testdata", dir, "pipeline.yaml"))
		require.NoError(t, err)
		for _, format := range GraphFormats {
			t.Run(dir+"/"+format, func(t *testing.T) {
				var buf bytes.Buffer
				require.NoError(t, WriteGraph(&buf, p, format))
				golden := filepath.Join("testdata", dir, "graph."+ext[format])
				if *update {
					require.NoError(t, os.WriteFile(golden, buf.Bytes(), 0o644))
					return
				}
				want, err := os.ReadFile(golden)
				require.NoError(t, err, "run go test ./pipeline -run GraphGolden -update to create it")
				assert.Equal(t, string(want), buf.String())
			})
		}
	}
}

func TestWriteGraphUnknownFormat(t *testing.T) {
	t.Parallel()
	p, err := LoadFile(filepath.Join("testdata", "docs-report", "pipeline.yaml"))
	require.NoError(t, err)
	err = WriteGraph(&bytes.Buffer{}, p, "svg")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `unknown graph format "svg"; the formats are mermaid, dot, json`)
}

// graphOf loads a pipeline whose steps have inline specs and renders it.
func graphOf(t *testing.T, src, format string) string {
	t.Helper()
	p, err := Load("p.yaml", []byte(src))
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, WriteGraph(&buf, p, format))
	return buf.String()
}

const inlineSpec = "{model: test, output_schema: {type: object, properties: {xs: {type: array, items: {type: string}}, n: {type: integer}}, required: [xs, n]}}"

func TestGraphMarks(t *testing.T) {
	t.Parallel()
	src := `steps:
  end:
    spec: ` + inlineSpec + `
  a-b:
    spec: {model: test}
    needs: [end]
  c:
    spec: {model: test}
    for_each: "{{steps.end.output.xs}}"
    as: x
    input: "{{x}}"
    on_item_error: skip
  d:
    spec: {model: test}
    needs: [a-b]
    when: '{{steps.end.output.n}} > 2 && "a\"b" != "#<[x]>"'
`
	mmd := graphOf(t, src, "mermaid")
	// A step named as a Mermaid keyword, or with a dash, gets an id of its own.
	assert.Contains(t, mmd, `    Step1["end<br/>inline spec"]`)
	assert.Contains(t, mmd, `    Step2["a-b<br/>inline spec"]`)
	assert.Contains(t, mmd, `    c[["c<br/>inline spec<br/>for each x in steps.end.output.xs, failed items skipped"]]`)
	// The condition is escaped: no quote, bracket or # of it reaches Mermaid's syntax.
	assert.Contains(t, mmd, `    d{{"d<br/>inline spec<br/>when steps.end.output.n #gt; 2 #amp;#amp; #quot;a\#quot;b#quot; != #quot;#35;#lt;#91;x#93;#gt;#quot;"}}`)
	assert.Contains(t, mmd, "    Step1 -.-> Step2\n", "needs alone: dashed")
	assert.Contains(t, mmd, "    Step1 --> c\n")
	assert.Contains(t, mmd, "    Step2 -.-> d\n")
	assert.Contains(t, mmd, "    Step1 --> d\n", "a reference in when is data")

	dot := graphOf(t, src, "dot")
	assert.Contains(t, dot, `"d" [label="d\ninline spec\nwhen steps.end.output.n > 2 && \"a\\\"b\" != \"#<[x]>\"", shape=hexagon, style=dashed];`)
	assert.Contains(t, dot, `"end" -> "a-b" [style=dashed];`)
	assert.Contains(t, dot, `"end" -> "c";`)

	var g GraphJSON
	require.NoError(t, json.Unmarshal([]byte(graphOf(t, src, "json")), &g))
	assert.Equal(t, []string{"end", "a-b", "c", "d"}, g.Order)
	require.Len(t, g.Steps, 4)
	assert.Nil(t, g.Steps[0].Spec)
	assert.Equal(t, []string{}, g.Steps[0].Deps)
	assert.Equal(t, &GraphForEach{Over: "{{steps.end.output.xs}}", As: "x", OnItemError: "skip"}, g.Steps[2].ForEach)
	require.NotNil(t, g.Steps[3].When)
	assert.True(t, strings.HasPrefix(*g.Steps[3].When, "{{steps.end.output.n}} > 2"), *g.Steps[3].When)
	assert.Equal(t, []string{"end", "a-b"}, g.Steps[3].Deps)
}
