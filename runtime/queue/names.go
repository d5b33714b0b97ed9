package queue

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Defaults.
const (
	// DefaultStream is the work-queue stream's name.
	DefaultStream = "AGENTSPEC"
	// DefaultCacheBucket is the key-value bucket of the shared cache.
	DefaultCacheBucket = "AGENTSPEC_CACHE"
	// EventsPrefix starts the subject of a job's events:
	// agentspec.events.<job>.
	EventsPrefix = "agentspec.events."
	// consumerName is the workers' durable pull consumer.
	consumerName = "workers"
	// resultsAge is how long results are kept for a submitter to collect.
	resultsAge = 24 * time.Hour
	// DefaultAckWait is how long a job may go without a sign of life from
	// its worker before it is handed to another.
	DefaultAckWait = 30 * time.Second
)

var streamName = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// Queue is a connection to one queue: its streams, consumer and buckets.
type Queue struct {
	nc      *nats.Conn
	js      jetstream.JetStream
	stream  string
	ackWait time.Duration
	jobs    jetstream.Stream
	results jetstream.Stream
}

// Options configure Open.
type Options struct {
	// Stream names the queue (DefaultStream when empty): letters, digits,
	// _ and -.
	Stream string
	// AckWait is the acknowledgement wait of the workers' consumer when Open
	// creates it (DefaultAckWait when zero); a consumer that exists keeps
	// its own.
	AckWait time.Duration
}

// Open connects to the queue over nc, creating what is missing.
func Open(ctx context.Context, nc *nats.Conn, opts Options) (*Queue, error) {
	name := opts.Stream
	if name == "" {
		name = DefaultStream
	}
	if !streamName.MatchString(name) {
		return nil, fmt.Errorf("stream name %q: only letters, digits, _ and - are allowed", name)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	q := &Queue{nc: nc, js: js, stream: name, ackWait: opts.AckWait}
	if q.ackWait <= 0 {
		q.ackWait = DefaultAckWait
	}
	if q.jobs, err = ensureStream(ctx, js, jetstream.StreamConfig{
		Name:        name,
		Description: "agentspec jobs",
		Subjects:    []string{q.jobSubject("*", "*")},
		Retention:   jetstream.WorkQueuePolicy,
		Storage:     jetstream.FileStorage,
	}); err != nil {
		return nil, err
	}
	if q.results, err = ensureStream(ctx, js, jetstream.StreamConfig{
		Name:        name + "_RESULTS",
		Description: "agentspec job results",
		Subjects:    []string{q.resultSubject("*", "*", "*")},
		Storage:     jetstream.FileStorage,
		MaxAge:      resultsAge,
		Duplicates:  time.Hour,
	}); err != nil {
		return nil, err
	}
	return q, nil
}

// Stream is the queue's name.
func (q *Queue) Stream() string { return q.stream }

// Conn is the queue's NATS connection.
func (q *Queue) Conn() *nats.Conn { return q.nc }

func (q *Queue) jobSubject(batch, index string) string {
	return "agentspec.jobs." + q.stream + "." + batch + "." + index
}

func (q *Queue) resultSubject(outcome, batch, index string) string {
	return "agentspec.results." + q.stream + "." + outcome + "." + batch + "." + index
}

// cancelSubject is where a batch's submitter, stopped, tells the workers to
// stop the batch's runs.
func (q *Queue) cancelSubject(batch string) string {
	return "agentspec.cancel." + q.stream + "." + batch
}

// EventsSubject is where a job's events are published.
func EventsSubject(job string) string { return EventsPrefix + job }

func ensureStream(ctx context.Context, js jetstream.JetStream, cfg jetstream.StreamConfig) (jetstream.Stream, error) {
	s, err := js.Stream(ctx, cfg.Name)
	if err == nil {
		return s, nil
	}
	if !errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, fmt.Errorf("stream %s: %w", cfg.Name, err)
	}
	s, err = js.CreateStream(ctx, cfg)
	if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
		s, err = js.Stream(ctx, cfg.Name) // another process made it meanwhile
	}
	if err != nil {
		return nil, fmt.Errorf("creating stream %s: %w", cfg.Name, err)
	}
	return s, nil
}

// consumer is the workers' durable consumer.
func (q *Queue) consumer(ctx context.Context) (jetstream.Consumer, error) {
	c, err := q.jobs.Consumer(ctx, consumerName)
	if err == nil {
		return c, nil
	}
	if !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return nil, fmt.Errorf("consumer %s: %w", consumerName, err)
	}
	c, err = q.jobs.CreateConsumer(ctx, jetstream.ConsumerConfig{
		Durable:       consumerName,
		Description:   "agentspec workers",
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       q.ackWait,
		MaxDeliver:    -1, // the workers count deliveries themselves, so a job that kills them still ends
		MaxAckPending: -1,
	})
	if errors.Is(err, jetstream.ErrConsumerExists) {
		c, err = q.jobs.Consumer(ctx, consumerName)
	}
	if err != nil {
		return nil, fmt.Errorf("creating consumer %s: %w", consumerName, err)
	}
	return c, nil
}

// CacheBucket opens (or creates) the key-value bucket of the shared cache.
func (q *Queue) CacheBucket(ctx context.Context, bucket string) (jetstream.KeyValue, error) {
	if bucket == "" {
		bucket = DefaultCacheBucket
	}
	kv, err := q.js.KeyValue(ctx, bucket)
	if err == nil {
		return kv, nil
	}
	if !errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, fmt.Errorf("cache bucket %s: %w", bucket, err)
	}
	kv, err = q.js.CreateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket: bucket, Description: "agentspec result cache", Storage: jetstream.FileStorage,
	})
	if errors.Is(err, jetstream.ErrBucketExists) {
		kv, err = q.js.KeyValue(ctx, bucket)
	}
	if err != nil {
		return nil, fmt.Errorf("creating cache bucket %s: %w", bucket, err)
	}
	return kv, nil
}

// handBacksBucket is the key-value bucket of the jobs' hand-backs.
func (q *Queue) handBacksBucket() string { return q.stream + "_HANDBACKS" }

// handBacks opens (or creates) the key-value bucket that counts, by job id,
// the deliveries of a job its workers handed back as they stopped (see
// Worker.handBack). An entry is kept a day after its last hand-back.
func (q *Queue) handBacks(ctx context.Context) (jetstream.KeyValue, error) {
	bucket := q.handBacksBucket()
	kv, err := q.js.KeyValue(ctx, bucket)
	if err == nil {
		return kv, nil
	}
	if !errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, fmt.Errorf("hand-back bucket %s: %w", bucket, err)
	}
	kv, err = q.js.CreateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket: bucket, Description: "agentspec jobs handed back by stopping workers", Storage: jetstream.FileStorage, TTL: resultsAge,
	})
	if errors.Is(err, jetstream.ErrBucketExists) {
		kv, err = q.js.KeyValue(ctx, bucket)
	}
	if err != nil {
		return nil, fmt.Errorf("creating hand-back bucket %s: %w", bucket, err)
	}
	return kv, nil
}

// shipBucket is the object store of shipped workspaces.
func (q *Queue) shipBucket() string { return q.stream + "_SHIP" }

// shipStore opens (or creates) the object store of shipped workspaces.
func (q *Queue) shipStore(ctx context.Context) (jetstream.ObjectStore, error) {
	bucket := q.shipBucket()
	obs, err := q.js.ObjectStore(ctx, bucket)
	if err == nil {
		return obs, nil
	}
	if !errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, fmt.Errorf("object store %s: %w", bucket, err)
	}
	obs, err = q.js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{
		Bucket: bucket, Description: "agentspec shipped workspaces", Storage: jetstream.FileStorage, TTL: resultsAge,
	})
	if errors.Is(err, jetstream.ErrBucketExists) {
		obs, err = q.js.ObjectStore(ctx, bucket)
	}
	if err != nil {
		return nil, fmt.Errorf("creating object store %s: %w", bucket, err)
	}
	return obs, nil
}

// goneFromShip is the error of object, which the object store of shipped
// workspaces obs no longer holds, gone as when while is longer than the
// store keeps objects: it says how long that is, and how to make it
// longer, as a result gone from the results stream says how long they are
// kept (see Batch.lost); for a store that keeps them for ever, what else
// removes one.
func (q *Queue) goneFromShip(ctx context.Context, obs jetstream.ObjectStore, object, while string) error {
	msg := fmt.Sprintf("%s is gone from the object store %s", object, q.shipBucket())
	st, err := obs.Status(ctx)
	switch {
	case err != nil:
		return errors.New(msg)
	case st.TTL() > 0:
		return fmt.Errorf("%s, which keeps objects for %s, as when %s for longer than that; to keep them longer, raise the max age of its stream OBJ_%s",
			msg, durationString(st.TTL()), while, q.shipBucket())
	}
	return fmt.Errorf("%s, which has no max age, as when a deletion or a limit of its own removed it", msg)
}
