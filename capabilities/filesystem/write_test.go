package filesystem

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func write(ctx context.Context, t *testing.T, c *Capability, args map[string]any) string {
	t.Helper()
	out, err := callTool(ctx, t, c, ToolWriteFile, args)
	return result(out, err)
}

func TestWriteFileReferenceExamples(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, root := newTestFS(t, Options{}, nil)
	assert.Equal(t, "Wrote 6 chars (2 lines) to fmt.txt. [hash:5141648ccbe9]", write(ctx, t, c, map[string]any{"path": "fmt.txt", "content": "ab\ncd\n"}))
	assert.Equal(t, "Wrote 0 chars (0 lines) to empty.txt. [hash:e3b0c44298fc]", write(ctx, t, c, map[string]any{"path": "empty.txt", "content": ""}))
	assert.Equal(t, "Wrote 4 chars (1 lines) to new.txt. [hash:7aa7a5359173]", write(ctx, t, c, map[string]any{"path": "new.txt", "content": "new\n"}))
	assert.Equal(t, "ab\ncd\n", readBack(t, root, "fmt.txt"))

	no := false
	plain, _ := newTestFS(t, Options{ContentHashes: &no}, nil)
	assert.Equal(t, "Wrote 8 chars (2 lines) to f.txt.", write(ctx, t, plain, map[string]any{"path": "f.txt", "content": "abc\ndef\n"}))
	assert.Equal(t, "RETRY: Unknown argument 'expected_hash'. Expected: path, content.",
		write(ctx, t, plain, map[string]any{"path": "f.txt", "content": "x", "expected_hash": "abc"}))
}

func TestWriteFileTranscript(t *testing.T) {
	t.Parallel()
	c, root := newTestFS(t, Options{DeniedPatterns: []string{"config/*"}, AllowedPatterns: []string{"*.txt", "*.md", "*env*", "dir", "fifo", "sock", "*.py"}},
		map[string]string{
			"hello.txt": "Hello, world!\n", "config/secret.txt": "s3cret\n", ".env": "TOKEN=abc\n", "dir/keep.txt": "k",
			"apps/web/.env": "X=1\n", "img.png": "png",
		})
	mustSymlink(t, ".env", filepath.Join(root, "envlink"))
	mustSymlink(t, "/etc/hostname", filepath.Join(root, "escape.txt"))
	mustSymlink(t, "/dev/zero", filepath.Join(root, "zero.txt"))
	mkfifo(t, filepath.Join(root, "fifo"))
	ln, err := net.Listen("unix", filepath.Join(root, "sock"))
	require.NoError(t, err)
	defer ln.Close()
	calls := []call{
		{ToolWriteFile, map[string]any{"path": "unicode.txt", "content": "héllo\r\nwörld\u2028x"}},
		{ToolWriteFile, map[string]any{"path": "sub/../direct.txt", "content": "ok\n"}},
		{ToolWriteFile, map[string]any{"path": ".env", "content": "x"}},
		{ToolWriteFile, map[string]any{"path": "envlink", "content": "x"}},
		{ToolWriteFile, map[string]any{"path": "apps/web/.env", "content": "x"}},
		{ToolWriteFile, map[string]any{"path": "config/secret.txt", "content": "x"}},
		{ToolWriteFile, map[string]any{"path": "img.png", "content": "x"}},
		{ToolWriteFile, map[string]any{"path": "dir", "content": "x"}},
		{ToolWriteFile, map[string]any{"path": "fifo", "content": "x"}},
		{ToolWriteFile, map[string]any{"path": "sock", "content": "x"}},
		{ToolWriteFile, map[string]any{"path": "a/b/new.txt", "content": "x"}},
		{ToolWriteFile, map[string]any{"path": "hello.txt/x.txt", "content": "x"}},
		{ToolWriteFile, map[string]any{"path": "hello.txt/a/b.txt", "content": "x"}},
		{ToolWriteFile, map[string]any{"path": "escape.txt", "content": "x"}},
		{ToolWriteFile, map[string]any{"path": "zero.txt", "content": "x"}},
		{ToolWriteFile, map[string]any{"path": "/tmp/x.txt", "content": "x"}},
		{ToolWriteFile, map[string]any{"path": strings.Repeat("n", 300) + ".txt", "content": "x"}},
		{ToolWriteFile, map[string]any{"path": "hello.txt", "content": "changed\n", "expected_hash": "000000000000"}},
		{ToolWriteFile, map[string]any{"path": "hello.txt", "content": "changed\n", "expected_hash": "d9014c462484"}},
		{ToolWriteFile, map[string]any{"path": "created.txt", "content": "c\n", "expected_hash": "000000000000"}},
		{ToolWriteFile, map[string]any{"path": "hello.txt"}},
		{ToolWriteFile, map[string]any{"path": "hello.txt", "content": 5}},
	}
	goldenCompare(t, "write_file", transcript(context.Background(), t, c, calls))
	assert.Equal(t, "héllo\r\nwörld\u2028x", readBack(t, root, "unicode.txt"), "bytes exactly, no newline translation")
	assert.Equal(t, "changed\n", readBack(t, root, "hello.txt"))
	assert.Equal(t, "TOKEN=abc\n", readBack(t, root, ".env"))
	assert.Equal(t, "c\n", readBack(t, root, "created.txt"), "a missing file ignores expected_hash")
}

func TestWriteFileReplacesAtomically(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, root := newTestFS(t, Options{}, map[string]string{"target.txt": "old\n", "sub/t.txt": "t\n"})
	require.NoError(t, os.Chmod(filepath.Join(root, "target.txt"), 0o600))
	before, err := os.Stat(filepath.Join(root, "target.txt"))
	require.NoError(t, err)
	mustSymlink(t, "target.txt", filepath.Join(root, "link.txt"))
	mustSymlink(t, "sub/ghost.txt", filepath.Join(root, "dangling.txt"))
	require.NoError(t, os.Link(filepath.Join(root, "target.txt"), filepath.Join(root, "hard.txt")))

	assert.Equal(t, "Wrote 8 chars (1 lines) to link.txt. [hash:"+contentHash([]byte("through\n"))+"]",
		write(ctx, t, c, map[string]any{"path": "link.txt", "content": "through\n"}))
	after, err := os.Stat(filepath.Join(root, "target.txt"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), after.Mode().Perm(), "permission bits kept")
	assert.False(t, os.SameFile(before, after), "new content is a new file renamed over the old")
	assert.Equal(t, "through\n", readBack(t, root, "target.txt"))
	assert.Equal(t, "old\n", readBack(t, root, "hard.txt"), "another hard link keeps the old content")
	lst, err := os.Lstat(filepath.Join(root, "link.txt"))
	require.NoError(t, err)
	assert.NotZero(t, lst.Mode()&os.ModeSymlink, "the link stays a link")

	write(ctx, t, c, map[string]any{"path": "dangling.txt", "content": "made\n"})
	assert.Equal(t, "made\n", readBack(t, root, "sub/ghost.txt"), "a dangling in-root link creates its target")

	// Shorter content truncates.
	write(ctx, t, c, map[string]any{"path": "target.txt", "content": "x"})
	assert.Equal(t, "x", readBack(t, root, "target.txt"))
}

func TestWriteFileUnreadableTarget(t *testing.T) {
	t.Parallel()
	if os.Geteuid() == 0 {
		t.Skip("root reads everything")
	}
	c, root := newTestFS(t, Options{}, map[string]string{"target.txt": "secret\n"})
	require.NoError(t, os.Chmod(filepath.Join(root, "target.txt"), 0o200))
	assert.Equal(t, "RETRY: [Errno 13] Permission denied: 'target.txt'",
		write(context.Background(), t, c, map[string]any{"path": "target.txt", "content": "x", "expected_hash": "abc"}))

	var rec recorder
	assert.Equal(t, "Wrote 1 chars (1 lines) to target.txt. [hash:2d711642b726]", write(rec.ctx(), t, c, map[string]any{"path": "target.txt", "content": "x"}))
	req := rec.events[0].(*FileChangeRequestEvent)
	assert.Equal(t, "--- a/target.txt\n+++ b/target.txt", req.Diff)
	assert.True(t, req.Truncated, "an unreadable file is announced with headers only")
}

func TestWriteFileEvents(t *testing.T) {
	t.Parallel()
	c, _ := newTestFS(t, Options{DeniedPatterns: []string{"private/*"}},
		map[string]string{"hello.txt": "Hello, world!\n", "big.txt": strings.Repeat("x\n", 20000)})

	var rec recorder
	assert.Equal(t, "Wrote 4 chars (2 lines) to fresh.txt. [hash:"+contentHash([]byte("a\nb\n"))+"]",
		write(rec.ctx(), t, c, map[string]any{"path": "fresh.txt", "content": "a\nb\n"}))
	require.Equal(t, "file_change_request,file_written", rec.kinds())
	req := rec.events[0].(*FileChangeRequestEvent)
	assert.Equal(t, OpWrite, req.Operation)
	assert.Equal(t, "fresh.txt", req.Path)
	assert.Equal(t, "--- a/fresh.txt\n+++ b/fresh.txt\n@@ -0,0 +1,2 @@\n+a\n+b", req.Diff)
	assert.Equal(t, c.RootDir(), req.RootDir)
	assert.Equal(t, CapabilityID, req.CapabilityID)
	written := rec.events[1].(*FileWrittenEvent)
	assert.Equal(t, contentHash([]byte("a\nb\n")), written.ContentHash)

	rec = recorder{}
	write(rec.ctx(), t, c, map[string]any{"path": "./hello.txt", "content": "Hello, there!\n"})
	assert.Equal(t, "--- a/hello.txt\n+++ b/hello.txt\n@@ -1 +1 @@\n-Hello, world!\n+Hello, there!",
		rec.events[0].(*FileChangeRequestEvent).Diff)

	rec = recorder{}
	write(rec.ctx(), t, c, map[string]any{"path": "big.txt", "content": "small\n"})
	req = rec.events[0].(*FileChangeRequestEvent)
	assert.Equal(t, "--- a/big.txt\n+++ b/big.txt", req.Diff)
	assert.True(t, req.Truncated)

	rec = recorder{}
	write(rec.ctx(), t, c, map[string]any{"path": "private/x.txt", "content": "x"})
	write(rec.ctx(), t, c, map[string]any{"path": "nodir/x.txt", "content": "x"})
	write(rec.ctx(), t, c, map[string]any{"path": "hello.txt", "content": "x", "expected_hash": "000000000000"})
	assert.Empty(t, rec.events, "refused writes announce nothing")
}

func TestWriteFileCancel(t *testing.T) {
	t.Parallel()
	c, root := newTestFS(t, Options{}, map[string]string{"keep.txt": "keep\n"})
	tests := []struct {
		reasons []string
		path    string
		want    string
	}{
		{[]string{"not today"}, "fresh.txt", "['fresh.txt' was not written: not today]"},
		{[]string{""}, "fresh.txt", "['fresh.txt' was not written: cancelled by a listener]"},
		{[]string{"first", ""}, "keep.txt", "['keep.txt' was not written: first]"},
		{[]string{"x"}, "it's.txt", `["it's.txt" was not written: x]`},
	}
	for _, tt := range tests {
		rec := recorder{onRequest: func(ev *FileChangeRequestEvent) {
			for _, r := range tt.reasons {
				ev.Cancel(r)
			}
		}}
		out, err := callTool(rec.ctx(), t, c, ToolWriteFile, map[string]any{"path": tt.path, "content": "new\n"})
		require.NoError(t, err, "a cancelled change is a normal result")
		assert.Equal(t, tt.want, out)
		assert.Equal(t, "file_change_request", rec.kinds())
	}
	assert.NoFileExists(t, filepath.Join(root, "fresh.txt"))
	assert.Equal(t, "keep\n", readBack(t, root, "keep.txt"))

	// A listener that fails aborts the call; nothing is written.
	boom := errors.New("listener exploded")
	ctx := capabilities.WithListener(context.Background(), func(context.Context, capabilities.Event) error { return boom })
	_, err := callTool(ctx, t, c, ToolWriteFile, map[string]any{"path": "keep.txt", "content": "x"})
	require.ErrorIs(t, err, boom)
	_, isRetry := capabilities.AsRetry(err)
	assert.False(t, isRetry)
	assert.Equal(t, "keep\n", readBack(t, root, "keep.txt"))
}

// What a listener approved is what lands: changes made while it decided are
// caught by the checks repeated after it.
func TestWriteFileApprovalRaces(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		path   string
		during func(t *testing.T, root string)
		want   string
		check  func(t *testing.T, root string)
	}{
		{
			name:   "file changed",
			path:   "hello.txt",
			during: func(t *testing.T, root string) { mustWrite(t, root, "hello.txt", "new\n") },
			want:   "RETRY: Conflict: file 'hello.txt' has changed (expected hash:d9014c462484, got hash:7aa7a5359173). Re-read the file and retry.",
			check:  func(t *testing.T, root string) { assert.Equal(t, "new\n", readBack(t, root, "hello.txt")) },
		},
		{
			name:   "file appeared",
			path:   "fresh.txt",
			during: func(t *testing.T, root string) { mustWrite(t, root, "fresh.txt", "") },
			want:   "RETRY: Conflict: file 'fresh.txt' has changed (expected hash:<absent>, got hash:e3b0c44298fc). Re-read the file and retry.",
			check:  func(t *testing.T, root string) { assert.Equal(t, "", readBack(t, root, "fresh.txt")) },
		},
		{
			name: "replaced by a symlink inside",
			path: "hello.txt",
			during: func(t *testing.T, root string) {
				require.NoError(t, os.Remove(filepath.Join(root, "hello.txt")))
				mustSymlink(t, "other.txt", filepath.Join(root, "hello.txt"))
			},
			want:  "RETRY: Path 'hello.txt' was replaced while the change was announced. Retry.",
			check: func(t *testing.T, root string) { assert.Equal(t, "other\n", readBack(t, root, "other.txt")) },
		},
		{
			name: "parent replaced by a symlink outside",
			path: "sub/f.txt",
			during: func(t *testing.T, root string) {
				require.NoError(t, os.RemoveAll(filepath.Join(root, "sub")))
				mustSymlink(t, t.TempDir(), filepath.Join(root, "sub"))
			},
			want: "RETRY: Path 'sub/f.txt' resolves outside the root directory.",
		},
		{
			name: "replaced by a FIFO",
			path: "hello.txt",
			during: func(t *testing.T, root string) {
				require.NoError(t, os.Remove(filepath.Join(root, "hello.txt")))
				mkfifo(t, filepath.Join(root, "hello.txt"))
			},
			want: "RETRY: Path 'hello.txt' exists and is not a regular file.",
		},
		{
			name:   "deleted: recreated",
			path:   "hello.txt",
			during: func(t *testing.T, root string) { require.NoError(t, os.Remove(filepath.Join(root, "hello.txt"))) },
			want:   "Wrote 9 chars (1 lines) to hello.txt. [hash:" + contentHash([]byte("approved\n")) + "]",
			check:  func(t *testing.T, root string) { assert.Equal(t, "approved\n", readBack(t, root, "hello.txt")) },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, root := newTestFS(t, Options{}, map[string]string{"hello.txt": "Hello, world!\n", "other.txt": "other\n", "sub/f.txt": "f\n"})
			rec := recorder{onRequest: func(*FileChangeRequestEvent) { tt.during(t, root) }}
			assert.Equal(t, tt.want, write(rec.ctx(), t, c, map[string]any{"path": tt.path, "content": "approved\n"}))
			if tt.check != nil {
				tt.check(t, root)
			}
		})
	}
}

// A new file's name taken by something else while the change waited for
// approval is refused, and the something else left alone, whichever way the
// write finds out.
func TestWriteFileNameTakenDuringApproval(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		during func(t *testing.T, target string)
		want   string
	}{
		{
			name:   "by a file",
			during: func(t *testing.T, target string) { require.NoError(t, os.WriteFile(target, []byte("theirs\n"), 0o644)) },
			want:   "RETRY: Conflict: file 'fresh.txt' has changed (expected hash:<absent>, got hash:" + contentHash([]byte("theirs\n"))[:12] + "). Re-read the file and retry.",
		},
		{
			name:   "by a directory",
			during: func(t *testing.T, target string) { require.NoError(t, os.Mkdir(target, 0o755)) },
			want:   "RETRY: Path 'fresh.txt' exists and is not a regular file.",
		},
		{
			name:   "by a FIFO",
			during: mkfifo,
			want:   "RETRY: Path 'fresh.txt' exists and is not a regular file.",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, root := newTestFS(t, Options{}, map[string]string{"hello.txt": "Hello, world!\n"})
			target := filepath.Join(root, "fresh.txt")
			rec := recorder{onRequest: func(*FileChangeRequestEvent) { tt.during(t, target) }}
			assert.Equal(t, tt.want, write(rec.ctx(), t, c, map[string]any{"path": "fresh.txt", "content": "approved\n"}))
			names, err := os.ReadDir(root)
			require.NoError(t, err)
			for _, e := range names {
				assert.False(t, strings.HasPrefix(e.Name(), ".agentspec-tmp"), "temporary file %s left", e.Name())
			}
			if st, err := os.Stat(target); assert.NoError(t, err) && st.Mode().IsRegular() {
				assert.Equal(t, "theirs\n", readBack(t, root, "fresh.txt"))
			}
		})
	}
}
