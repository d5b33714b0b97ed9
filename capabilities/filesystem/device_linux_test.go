package filesystem

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"golang.org/x/sys/unix"
)

// A device inside the root is not a file to the tools: reading a twin of
// /dev/zero would never end.
func TestDeviceFiles(t *testing.T) {
	t.Parallel()
	c, root := newTestFS(t, Options{}, nil)
	if err := unix.Mknod(filepath.Join(root, "zero"), unix.S_IFCHR|0o666, int(unix.Mkdev(1, 5))); err != nil {
		t.Skipf("cannot create a device node here: %v", err)
	}
	ctx := context.Background()
	assert.Equal(t, "RETRY: File not found: zero", read(t, c, map[string]any{"path": "zero"}))
	assert.Equal(t, "RETRY: Path 'zero' exists and is not a regular file.", write(ctx, t, c, map[string]any{"path": "zero", "content": "x"}))
	assert.Equal(t, "RETRY: File not found: zero", edit(ctx, t, c, map[string]any{"path": "zero", "old_text": "a", "new_text": "b"}))
	assert.Equal(t, "path: zero\ntype: file\nsize: 0 bytes", info(t, c, "zero"))
}
