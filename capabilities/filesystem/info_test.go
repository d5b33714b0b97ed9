package filesystem

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func info(t *testing.T, c *Capability, path string) string {
	t.Helper()
	out, err := callTool(context.Background(), t, c, ToolFileInfo, map[string]any{"path": path})
	return result(out, err)
}

func TestFileInfo(t *testing.T) {
	t.Parallel()
	c, root := newTestFS(t, Options{DeniedPatterns: []string{"config/*"}}, map[string]string{
		"hello.txt":         "Hello, world!\n",
		"empty.txt":         "",
		"crlf.txt":          "a\r\nb\r\n",
		"latin1.txt":        "hello \xff\xfe world\n",
		"bin.dat":           "\x00\x01\x02\x03",
		".env":              "TOKEN=abc\n",
		"config/secret.txt": "s\n",
		"sub/inner.txt":     "in\n",
	})
	mustSymlink(t, "hello.txt", filepath.Join(root, "alias"))
	mustSymlink(t, "../hello.txt", filepath.Join(root, "sub", "up"))
	mustSymlink(t, filepath.Join(root, "sub", "inner.txt"), filepath.Join(root, "abs"))
	mustSymlink(t, "config/secret.txt", filepath.Join(root, "secretlink"))
	mustSymlink(t, "/etc/hostname", filepath.Join(root, "escape"))
	mkfifo(t, filepath.Join(root, "fifo"))
	calls := []call{
		{ToolFileInfo, map[string]any{"path": "hello.txt"}},
		{ToolFileInfo, map[string]any{"path": "empty.txt"}},
		{ToolFileInfo, map[string]any{"path": "crlf.txt"}},
		{ToolFileInfo, map[string]any{"path": "latin1.txt"}},
		{ToolFileInfo, map[string]any{"path": "bin.dat"}},
		{ToolFileInfo, map[string]any{"path": ".env"}},
		{ToolFileInfo, map[string]any{"path": "fifo"}},
		{ToolFileInfo, map[string]any{"path": "alias"}},
		{ToolFileInfo, map[string]any{"path": "sub/up"}},
		{ToolFileInfo, map[string]any{"path": "sub/../sub/up"}},
		{ToolFileInfo, map[string]any{"path": "abs"}},
		{ToolFileInfo, map[string]any{"path": "nope"}},
		{ToolFileInfo, map[string]any{"path": "hello.txt/x"}},
		{ToolFileInfo, map[string]any{"path": "config/secret.txt"}},
		{ToolFileInfo, map[string]any{"path": "secretlink"}},
		{ToolFileInfo, map[string]any{"path": "escape"}},
	}
	goldenCompare(t, "file_info", transcript(context.Background(), t, c, calls))

	st, err := os.Stat(filepath.Join(root, "sub"))
	require.NoError(t, err)
	assert.Equal(t, fmt.Sprintf("path: sub/\ntype: directory\nsize: %d bytes", st.Size()), info(t, c, "sub/"))
}

func TestHostPathToRel(t *testing.T) {
	t.Parallel()
	fs := &FS{rootParts: []string{"srv", "root"}, aliasParts: []string{"home", "link"}}
	for in, want := range map[string]string{
		"/srv/root":             ".",
		"/srv/root/a/b":         "a/b",
		"/srv/root/../root/x":   "x",
		"/home/link/y":          "y",
		"/srv/rootless/x":       outsideWorkspace,
		"/etc/passwd":           outsideWorkspace,
		"/srv/root/../other/x/": outsideWorkspace,
	} {
		assert.Equal(t, want, fs.hostPathToRel(in), in)
	}
}
