package pipeline

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentspec/agentspec/runtime"
	"github.com/agentspec/agentspec/spec"
)

// BenchmarkJobOverhead compares a job run by the pipeline runner (a fan-out
// item: its templates filled, its events wrapped, its result recorded) with
// runtime.Run of the same spec and input, one job at a time; the difference
// per job is the coordinator's overhead.
func BenchmarkJobOverhead(b *testing.B) {
	dir := b.TempDir()
	files := map[string]string{
		"pipeline.yaml": `
inputs:
  type: object
  properties: {items: {type: array, items: {type: string}}}
steps:
  each:
    for_each: "{{inputs.items}}"
    input: "{{item}}"
    spec: agent.yaml
`,
		"agent.yaml":  "model: script:answer.yaml\ninstructions: Answer.\n",
		"answer.yaml": "turns:\n  - text: fine\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	p, err := LoadFile(filepath.Join(dir, "pipeline.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	s, err := spec.LoadFile(filepath.Join(dir, "agent.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	ws := b.TempDir()
	const items = 32
	list := make([]any, items)
	for i := range list {
		list[i] = "item"
	}
	b.Run("runtime.Run", func(b *testing.B) {
		for b.Loop() {
			for range items {
				if _, err := runtime.Run(context.Background(), s, runtime.WithWorkspace(ws), runtime.WithInput("item")); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*items), "ns/job")
	})
	b.Run("pipeline.Run", func(b *testing.B) {
		for b.Loop() {
			res, err := Run(context.Background(), p, RunOptions{Workspace: ws, Concurrency: 1, Inputs: map[string]any{"items": list}})
			if err != nil || !res.OK() {
				b.Fatal(err, res.Steps["each"].Error)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*items), "ns/job")
	})
}
