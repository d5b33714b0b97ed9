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
// pair (run with -benchtime 5x or more). fill-cpu/uncached is the same
// median for the process's CPU time, which other work on the machine
// disturbs less than the elapsed time.
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
	batch := func(s *spec.Spec, cached bool) (elapsed, cpu time.Duration) {
		if err := os.RemoveAll(cacheDir); err != nil {
			b.Fatal(err)
		}
		start, startCPU := time.Now(), processCPU()
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
		return time.Since(start), processCPU() - startCPU
	}
	batch(uncached, false) // warm: the change watcher, the page cache
	var ratios, cpuRatios []float64
	for i := 0; b.Loop(); i++ {
		var plain, fill, plainCPU, fillCPU time.Duration
		if i%2 == 0 {
			plain, plainCPU = batch(uncached, false)
			fill, fillCPU = batch(filling, true)
		} else {
			fill, fillCPU = batch(filling, true)
			plain, plainCPU = batch(uncached, false)
		}
		ratios = append(ratios, fill.Seconds()/plain.Seconds())
		cpuRatios = append(cpuRatios, fillCPU.Seconds()/plainCPU.Seconds())
	}
	b.ReportMetric(median(ratios), "fill/uncached")
	b.ReportMetric(median(cpuRatios), "fill-cpu/uncached")
}

// BenchmarkBatchCPU compares the CPU time (user and system, the whole
// process's) of an uncached batch of 1000 jobs at -j 8 with that of plain Go
// programs doing the same file reads and writes on the same workspaces, 8 at
// a time: each job reads input.txt, writes output.txt, reads it back and
// looks that it is there (the expected output file). The plain anchor
// writes with os.WriteFile; the replace anchor writes as write_file does, a
// new file beside output.txt, synced and renamed over it, so that a reader
// or a crash sees the old content or the new. Each iteration runs the three
// once, in rotating order; batch/plain and batch/replace are the medians
// over the iterations of the ratios within each iteration (run with
// -benchtime 5x or more), and the us/job figures the medians of each side's
// CPU per job.
func BenchmarkBatchCPU(b *testing.B) {
	const jobs, concurrency = 1000, 8
	dir := b.TempDir()
	s, workspaces := benchBatchJobs(b, dir, jobs, "")
	opts := BatchOptions{Concurrency: concurrency}
	content := []byte("The input, summarised.\n")
	cpu := func(f func()) time.Duration {
		start := processCPU()
		f()
		return processCPU() - start
	}
	batch := func() {
		sum, err := Batch(context.Background(), s, workspaces, opts)
		if err != nil {
			b.Fatal(err)
		}
		if sum.OK != jobs {
			b.Fatalf("summary %+v", sum)
		}
	}
	plain := func(write func(string, []byte) error) func() {
		return func() {
			var next atomic.Int64
			var wg sync.WaitGroup
			for range concurrency {
				wg.Go(func() {
					for i := int(next.Add(1) - 1); i < len(workspaces); i = int(next.Add(1) - 1) {
						if err := plainJob(workspaces[i], content, write); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
		}
	}
	writeFile := func(name string, data []byte) error { return os.WriteFile(name, data, 0o644) }
	sides := []func(){batch, plain(writeFile), plain(replaceFile)}
	batch() // warm: the change watcher, the page cache
	var byPlain, byReplace, batchCPU, plainCPU, replaceCPU []float64
	perJob := func(d time.Duration) float64 { return float64(d.Microseconds()) / jobs }
	for i := 0; b.Loop(); i++ {
		var took [3]time.Duration
		for j := range sides {
			k := (i + j) % len(sides)
			took[k] = cpu(sides[k])
		}
		byPlain = append(byPlain, took[0].Seconds()/took[1].Seconds())
		byReplace = append(byReplace, took[0].Seconds()/took[2].Seconds())
		batchCPU = append(batchCPU, perJob(took[0]))
		plainCPU = append(plainCPU, perJob(took[1]))
		replaceCPU = append(replaceCPU, perJob(took[2]))
	}
	b.ReportMetric(median(byPlain), "batch/plain")
	b.ReportMetric(median(byReplace), "batch/replace")
	b.ReportMetric(median(batchCPU), "cpu-us/job")
	b.ReportMetric(median(plainCPU), "plain-cpu-us/job")
	b.ReportMetric(median(replaceCPU), "replace-cpu-us/job")
}

// plainJob does what a job of benchBatchJobs does to its files, as a plain
// Go program would, writing output.txt with write.
func plainJob(workspace string, content []byte, write func(string, []byte) error) error {
	if _, err := os.ReadFile(filepath.Join(workspace, "input.txt")); err != nil {
		return err
	}
	out := filepath.Join(workspace, "output.txt")
	if err := write(out, content); err != nil {
		return err
	}
	if _, err := os.ReadFile(out); err != nil {
		return err
	}
	_, err := os.Stat(out)
	return err
}

// replaceFile replaces name with data as a careful plain Go program does: a
// temporary file in the same directory, synced, renamed over name.
func replaceFile(name string, data []byte) (err error) {
	f, err := os.CreateTemp(filepath.Dir(name), ".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			os.Remove(f.Name())
		}
	}()
	if _, err = f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err = f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), name)
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
