package filesystem

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func mkdir(ctx context.Context, t *testing.T, c *Capability, path string) string {
	t.Helper()
	out, err := callTool(ctx, t, c, ToolCreateDirectory, map[string]any{"path": path})
	return result(out, err)
}

func TestCreateDirectory(t *testing.T) {
	t.Parallel()
	c, root := newTestFS(t, Options{DeniedPatterns: []string{"private"}},
		map[string]string{"hello.txt": "hi\n", "existing/keep": ""})
	mustSymlink(t, t.TempDir(), filepath.Join(root, "outlink"))
	calls := []call{
		{ToolCreateDirectory, map[string]any{"path": "a/b/c"}},
		{ToolCreateDirectory, map[string]any{"path": "a/b/c"}},
		{ToolCreateDirectory, map[string]any{"path": "existing"}},
		{ToolCreateDirectory, map[string]any{"path": "ghost/../made"}},
		{ToolCreateDirectory, map[string]any{"path": "ghost/.."}},
		{ToolCreateDirectory, map[string]any{"path": "."}},
		{ToolCreateDirectory, map[string]any{"path": "hello.txt"}},
		{ToolCreateDirectory, map[string]any{"path": "hello.txt/sub"}},
		{ToolCreateDirectory, map[string]any{"path": "hello.txt/sub/deeper"}},
		{ToolCreateDirectory, map[string]any{"path": "private/x"}},
		{ToolCreateDirectory, map[string]any{"path": ".git/hooks"}},
		{ToolCreateDirectory, map[string]any{"path": "outlink/x"}},
		{ToolCreateDirectory, map[string]any{"path": "../up"}},
	}
	goldenCompare(t, "create_directory", transcript(context.Background(), t, c, calls))
	assert.DirExists(t, filepath.Join(root, "a", "b", "c"))
	assert.DirExists(t, filepath.Join(root, "made"))
	assert.NoDirExists(t, filepath.Join(root, "ghost"))
	assert.NoDirExists(t, filepath.Join(root, "private"))
}

func TestCreateDirectoryAllowedPatterns(t *testing.T) {
	t.Parallel()
	c, _ := newTestFS(t, Options{AllowedPatterns: []string{"*.py"}}, nil)
	assert.Equal(t, "RETRY: Path 'src' does not match any allowed pattern.", mkdir(context.Background(), t, c, "src"))
}

func TestCreateDirectoryEvents(t *testing.T) {
	t.Parallel()
	c, root := newTestFS(t, Options{}, map[string]string{"existing/f": ""})

	var rec recorder
	assert.Equal(t, "Created directory: new/dir", mkdir(rec.ctx(), t, c, "new/dir"))
	require.Equal(t, "file_change_request,directory_created", rec.kinds())
	req := rec.events[0].(*FileChangeRequestEvent)
	assert.Equal(t, OpCreateDirectory, req.Operation)
	assert.Equal(t, "", req.Diff)
	assert.False(t, req.Truncated)
	assert.Equal(t, "new/dir", rec.events[1].(*DirectoryCreatedEvent).Path)

	rec = recorder{}
	assert.Equal(t, "Created directory: existing", mkdir(rec.ctx(), t, c, "existing"))
	assert.Empty(t, rec.events, "an existing directory changes nothing and emits nothing")

	rec = recorder{onRequest: func(ev *FileChangeRequestEvent) { ev.Cancel("") }}
	assert.Equal(t, "['vetoed' was not created: cancelled by a listener]", mkdir(rec.ctx(), t, c, "vetoed"))
	assert.NoDirExists(t, filepath.Join(root, "vetoed"))

	rec = recorder{onRequest: func(*FileChangeRequestEvent) {
		require.NoError(t, os.Mkdir(filepath.Join(root, "raced"), 0o755))
	}}
	assert.Equal(t, "Created directory: raced", mkdir(rec.ctx(), t, c, "raced"))
	assert.Equal(t, "file_change_request", rec.kinds(), "a directory that appeared meanwhile was not created by the call")

	rec = recorder{onRequest: func(*FileChangeRequestEvent) { mustWrite(t, root, "clash", "") }}
	assert.Equal(t, "RETRY: Path 'clash' exists and is not a directory.", mkdir(rec.ctx(), t, c, "clash"))
}
