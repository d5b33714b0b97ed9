package filesystem

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/agentspec/agentspec/internal/sandbox/sandboxtest"
)

// The walk gives the same answers with and without openat2.
func TestWalkWithoutOpenat2(t *testing.T) {
	// Not parallel: it switches openat2 off for the process.
	run := func() string {
		c, root := newTestFS(t, Options{}, map[string]string{"a/b/c.txt": "deep\n", "file": "f"})
		mustSymlink(t, "a", filepath.Join(root, "alink"))
		var out string
		for _, args := range []map[string]any{
			{"path": "a/b/c.txt"}, {"path": "alink/b/c.txt"}, {"path": "a/x/c.txt"}, {"path": "file/x"},
		} {
			out += read(t, c, args) + "\n"
		}
		ctx := context.Background()
		out += write(ctx, t, c, map[string]any{"path": "a/b/new.txt", "content": "n"}) + "\n"
		out += write(ctx, t, c, map[string]any{"path": "a/nope/new.txt", "content": "n"}) + "\n"
		out += write(ctx, t, c, map[string]any{"path": "file/new.txt", "content": "n"}) + "\n"
		out += edit(ctx, t, c, map[string]any{"path": "alink/b/c.txt", "old_text": "deep", "new_text": "DEEP"}) + "\n"
		return out + readBack(t, root, "a/b/c.txt")
	}
	with := run()
	sandboxtest.SetOpenat2Missing(true)
	defer sandboxtest.SetOpenat2Missing(false)
	assert.Equal(t, with, run())
	assert.Contains(t, with, "Parent directory 'a/nope' does not exist.")
}
