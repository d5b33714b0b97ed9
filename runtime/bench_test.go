package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime/metrics"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/runtime/script"
	"github.com/agentspec/agentspec/spec"
)

// BenchmarkToolRounds measures the runtime's own overhead: a run whose
// scripted model calls a trivial tool for a number of rounds, then answers.
// ns/round is the cost of one round (request, normalising, replay, tool call,
// events), the run's setup spread over its rounds.
func BenchmarkToolRounds(b *testing.B) {
	noop := funcTool{name: "noop", fn: func(context.Context, json.RawMessage) (string, error) { return "ok", nil }}
	caps := WithCapabilities(toolCaps{noop})
	listener := WithListener(func(context.Context, capabilities.Event) error { return nil })
	s := newSpec()
	for _, rounds := range []int{1, 10} {
		b.Run(fmt.Sprintf("rounds=%d", rounds), func(b *testing.B) {
			turns := make([]script.Turn, rounds+1)
			for i := range rounds {
				turns[i] = script.Calls(script.Call("noop", map[string]any{"path": "a.txt"}))
			}
			turns[rounds] = script.Say("done")
			b.ReportAllocs()
			for b.Loop() {
				m := script.New(turns...)
				if _, err := Run(context.Background(), s, WithModel(m, DialectOpenAI), WithWorkspace("."), caps, listener); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rounds), "ns/round")
		})
	}
}

// BenchmarkBatch1000 runs a batch of 1000 workspace jobs, 8 at a time, with
// the script model: each job reads its input.txt, writes output.txt and reads
// it back through FileSystem (three tool rounds), then answers. It reports
// jobs/s and the peak of the live heap during the batch (peak-heap-MB,
// sampled every few milliseconds) and the descriptors still open after it
// (leaked-fds: a FileSystem that kept a watch or its root open shows here).
// With the cache on, a first, untimed batch fills the cache, and every timed
// batch is answered from it.
func BenchmarkBatch1000(b *testing.B) {
	const jobs, concurrency = 1000, 8
	for _, cached := range []bool{false, true} {
		b.Run(fmt.Sprintf("cache=%v", cached), func(b *testing.B) {
			dir := b.TempDir()
			extra := ""
			if cached {
				extra = "cache: {dir: .cache}\n"
			}
			s, workspaces := benchBatchJobs(b, dir, jobs, extra)
			opts := BatchOptions{Concurrency: concurrency}
			// An untimed batch first: it fills the cache when there is one, and
			// opens the process-wide change watcher, which stays open on
			// purpose, so that leaked-fds counts only what the timed batches
			// leave behind.
			warm := workspaces[:1]
			if cached {
				warm = workspaces
			}
			if _, err := Batch(context.Background(), s, warm, opts); err != nil {
				b.Fatal(err)
			}
			fdsBefore := openFDs()
			peak := sampleHeap()
			b.ReportAllocs()
			for b.Loop() {
				sum, err := Batch(context.Background(), s, workspaces, opts)
				if err != nil {
					b.Fatal(err)
				}
				if sum.OK != jobs || (cached && sum.Cached != jobs) {
					b.Fatalf("summary %+v", sum)
				}
			}
			b.ReportMetric(float64(jobs*b.N)/b.Elapsed().Seconds(), "jobs/s")
			b.ReportMetric(float64(peak())/(1<<20), "peak-heap-MB")
			if fdsBefore >= 0 {
				b.ReportMetric(float64(openFDs()-fdsBefore), "leaked-fds")
			}
		})
	}
}

// BenchmarkBatchCacheFill compares a batch of 1000 jobs that fills an empty
// cache with the same batch run uncached: each iteration runs one of each,
// in alternating order, on the same workspaces, and the reported
// fill/uncached is the median over the iterations of the ratio within each
// pair (run with -benchtime 5x or more).
func BenchmarkBatchCacheFill(b *testing.B) {
	const jobs, concurrency = 1000, 8
	dir := b.TempDir()
	cacheDir := filepath.Join(dir, ".cache")
	filling, workspaces := benchBatchJobs(b, dir, jobs, "cache: {dir: .cache}\n")
	uncached, err := spec.LoadFile(filepath.Join(dir, "agent.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	uncached.Cache = nil
	opts := BatchOptions{Concurrency: concurrency}
	batch := func(s *spec.Spec, cached bool) time.Duration {
		if err := os.RemoveAll(cacheDir); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		sum, err := Batch(context.Background(), s, workspaces, opts)
		if err != nil {
			b.Fatal(err)
		}
		if sum.OK != jobs || sum.Cached != 0 {
			b.Fatalf("summary %+v", sum)
		}
		if _, err := os.Stat(cacheDir); cached == os.IsNotExist(err) {
			b.Fatalf("cache dir after a batch with cache=%v: %v", cached, err)
		}
		return time.Since(start)
	}
	batch(uncached, false) // warm: the change watcher, the page cache
	var ratios []float64
	for i := 0; b.Loop(); i++ {
		var plain, fill time.Duration
		if i%2 == 0 {
			plain, fill = batch(uncached, false), batch(filling, true)
		} else {
			fill, plain = batch(filling, true), batch(uncached, false)
		}
		ratios = append(ratios, fill.Seconds()/plain.Seconds())
	}
	b.ReportMetric(median(ratios), "fill/uncached")
}

// BenchmarkBatchCPU compares the CPU time (user and system, the whole
// process's) of an uncached batch of 1000 jobs at -j 8 with that of a plain
// Go program doing the same file reads and writes on the same workspaces, 8
// at a time: each job reads input.txt, writes output.txt, reads it back and
// looks that it is there (the expected output file), with os.ReadFile,
// os.WriteFile and os.Stat. Each iteration runs one of each, in alternating
// order; batch/plain is the median over the iterations of the ratio within
// each pair (run with -benchtime 5x or more), and cpu-us/job and
// plain-cpu-us/job the medians of each side's CPU per job.
func BenchmarkBatchCPU(b *testing.B) {
	const jobs, concurrency = 1000, 8
	dir := b.TempDir()
	s, workspaces := benchBatchJobs(b, dir, jobs, "")
	opts := BatchOptions{Concurrency: concurrency}
	content := []byte("The input, summarised.\n")
	batch := func() time.Duration {
		start := processCPU()
		sum, err := Batch(context.Background(), s, workspaces, opts)
		if err != nil {
			b.Fatal(err)
		}
		if sum.OK != jobs {
			b.Fatalf("summary %+v", sum)
		}
		return processCPU() - start
	}
	plain := func() time.Duration {
		start := processCPU()
		var next atomic.Int64
		var wg sync.WaitGroup
		for range concurrency {
			wg.Go(func() {
				for i := int(next.Add(1) - 1); i < len(workspaces); i = int(next.Add(1) - 1) {
					if err := plainJob(workspaces[i], content); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		return processCPU() - start
	}
	batch() // warm: the change watcher, the page cache
	var ratios, batchCPU, plainCPU []float64
	for i := 0; b.Loop(); i++ {
		var bt, pt time.Duration
		if i%2 == 0 {
			bt, pt = batch(), plain()
		} else {
			pt, bt = plain(), batch()
		}
		ratios = append(ratios, bt.Seconds()/pt.Seconds())
		batchCPU = append(batchCPU, float64(bt.Microseconds())/jobs)
		plainCPU = append(plainCPU, float64(pt.Microseconds())/jobs)
	}
	b.ReportMetric(median(ratios), "batch/plain")
	b.ReportMetric(median(batchCPU), "cpu-us/job")
	b.ReportMetric(median(plainCPU), "plain-cpu-us/job")
}

// plainJob does what a job of benchBatchJobs does to its files, as a plain
// Go program would.
func plainJob(workspace string, content []byte) error {
	if _, err := os.ReadFile(filepath.Join(workspace, "input.txt")); err != nil {
		return err
	}
	out := filepath.Join(workspace, "output.txt")
	if err := os.WriteFile(out, content, 0o644); err != nil {
		return err
	}
	if _, err := os.ReadFile(out); err != nil {
		return err
	}
	_, err := os.Stat(out)
	return err
}

func median(xs []float64) float64 {
	slices.Sort(xs)
	return xs[len(xs)/2]
}

func benchBatchJobs(b *testing.B, dir string, n int, specExtra string) (*spec.Spec, []string) {
	b.Helper()
	files := map[string]string{
		"turns.yaml": `
turns:
  - tool_calls: [{name: read_file, arguments: {path: input.txt}}]
    usage: {input_tokens: 120, output_tokens: 10}
  - tool_calls: [{name: write_file, arguments: {path: output.txt, content: "The input, summarised.\n"}}]
    usage: {input_tokens: 180, output_tokens: 20}
  - tool_calls: [{name: read_file, arguments: {path: output.txt}}]
    usage: {input_tokens: 220, output_tokens: 10}
  - text: Done.
    usage: {input_tokens: 260, output_tokens: 2}
`,
		"agent.yaml": "version: 1\nmodel: script:turns.yaml\ninstructions: Summarise input.txt into output.txt.\n" +
			"capabilities: [FileSystem]\nworkspace:\n  input_globs: [input.txt]\n  expected_output_files: [output.txt]\n" + specExtra,
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	s, err := spec.LoadFile(filepath.Join(dir, "agent.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	input := []byte(strings.Repeat("A line of the job's input.\n", 40))
	workspaces := make([]string, n)
	for i := range workspaces {
		workspaces[i] = filepath.Join(dir, "jobs", fmt.Sprintf("%04d", i))
		if err := os.MkdirAll(workspaces[i], 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(workspaces[i], "input.txt"), input, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return s, workspaces
}

// openFDs counts the process's open descriptors, or returns -1 where
// /proc/self/fd does not exist.
func openFDs() int {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(entries)
}

// sampleHeap samples the bytes of live and not yet swept heap objects until
// the returned function is called, which reports the largest sample.
func sampleHeap() (peak func() uint64) {
	samples := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	var max atomic.Uint64
	read := func() {
		metrics.Read(samples)
		if v := samples[0].Value.Uint64(); v > max.Load() {
			max.Store(v)
		}
	}
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			read()
			select {
			case <-tick.C:
			case <-done:
				return
			}
		}
	}()
	return func() uint64 {
		close(done)
		<-stopped
		read()
		return max.Load()
	}
}
