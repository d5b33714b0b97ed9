//go:build multiprocess

// The queue across processes: a real nats-server binary, built from the
// module, and agentspec worker processes, one of them killed with SIGKILL
// mid-run. Run with: go test -tags multiprocess ./cmd/agentspec
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// build compiles a main package into dir and returns the binary's path.
func build(t *testing.T, dir, pkg, name string) string {
	t.Helper()
	out := filepath.Join(dir, name)
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build %s:\n%s", pkg, b)
	return out
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// start starts a process, its output going to the file logPath, that the
// test kills if it is still running at the end.
func start(t *testing.T, logPath string, name string, args ...string) *exec.Cmd {
	t.Helper()
	log, err := os.Create(logPath)
	require.NoError(t, err)
	t.Cleanup(func() { log.Close() })
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = log, log
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return cmd
}

// runningSince reports whether the worker log shows a job started at least
// d ago (as this test first saw its start line) that it has not settled yet.
// started remembers when each start line was first seen.
func runningSince(log string, d time.Duration, started map[string]time.Time) bool {
	data, _ := os.ReadFile(log)
	open := map[string]bool{}
	for _, l := range strings.Split(string(data), "\n") {
		f := strings.Fields(l)
		if len(f) < 3 || f[1] != "job" {
			continue
		}
		switch {
		case strings.Contains(l, ", attempt "):
			open[f[2]] = true
			if _, ok := started[f[2]]; !ok {
				started[f[2]] = time.Now()
			}
		case f[len(f)-1] == "ok" || f[len(f)-1] == "failed":
			delete(open, f[2])
		}
	}
	for id := range open {
		if time.Since(started[id]) >= d {
			return true
		}
	}
	return false
}

const spec = `model: script:turns.yaml
instructions: Write the file, then think a while.
capabilities:
  - FileSystem: {root_dir: .}
workspace:
  expected_output_files: [out.txt]
`

const turns = `turns:
  - tool_calls:
      - {name: write_file, arguments: {path: out.txt, content: "a whole file\n"}}
  - delay: 300ms
    text: done
`

func TestWorkersAcrossProcesses(t *testing.T) {
	bin := t.TempDir()
	agentspec := build(t, bin, "github.com/agentspec/agentspec/cmd/agentspec", "agentspec")
	natsServer := build(t, bin, "github.com/nats-io/nats-server/v2", "nats-server")
	logs := t.TempDir()

	port := freePort(t)
	url := fmt.Sprintf("nats://127.0.0.1:%d", port)
	start(t, filepath.Join(logs, "nats-server.log"), natsServer, "-js", "-a", "127.0.0.1", "-p", fmt.Sprint(port), "-sd", t.TempDir())
	require.Eventually(t, func() bool {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			c.Close()
		}
		return err == nil
	}, 20*time.Second, 50*time.Millisecond, "nats-server did not start")

	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "agent.yaml"), []byte(spec), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(root, "turns.yaml"), []byte(turns), 0o644))
	const jobs = 60
	for i := range jobs {
		require.NoError(t, os.MkdirAll(filepath.Join(root, "jobs", fmt.Sprintf("job-%02d", i)), 0o755))
	}

	workers := make([]*exec.Cmd, 3)
	for i := range workers {
		workers[i] = start(t, filepath.Join(logs, fmt.Sprintf("w%d.log", i)), agentspec, "worker", "--nats", url, "--workspace-root", root, "-j", "2",
			"--ack-wait", "2s", "--name", fmt.Sprintf("w%d", i))
	}

	events := t.TempDir()
	batch := exec.Command(agentspec, "batch", "--nats", url, "--workspace-root", root, "--events", events, "-q",
		filepath.Join(root, "agent.yaml"), filepath.Join(root, "jobs", "*"))
	stdout, err := batch.StdoutPipe()
	require.NoError(t, err)
	var stderr strings.Builder
	batch.Stderr = &stderr
	require.NoError(t, batch.Start())
	deadline := time.AfterFunc(2*time.Minute, func() { _ = batch.Process.Kill() })
	defer deadline.Stop()

	type line struct {
		Workspace string
		OK        bool
		Error     *string
	}
	// Mid-run, once ten jobs have ended, the first worker dies without a
	// word while it holds a job: one its log shows started a while ago (so
	// that the job's start event has left the process) and not settled.
	tenDone := make(chan struct{})
	killed := make(chan bool, 1)
	go func() {
		<-tenDone
		started := map[string]time.Time{}
		for range 2000 {
			if runningSince(filepath.Join(logs, "w0.log"), 50*time.Millisecond, started) {
				_ = workers[0].Process.Signal(syscall.SIGKILL)
				killed <- true
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
		killed <- false
	}()
	seen := map[string]int{}
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		var l line
		require.NoError(t, json.Unmarshal(sc.Bytes(), &l), sc.Text())
		seen[l.Workspace]++
		assert.True(t, l.OK, "%s: %v", l.Workspace, l.Error)
		if len(seen) == 10 {
			close(tenDone)
		}
	}
	require.NoError(t, batch.Wait(), stderr.String())
	require.True(t, <-killed, "the first worker never held a job long enough to be killed mid-job")
	_ = workers[0].Wait()

	require.Len(t, seen, jobs, "every job ends in the results")
	for ws, n := range seen {
		assert.Equal(t, 1, n, "%s ends exactly once", ws)
		b, err := os.ReadFile(filepath.Join(ws, "out.txt"))
		require.NoError(t, err)
		assert.Equal(t, "a whole file\n", string(b))
	}

	// The killed worker held jobs when it died: other workers ran them
	// again, as second deliveries.
	redelivered := 0
	files, err := filepath.Glob(filepath.Join(events, "*.jsonl"))
	require.NoError(t, err)
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		var starts []string
		for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			var ev struct {
				Kind, Worker string
				Attempt      int
			}
			require.NoError(t, json.Unmarshal([]byte(l), &ev))
			if ev.Kind == "job.start" {
				starts = append(starts, fmt.Sprintf("%s#%d", ev.Worker, ev.Attempt))
			}
		}
		if len(starts) > 1 {
			assert.Equal(t, "w0#1", starts[0], "%s: only the killed worker's jobs run twice: %v", f, starts)
			redelivered++
		}
	}
	assert.Positive(t, redelivered, "the killed worker was running jobs")

	for _, w := range workers[1:] {
		require.NoError(t, w.Process.Signal(syscall.SIGTERM))
		require.NoError(t, w.Wait(), "a worker stops cleanly on SIGTERM")
	}
}
