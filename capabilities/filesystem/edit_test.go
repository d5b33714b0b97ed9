package filesystem

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func edit(ctx context.Context, t *testing.T, c *Capability, args map[string]any) string {
	t.Helper()
	out, err := callTool(ctx, t, c, ToolEditFile, args)
	return result(out, err)
}

func pair(old, new string) map[string]any { return map[string]any{"old_text": old, "new_text": new} }

func TestEditFileCRLFPreserved(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, root := newTestFS(t, Options{}, map[string]string{"crlf.txt": "one\r\ntwo\r\n"})
	edit(ctx, t, c, map[string]any{"path": "crlf.txt", "old_text": "one", "new_text": "three"})
	out := edit(ctx, t, c, map[string]any{"path": "crlf.txt", "old_text": "three", "new_text": "four"})
	assert.Equal(t, "four\r\ntwo\r\n", readBack(t, root, "crlf.txt"))
	assert.Equal(t, "Edited crlf.txt. [hash:"+contentHash([]byte("four\r\ntwo\r\n"))+"]", out)

	no := false
	plain, _ := newTestFS(t, Options{ContentHashes: &no}, map[string]string{"f.txt": "a\n"})
	assert.Equal(t, "Edited f.txt.", edit(ctx, t, plain, map[string]any{"path": "f.txt", "old_text": "a", "new_text": "b"}))
}

func TestEditFileTranscript(t *testing.T) {
	t.Parallel()
	c, root := newTestFS(t, Options{DeniedPatterns: []string{"config/*"}}, map[string]string{
		"code.py":           "def f():\n    return 1\n\ndef g():\n    return 1\n",
		"batch.txt":         "alpha beta gamma\n",
		"bin.dat":           "ab\x00cd",
		"latin1.txt":        "caf\xe9\n",
		"config/secret.txt": "s3cret\n",
		".env":              "TOKEN=abc\n",
		"dir/x.txt":         "x",
	})
	mkfifo(t, filepath.Join(root, "fifo"))
	mustSymlink(t, ".env", filepath.Join(root, "envlink"))
	calls := []call{
		{ToolEditFile, map[string]any{"path": "code.py"}},
		{ToolEditFile, map[string]any{"path": "code.py", "old_text": "x"}},
		{ToolEditFile, map[string]any{"path": "code.py", "replacements": []any{}}},
		{ToolEditFile, map[string]any{"path": "code.py", "old_text": "a", "new_text": "b", "replacements": []any{pair("a", "b")}}},
		{ToolEditFile, map[string]any{"path": "code.py", "replacements": []any{map[string]any{"old_text": "a"}}}},
		{ToolEditFile, map[string]any{"path": "code.py", "old_text": "", "new_text": "x"}},
		{ToolEditFile, map[string]any{"path": "code.py", "old_text": "return 2", "new_text": "x"}},
		{ToolEditFile, map[string]any{"path": "code.py", "old_text": "return 1", "new_text": "return 2"}},
		{ToolEditFile, map[string]any{"path": "code.py", "old_text": "def g():\n    return 1", "new_text": "def g():\n    return 2"}},
		{ToolEditFile, map[string]any{"path": "batch.txt", "replacements": []any{pair("alpha", "ALPHA"), pair("", "x")}}},
		{ToolEditFile, map[string]any{"path": "batch.txt", "replacements": []any{pair("alpha", "ALPHA"), pair("alpha", "x")}}},
		{ToolEditFile, map[string]any{"path": "batch.txt", "replacements": []any{pair("a", "A"), pair("beta", "B")}}},
		{ToolEditFile, map[string]any{"path": "batch.txt", "replacements": []any{pair("alpha", "beta"), pair("beta beta", "delta")}}},
		{ToolEditFile, map[string]any{"path": "batch.txt", "old_text": "gamma", "new_text": "G", "expected_hash": "000000000000"}},
		{ToolEditFile, map[string]any{"path": "batch.txt", "old_text": "gamma", "new_text": "G", "expected_hash": contentHash([]byte("delta gamma\n"))}},
		{ToolEditFile, map[string]any{"path": "bin.dat", "old_text": "ab", "new_text": "x"}},
		{ToolEditFile, map[string]any{"path": "latin1.txt", "old_text": "caf", "new_text": "x"}},
		{ToolEditFile, map[string]any{"path": "missing.txt", "old_text": "a", "new_text": "b"}},
		{ToolEditFile, map[string]any{"path": "dir", "old_text": "a", "new_text": "b"}},
		{ToolEditFile, map[string]any{"path": "fifo", "old_text": "a", "new_text": "b"}},
		{ToolEditFile, map[string]any{"path": "config/secret.txt", "old_text": "s3cret", "new_text": "x"}},
		{ToolEditFile, map[string]any{"path": "envlink", "old_text": "abc", "new_text": "x"}},
		{ToolEditFile, map[string]any{"path": "../code.py", "old_text": "a", "new_text": "b"}},
	}
	goldenCompare(t, "edit_file", transcript(context.Background(), t, c, calls))
	assert.Equal(t, "def f():\n    return 1\n\ndef g():\n    return 2\n", readBack(t, root, "code.py"))
	assert.Equal(t, "delta G\n", readBack(t, root, "batch.txt"))
	assert.Equal(t, "ab\x00cd", readBack(t, root, "bin.dat"))
}

func TestEditFileEvents(t *testing.T) {
	t.Parallel()
	c, root := newTestFS(t, Options{}, map[string]string{"f.txt": "1\n2\n3\n4\n5\n6\n7\n8\n"})
	var rec recorder
	edit(rec.ctx(), t, c, map[string]any{"path": "f.txt", "old_text": "4\n", "new_text": "four\n"})
	require.Equal(t, "file_change_request,file_edited", rec.kinds(), "one edited event, no separate written event")
	req := rec.events[0].(*FileChangeRequestEvent)
	assert.Equal(t, OpEdit, req.Operation)
	wantDiff := "--- a/f.txt\n+++ b/f.txt\n@@ -1,7 +1,7 @@\n 1\n 2\n 3\n-4\n+four\n 5\n 6\n 7"
	assert.Equal(t, wantDiff, req.Diff)
	edited := rec.events[1].(*FileEditedEvent)
	assert.Equal(t, wantDiff, edited.Diff)
	assert.False(t, edited.Truncated)
	assert.Equal(t, contentHash([]byte(readBack(t, root, "f.txt"))), edited.ContentHash)
	w, ok := rec.events[1].(WriteEvent)
	require.True(t, ok, "a listener for writes receives edits")
	assert.Equal(t, "f.txt", w.Written().Path)

	rec = recorder{onRequest: func(ev *FileChangeRequestEvent) { ev.Cancel("frozen") }}
	assert.Equal(t, "['f.txt' was not edited: frozen]", edit(rec.ctx(), t, c, map[string]any{"path": "f.txt", "old_text": "four", "new_text": "4"}))
	assert.Contains(t, readBack(t, root, "f.txt"), "four")
	assert.Equal(t, "file_change_request", rec.kinds())

	rec = recorder{}
	edit(rec.ctx(), t, c, map[string]any{"path": "f.txt", "old_text": "five", "new_text": "5"})
	assert.Empty(t, rec.events, "a failed edit announces nothing")
}

func TestEditFileApprovalRaces(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		during func(t *testing.T, root string)
		want   string
		after  string // content of f.txt afterwards; "-" when it must not exist
	}{
		{"changed", func(t *testing.T, root string) { mustWrite(t, root, "f.txt", "hello there\n") },
			"RETRY: Conflict: file 'f.txt' has changed (expected hash:" + contentHash([]byte("hello world\n")) +
				", got hash:" + contentHash([]byte("hello there\n")) + "). Re-read the file and retry.", "hello there\n"},
		{"deleted", func(t *testing.T, root string) { require.NoError(t, os.Remove(filepath.Join(root, "f.txt"))) },
			"RETRY: File not found: f.txt", "-"},
		{"untouched", func(*testing.T, string) {}, "Edited f.txt. [hash:" + contentHash([]byte("hello moon\n")) + "]", "hello moon\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, root := newTestFS(t, Options{}, map[string]string{"f.txt": "hello world\n"})
			rec := recorder{onRequest: func(*FileChangeRequestEvent) { tt.during(t, root) }}
			assert.Equal(t, tt.want, edit(rec.ctx(), t, c, map[string]any{"path": "f.txt", "old_text": "world", "new_text": "moon"}))
			if tt.after == "-" {
				assert.NoFileExists(t, filepath.Join(root, "f.txt"), "an edit never recreates a deleted file")
			} else {
				assert.Equal(t, tt.after, readBack(t, root, "f.txt"))
			}
		})
	}
}

func TestEditFileLargeDiffIsBounded(t *testing.T) {
	t.Parallel()
	var sb strings.Builder
	for range 3000 {
		sb.WriteString("a fairly ordinary line of source text\n")
	}
	c, _ := newTestFS(t, Options{}, map[string]string{"big.txt": sb.String() + "END\n"})
	var rec recorder
	edit(rec.ctx(), t, c, map[string]any{"path": "big.txt", "old_text": "END", "new_text": "FIN"})
	ev := rec.events[1].(*FileEditedEvent)
	assert.Equal(t, "--- a/big.txt\n+++ b/big.txt", ev.Diff)
	assert.True(t, ev.Truncated)
}

// applyReplacements against strings.Replace, the obvious way, for chains of
// replacements that grow, shrink and keep the content's length.
func TestApplyReplacementsInPlace(t *testing.T) {
	t.Parallel()
	s := func(v string) *string { return &v }
	base := "alpha beta gamma delta\r\nepsilon\n"
	chains := [][]replacement{
		{{s("beta"), s("BETA-BETA-BETA")}},
		{{s("beta"), s("b")}, {s("b gamma"), s("bg and more and more")}, {s("epsilon"), s("")}},
		{{s("alpha"), s("omega")}, {s("omega beta"), s("x")}, {s("\r\n"), s("\n\n\n\n")}},
		{{s("delta\r\nepsilon\n"), s("")}, {s("alpha "), s("")}, {s("gamma "), s("a much longer gamma ")}},
	}
	for _, chain := range chains {
		want := base
		for _, r := range chain {
			want = strings.Replace(want, *r.OldText, *r.NewText, 1)
		}
		old := []byte(base)
		got, err := applyReplacements(old, chain, "f.txt")
		require.NoError(t, err)
		assert.Equal(t, want, string(got))
		assert.Equal(t, base, string(old), "the old content is left as it was")
	}
	_, err := applyReplacements([]byte(base), []replacement{{s("beta"), s("a")}, {s("a"), s("b")}}, "f.txt")
	assert.EqualError(t, err, "replacement 2 found 6 times in f.txt. Include more surrounding context to make the match unique. No changes were written.")
}

// Editing a big file allocates its old and its new content once each, not
// the four copies of decoding, replacing and encoding strings.
func TestEditFileMemoryBounded(t *testing.T) {
	// Not parallel: it measures the allocations of the process.
	c, root := newTestFS(t, Options{}, nil)
	const size = 20 << 20
	writeHugeLine(t, filepath.Join(root, "big.txt"), size, "a line of a large file\n")
	f, err := os.OpenFile(filepath.Join(root, "big.txt"), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString("FIRST marker\nSECOND marker\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	var out string
	var rec recorder
	alloc := allocated(func() {
		out = edit(rec.ctx(), t, c, map[string]any{"path": "big.txt", "replacements": []map[string]any{
			pair("FIRST marker", "first, and now a longer line"), pair("SECOND marker", "2nd"),
		}})
	})
	require.True(t, strings.HasPrefix(out, "Edited big.txt."), out)
	got := readBack(t, root, "big.txt")
	assert.True(t, strings.HasSuffix(got, "first, and now a longer line\n2nd\n"), "%q", got[len(got)-60:])
	assert.Len(t, got, size+len("first, and now a longer line\n2nd\n"))
	t.Logf("bytes allocated editing a %d-byte file: %d", size, alloc)
	assert.Less(t, alloc, uint64(2*size+size/2+raceSlack), "bytes allocated editing a %d-byte file", size)
}
