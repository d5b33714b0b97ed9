package filesystem

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/internal/text"
)

// writeHugeLine writes a file of size bytes of one line without terminator.
func writeHugeLine(t *testing.T, path string, size int, chunk string) {
	t.Helper()
	f, err := os.Create(path)
	require.NoError(t, err)
	b := []byte(strings.Repeat(chunk, (1<<17)/len(chunk)))
	for written := 0; written < size; {
		n := min(len(b), size-written)
		_, err := f.Write(b[:n])
		require.NoError(t, err)
		written += n
	}
	require.NoError(t, f.Close())
}

// allocated returns the bytes the process allocated while fn ran.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// A 50 MB single-line file read with limit=1 and no max_read_chars comes
// back as its first MaxLineChars characters and a marker, and reading it
// allocates a small fraction of its size.
func TestReadFileHugeLineCapped(t *testing.T) {
	// Not parallel: it measures the allocations of the process.
	c, root := newTestFS(t, Options{}, nil)
	const size = 50 << 20
	writeHugeLine(t, filepath.Join(root, "huge.txt"), size, "abcdefgh")
	var out string
	alloc := allocated(func() { out = read(t, c, map[string]any{"path": "huge.txt", "limit": 1}) })
	header, body, ok := strings.Cut(out, "]\n")
	require.True(t, ok, out[:min(len(out), 200)])
	assert.Contains(t, header, "| 1 lines | hash:")
	want := "     1\t" + strings.Repeat("abcdefgh", MaxLineChars/8) +
		" [... 52,426,800 more characters in this line not shown; search_files shows the part of a long line around a match.]\n"
	assert.Equal(t, want, body)
	t.Logf("bytes allocated reading a 50 MB line: %d", alloc)
	assert.Less(t, alloc, uint64(2<<20+raceSlack), "bytes allocated reading a 50 MB line")
}

func TestReadFileLineCap(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", MaxLineChars)
	files := map[string]string{
		"exact.txt": long + "\n",
		"over.txt":  long + "xyz\r\nnext\n",
		"ls.txt":    long + "ab\u2028" + long + "cd\u0085" + long + "e",
		"ascii.txt": strings.Repeat("a", 3*MaxLineChars) + "\r",
	}
	c, _ := newTestFS(t, Options{}, files)
	body := func(path string, args ...any) string {
		a := map[string]any{"path": path}
		for i := 0; i < len(args); i += 2 {
			a[args[i].(string)] = args[i+1]
		}
		_, b, _ := strings.Cut(read(t, c, a), "]\n")
		return b
	}
	cut := func(n int) string { return readLineCut(n) }
	assert.Equal(t, "     1\t"+long+"\n", body("exact.txt"), "a line of exactly MaxLineChars characters is whole")
	assert.Equal(t, "     1\t"+long+cut(3)+"\r\n     2\tnext\n", body("over.txt"), "the terminator follows the marker")
	assert.Equal(t, "     1\t"+long+cut(2)+"\u2028     2\t"+long+cut(2)+"\u0085     3\t"+long+cut(1)+"\n", body("ls.txt"),
		"multibyte terminators; a last line without one gets a newline")
	assert.Equal(t, "     2\t"+long+cut(2)+"\u0085\n... (1 more lines. Use offset=2 to continue reading.)\n", body("ls.txt", "offset", 1, "limit", 1))
	assert.Equal(t, "     1\t"+strings.Repeat("a", MaxLineChars)+cut(2*MaxLineChars)+"\r\n", body("ascii.txt"))
	assert.Contains(t, cut(1234567), "1,234,567 more characters")

	// max_read_chars keeps the reference's rule: a line fits whole or not at all.
	budget, _ := newTestFS(t, Options{MaxReadChars: 5000}, files)
	assert.Contains(t, read(t, budget, map[string]any{"path": "over.txt"}), "     1\t"+long+"xyz\r\n     2\tnext\n")
	assert.Contains(t, read(t, budget, map[string]any{"path": "ascii.txt"}), "... (Line 1 is 6,001 characters and does not fit")
}

// read_file counts lines as it streams the file through its buffer, one by
// one up to the end of its window and a buffer at a time after it: a
// terminator split across the buffer's edge (\r then \n, or the bytes of
// U+2028 and U+0085) counts as one, as str.splitlines counts it.
func TestReadFileCountsAcrossBufferEdges(t *testing.T) {
	t.Parallel()
	const edge = 64 << 10 // lineReader's buffer
	terms := []string{"\r\n", "\u2028", "\u0085", "\r", "\n", "\r\r\n", "\xe2\x80", "\xc2"}
	files := map[string]string{}
	for i, term := range terms {
		for shift := -3; shift <= 1; shift++ {
			for _, at := range []int{edge, 2 * edge} {
				var sb strings.Builder
				sb.WriteString(strings.Repeat("x", at+shift-1))
				sb.WriteString("\n")
				sb.WriteString(term)
				sb.WriteString("tail\n")
				files[fmt.Sprintf("t%d_%d_%d.txt", i, shift+3, at)] = sb.String()
			}
		}
	}
	rng := rand.New(rand.NewPCG(8, 9))
	for k := range 20 {
		var sb strings.Builder
		for sb.Len() < 3*edge {
			if rng.IntN(4) == 0 {
				sb.WriteString(terms[rng.IntN(len(terms))])
			} else {
				sb.WriteString(strings.Repeat("y", rng.IntN(5000)))
			}
		}
		files[fmt.Sprintf("r%d.txt", k)] = sb.String()
	}
	c, _ := newTestFS(t, Options{}, files)
	for name, content := range files {
		lines := text.LineCount(content)
		header := fmt.Sprintf("[%s | %d lines | hash:%s]\n", name, lines, contentHash([]byte(content)))
		// Counted line by line up to the window, in bulk after it.
		for _, window := range []map[string]any{{"limit": 1}, {"offset": lines / 2, "limit": 1}} {
			window["path"] = name
			out := read(t, c, window)
			assert.True(t, strings.HasPrefix(out, header), "%s %v: %.80s", name, window, out)
		}
		out := read(t, c, map[string]any{"path": name, "offset": lines - 1})
		assert.True(t, strings.HasPrefix(out, header), "%s: %.80s", name, out)
		var last string
		for rest := string(text.Decode([]byte(content))); rest != ""; {
			n := text.LineEnd(rest)
			last, rest = rest[:n], rest[n:]
		}
		if runeCount(last) <= MaxLineChars+2 {
			want := fmt.Sprintf("%6d\t%s", lines, last)
			if !strings.HasSuffix(want, "\n") {
				want += "\n"
			}
			assert.True(t, strings.HasSuffix(out, "]\n"+want), "%s: last line %q, got %q", name, last, out[strings.Index(out, "]\n"):])
		}
	}
}

func searchFor(t *testing.T, c *Capability, args map[string]any) string {
	t.Helper()
	out, err := callTool(t.Context(), t, c, ToolSearchFiles, args)
	return result(out, err)
}

// A matching line of 1 MiB comes back as the MaxLineChars around its first
// match, with markers counting what was cut; a line longer than the search
// buffer is matched as it streams and shown the same way.
func TestSearchFilesLongLinesCapped(t *testing.T) {
	t.Parallel()
	const mib = 1 << 20
	files := map[string]string{
		"mid.js":   strings.Repeat("a", mib/2) + "needle" + strings.Repeat("b", mib/2) + "\nneedle again\n",
		"start.js": "needle" + strings.Repeat("é", mib) + "\n",
		"end.js":   strings.Repeat("c", mib) + "needle",
		// Longer than the search buffer: matched as they stream past.
		"huge.js":    strings.Repeat("d", 3*searchBuffer) + "needle" + strings.Repeat("e", 100) + "\r\nneedle\n",
		"nomatch.js": strings.Repeat("f", 2*searchBuffer+7) + "\u2028" + "x needle\n",
	}
	c, _ := newTestFS(t, Options{Tools: []string{ToolSearchFiles}}, files)
	quarter := MaxLineChars / 4
	before := func(n int) string { return "[... " + groupThousands(n) + " earlier characters not shown] " }
	after := func(n int) string {
		return " [... " + groupThousands(n) + " more characters not shown; search for text later in the line to see them]"
	}
	tests := map[string]string{
		"mid.js": "mid.js:1:" + before(mib/2-quarter) + strings.Repeat("a", quarter) + "needle" +
			strings.Repeat("b", MaxLineChars-quarter-6) + after(mib/2-(MaxLineChars-quarter-6)) + "\nmid.js:2:needle again",
		"start.js": "start.js:1:needle" + strings.Repeat("é", MaxLineChars-6) + after(mib-(MaxLineChars-6)),
		"end.js":   "end.js:1:" + before(mib+6-MaxLineChars) + strings.Repeat("c", MaxLineChars-6) + "needle",
		"huge.js": "huge.js:1:" + before(3*searchBuffer+106-MaxLineChars) + strings.Repeat("d", MaxLineChars-106) + "needle" +
			strings.Repeat("e", 100) + "\nhuge.js:2:needle",
		"nomatch.js": "nomatch.js:2:x needle",
	}
	for path, want := range tests {
		got := searchFor(t, c, map[string]any{"pattern": "needle", "path": path})
		assert.Equal(t, want, got, path)
		for _, l := range strings.Split(got, "\n") {
			assert.Less(t, len(l), 4*MaxLineChars+300, "every line is bounded")
		}
	}
	// A pattern that is not a plain literal takes the same way.
	assert.Equal(t, tests["huge.js"], searchFor(t, c, map[string]any{"pattern": "n[e]{2}dle|^needle$", "path": "huge.js"}))
}

// search_files streams each file through a fixed buffer: searching a 50 MB
// file of short lines, or a 32 MB line, allocates a small fraction of it
// (the bound counts a fresh search buffer, in case the pooled one is gone).
func TestSearchFilesMemoryBounded(t *testing.T) {
	// Not parallel: it measures the allocations of the process.
	c, root := newTestFS(t, Options{Tools: []string{ToolSearchFiles, ToolReadFile}}, nil)
	writeHugeLine(t, filepath.Join(root, "lines.txt"), 50<<20, "some text on a line\n")
	writeHugeLine(t, filepath.Join(root, "one.txt"), 32<<20, "abcdefgh")
	var out string
	alloc := allocated(func() { out = searchFor(t, c, map[string]any{"pattern": "needle|on a line$", "path": "lines.txt"}) })
	assert.True(t, strings.HasSuffix(out, "[... truncated at 1000 matches]"), "%.100s", out)
	t.Logf("bytes allocated searching 50 MB of lines: %d", alloc)
	assert.Less(t, alloc, uint64(4<<20+raceSlack), "bytes allocated searching 50 MB of lines")
	alloc = allocated(func() { out = searchFor(t, c, map[string]any{"pattern": "needle", "path": "lines.txt"}) })
	assert.Equal(t, "No matches found.", out)
	t.Logf("bytes allocated searching 50 MB of lines for nothing: %d", alloc)
	assert.Less(t, alloc, uint64(4<<20+raceSlack), "bytes allocated searching 50 MB of lines for nothing")
	alloc = allocated(func() { out = searchFor(t, c, map[string]any{"pattern": "hab", "path": "one.txt"}) })
	assert.Contains(t, out, "one.txt:1:abcdefgh")
	t.Logf("bytes allocated searching a 32 MB line: %d", alloc)
	assert.Less(t, alloc, uint64(2<<20+raceSlack), "bytes allocated searching a 32 MB line")
}

// One rule for binary files in read_file and search_files: a NUL in the
// first 8192 bytes. A NUL after them leaves a file text; UTF-16 text, whose
// ASCII characters carry NULs, is binary.
func TestBinaryRuleAcrossTools(t *testing.T) {
	t.Parallel()
	utf16 := []byte{0xff, 0xfe} // little-endian, with its byte order mark
	for _, r := range "needle in UTF-16\n" {
		utf16 = append(utf16, byte(r), 0)
	}
	lateNUL := strings.Repeat("x", 8192) + "\x00 needle after the first block\n"
	atEdge := strings.Repeat("x", 8191) + "\x00 needle at the last byte probed\n"
	files := map[string]string{"late.txt": lateNUL, "edge.txt": atEdge, "utf16.txt": string(utf16)}
	c, _ := newTestFS(t, Options{Tools: []string{ToolReadFile, ToolSearchFiles}}, files)

	assert.Equal(t, "[Binary file: 36 bytes. Use a binary-aware tool to inspect.]", read(t, c, map[string]any{"path": "utf16.txt"}))
	assert.Equal(t, fmt.Sprintf("[Binary file: %d bytes. Use a binary-aware tool to inspect.]", len(atEdge)),
		read(t, c, map[string]any{"path": "edge.txt"}))
	late := read(t, c, map[string]any{"path": "late.txt"})
	assert.True(t, strings.HasPrefix(late, "[late.txt | 1 lines | hash:"+contentHash([]byte(lateNUL))+"]\n     1\t"+strings.Repeat("x", MaxLineChars)), late[:60])

	assert.Equal(t, "late.txt:1:[... 6,222 earlier characters not shown] "+strings.Repeat("x", 1970)+"\x00 needle after the first block",
		searchFor(t, c, map[string]any{"pattern": "needle"}), "only the text file is searched")
	assert.Equal(t, "No matches found.", searchFor(t, c, map[string]any{"pattern": "n.?e.?e.?d.?l.?e", "path": "utf16.txt"}))
}
