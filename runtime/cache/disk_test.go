package cache

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Entries are written without fsync (see write), so what a crash can leave of
// one must read as a miss with a warning, and be removed: never as a hit.
func TestTornEntries(t *testing.T) {
	t.Parallel()
	tests := map[string]func(good []byte) []byte{
		"all zeros":     func(good []byte) []byte { return make([]byte, len(good)) },
		"zeroed tail":   func(good []byte) []byte { return zeroed(good, len(good)/2, len(good)) },
		"zeroed head":   func(good []byte) []byte { return zeroed(good, 0, len(good)/2) },
		"zeroed middle": func(good []byte) []byte { return zeroed(good, len(good)/3, 2*len(good)/3) },
		"zeros after":   func(good []byte) []byte { return append(bytes.Clone(good), make([]byte, 4096)...) },
		"cut short":     func(good []byte) []byte { return good[:len(good)-2] },
	}
	for name, torn := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c, warns := newCache(t)
			ws := newWorkspace(t, map[string]string{"notes/a.md": "alpha", "summary.md": "s"})
			k := keyInput(ws)
			key := store(t, c, k, "done")
			p := filepath.Join(c.Dir(), "entries", key[:2], key+".json")
			good, err := os.ReadFile(p)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(p, torn(good), 0o600))

			_, _, ok := lookup(t, c, k)
			assert.False(t, ok)
			require.Len(t, warns.list(), 1)
			assert.ErrorIs(t, warns.list()[0], ErrCorrupt)
			assert.NoFileExists(t, p, "a torn entry is removed")
		})
	}
}

func zeroed(data []byte, from, to int) []byte {
	out := bytes.Clone(data)
	clear(out[from:to])
	return out
}
