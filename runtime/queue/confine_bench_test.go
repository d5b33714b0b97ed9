package queue

import (
	"context"
	"testing"
	"time"

	"github.com/agentspec/agentspec/runtime"
)

// BenchmarkConfineVsRun measures what asking a job's capabilities what they
// reach costs a worker, against its anchor, the run of the same job
// (runtime.Run of the "tools" spec of BenchmarkQueueVsLocal, uncached), as
// interleaved pairs, one pair per iteration: it reports the medians of
// both times per job and of their ratio (confine/run).
func BenchmarkConfineVsRun(b *testing.B) {
	const n = 50
	root := b.TempDir()
	_, s, dirs := benchJobs(b, root, n, "tools")
	w := &Worker{opts: WorkerOptions{}}
	ctx := context.Background()
	var confineNs, runNs, ratios []float64
	for b.Loop() {
		start := time.Now()
		for _, d := range dirs {
			if err := w.confine(ctx, s, d); err != nil {
				b.Fatal(err)
			}
		}
		c := float64(time.Since(start).Nanoseconds()) / n
		start = time.Now()
		for _, d := range dirs {
			if _, err := runtime.Run(ctx, s, runtime.WithWorkspace(d), runtime.WithoutCache()); err != nil {
				b.Fatal(err)
			}
		}
		r := float64(time.Since(start).Nanoseconds()) / n
		confineNs, runNs, ratios = append(confineNs, c), append(runNs, r), append(ratios, c/r)
	}
	b.ReportMetric(median(confineNs)/1e3, "confine-µs/job")
	b.ReportMetric(median(runNs)/1e3, "run-µs/job")
	b.ReportMetric(median(ratios), "confine/run")
}
