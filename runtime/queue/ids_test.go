package queue

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// poisonJobs are jobs whose id, batch or index could not make the subjects
// of their results, each published on a subject the jobs stream takes.
func poisonJobs(valid Job) map[string]Job {
	with := func(f func(j *Job)) Job {
		j := valid
		f(&j)
		return j
	}
	return map[string]Job{
		"dot in batch":    with(func(j *Job) { j.Batch, j.ID = "a.b", "a.b.0" }),
		"star batch":      with(func(j *Job) { j.Batch, j.ID = "*", "*.0" }),
		"wildcard batch":  with(func(j *Job) { j.Batch, j.ID = ">", ">.0" }),
		"space in batch":  with(func(j *Job) { j.Batch, j.ID = "a b", "a b.0" }),
		"huge batch":      with(func(j *Job) { j.Batch = strings.Repeat("b", 10000); j.ID = j.Batch + ".0" }),
		"negative index":  with(func(j *Job) { j.Index, j.ID = -1, j.Batch+".-1" }),
		"huge index":      with(func(j *Job) { j.Index = 1 << 40; j.ID = j.Batch + "." + strconv.Itoa(1<<40) }),
		"id of another":   with(func(j *Job) { j.ID = "other.0" }),
		"id with a dot":   with(func(j *Job) { j.ID = j.Batch + ".0.x" }),
		"foreign subject": with(func(j *Job) { j.Index, j.ID = 1, j.Batch+".1" }),
	}
}

// A job whose ids are not what a submitter makes is terminated at once,
// with a log line: it never runs, never publishes a result and never comes
// back. A good job sent after them runs.
func TestWorkerRefusesPoisonIDs(t *testing.T) {
	t.Parallel()
	url, q, b, opts := newBatch(t, copyTurns, 1, 0)

	var mu sync.Mutex
	var logs []string
	startWorker(t, url, WorkerOptions{WorkspaceRoot: opts.WorkspaceRoot, Logf: func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		logs = append(logs, fmt.Sprintf(format, args...))
	}})
	starts := make(chan *nats.Msg, 16)
	sub, err := q.Conn().ChanSubscribe(EventsPrefix+">", starts)
	require.NoError(t, err)
	defer sub.Unsubscribe() //nolint:errcheck

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	poison := poisonJobs(b.Jobs[0])
	for name, job := range poison {
		data, err := json.Marshal(job)
		require.NoError(t, err)
		// On the valid job's subject: the stream takes it.
		_, err = q.js.Publish(ctx, q.jobSubject(b.ID, "0"), data, jetstream.WithMsgID(name))
		require.NoError(t, err, name)
	}
	settled(t, q, Stats{Stream: DefaultStream, CacheEntries: 0})
	select {
	case m := <-starts:
		t.Fatalf("a poison job ran: %s", m.Data)
	default:
	}
	mu.Lock()
	refused := 0
	for _, l := range logs {
		if strings.HasPrefix(l, "refusing a job (agentspec.jobs.AGENTSPEC."+b.ID+".0): ") {
			refused++
		}
	}
	mu.Unlock()
	assert.Equal(t, len(poison), refused, "one log line per refused job: %q", logs)

	got, _ := submit(t, q, opts)
	require.Len(t, got, 1)
	require.NoError(t, got[0].Err)
}

// A submitter builds no subject from an id the workers would refuse, and
// never withdraws or watches other batches through one.
func TestSubmitterRefusesBadIDs(t *testing.T) {
	t.Parallel()
	url := startServer(t)
	root := t.TempDir()
	specPath, s := writeSpec(t, t.TempDir(), agentYAML, copyTurns)
	dirs := jobDirs(t, root, 2)
	q := connect(t, url, 0)
	other, err := q.NewBatch(BatchOptions{SpecPath: specPath, Spec: s, Workspaces: dirs[1:], WorkspaceRoot: root})
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, other.Publish(ctx))

	for name := range poisonJobs(other.Jobs[0]) {
		b, err := q.NewBatch(BatchOptions{SpecPath: specPath, Spec: s, Workspaces: dirs[:1], WorkspaceRoot: root})
		require.NoError(t, err)
		job := poisonJobs(b.Jobs[0])[name]
		b.ID, b.Jobs[0] = job.Batch, job
		err = b.Publish(ctx)
		require.Error(t, err, name)
		assert.Regexp(t, `batch id|job index|job id|is not job 0 of batch`, err.Error(), name)
	}
	st, err := q.Stats(ctx, "")
	require.NoError(t, err)
	assert.Equal(t, uint64(1), st.Pending, "the other batch's job is still there")

	b, err := q.NewBatch(BatchOptions{SpecPath: specPath, Spec: s, Workspaces: dirs[:1], WorkspaceRoot: root})
	require.NoError(t, err)
	b.ID = "*"
	assert.ErrorContains(t, b.Events(func(int, []byte) {}), `batch id "*": only letters, digits, _ and - are allowed`)
	_, err = b.Wait(ctx, func(JobOutcome) {})
	assert.ErrorContains(t, err, `batch id "*"`)
}

func TestCheckIDs(t *testing.T) {
	t.Parallel()
	ok := Job{ID: "Ab0_-.7", Batch: "Ab0_-", Index: 7, Ship: &Shipped{Object: "Ab0_-.7"}}
	require.NoError(t, ok.checkIDs())
	for name, job := range poisonJobs(ok) {
		if name == "foreign subject" {
			continue // its ids are right; the worker checks the subject
		}
		assert.Error(t, job.checkIDs(), name)
	}
	ship := ok
	ship.Ship = &Shipped{Object: "other.0"}
	assert.EqualError(t, ship.checkIDs(), `shipped workspace "other.0": must be named Ab0_-.7, as its job`)
}
