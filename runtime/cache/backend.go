package cache

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Backend keeps a cache's entries somewhere other than a directory, such as
// a key-value store several machines share (see NewKV). The cache decides
// what goes in, and checks what comes out as it does for its own files: an
// entry a backend returns is decoded and verified, and one that does not
// read back is a miss, reported and deleted.
type Backend interface {
	// Get returns the data stored under key, or nil and no error when there
	// is none.
	Get(ctx context.Context, key string) ([]byte, error)
	// Put stores data under key, replacing what was there; a reader sees the
	// old data or the new, never a part.
	Put(ctx context.Context, key string, data []byte) error
	// Delete removes key; a key that is not there is not an error.
	Delete(ctx context.Context, key string) error
}

// WithBackend keeps the entries in b instead of a directory; New's dir is
// then ignored and Dir is "". Stats and Clear work on directories only.
func WithBackend(b Backend) Option {
	return func(c *Cache) {
		if b != nil {
			c.backend, c.dir = b, ""
		}
	}
}

var errBackendStats = errors.New("stats and clear work on a cache directory; this cache is kept by a backend")

// readBackend is read for a cache kept by a backend.
func (c *Cache) readBackend(ctx context.Context, key string) (*Entry, error) {
	data, err := c.backend.Get(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("cache lookup: %w", err)
	}
	if data == nil {
		return nil, nil
	}
	e, err := decode(data, key)
	if err != nil {
		c.warn(fmt.Errorf("cache entry %s: %w: %w", short(key), ErrCorrupt, err))
		if derr := c.backend.Delete(ctx, key); derr != nil {
			c.warn(fmt.Errorf("cache entry %s: removing: %w", short(key), derr))
		}
		return nil, nil
	}
	return e, nil
}

var timeNow = time.Now
