package filesystem

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func read(t *testing.T, c *Capability, args map[string]any) string {
	t.Helper()
	out, err := callTool(context.Background(), t, c, ToolReadFile, args)
	return result(out, err)
}

func TestReadFileReferenceExamples(t *testing.T) {
	t.Parallel()
	c, _ := newTestFS(t, Options{}, map[string]string{"hello.txt": "Hello, world!\n", "empty.txt": ""})
	assert.Equal(t, "[hello.txt | 1 lines | hash:d9014c462484]\n     1\tHello, world!\n", read(t, c, map[string]any{"path": "hello.txt"}))
	assert.Equal(t, "[empty.txt | 0 lines | hash:e3b0c44298fc]\n(empty file)\n", read(t, c, map[string]any{"path": "empty.txt"}))
	assert.Equal(t, "[empty.txt | 0 lines | hash:e3b0c44298fc]\n(empty file)\n", read(t, c, map[string]any{"path": "empty.txt", "offset": 7}),
		"the offset is not checked for an empty file")

	no := false
	plain, _ := newTestFS(t, Options{ContentHashes: &no}, map[string]string{"f.txt": "ab\ncd\n"})
	assert.Equal(t, "[f.txt | 2 lines]\n     1\tab\n     2\tcd\n", read(t, plain, map[string]any{"path": "f.txt"}))
}

func TestReadFileTranscript(t *testing.T) {
	t.Parallel()
	files := map[string]string{
		"hello.txt":         "Hello, world!\n",
		"multi.txt":         "line one\nline two\nline three\n",
		"crlf.txt":          "one\r\ntwo\r\nthree",
		"mixed.txt":         "a\rb\r\nc\vd\u2028e\n",
		"cr-last.txt":       "x\r",
		"binary.bin":        "\x00\x01\x02\x03",
		"latin1.txt":        "caf\xe9\n",
		"unicode.txt":       "héllo\n日本語\n",
		"subdir/nested.py":  "print('nested')\n",
		"config/secret.txt": "s3cret\n",
		".env":              "TOKEN=abc\n",
		"it's.txt":          "quote\n",
		"long.txt":          strings.Repeat("line\n", 12),
	}
	c, root := newTestFS(t, Options{DeniedPatterns: []string{"config/*"}, MaxReadLines: 10}, files)
	mustSymlink(t, "config/secret.txt", filepath.Join(root, "alias.txt"))
	mustSymlink(t, "hello.txt", filepath.Join(root, "hello-link"))
	mustSymlink(t, "/etc/hostname", filepath.Join(root, "escape"))
	mustSymlink(t, "/dev/zero", filepath.Join(root, "zero"))
	mkfifo(t, filepath.Join(root, "fifo"))
	ln, err := net.Listen("unix", filepath.Join(root, "sock"))
	require.NoError(t, err)
	defer ln.Close()

	calls := []call{
		{ToolReadFile, map[string]any{"path": "hello.txt"}},
		{ToolReadFile, map[string]any{"path": "./subdir/../hello.txt"}},
		{ToolReadFile, map[string]any{"path": "multi.txt", "offset": 1}},
		{ToolReadFile, map[string]any{"path": "multi.txt", "offset": 1, "limit": 1}},
		{ToolReadFile, map[string]any{"path": "multi.txt", "offset": 3}},
		{ToolReadFile, map[string]any{"path": "multi.txt", "offset": -1}},
		{ToolReadFile, map[string]any{"path": "multi.txt", "limit": 0}},
		{ToolReadFile, map[string]any{"path": "long.txt"}},
		{ToolReadFile, map[string]any{"path": "long.txt", "offset": 10}},
		{ToolReadFile, map[string]any{"path": "long.txt", "limit": 100}},
		{ToolReadFile, map[string]any{"path": "crlf.txt"}},
		{ToolReadFile, map[string]any{"path": "mixed.txt"}},
		{ToolReadFile, map[string]any{"path": "cr-last.txt"}},
		{ToolReadFile, map[string]any{"path": "binary.bin"}},
		{ToolReadFile, map[string]any{"path": "latin1.txt"}},
		{ToolReadFile, map[string]any{"path": "unicode.txt"}},
		{ToolReadFile, map[string]any{"path": "subdir"}},
		{ToolReadFile, map[string]any{"path": "."}},
		{ToolReadFile, map[string]any{"path": "nope.txt"}},
		{ToolReadFile, map[string]any{"path": "hello.txt/x"}},
		{ToolReadFile, map[string]any{"path": "fifo"}},
		{ToolReadFile, map[string]any{"path": "sock"}},
		{ToolReadFile, map[string]any{"path": "config/secret.txt"}},
		{ToolReadFile, map[string]any{"path": "config/./secret.txt"}},
		{ToolReadFile, map[string]any{"path": "alias.txt"}},
		{ToolReadFile, map[string]any{"path": "hello-link"}},
		{ToolReadFile, map[string]any{"path": ".env"}},
		{ToolReadFile, map[string]any{"path": "escape"}},
		{ToolReadFile, map[string]any{"path": "zero"}},
		{ToolReadFile, map[string]any{"path": "../etc/passwd"}},
		{ToolReadFile, map[string]any{"path": "it's.txt"}},
		{ToolReadFile, map[string]any{"path": "it's"}},
		{ToolReadFile, map[string]any{"path": strings.Repeat("n", 300)}},
		{ToolReadFile, map[string]any{"path": "nul\x00byte"}},
		{ToolReadFile, map[string]any{}},
		{ToolReadFile, map[string]any{"path": "hello.txt", "bogus": true}},
	}
	goldenCompare(t, "read_file", transcript(context.Background(), t, c, calls))
}

func TestReadFilePermissionDenied(t *testing.T) {
	t.Parallel()
	if os.Geteuid() == 0 {
		t.Skip("root reads everything")
	}
	c, root := newTestFS(t, Options{}, map[string]string{"locked.txt": "x\n"})
	require.NoError(t, os.Chmod(filepath.Join(root, "locked.txt"), 0))
	assert.Equal(t, "RETRY: [Errno 13] Permission denied: 'locked.txt'", read(t, c, map[string]any{"path": "locked.txt"}))
}

func TestReadFileFromCwd(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	mustWrite(t, root, "proj/a.txt", "a\n")
	mustWrite(t, root, "top.txt", "top\n")
	c, err := New(Options{Cwd: "proj", Tools: []string{ToolReadFile}}, root)
	require.NoError(t, err)
	defer c.Close()
	assert.Equal(t, "[a.txt | 1 lines | hash:87428fc52280]\n     1\ta\n", read(t, c, map[string]any{"path": "a.txt"}))
	assert.Equal(t, "[../top.txt | 1 lines | hash:"+contentHash([]byte("top\n"))+"]\n     1\ttop\n",
		read(t, c, map[string]any{"path": "../top.txt"}))
}

func TestReadFileMaxReadChars(t *testing.T) {
	t.Parallel()
	files := map[string]string{
		"ten.txt":                          "0123456789\n0123456789\n0123456789\n0123456789\n",
		"wide.txt":                         "short\n" + strings.Repeat("w", 1234) + "\nafter\n",
		"first.txt":                        strings.Repeat("é", 1500) + "\nnext\n",
		"uni.txt":                          strings.Repeat("ü", 40) + "\n" + strings.Repeat("ü", 40) + "\n",
		strings.Repeat("d", 70) + "/f.txt": "x\n",
	}
	c, _ := newTestFS(t, Options{MaxReadChars: 300}, files)
	// Header "[ten.txt | 4 lines | hash:...]\n" is 44 characters, so the
	// body budget is 300-44-200 = 56: three rendered lines of 18 fit.
	ten := read(t, c, map[string]any{"path": "ten.txt"})
	assert.Equal(t, "[ten.txt | 4 lines | hash:"+contentHash([]byte(files["ten.txt"]))+"]\n"+
		"     1\t0123456789\n     2\t0123456789\n     3\t0123456789\n"+
		"... (1 more lines. Use offset=3 to continue reading.)\n", ten)
	assert.Equal(t, "     2\t0123456789\n", strings.SplitAfter(read(t, c, map[string]any{"path": "ten.txt", "offset": 1, "limit": 1}), "\n")[1],
		"limit applies inside the budget")

	wide := read(t, c, map[string]any{"path": "wide.txt", "offset": 1})
	assert.Equal(t, "... (Line 2 is 1,235 characters and does not fit the read window. Use offset=2 to skip it, or a shell byte range to inspect it.)\n",
		strings.SplitN(wide, "\n", 2)[1])
	assert.Contains(t, read(t, c, map[string]any{"path": "wide.txt"}), "     1\tshort\n... (2 more lines. Use offset=1 to continue reading.)\n")

	first := read(t, c, map[string]any{"path": "first.txt"})
	assert.Contains(t, first, "Line 1 is 1,501 characters", "lengths count code points, terminator included")

	// 40 ü + "\n" renders as 48 code points (96 bytes): one line fits 56, two do not.
	uni := read(t, c, map[string]any{"path": "uni.txt"})
	assert.Contains(t, uni, "     1\t"+strings.Repeat("ü", 40)+"\n... (1 more lines. Use offset=1 to continue reading.)\n")

	longPath := strings.Repeat("d", 70) + "/f.txt"
	got := read(t, c, map[string]any{"path": longPath})
	assert.True(t, strings.HasPrefix(got, "[..."+longPath[len(longPath)-75:]+" | 1 lines"), got)
}

// Whatever max_read_chars is, the result fits it, and following the
// continuation hints pages through every line exactly once.
func TestReadFileMaxReadCharsPaging(t *testing.T) {
	t.Parallel()
	var content strings.Builder
	for i := range 60 {
		fmt.Fprintf(&content, "%s%d\r\n", strings.Repeat("ä", i%17), i)
	}
	hint := regexp.MustCompile(`\.\.\. \(\d+ more lines\. Use offset=(\d+) to continue reading\.\)\n$`)
	body := regexp.MustCompile(`(?m)^ *\d+\t`)
	for _, maxChars := range []int{290, 300, 333, 420, 999, 5000} {
		c, _ := newTestFS(t, Options{MaxReadChars: maxChars}, map[string]string{"p.txt": content.String()})
		var lines []string
		for offset, reads := 0, 0; ; reads++ {
			require.Less(t, reads, 100, "paging must make progress")
			out := read(t, c, map[string]any{"path": "p.txt", "offset": offset})
			require.LessOrEqual(t, runeCount(out), maxChars, "max_read_chars=%d offset=%d", maxChars, offset)
			_, rest, _ := strings.Cut(out, "]\n")
			text := hint.ReplaceAllString(rest, "")
			for _, l := range strings.SplitAfter(text, "\r\n") {
				if l != "" {
					lines = append(lines, body.ReplaceAllString(l, ""))
				}
			}
			m := hint.FindStringSubmatch(out)
			if m == nil {
				break
			}
			offset, _ = strconv.Atoi(m[1])
		}
		assert.Equal(t, content.String(), strings.Join(lines, ""), "max_read_chars=%d", maxChars)
	}
}

// A 50 MB single-line file under max_read_chars: the line is measured, not
// held, so memory stays far below the file's size.
func TestReadFileHugeLineIsBounded(t *testing.T) {
	// Not parallel: it measures the allocations of the process.
	c, root := newTestFS(t, Options{MaxReadChars: 2000}, nil)
	const size = 50 << 20
	f, err := os.Create(filepath.Join(root, "huge.txt"))
	require.NoError(t, err)
	chunk := []byte(strings.Repeat("abcdefgh", 1<<14))
	for written := 0; written < size; written += len(chunk) {
		_, err := f.Write(chunk)
		require.NoError(t, err)
	}
	require.NoError(t, f.Close())

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	out := read(t, c, map[string]any{"path": "huge.txt"})
	runtime.ReadMemStats(&after)
	assert.Contains(t, out, "]\n... (Line 1 is 52,428,800 characters and does not fit the read window.")
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(4<<20), "bytes allocated reading a 50 MB file")
}

func TestReadFileEvents(t *testing.T) {
	t.Parallel()
	c, _ := newTestFS(t, Options{}, map[string]string{"multi.txt": "1\n2\n3\n", "bin": "\x00\x01\x02\x03"})
	var rec recorder
	ctx := rec.ctx()
	_, err := callTool(ctx, t, c, ToolReadFile, map[string]any{"path": "./multi.txt", "offset": 2})
	require.NoError(t, err)
	_, err = callTool(ctx, t, c, ToolReadFile, map[string]any{"path": "multi.txt", "offset": 3})
	require.Error(t, err)
	_, err = callTool(ctx, t, c, ToolReadFile, map[string]any{"path": "bin"})
	require.NoError(t, err)
	_, err = callTool(ctx, t, c, ToolReadFile, map[string]any{"path": "missing"})
	require.Error(t, err)
	require.Len(t, rec.events, 2, "no event for a bad offset or a missing file")
	ev := rec.events[0].(*FileReadEvent)
	assert.Equal(t, "multi.txt", ev.Path)
	assert.Equal(t, contentHash([]byte("1\n2\n3\n")), ev.ContentHash, "hash of the whole file")
	assert.Equal(t, c.RootDir(), ev.RootDir)
	assert.Equal(t, "call-1", ev.ToolCallID)
	assert.Equal(t, "054edec1d021", rec.events[1].(*FileReadEvent).ContentHash)
}

// Every way a file's content is read (read_file, file_info, the snapshot of a
// change, the watcher's hash, the bare reader) sees all of it and hashes it
// alike, whatever its size around the buffers' and the diff limit's bounds.
func TestReadPathsAgreeAcrossSizes(t *testing.T) {
	t.Parallel()
	sizes := []int{0, 1, 4095, 64<<10 - 1, 64 << 10, 64<<10 + 1, maxDiffFileBytes, maxDiffFileBytes + 1, 300001}
	files := map[string]string{}
	for _, n := range sizes {
		line := "a line of text, then a break\n"
		files[fmt.Sprintf("f%d.txt", n)] = strings.Repeat(line, n/len(line)+1)[:n]
	}
	c, _ := newTestFS(t, Options{}, files)
	for _, n := range sizes {
		rel := fmt.Sprintf("f%d.txt", n)
		content := files[rel]
		want := contentHash([]byte(content))
		t.Run(rel, func(t *testing.T) {
			t.Parallel()
			f, err := c.fs.dir.OpenReader(rel)
			require.NoError(t, err)
			got, err := io.ReadAll(f)
			require.NoError(t, f.Close())
			require.NoError(t, err)
			assert.Equal(t, content, string(got), "the bare reader")

			for _, keepAll := range []bool{false, true} {
				snap, err := c.fs.readSnapshot(rel, keepAll)
				require.NoError(t, err)
				assert.Equal(t, want, snap.hash)
				if keepAll || n <= maxDiffFileBytes {
					assert.Equal(t, content, string(snap.data), "keepAll=%v", keepAll)
				} else {
					assert.Nil(t, snap.data, "too large to diff")
				}
			}

			hash, deleted, ok := c.fs.hashNow(rel)
			assert.Equal(t, []any{want, false, true}, []any{hash, deleted, ok}, "the watcher's hash")
			assert.Contains(t, read(t, c, map[string]any{"path": rel, "limit": 1}), "hash:"+want+"]")
			out, err := callTool(context.Background(), t, c, ToolFileInfo, map[string]any{"path": rel})
			require.NoError(t, err)
			assert.Contains(t, out, "hash: "+want)
		})
	}
}

// read_file's buffers come from pools: reads of different files and windows
// at once must not see each other's lines.
func TestReadFileConcurrentReads(t *testing.T) {
	t.Parallel()
	files := map[string]string{}
	for i := range 6 {
		files[fmt.Sprintf("f%d.txt", i)] = strings.Repeat(fmt.Sprintf("file %d says %s\n", i, strings.Repeat("ab", i*40)), 50*(i+1))
	}
	c, _ := newTestFS(t, Options{MaxReadChars: 3000}, files)
	type call struct {
		path          string
		offset, limit int
	}
	var calls []call
	for i := range 6 {
		calls = append(calls, call{fmt.Sprintf("f%d.txt", i), i * 3, 5 + i*20})
	}
	want := make([]string, len(calls))
	for i, cl := range calls {
		want[i] = read(t, c, map[string]any{"path": cl.path, "offset": cl.offset, "limit": cl.limit})
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for k := range 60 {
				i := (g + k) % len(calls)
				cl := calls[i]
				out, err := callTool(context.Background(), t, c, ToolReadFile, map[string]any{"path": cl.path, "offset": cl.offset, "limit": cl.limit})
				if err != nil || out != want[i] {
					t.Errorf("read %+v: %v\n%s", cl, err, out)
					return
				}
			}
		})
	}
	wg.Wait()
}
