package queue

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The cache's size counts its entries: not the markers an entry's removal
// leaves (the cache removes one that does not read back), nor an entry's
// earlier values in a bucket made to keep them.
func TestStatsCountsCacheEntries(t *testing.T) {
	t.Parallel()
	url := startServer(t)
	q := connect(t, url, 0)
	ctx := context.Background()
	st, err := q.Stats(ctx, "")
	require.NoError(t, err)
	assert.Equal(t, int64(-1), st.CacheEntries, "no bucket yet")

	kv, err := q.CacheBucket(ctx, "")
	require.NoError(t, err)
	st, err = q.Stats(ctx, "")
	require.NoError(t, err)
	assert.Zero(t, st.CacheEntries)
	for _, key := range []string{"a", "b", "c", "d"} {
		_, err = kv.Put(ctx, key, []byte("{}"))
		require.NoError(t, err)
	}
	require.NoError(t, kv.Delete(ctx, "c"))
	require.NoError(t, kv.Purge(ctx, "d"))
	st, err = q.Stats(ctx, "")
	require.NoError(t, err)
	assert.Equal(t, int64(2), st.CacheEntries)

	kept, err := q.js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "KEPT", History: 5})
	require.NoError(t, err)
	for range 3 {
		_, err = kept.Put(ctx, "a", []byte("{}"))
		require.NoError(t, err)
	}
	st, err = q.Stats(ctx, "KEPT")
	require.NoError(t, err)
	assert.Equal(t, int64(1), st.CacheEntries)
}
