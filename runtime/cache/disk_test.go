package cache

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A Cache remembers the shard directories it made; when one is removed
// behind its back (a Clear, perhaps by another process, or the whole
// directory deleted), the next write into it makes it again, marker
// included, and the entry reads back.
func TestWriteAfterShardRemoved(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t, map[string]string{"notes/a.md": "alpha", "summary.md": "s"})
	for name, remove := range map[string]func(c *Cache, shard string) error{
		"shard":  func(_ *Cache, shard string) error { return os.RemoveAll(shard) },
		"cache":  func(c *Cache, _ string) error { return os.RemoveAll(c.Dir()) },
		"clear":  func(c *Cache, _ string) error { _, err := c.Clear(ctx); return err },
		"a view": func(c *Cache, _ string) error { _, err := c.With().Clear(ctx); return err },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c, w := newCache(t)
			key, err := c.Store(ctx, keyInput(ws), Entry{Output: "first"})
			require.NoError(t, err)
			shard := filepath.Join(c.Dir(), entriesDir, key[:2])
			require.True(t, c.shards.known(key[:2]))

			require.NoError(t, remove(c, shard))
			require.NoDirExists(t, shard)
			_, err = c.With().Store(ctx, keyInput(ws), Entry{Output: "second"})
			require.NoError(t, err)

			e, _, ok, err := c.Lookup(ctx, keyInput(ws))
			require.NoError(t, err)
			require.True(t, ok)
			assert.Equal(t, "second", e.Output)
			assert.FileExists(t, filepath.Join(c.Dir(), markerName))
			assert.Empty(t, w.list())
		})
	}
}

// Entries written in turn into one shard leave nothing but themselves:
// no temporary file survives a write.
func TestWriteLeavesNoTemporaryFiles(t *testing.T) {
	t.Parallel()
	c, _ := newCache(t)
	keys := []string{strings.Repeat("ab", 32), "ab" + strings.Repeat("cd", 31), strings.Repeat("ab", 32)}
	for i, key := range keys {
		require.NoError(t, c.write(ctx, key, []byte{byte('0' + i)}))
	}
	names, err := os.ReadDir(filepath.Join(c.Dir(), entriesDir, "ab"))
	require.NoError(t, err)
	var got []string
	for _, n := range names {
		got = append(got, n.Name())
	}
	assert.ElementsMatch(t, []string{keys[0] + ".json", keys[1] + ".json"}, got)
	data, err := os.ReadFile(filepath.Join(c.Dir(), entriesDir, "ab", keys[0]+".json"))
	require.NoError(t, err)
	assert.Equal(t, "2", string(data), "the last write wins")
}

// A shard path that is not a directory fails the write, and no retry hides
// it.
func TestWriteIntoShardThatIsAFile(t *testing.T) {
	t.Parallel()
	c, _ := newCache(t)
	key := strings.Repeat("ab", 32)
	require.NoError(t, c.write(ctx, key, []byte("x")))
	shard := filepath.Join(c.Dir(), entriesDir, "ab")
	require.NoError(t, os.RemoveAll(shard))
	require.NoError(t, os.WriteFile(shard, []byte("not a directory"), 0o600))
	assert.Error(t, c.write(ctx, key, []byte("y")))
}
