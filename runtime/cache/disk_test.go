package cache

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recordJSON is an entry's JSON as Store writes it, filed under key.
func recordJSON(t testing.TB, key, output string) []byte {
	t.Helper()
	data, err := json.Marshal(record{Version: ProtocolVersion, Entry: Entry{Key: key, Output: output}})
	require.NoError(t, err)
	return data
}

// A Cache remembers that it made its entries directory; when that is
// removed behind its back (a Clear, perhaps by another process, or the whole
// directory deleted), the next write makes it again, marker included, and
// the entry reads back.
func TestWriteAfterEntriesRemoved(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t, map[string]string{"notes/a.md": "alpha", "summary.md": "s"})
	for name, remove := range map[string]func(c *Cache, key string) error{
		"entries": func(c *Cache, _ string) error { return os.RemoveAll(filepath.Join(c.Dir(), entriesDir)) },
		"the log": func(c *Cache, key string) error {
			return os.Remove(filepath.Join(c.Dir(), entriesDir, logName(key)))
		},
		"cache":  func(c *Cache, _ string) error { return os.RemoveAll(c.Dir()) },
		"clear":  func(c *Cache, _ string) error { _, err := c.Clear(ctx); return err },
		"a view": func(c *Cache, _ string) error { _, err := c.With().Clear(ctx); return err },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c, w := newCache(t)
			key, err := c.Store(ctx, keyInput(ws), Entry{Output: "first"})
			require.NoError(t, err)
			require.True(t, c.logs.made.Load())
			_, _, ok := lookup(t, c, keyInput(ws))
			require.True(t, ok)

			require.NoError(t, remove(c, key))
			_, _, ok = lookup(t, c, keyInput(ws))
			require.False(t, ok)
			_, err = c.With().Store(ctx, keyInput(ws), Entry{Output: "second"})
			require.NoError(t, err)

			e, _, ok := lookup(t, c, keyInput(ws))
			require.True(t, ok)
			assert.Equal(t, "second", e.Output)
			assert.FileExists(t, filepath.Join(c.Dir(), markerName))
			assert.Empty(t, w.list())
		})
	}
}

// Entries whose keys share a first digit go to one log and leave nothing
// else: no temporary file, no directory; of two records of a key the last
// is the entry.
func TestWritesShareALog(t *testing.T) {
	t.Parallel()
	c, w := newCache(t)
	keys := []string{strings.Repeat("ab", 32), "a" + strings.Repeat("c", 63), strings.Repeat("ab", 32)}
	for i, key := range keys {
		require.NoError(t, c.write(ctx, key, recordJSON(t, key, string(rune('0'+i)))))
	}
	names, err := os.ReadDir(filepath.Join(c.Dir(), entriesDir))
	require.NoError(t, err)
	require.Len(t, names, 1)
	assert.Equal(t, "a.log", names[0].Name())
	for key, want := range map[string]string{keys[0]: "2", keys[1]: "1"} {
		e, err := c.read(ctx, key)
		require.NoError(t, err)
		require.NotNil(t, e)
		assert.Equal(t, want, e.Output)
	}
	st, err := c.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, 2, st.Entries)
	assert.Zero(t, st.Corrupt)
	assert.Empty(t, w.list())
}

// An entries path that is not a directory fails the write, and no retry
// hides it.
func TestWriteIntoEntriesThatIsAFile(t *testing.T) {
	t.Parallel()
	c, _ := newCache(t)
	key := strings.Repeat("ab", 32)
	require.NoError(t, c.write(ctx, key, recordJSON(t, key, "x")))
	entries := filepath.Join(c.Dir(), entriesDir)
	require.NoError(t, os.RemoveAll(entries))
	require.NoError(t, os.WriteFile(entries, []byte("not a directory"), 0o600))
	assert.Error(t, c.write(ctx, key, recordJSON(t, key, "y")))
}

// isHex takes the lower-case hex digits alone, whatever the byte; upper-case
// ones decode but are not how keys are written.
func TestIsHex(t *testing.T) {
	t.Parallel()
	for b := range 256 {
		want := strings.ContainsRune("0123456789abcdef", rune(b))
		assert.Equal(t, want, isHex(string([]byte{byte(b)}), 1), "byte %#x", b)
	}
	assert.True(t, isHex(strings.Repeat("0f", 32), 64))
	assert.False(t, isHex(strings.Repeat("0F", 32), 64))
	assert.False(t, isHex("0f", 3))
}
