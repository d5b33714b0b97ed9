package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// startNATS starts a NATS server with JetStream in a temporary directory, on
// a loopback port of its own.
func startNATS(t *testing.T) string {
	t.Helper()
	ns, err := server.NewServer(&server.Options{
		Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true,
	})
	require.NoError(t, err)
	go ns.Start()
	require.True(t, ns.ReadyForConnections(10*time.Second), "the NATS server did not start")
	t.Cleanup(func() {
		ns.Shutdown()
		ns.WaitForShutdown()
	})
	return ns.ClientURL()
}

// startWorkerCmd runs "agentspec worker" until the test ends, as SIGTERM
// would end it, and returns what it printed then.
func startWorkerCmd(t *testing.T, args ...string) func() runOutcome {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- Main(ctx, append([]string{"worker"}, args...), strings.NewReader(""), &stdout, &stderr)
	}()
	var out *runOutcome
	stop := func() runOutcome {
		if out == nil {
			cancel()
			out = &runOutcome{code: <-done, stdout: stdout.String(), stderr: stderr.String()}
		}
		return *out
	}
	t.Cleanup(func() { stop() })
	return stop
}

func invoke(t *testing.T, args ...string) runOutcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := Main(ctx, args, strings.NewReader(""), &stdout, &stderr)
	return runOutcome{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// batch --nats prints what local batch prints, jobs run by workers.
func TestBatchOverNATS(t *testing.T) {
	t.Parallel()
	url := startNATS(t)
	f := newBatchFixture(t, 3, "cache: true\n")
	stop := startWorkerCmd(t, "--nats", url, "--workspace-root", f.dir, "-j", "2", "--name", "w1")
	events := t.TempDir()

	pattern := filepath.Join(f.dir, "jobs", "job-*")
	out := invoke(t, "batch", "--nats", url, "--workspace-root", f.dir, "--events", events, f.spec, pattern)
	require.Equal(t, 0, out.code, out.stderr)
	lines := jobLines(t, out.stdout)
	require.Len(t, lines, 3)
	for i := range 3 {
		l := lines[f.job(i)]
		assert.True(t, l.OK, "job %d: %v", i, l.Error)
		assert.False(t, l.Cached)
		assert.JSONEq(t, `{"copied": true}`, string(l.Output))
		require.NotNil(t, l.Usage)
		assert.Equal(t, 3, l.Usage.Requests)
		assert.FileExists(t, f.job(i, "output.txt"))
	}
	assert.Regexp(t, `(?m)^3 jobs: 3 ok \(0 cached\), 0 failed, 0 not run, `, out.stderr)

	// Each job's events, from the worker's job.start to the run's run.end.
	files, err := filepath.Glob(filepath.Join(events, "*.jsonl"))
	require.NoError(t, err)
	require.Len(t, files, 3)
	assert.Equal(t, "job-0.events.jsonl", filepath.Base(files[0]), "named as a local batch names them")
	data, err := os.ReadFile(files[0])
	require.NoError(t, err)
	var kinds []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	runIDs := map[string]bool{}
	for sc.Scan() {
		var ev struct {
			Kind, Worker, Time string
			RunID              string `json:"run_id"`
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &ev))
		kinds = append(kinds, ev.Kind)
		if ev.Kind == "job.start" {
			assert.Equal(t, "w1", ev.Worker)
		}
		// Every event, the worker's job.start too, carries its time and
		// the run's id, as run --events writes them.
		assert.NotEmpty(t, ev.Time, sc.Text())
		assert.NotEmpty(t, ev.RunID, sc.Text())
		runIDs[ev.RunID] = true
	}
	assert.Len(t, runIDs, 1, "one run, one run_id")
	require.NotEmpty(t, kinds)
	assert.Equal(t, "job.start", kinds[0])
	assert.Equal(t, "run.end", kinds[len(kinds)-1])
	assert.Contains(t, kinds, "run.tool_call")

	// Again: answered from the shared cache.
	out = invoke(t, "batch", "--nats", url, "--workspace-root", f.dir, "-q", f.spec, pattern)
	require.Equal(t, 0, out.code, out.stderr)
	for ws, l := range jobLines(t, out.stdout) {
		assert.True(t, l.OK && l.Cached, ws)
	}

	// A cached job whose output is gone runs again, with the warning the
	// worker met.
	require.NoError(t, os.Remove(f.job(0, "output.txt")))
	out = invoke(t, "batch", "--nats", url, "--workspace-root", f.dir, f.spec, pattern)
	require.Equal(t, 0, out.code, out.stderr)
	lines = jobLines(t, out.stdout)
	assert.False(t, lines[f.job(0)].Cached)
	assert.True(t, lines[f.job(1)].Cached)
	assert.Regexp(t, `(?m)^  cache \(`+regexp.QuoteMeta(f.job(0))+`\): cache entry [0-9a-f]{12}: expected output files are missing: output.txt$`, out.stderr)
	assert.FileExists(t, f.job(0, "output.txt"))

	st := invoke(t, "queue", "stats", "--nats", url, "--json")
	require.Equal(t, 0, st.code, st.stderr)
	var stats struct {
		Pending, Succeeded, Failed uint64
		Running                    int
		CacheEntries               int64 `json:"cache_entries"`
	}
	require.NoError(t, json.Unmarshal([]byte(st.stdout), &stats))
	assert.Equal(t, uint64(9), stats.Succeeded)
	assert.Equal(t, int64(3), stats.CacheEntries)
	st = invoke(t, "queue", "stats", "--nats", url)
	require.Equal(t, 0, st.code, st.stderr)
	assert.Contains(t, st.stdout, "results (24h): 9 succeeded, 0 failed\ncache AGENTSPEC_CACHE: 3 entries\n")

	w := stop()
	assert.Equal(t, 0, w.code, w.stderr)
	assert.Contains(t, w.stderr, "worker w1: 2 at a time, on AGENTSPEC")
}

// submit publishes a job and, with --ship, brings its changes home.
func TestSubmit(t *testing.T) {
	t.Parallel()
	url := startNATS(t)
	f := newBatchFixture(t, 3, "")
	startWorkerCmd(t, "--nats", url, "--workspace-root", f.dir, "-q")

	out := invoke(t, "submit", "--nats", url, "--ship", "-q", f.spec, f.job(0))
	require.Equal(t, 0, out.code, out.stderr)
	lines := jobLines(t, out.stdout)
	require.Len(t, lines, 1)
	assert.True(t, lines[f.job(0)].OK)
	got, err := os.ReadFile(f.job(0, "output.txt"))
	require.NoError(t, err)
	assert.Equal(t, "copied\n", string(got), "the run's file came back")

	// Without --wait: the job's id and workspace, at once, after the spec's
	// warnings.
	spec, err := os.ReadFile(f.spec)
	require.NoError(t, err)
	warned := writeFile(t, filepath.Join(f.dir, "warned.yaml"), string(spec)+"end_strategy: early\n")
	out = invoke(t, "submit", "--nats", url, "--workspace-root", f.dir, warned, f.job(1))
	require.Equal(t, 0, out.code, out.stderr)
	assert.Contains(t, out.stderr, warned+":9:1: warning: end_strategy: has no effect in agentspec")
	var line struct{ Job, Workspace string }
	require.NoError(t, json.Unmarshal([]byte(out.stdout), &line))
	assert.Regexp(t, `^[A-Za-z0-9]+\.0$`, line.Job)
	assert.Equal(t, f.job(1), line.Workspace)
	assert.Eventually(t, func() bool {
		_, err := os.Stat(f.job(1, "output.txt"))
		return err == nil
	}, 20*time.Second, 20*time.Millisecond, "a worker runs the submitted job")

	// --events waits for the job, since its events come only as it runs.
	events := filepath.Join(t.TempDir(), "events")
	out = invoke(t, "submit", "--nats", url, "--workspace-root", f.dir, "--events", events, "-q", warned, f.job(2))
	require.Equal(t, 0, out.code, out.stderr)
	assert.Empty(t, out.stderr, "-q silences the warnings too")
	require.True(t, jobLines(t, out.stdout)[f.job(2)].OK, out.stdout)
	data, err := os.ReadFile(filepath.Join(events, "job-2.events.jsonl"))
	require.NoError(t, err)
	assert.Contains(t, string(data), `"kind":"job.start"`)
	assert.Contains(t, string(data), `"kind":"run.end"`)
}

func TestQueueUsageErrors(t *testing.T) {
	t.Parallel()
	f := newBatchFixture(t, 1, "")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"batch", "--ship", f.spec, f.job(0)}, "agentspec: --ship needs --nats\n"},
		{[]string{"batch", "--nats", "nats://127.0.0.1:1", "-j", "2", f.spec, f.job(0)},
			"agentspec: -j sets how many jobs run here; with --nats each worker sets its own (agentspec worker -j)\n"},
		{[]string{"batch", "--nats", "nats://127.0.0.1:1", "--ship", "--workspace-root", ".", f.spec, f.job(0)},
			"agentspec: --workspace-root names shared storage; --ship sends the workspaces instead: give one of them\n"},
		{[]string{"worker", "--nats", "nats://127.0.0.1:1", "-j", "0"}, "agentspec: -j must be at least 1, not 0\n"},
		{[]string{"worker", "--nats", "nats://127.0.0.1:1", "--ship-max", "0"}, "agentspec: --ship-max must be from 1 to 1048576 (MiB), not 0\n"},
		// An acknowledgement wait of none is refused, not taken as 30s.
		{[]string{"worker", "--nats", "nats://127.0.0.1:1", "--ack-wait", "0s"}, "agentspec: --ack-wait must be more than 0, not 0s\n"},
		{[]string{"worker", "--nats", "nats://127.0.0.1:1", "--ack-wait", "-5s"}, "agentspec: --ack-wait must be more than 0, not -5s\n"},
		// A root that is not a directory is said before connecting, not
		// after, as a failure (exit 1).
		{[]string{"worker", "--nats", "nats://127.0.0.1:1", "--workspace-root", filepath.Join(f.dir, "missing")},
			"agentspec: --workspace-root " + filepath.Join(f.dir, "missing") + " is not a directory\n"},
		{[]string{"worker", "--nats", "nats://127.0.0.1:1", "--workspace-root", f.spec},
			"agentspec: --workspace-root " + f.spec + " is not a directory\n"},
		{[]string{"submit", f.spec, f.job(0)}, "agentspec: no NATS server: give --nats URL or set AGENTSPEC_NATS_URL\n"},
	} {
		out := invoke(t, tc.args...)
		assert.Equal(t, exitUsage, out.code, "%v: %s", tc.args, out.stderr)
		assert.Equal(t, tc.want, out.stderr, tc.args)
	}
	// A server without JetStream is said so.
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true})
	require.NoError(t, err)
	go ns.Start()
	require.True(t, ns.ReadyForConnections(10*time.Second))
	t.Cleanup(ns.Shutdown)
	out := invoke(t, "queue", "stats", "--nats", ns.ClientURL())
	assert.Equal(t, exitFailure, out.code)
	assert.Contains(t, out.stderr, "agentspec: the NATS server at "+ns.ClientURL()+" has no JetStream for this account (start it with nats-server -js): ")

	// A server that is not there is a failure, said in one line.
	out = invoke(t, "queue", "stats", "--nats", "nats://127.0.0.1:1")
	assert.Equal(t, exitFailure, out.code)
	assert.Contains(t, out.stderr, "agentspec: connecting to nats://127.0.0.1:1: ")
}

// $AGENTSPEC_NATS_URL stands in for --nats.
func TestNATSURLFromTheEnvironment(t *testing.T) {
	url := startNATS(t)
	t.Setenv(envNATS, url)
	out := invoke(t, "queue", "stats")
	require.Equal(t, 0, out.code, out.stderr)
	assert.Contains(t, out.stdout, "queue AGENTSPEC: 0 pending, 0 running (0 redelivered)")
}

// A workspace the workers could not find under the shared workspace root is
// refused before any job is published: for batch, and for a pipeline's run
// and batch.
func TestQueueRefusesWorkspacesOutsideTheRootBeforeSubmitting(t *testing.T) {
	t.Parallel()
	url := startNATS(t)
	f := newBatchFixture(t, 2, "")
	pipelineFile := f.onePipeline(t)
	jobs := filepath.Join(f.dir, "jobs", "job-*")
	// Without --workspace-root the root is the current directory, which
	// the temporary directories are not under.
	for name, args := range map[string][]string{
		"batch":          {"batch", "--nats", url, f.spec, jobs},
		"batch (root)":   {"batch", "--nats", url, "--workspace-root", f.dir, f.spec, f.dir},
		"pipeline run":   {"run", "--nats", url, "--workspace", f.job(0), pipelineFile},
		"pipeline batch": {"batch", "--nats", url, pipelineFile, jobs},
	} {
		out := invoke(t, args...)
		assert.Equal(t, exitUsage, out.code, "%s: %s", name, out.stderr)
		if name == "batch (root)" {
			assert.Contains(t, out.stderr, "is the workspace root "+f.dir+" itself", name)
		} else {
			assert.Contains(t, out.stderr, " is not under the workspace root . (--workspace-root names the directory the workers share)", name)
		}
		assert.Empty(t, out.stdout, name)
	}
	out := invoke(t, "queue", "stats", "--nats", url, "-o", "json")
	require.Equal(t, 0, out.code, out.stderr)
	var st struct{ Pending, Running, Succeeded, Failed int }
	require.NoError(t, json.Unmarshal([]byte(out.stdout), &st), out.stdout)
	assert.Zero(t, st, "nothing was published")
}

// An events file batch --nats cannot write fails the batch (exit 1) naming
// it, as a local batch's does, and the other jobs' files are still written.
func TestBatchOverNATSReportsEventsItCannotWrite(t *testing.T) {
	t.Parallel()
	url := startNATS(t)
	f := newBatchFixture(t, 2, "")
	startWorkerCmd(t, "--nats", url, "--workspace-root", f.dir, "--name", "w1")
	events := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(events, "job-0.events.jsonl"), 0o755)) // in the way of job-0's file

	out := invoke(t, "batch", "--nats", url, "--workspace-root", f.dir, "--events", events, "-q", f.spec, filepath.Join(f.dir, "jobs", "job-*"))
	assert.Equal(t, exitFailure, out.code, out.stderr)
	assert.Contains(t, out.stderr, "--events: open "+filepath.Join(events, "job-0.events.jsonl")+": is a directory")
	for ws, l := range jobLines(t, out.stdout) {
		assert.True(t, l.OK, ws)
	}
	data, err := os.ReadFile(filepath.Join(events, "job-1.events.jsonl"))
	require.NoError(t, err)
	assert.Contains(t, string(data), `"kind":"run.end"`)
}

// queue stats refuses an -o it does not know before it connects, so that
// a usage error is one (exit 2) whether or not the server is up.
func TestQueueStatsChecksTheFormatFirst(t *testing.T) {
	t.Parallel()
	out := invoke(t, "queue", "stats", "--nats", "nats://127.0.0.1:1", "-o", "yaml")
	assert.Equal(t, exitUsage, out.code, out.stderr)
	assert.Equal(t, "agentspec: --output must be text or json, not \"yaml\"\n", out.stderr)
}

// --ship-max caps what --ship sends: without --ship it would change
// nothing, so batch, submit and a pipeline's run and batch refuse it
// before they connect.
func TestShipMaxNeedsShip(t *testing.T) {
	t.Parallel()
	f := newBatchFixture(t, 1, "")
	pipelineFile := f.onePipeline(t)
	nats := []string{"--nats", "nats://127.0.0.1:1", "--workspace-root", f.dir, "--ship-max", "5"}
	usageErrors(t, "agentspec: --ship-max caps what --ship sends; without --ship nothing is sent\n", map[string][]string{
		"batch":          append([]string{"batch", f.spec, f.job(0)}, nats...),
		"submit":         append([]string{"submit", f.spec, f.job(0)}, nats...),
		"pipeline run":   append([]string{"run", pipelineFile, "--workspace", f.job(0)}, nats...),
		"pipeline batch": append([]string{"batch", pipelineFile, f.job(0)}, nats...),
	})
}

// --events DIR that names a file is a usage error (exit 2) said the same
// way by every batch, here or over NATS (before connecting), spec or
// pipeline, and by submit; the file is left as it was.
func TestEventsDirThatIsAFile(t *testing.T) {
	t.Parallel()
	f := newBatchFixture(t, 1, "")
	pipelineFile := f.onePipeline(t)
	file := writeFile(t, filepath.Join(t.TempDir(), "events"), "keep me")
	nats := []string{"--nats", "nats://127.0.0.1:1", "--workspace-root", f.dir}
	usageErrors(t, "agentspec: --events "+file+" is not a directory: each job's events go to a file of their own in it\n", map[string][]string{
		"batch":               {"batch", "--events", file, f.spec, f.job(0)},
		"pipeline batch":      {"batch", "--events", file, pipelineFile, f.job(0)},
		"batch --nats":        append([]string{"batch", "--events", file, f.spec, f.job(0)}, nats...),
		"pipeline batch NATS": append([]string{"batch", "--events", file, pipelineFile, f.job(0)}, nats...),
		"submit":              append([]string{"submit", "--events", file, f.spec, f.job(0)}, nats...),
	})
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.Equal(t, "keep me", string(data))
}

// --ship-max is bounded as the worker bounds its own, 1 to 1048576 MiB
// (1 TiB), by every command that takes it: a larger cap would overflow
// once made bytes and stand for another, as 2^43 MiB did for the default.
func TestShipMaxIsBoundedEverywhere(t *testing.T) {
	t.Parallel()
	f := newBatchFixture(t, 1, "")
	pipelineFile := f.onePipeline(t)
	for _, n := range []string{"0", "1048577", "8796093022208"} {
		nats := []string{"--nats", "nats://127.0.0.1:1", "--ship", "--ship-max", n}
		usageErrors(t, "agentspec: --ship-max must be from 1 to 1048576 (MiB), not "+n+"\n", map[string][]string{
			"batch":          append([]string{"batch", f.spec, f.job(0)}, nats...),
			"submit":         append([]string{"submit", f.spec, f.job(0)}, nats...),
			"pipeline run":   append([]string{"run", pipelineFile, "--workspace", f.job(0)}, nats...),
			"pipeline batch": append([]string{"batch", pipelineFile, f.job(0)}, nats...),
			"worker":         {"worker", "--nats", "nats://127.0.0.1:1", "--ship-max", n},
		})
	}
}

// --tls-cert without --tls-key, or the key without the certificate, is a
// usage error (exit 2) for every command that reaches the queue, said
// before it connects.
func TestTLSCertNeedsItsKey(t *testing.T) {
	t.Parallel()
	f := newBatchFixture(t, 1, "")
	pipelineFile := f.onePipeline(t)
	for _, half := range [][]string{{"--tls-cert", "cert.pem"}, {"--tls-key", "key.pem"}} {
		nats := append([]string{"--nats", "nats://127.0.0.1:1"}, half...)
		usageErrors(t, "agentspec: a TLS client certificate needs its key, and a key its certificate (--tls-cert and --tls-key)\n", map[string][]string{
			"batch":        append([]string{"batch", "--workspace-root", f.dir, f.spec, f.job(0)}, nats...),
			"submit":       append([]string{"submit", "--workspace-root", f.dir, f.spec, f.job(0)}, nats...),
			"worker":       append([]string{"worker"}, nats...),
			"pipeline run": append([]string{"run", pipelineFile, "--workspace-root", f.dir, "--workspace", f.job(0)}, nats...),
			"queue stats":  append([]string{"queue", "stats"}, nats...),
		})
	}
}

// onePipeline writes a pipeline file of one offline step beside the
// fixture's spec.
func (f *batchFixture) onePipeline(t *testing.T) string {
	t.Helper()
	return writeFile(t, filepath.Join(f.dir, "pipeline.yaml"), "steps:\n  only: {spec: {model: test, instructions: Answer.}}\n")
}

// usageErrors runs each named command line and wants it refused as a usage
// error (exit 2) with stderr want and nothing on stdout.
func usageErrors(t *testing.T, want string, lines map[string][]string) {
	t.Helper()
	for name, args := range lines {
		out := invoke(t, args...)
		assert.Equal(t, exitUsage, out.code, "%s: %s", name, out.stderr)
		assert.Equal(t, want, out.stderr, name)
		assert.Empty(t, out.stdout, name)
	}
}

// A NATS credentials, NKey or TLS file that holds something else is a usage
// error (exit 2) too, said before connecting, as a spec that does not load
// is: the server is not at fault, and nothing was reached.
func TestQueueFilesMustHoldWhatTheyName(t *testing.T) {
	t.Parallel()
	f := newBatchFixture(t, 1, "")
	garbage := writeFile(t, filepath.Join(t.TempDir(), "garbage"), "not a key\n")
	for _, flags := range [][]string{
		{"--creds", garbage}, {"--nkey", garbage}, {"--tls-ca", garbage},
		{"--tls-cert", garbage, "--tls-key", garbage},
	} {
		nats := append([]string{"--nats", "nats://127.0.0.1:1"}, flags...)
		for name, args := range map[string][]string{
			"batch":       append([]string{"batch", "--workspace-root", f.dir, f.spec, f.job(0)}, nats...),
			"submit":      append([]string{"submit", "--workspace-root", f.dir, f.spec, f.job(0)}, nats...),
			"worker":      append([]string{"worker"}, nats...),
			"queue stats": append([]string{"queue", "stats"}, nats...),
		} {
			out := invoke(t, args...)
			assert.Equal(t, exitUsage, out.code, "%s %s: %s", name, flags[0], out.stderr)
			assert.True(t, strings.HasPrefix(out.stderr, "agentspec: "+flags[0]+" "+garbage+": "), "%s: %s", name, out.stderr)
			assert.NotContains(t, out.stderr, "connecting", name)
			assert.Empty(t, out.stdout, name)
		}
	}
}

// A NATS credentials, NKey or TLS file that cannot be read is a usage error
// (exit 2) for every command that reaches the queue, said before it
// connects, as a missing --input-file is.
func TestQueueFilesMustBeReadable(t *testing.T) {
	t.Parallel()
	f := newBatchFixture(t, 1, "")
	missing := filepath.Join(t.TempDir(), "none")
	for _, flag := range []string{"--creds", "--nkey", "--tls-ca"} {
		nats := []string{"--nats", "nats://127.0.0.1:1", flag, missing}
		usageErrors(t, "agentspec: "+flag+" "+missing+": no such file or directory\n", map[string][]string{
			"batch":       append([]string{"batch", "--workspace-root", f.dir, f.spec, f.job(0)}, nats...),
			"submit":      append([]string{"submit", "--workspace-root", f.dir, f.spec, f.job(0)}, nats...),
			"worker":      append([]string{"worker"}, nats...),
			"queue stats": append([]string{"queue", "stats"}, nats...),
		})
	}
}

// userSeed is an NKey user seed made for the tests, which hold no account.
const userSeed = "SUAF4FQJRAXTXE6KCWXOAMYZFP533ACSAFYOA3HRENMGH4YCQGPHQLYQ5E"

// --creds and --nkey together are a usage error (exit 2) for every
// command that reaches the queue, said before it connects, as --tls-cert
// without --tls-key is: the NATS client authenticates with one of them.
func TestCredsAndNKeyNotBoth(t *testing.T) {
	t.Parallel()
	f := newBatchFixture(t, 1, "")
	dir := t.TempDir()
	nkey := writeFile(t, filepath.Join(dir, "user.nk"), userSeed+"\n")
	creds := writeFile(t, filepath.Join(dir, "user.creds"), "-----BEGIN NATS USER JWT-----\n"+
		"eyJ0eXAiOiJKV1QiLCJhbGciOiJlZDI1NTE5LW5rZXkifQ.e30.c2lnbmF0dXJl\n------END NATS USER JWT------\n\n"+
		"-----BEGIN USER NKEY SEED-----\n"+userSeed+"\n------END USER NKEY SEED------\n")
	nats := []string{"--nats", "nats://127.0.0.1:1", "--creds", creds, "--nkey", nkey}
	usageErrors(t, "agentspec: give one of --creds and --nkey, not both\n", map[string][]string{
		"batch":       append([]string{"batch", "--workspace-root", f.dir, f.spec, f.job(0)}, nats...),
		"submit":      append([]string{"submit", "--workspace-root", f.dir, f.spec, f.job(0)}, nats...),
		"worker":      append([]string{"worker"}, nats...),
		"queue stats": append([]string{"queue", "stats"}, nats...),
	})
}
