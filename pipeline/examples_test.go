package pipeline_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/pipeline"
	"github.com/agentspec/agentspec/runtime"
)

// examplesDir holds the example pipelines docs/pipelines.md points at.
const examplesDir = "../examples/pipelines"

func loadExample(t *testing.T, name string) *pipeline.Pipeline {
	t.Helper()
	p, err := pipeline.LoadFile(filepath.Join(examplesDir, name, "pipeline.yaml"))
	require.NoError(t, err)
	return p
}

// TestExamplesLoad loads every example pipeline and checks each step's
// spec as `agentspec validate` does (the model and its script file, the
// capabilities built in the example's workspace, with their {{vars}}
// filled by a value each: the first item an actual run gives them).
func TestExamplesLoad(t *testing.T) {
	t.Parallel()
	sample := map[string]map[string]string{
		"review-fix":  {"package": "grades", "file": "stats.py"},
		"docs-report": {"file": "inbox/2026-11-30-planning.md"},
	}
	dirs, err := filepath.Glob(filepath.Join(examplesDir, "*", "pipeline.yaml"))
	require.NoError(t, err)
	require.Len(t, dirs, len(sample), "every example pipeline has sample vars here")
	for name, vals := range sample {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := loadExample(t, name)
			ws := filepath.Join(examplesDir, name, "workspace")
			for _, s := range p.Steps {
				vars := map[string]string{}
				for _, v := range s.Vars {
					vars[v.Name] = cmpOr(vals[v.Name], "x")
				}
				assert.NoError(t, runtime.Check(context.Background(), s.Spec,
					runtime.WithWorkspace(ws), runtime.WithVars(vars)), s.Name)
			}
		})
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// TestReviewFixExampleRuns runs the review-fix example's steps in the
// pipeline's order over a copy of its workspace, each job exactly a
// runtime.Run of its spec with its templates filled from the answers before
// it: the scripted models' calls fit the specs and the workspace, and the
// bug is really fixed.
func TestReviewFixExampleRuns(t *testing.T) {
	t.Parallel()
	p := loadExample(t, "review-fix")
	ws := copyDir(t, filepath.Join(examplesDir, "review-fix", "workspace"))
	out := runSteps(t, p, ws)

	assert.Equal(t, true, out["review"].(map[string]any)["approved"])
	fixes := out["fix"].([]any)
	require.Len(t, fixes, 2, "one fix job per file triage lists")
	for _, pkg := range []string{"grades", "sensors"} {
		b, err := os.ReadFile(filepath.Join(ws, pkg, "stats.py"))
		require.NoError(t, err)
		assert.Contains(t, string(b), "    for x in xs:\n        total += x\n", pkg)
		assert.NotContains(t, string(b), "range(1, len(xs))", pkg)
	}
	if py, err := exec.LookPath("python3"); err == nil {
		cmd := exec.Command(py, "check.py")
		cmd.Dir = ws
		b, err := cmd.CombinedOutput()
		assert.NoError(t, err, "%s", b)
		assert.Equal(t, "ok\n", string(b))
	}
}

// TestDocsReportExampleRuns runs the docs-report example's steps in order:
// one extract job per inbox/*.md file, then merge and report.
func TestDocsReportExampleRuns(t *testing.T) {
	t.Parallel()
	p := loadExample(t, "docs-report")
	ws := copyDir(t, filepath.Join(examplesDir, "docs-report", "workspace"))
	docs, err := filepath.Glob(filepath.Join(ws, "inbox", "*.md"))
	require.NoError(t, err)
	out := runSteps(t, p, ws)
	assert.Len(t, out["extract"], len(docs))
	assert.Contains(t, out["merge"], "facts")
	assert.NotEmpty(t, out["report"])
}

// runSteps runs p with the runner over ws and returns each step's answer
// (a fan-out step's: the list of its items' answers), after checking that
// every step ran and succeeded.
func runSteps(t *testing.T, p *pipeline.Pipeline, ws string) map[string]any {
	t.Helper()
	res, err := pipeline.Run(context.Background(), p, pipeline.RunOptions{Workspace: ws,
		Options: []runtime.Option{runtime.WithoutCache()}})
	require.NoError(t, err)
	out := map[string]any{}
	for _, st := range p.Steps {
		r := res.Steps[st.Name]
		require.True(t, r.OK, "%s: %s", st.Name, r.Error)
		if st.FanOut() {
			out[st.Name] = r.Outputs
		} else {
			out[st.Name] = r.Output
		}
	}
	return out
}

// copyDir copies the example's workspace, which the run changes.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	require.NoError(t, os.CopyFS(dst, os.DirFS(src)))
	return dst
}
