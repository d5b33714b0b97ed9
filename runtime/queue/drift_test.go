package queue

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A consumer made beforehand (for a cluster's replicas, say) is used as it
// is, but not one that would leave jobs without an end: a worker refuses to
// run on a consumer that stops delivering a job before the worker's last
// attempt (the job would wait in the queue, and its submitter for ever),
// or that does not hand out every job of the queue.
func TestWorkerRefusesAConsumerThatLeavesJobsWithoutAnEnd(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		cfg  jetstream.ConsumerConfig
		want string
	}{
		"max deliver": {
			jetstream.ConsumerConfig{AckPolicy: jetstream.AckExplicitPolicy, MaxDeliver: 3},
			"the consumer workers of stream AGENTSPEC delivers a job at most 3 times, so a job it stops delivering would never end: " +
				"its max_deliver must be -1 (unbounded) or more than the workers' attempts (3)",
		},
		"filter": {
			jetstream.ConsumerConfig{AckPolicy: jetstream.AckExplicitPolicy, MaxDeliver: -1, FilterSubject: "agentspec.jobs.AGENTSPEC.x.*"},
			"the consumer workers of stream AGENTSPEC hands out only agentspec.jobs.AGENTSPEC.x.*; the workers need every job of the stream",
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			url := startServer(t)
			q := connect(t, url, 0)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			tc.cfg.Durable = consumerName
			_, err := q.jobs.CreateConsumer(ctx, tc.cfg)
			require.NoError(t, err)
			w, err := NewWorker(ctx, q, WorkerOptions{WorkspaceRoot: t.TempDir(), MaxAttempts: 3})
			require.NoError(t, err)
			rctx, stop := context.WithTimeout(ctx, 2*time.Second)
			defer stop()
			err = w.Run(rctx)
			require.Error(t, err)
			assert.Equal(t, tc.want, err.Error())
			assert.NoError(t, rctx.Err(), "refused at once")
		})
	}

	// One that delivers more often than the workers try is fine.
	url := startServer(t)
	q := connect(t, url, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := q.jobs.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: consumerName, AckPolicy: jetstream.AckExplicitPolicy, MaxDeliver: 4})
	require.NoError(t, err)
	w, err := NewWorker(ctx, q, WorkerOptions{WorkspaceRoot: t.TempDir(), MaxAttempts: 3})
	require.NoError(t, err)
	rctx, stop := context.WithTimeout(ctx, 300*time.Millisecond)
	defer stop()
	assert.NoError(t, w.Run(rctx))
}
