package cache

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// newBucket starts an embedded NATS server with JetStream and returns a
// fresh key-value bucket on it.
func newBucket(t *testing.T) jetstream.KeyValue {
	t.Helper()
	ns, err := server.NewServer(&server.Options{
		Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true,
	})
	require.NoError(t, err)
	go ns.Start()
	require.True(t, ns.ReadyForConnections(10*time.Second))
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	nc, err := nats.Connect(ns.ClientURL())
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	kv, err := js.CreateKeyValue(context.Background(), jetstream.KeyValueConfig{Bucket: "TEST_CACHE"})
	require.NoError(t, err)
	return kv
}

// A cache in a key-value bucket behaves as one in a directory: the same
// keys, the same checks of what comes back.
func TestKVCache(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	kv := newBucket(t)
	var warned warnings
	c := NewKV(kv, WithWarn(warned.add))
	assert.Empty(t, c.Dir())

	ws := newWorkspace(t, map[string]string{"in.txt": "input\n", "out.txt": "output\n"})
	k := KeyInput{Spec: []byte(`{"model": "m"}`), Model: "m", Workspace: ws,
		InputGlobs: []string{"in.txt"}, ExpectedOutputFiles: []string{"out.txt"}}
	_, _, ok, err := c.Lookup(ctx, k)
	require.NoError(t, err)
	assert.False(t, ok)

	key, err := c.Store(ctx, k, Entry{Output: "done"})
	require.NoError(t, err)
	disk, err := New(t.TempDir())
	require.NoError(t, err)
	diskKey, err := disk.Store(ctx, k, Entry{Output: "done"})
	require.NoError(t, err)
	assert.Equal(t, diskKey, key, "the same key as a cache directory")

	// Another process, another Cache over the same bucket: a hit.
	e, _, ok, err := NewKV(kv).Lookup(ctx, k)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, "done", e.Output)

	// A failed run is refused, as ever.
	_, err = c.Store(ctx, k, Entry{Output: " "})
	assert.ErrorIs(t, err, ErrNotCacheable)

	// An entry that does not read back is a miss, reported and deleted.
	_, err = kv.Put(ctx, key, []byte("{not json"))
	require.NoError(t, err)
	_, _, ok, err = c.Lookup(ctx, k)
	require.NoError(t, err)
	assert.False(t, ok)
	require.Len(t, warned.list(), 1)
	assert.ErrorIs(t, warned.list()[0], ErrCorrupt)
	_, err = kv.Get(ctx, key)
	assert.ErrorIs(t, err, jetstream.ErrKeyNotFound)

	_, err = c.Stats(ctx)
	assert.EqualError(t, err, "stats and clear work on a cache directory; this cache is kept by a backend")
}

// A workspace name stands for the workspace in the key: two copies of the
// same files at different paths share an entry under one name, and not
// under two.
func TestWorkspaceName(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	files := map[string]string{"in.txt": "input\n"}
	a, b := newWorkspace(t, files), newWorkspace(t, files)
	key := func(dir, name string) string {
		k, ing, err := Key(ctx, KeyInput{Spec: []byte(`{}`), Workspace: dir, WorkspaceName: name, InputGlobs: []string{"*.txt"}})
		require.NoError(t, err)
		assert.Equal(t, name, ing.WorkspaceName)
		assert.Equal(t, 1, ing.Files, "the files are still the directory's")
		return k
	}
	assert.Equal(t, key(a, "nats:jobs/1"), key(b, "nats:jobs/1"))
	assert.NotEqual(t, key(a, "nats:jobs/1"), key(a, "nats:jobs/2"))
	assert.NotEqual(t, key(a, ""), key(b, ""), "without a name, the real path decides")
	writeFiles(t, b, map[string]string{"in.txt": "changed\n"})
	assert.NotEqual(t, key(a, "nats:jobs/1"), key(b, "nats:jobs/1"), "and the files still count")
}
