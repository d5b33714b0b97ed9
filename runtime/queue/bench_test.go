package queue

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/agentspec/agentspec/runtime"
	"github.com/agentspec/agentspec/spec"
)

// BenchmarkQueueVsLocal runs the same batch of script-model jobs (each reads
// input.txt, writes output.txt, reads it back, answers: three tool rounds)
// two ways, as interleaved pairs, one pair per iteration: locally with
// runtime.Batch at -j W, and through an embedded NATS server with W
// in-process workers of one slot each (the same total concurrency). It
// reports the medians over the pairs of both rates, of their ratio
// (queue/local), and of the queue's overhead per job: the extra wall time
// of the queued batch times W, spread over its jobs (publishing, pulling,
// events, results, acknowledgements); the extra CPU time of agentspec's
// process per job (cpu-overhead-µs/job: workers and submitter), which does
// not depend on how many cores the machine lends the benchmark; and the CPU
// time the NATS server spent per queued job (server-cpu-µs/job), measured on
// a nats-server process where benchServer can start one.
//
// Three kinds of job: "tools" as above, "tools-no-events" the same with the
// workers publishing no events (agentspec worker --no-events), and "answer",
// whose model answers at once, so that the run costs little and the queue's
// own cost shows.
func BenchmarkQueueVsLocal(b *testing.B) {
	const jobs = 200
	for _, kind := range []string{"tools", "tools-no-events", "answer"} {
		for _, workers := range []int{1, 2, 4} {
			b.Run(fmt.Sprintf("job=%s/workers=%d", kind, workers), func(b *testing.B) {
				benchQueueVsLocal(b, kind, jobs, workers)
			})
		}
	}
}

func benchQueueVsLocal(b *testing.B, kind string, jobs, workers int) {
	{
		{
			root := b.TempDir()
			specPath, s, dirs := benchJobs(b, root, jobs, kind)
			url, serverCPU := benchServer(b)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			for i := range workers {
				q := benchQueue(b, url)
				w, err := NewWorker(ctx, q, WorkerOptions{Name: fmt.Sprintf("w%d", i), WorkspaceRoot: root, NoCache: true,
					NoEvents: kind == "tools-no-events"})
				if err != nil {
					b.Fatal(err)
				}
				go func() { _ = w.Run(ctx) }()
			}
			q := benchQueue(b, url)
			queued := func() time.Duration {
				start := time.Now()
				bt, err := q.NewBatch(BatchOptions{SpecPath: specPath, Spec: s, Workspaces: dirs, WorkspaceRoot: root})
				if err != nil {
					b.Fatal(err)
				}
				if err := bt.Publish(ctx); err != nil {
					b.Fatal(err)
				}
				sum, err := bt.Wait(ctx, func(o JobOutcome) {
					if o.Err != nil {
						b.Fatal(o.Err)
					}
				})
				if err != nil || sum.OK != jobs {
					b.Fatal(err, sum)
				}
				return time.Since(start)
			}
			local := func() time.Duration {
				start := time.Now()
				sum, err := runtime.Batch(ctx, s, dirs, runtime.BatchOptions{Concurrency: workers})
				if err != nil || sum.OK != jobs {
					b.Fatal(err, sum)
				}
				return time.Since(start)
			}
			queued() // warm both: the workers load the spec, the server its streams
			local()

			var localRate, queueRate, ratio, overhead, cpu, srv []float64
			for b.Loop() {
				c0 := processCPU()
				l := local()
				c1, s1 := processCPU(), serverCPU()
				qd := queued()
				c2, s2 := processCPU(), serverCPU()
				cpu = append(cpu, float64(((c2-c1)-(c1-c0)).Microseconds())/float64(jobs))
				srv = append(srv, float64((s2-s1).Microseconds())/float64(jobs))
				localRate = append(localRate, float64(jobs)/l.Seconds())
				queueRate = append(queueRate, float64(jobs)/qd.Seconds())
				ratio = append(ratio, l.Seconds()/qd.Seconds())
				overhead = append(overhead, float64((qd-l).Microseconds())*float64(workers)/float64(jobs))
			}
			b.ReportMetric(median(localRate), "local-jobs/s")
			b.ReportMetric(median(queueRate), "queue-jobs/s")
			b.ReportMetric(median(ratio), "queue/local")
			b.ReportMetric(median(overhead), "overhead-µs/job")
			b.ReportMetric(median(cpu), "cpu-overhead-µs/job")
			b.ReportMetric(median(srv), "server-cpu-µs/job")
		}
	}
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// benchServer starts a NATS server for the benchmark, and returns its URL
// and a function that reads the CPU time it has used. Where it can (Linux,
// with go on the PATH), the server is a nats-server process built from the
// module, as a deployment would run it, so that its CPU time is its own and
// the benchmark's process time is agentspec's alone; elsewhere it is
// embedded, and its CPU time counts in the process's (server-cpu is 0).
func benchServer(b *testing.B) (string, func() time.Duration) {
	if url, cpu, ok := serverProcess(b); ok {
		return url, cpu
	}
	ns, err := server.NewServer(&server.Options{
		Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: b.TempDir(), NoLog: true, NoSigs: true,
	})
	if err != nil {
		b.Fatal(err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		b.Fatal("the NATS server did not start")
	}
	b.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	return ns.ClientURL(), func() time.Duration { return 0 }
}

func benchQueue(b *testing.B, url string) *Queue {
	nc, err := nats.Connect(url)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(nc.Close)
	q, err := Open(context.Background(), nc, Options{})
	if err != nil {
		b.Fatal(err)
	}
	return q
}

func benchJobs(b *testing.B, dir string, n int, kind string) (string, *spec.Spec, []string) {
	files := map[string]string{
		"turns.yaml": `turns:
  - tool_calls: [{name: read_file, arguments: {path: input.txt}}]
  - tool_calls: [{name: write_file, arguments: {path: output.txt, content: "The input, summarised.\n"}}]
  - tool_calls: [{name: read_file, arguments: {path: output.txt}}]
  - text: Done.
`,
		"agent.yaml": "model: script:turns.yaml\ninstructions: Summarise input.txt into output.txt.\n" +
			"capabilities: [FileSystem]\nworkspace:\n  input_globs: [input.txt]\n  expected_output_files: [output.txt]\n",
	}
	if kind == "answer" {
		files["turns.yaml"] = "turns:\n  - text: Done.\n"
		files["agent.yaml"] = "model: script:turns.yaml\ninstructions: Answer.\n"
	}
	specDir := filepath.Join(dir, "spec")
	for name, content := range files {
		if err := os.MkdirAll(specDir, 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(specDir, name), []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	path := filepath.Join(specDir, "agent.yaml")
	s, err := spec.LoadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	input := []byte(strings.Repeat("A line of the job's input.\n", 40))
	dirs := make([]string, n)
	for i := range dirs {
		dirs[i] = filepath.Join(dir, "jobs", fmt.Sprintf("%04d", i))
		if err := os.MkdirAll(dirs[i], 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dirs[i], "input.txt"), input, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return path, s, dirs
}
