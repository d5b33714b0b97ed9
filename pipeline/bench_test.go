package pipeline

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/agentspec/agentspec/runtime"
	"github.com/agentspec/agentspec/spec"
)

// BenchmarkJobOverhead compares a job run by the pipeline runner (a fan-out
// item: its templates filled, its events wrapped, its result recorded) with
// runtime.Run of the same spec and input, one job at a time, as medians of
// interleaved pairs; the difference per job is the coordinator's overhead
// (the target: under 5 ms).
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
	// Interleaved pairs, one per iteration: 32 jobs through runtime.Run,
	// then the same 32 as a fan-out of the runner, each side timed per job.
	var direct, piped, overhead []float64
	for b.Loop() {
		start := time.Now()
		for range items {
			if _, err := runtime.Run(context.Background(), s, runtime.WithWorkspace(ws), runtime.WithInput("item")); err != nil {
				b.Fatal(err)
			}
		}
		d := float64(time.Since(start).Nanoseconds()) / items
		start = time.Now()
		res, err := Run(context.Background(), p, RunOptions{Workspace: ws, Concurrency: 1, Inputs: map[string]any{"items": list}})
		if err != nil || !res.OK() {
			b.Fatal(err, res.Steps["each"].Error)
		}
		r := float64(time.Since(start).Nanoseconds()) / items
		direct, piped, overhead = append(direct, d), append(piped, r), append(overhead, r-d)
	}
	b.ReportMetric(median(direct)/1e3, "run-µs/job")
	b.ReportMetric(median(piped)/1e3, "pipeline-µs/job")
	b.ReportMetric(median(overhead)/1e3, "overhead-µs/job")
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}
