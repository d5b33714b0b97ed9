package queue

import (
	"context"
	"errors"

	"github.com/nats-io/nats.go/jetstream"
)

// Stats is a queue's state, as the server sees it.
type Stats struct {
	Stream string `json:"stream"`
	// Pending jobs wait for a worker; Running jobs are held by one (those
	// waiting out a retry delay included); Redelivered of these were handed
	// out more than once.
	Pending     uint64 `json:"pending"`
	Running     int    `json:"running"`
	Redelivered int    `json:"redelivered"`
	// Waiting counts the pull requests open on the workers' consumer: idle
	// worker slots.
	Waiting int `json:"waiting"`
	// Succeeded and Failed count the results kept (a day's worth).
	Succeeded uint64 `json:"succeeded"`
	Failed    uint64 `json:"failed"`
	// CacheEntries is how many results the shared cache holds, -1 when
	// the bucket does not exist.
	CacheEntries int64 `json:"cache_entries"`
}

// Stats reads the queue's state. cacheBucket is the shared cache's bucket
// (DefaultCacheBucket when empty).
func (q *Queue) Stats(ctx context.Context, cacheBucket string) (Stats, error) {
	st := Stats{Stream: q.stream, CacheEntries: -1}
	info, err := q.jobs.Info(ctx)
	if err != nil {
		return st, err
	}
	st.Pending = info.State.Msgs
	c, err := q.jobs.Consumer(ctx, consumerName)
	switch {
	case err == nil:
		ci, err := c.Info(ctx)
		if err != nil {
			return st, err
		}
		st.Pending = ci.NumPending
		st.Running, st.Redelivered, st.Waiting = ci.NumAckPending, ci.NumRedelivered, ci.NumWaiting
	case !errors.Is(err, jetstream.ErrConsumerNotFound):
		return st, err
	}
	for outcome, n := range map[string]*uint64{"ok": &st.Succeeded, "failed": &st.Failed} {
		ri, err := q.results.Info(ctx, jetstream.WithSubjectFilter(q.resultSubject(outcome, "*", "*")))
		if err != nil {
			return st, err
		}
		for _, count := range ri.State.Subjects {
			*n += count
		}
	}
	if cacheBucket == "" {
		cacheBucket = DefaultCacheBucket
	}
	kv, err := q.js.KeyValue(ctx, cacheBucket)
	switch {
	case err == nil:
		// Counted key by key (their headers only): the bucket's count of
		// values holds the markers an entry's removal leaves, and an
		// entry's earlier values where the bucket keeps them.
		keys, err := kv.ListKeys(ctx)
		if err != nil {
			return st, err
		}
		n := int64(0)
		for range keys.Keys() {
			n++
		}
		if err := ctx.Err(); err != nil {
			return st, err
		}
		st.CacheEntries = n
	case !errors.Is(err, jetstream.ErrBucketNotFound):
		return st, err
	}
	return st, nil
}
