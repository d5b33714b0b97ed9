package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/agentspec/agentspec/runtime/cache"
)

// CacheEntry is the cache entry a shipped job's run made, which travels with
// its result for the submitter to store once it has applied the run's
// changes. A worker that stored it itself would leave, when the submitter
// then refuses the changes (a conflict, a protected file), a success whose
// changes were never applied, which a later run whose key does not cover the
// files they touch would replay.
type CacheEntry struct {
	// Bucket is the shared cache's key-value bucket, Key the entry's key
	// there, and Data the entry as the cache wrote it.
	Bucket string          `json:"bucket"`
	Key    string          `json:"key"`
	Data   json.RawMessage `json:"data"`
}

// heldEntry is the shared cache as one shipped run reaches it: it reads and
// deletes in the bucket (cache.KVBackend), but holds the entry the run stores.
type heldEntry struct {
	cache.Backend

	mu   sync.Mutex
	key  string
	data []byte
}

func (h *heldEntry) Put(_ context.Context, key string, data []byte) error {
	if !json.Valid(data) {
		return errors.New("the entry is not JSON") // the cache writes JSON: never met
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.key, h.data = key, data
	return nil
}

// entry is the entry held, for the given bucket; nil when the run stored
// none (a hit, a failure, no cache).
func (h *heldEntry) entry(bucket string) *CacheEntry {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.key == "" {
		return nil
	}
	return &CacheEntry{Bucket: bucket, Key: h.key, Data: h.data}
}

// storeEntry stores the cache entry a shipped job's result brought, its
// changes applied. The result is what anyone could have published: only
// what has the shape of an entry is written, under a cache key, into a
// bucket that exists, so that it cannot be made to write a job's hand-backs,
// say. What it stores is checked as the cache checks every entry it reads:
// one that does not read back under its key is a miss.
func (b *Batch) storeEntry(ctx context.Context, e *CacheEntry) error {
	var filed struct {
		Key string `json:"key"`
	}
	if !isCacheKey(e.Key) || json.Unmarshal(e.Data, &filed) != nil || filed.Key != e.Key {
		return fmt.Errorf("the result was not cached: its entry is not one filed under %.80q", e.Key)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	kv, err := b.q.js.KeyValue(ctx, e.Bucket)
	if err == nil {
		_, err = kv.Put(ctx, e.Key, e.Data)
	}
	if err != nil {
		return fmt.Errorf("the result was not cached in %.80q: %w", e.Bucket, err)
	}
	return nil
}

// isCacheKey reports whether key is one the cache files entries under: a
// SHA-256 sum in lower-case hex.
func isCacheKey(key string) bool {
	if len(key) != 64 {
		return false
	}
	for _, r := range key {
		if !('0' <= r && r <= '9' || 'a' <= r && r <= 'f') {
			return false
		}
	}
	return true
}
