package cache

import (
	"context"
	"errors"

	"github.com/nats-io/nats.go/jetstream"
)

// NewKV returns a cache whose entries live in a NATS JetStream key-value
// bucket, one key per cache key, so that every machine connected to the
// bucket shares them. The keys and the entries are those of a cache
// directory, checked the same way: a hit is replayed only while the
// workspace holds the expected output files, and an entry that does not read
// back is a miss.
func NewKV(kv jetstream.KeyValue, opts ...Option) *Cache {
	c := &Cache{warn: func(error) {}, now: timeNow}
	for _, o := range append([]Option{WithBackend(KVBackend(kv))}, opts...) {
		o(c)
	}
	return c
}

// KVBackend is the Backend of NewKV: the entries of a key-value bucket, one
// key per cache key.
func KVBackend(kv jetstream.KeyValue) Backend { return kvBackend{kv} }

type kvBackend struct{ kv jetstream.KeyValue }

func (b kvBackend) Get(ctx context.Context, key string) ([]byte, error) {
	e, err := b.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return e.Value(), nil
}

func (b kvBackend) Put(ctx context.Context, key string, data []byte) error {
	_, err := b.kv.Put(ctx, key, data)
	return err
}

func (b kvBackend) Delete(ctx context.Context, key string) error {
	err := b.kv.Delete(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil
	}
	return err
}
