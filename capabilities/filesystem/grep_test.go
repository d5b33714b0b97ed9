package filesystem

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentspec/agentspec/capabilities/filesystem/internal/rg"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestGrepGolden(t *testing.T) {
	t.Parallel()
	c := newRGFS(t, Options{})
	goldenCompare(t, "grep_root", result(callTool(context.Background(), t, c, ToolGrep,
		map[string]any{"pattern": "line|Hello|hit", "glob": "!cr.txt", "context": 1})))
}

func TestGrep(t *testing.T) {
	t.Parallel()
	runRGCases(t, ToolGrep, []walkerCase{
		{name: "context lines, group separators dropped", args: map[string]any{"pattern": "hit", "path": "ctx.txt", "context": 1},
			want: lines("ctx.txt-1-c1", "ctx.txt:2:c2 hit", "ctx.txt-3-c3", "ctx.txt-6-c6", "ctx.txt:7:c7 hit", "ctx.txt-8-c8")},
		{name: "file target", args: map[string]any{"pattern": "two", "path": "multi.txt"}, want: "multi.txt:2:line two"},
		{name: "file through a link is named by its target", args: map[string]any{"pattern": "Hello", "path": "alias.txt"},
			want: "hello.txt:1:Hello, world!"},
		{name: "crlf", args: map[string]any{"pattern": "second", "path": "crlf.txt"}, want: "crlf.txt:2:second line"},
		{name: "ignore case", args: map[string]any{"pattern": "HELLO", "ignore_case": true, "glob": "hello.txt"},
			want: "hello.txt:1:Hello, world!"},
		{name: "literal", args: map[string]any{"pattern": "('", "literal": true}, want: "subdir/nested.py:1:print('nested')"},
		{name: "file type", args: map[string]any{"pattern": "e", "file_type": "py"}, want: "subdir/nested.py:1:print('nested')"},
		{name: "pattern starting with a dash", args: map[string]any{"pattern": "-x", "literal": true}, want: "No matches found."},
		{name: "long lines are cut", args: map[string]any{"pattern": "needle", "path": "long.txt"},
			want: "long.txt:1:" + strings.Repeat("x", 4096) + " [... omitted end of long line]"},
		{name: "gitignore respected", args: map[string]any{"pattern": "log line"}, want: "No matches found."},
		{name: "explicit glob overrides it", args: map[string]any{"pattern": "log line", "glob": "*.log"},
			want: "repo/app.log:1:log line"},
		{name: "dotfiles stay hidden under a glob", args: map[string]any{"pattern": "TOKEN|push|hidden", "glob": ".*"},
			want: "No matches found."},
		{name: "binary file target", args: map[string]any{"pattern": "line", "path": "bin.dat"}, want: "No matches found."},
		{name: "denied patterns", opts: Options{DeniedPatterns: []string{"*.secret"}}, args: map[string]any{"pattern": "password"},
			want: "No matches found."},
		{name: "denied file target", opts: Options{DeniedPatterns: []string{"*.secret"}},
			args: map[string]any{"pattern": "password", "path": "creds.secret"},
			want: "RETRY: Path 'creds.secret' is denied by pattern '*.secret'."},
		{name: "allowed patterns", opts: Options{AllowedPatterns: []string{"*.md"}}, args: map[string]any{"pattern": "."},
			want: "notes.md:1:# Notes"},
		{name: "cwd-relative output", opts: Options{Cwd: "subdir"}, args: map[string]any{"pattern": "top|nested", "path": ".."},
			want: lines("../a.txt:1:a line at the top", "nested.py:1:print('nested')")},
		{name: "invalid regex", args: map[string]any{"pattern": "("},
			want: "RETRY: Invalid regex pattern: unclosed group\n    (\n    ^"},
		{name: "unknown file type", args: map[string]any{"pattern": "x", "file_type": "nope"},
			want: "RETRY: ripgrep failed: unrecognized file type: nope"},
		{name: "file type is never a flag", args: map[string]any{"pattern": "x", "file_type": "--files"},
			want: "RETRY: ripgrep failed: unrecognized file type: --files"},
		{name: "glob is never a flag", args: map[string]any{"pattern": "Hello", "glob": "--files"}, want: "No matches found."},
		{name: "context too large", args: map[string]any{"pattern": "x", "context": 21},
			want: "RETRY: context must be between 0 and 20."},
		{name: "negative context", args: map[string]any{"pattern": "x", "context": -1},
			want: "RETRY: context must be between 0 and 20."},
		{name: "fifo", args: map[string]any{"pattern": "x", "path": "pipe"}, want: "RETRY: Path 'pipe' is not a file or directory."},
		{name: "missing", args: map[string]any{"pattern": "x", "path": "nope"}, want: "RETRY: Path 'nope' is not a file or directory."},
	})
}

func TestGrepCapCountsContextLines(t *testing.T) {
	t.Parallel()
	needRipgrep(t)
	tree := map[string]string{"a.txt": "one\nhit\nthree\n", "b.txt": "hit\n"}
	for _, tc := range []struct {
		max  int
		want string
	}{
		{2, lines("a.txt-1-one", "a.txt:2:hit", "[... truncated at 2 lines]")},
		{4, lines("a.txt-1-one", "a.txt:2:hit", "a.txt-3-three", "b.txt:1:hit")}, // exactly 4: no marker
	} {
		c, _ := newTestFS(t, Options{Tools: []string{ToolGrep}, MaxSearchResults: tc.max}, tree)
		var rec recorder
		got, err := callTool(rec.ctx(), t, c, ToolGrep, map[string]any{"pattern": "hit", "context": 1})
		require.NoError(t, err)
		assert.Equal(t, tc.want, got)
		require.Len(t, rec.events, 1)
		ev := rec.events[0].(*FilesSearchedEvent)
		assert.Equal(t, SearchGrep, ev.Search)
		assert.Equal(t, "hit", ev.Pattern)
		assert.Equal(t, min(tc.max, 4), ev.MatchCount)
		assert.Equal(t, tc.max < 4, ev.Truncated)
	}
}

func TestPrintedAs(t *testing.T) {
	t.Parallel()
	preview := func(s string) string { return s + rg.Previewed }
	for _, tc := range []struct {
		name, line string
		whole      bool
		text       string
		want       bool
	}{
		{"equal", "abc\n", true, "abc", true},
		{"last line, no newline", "abc", true, "abc", true},
		{"crlf", "abc\r\n", true, "abc", true},
		{"one cr only is the terminator's", "abc\r\r\n", true, "abc\r", true},
		{"different", "abd\n", true, "abc", false},
		{"longer", "abcd\n", true, "abc", false},
		{"shorter", "ab\n", true, "abc", false},
		{"empty line", "\n", true, "", true},
		{"cut line is never equal", "abc\n", false, "abc", false},
		{"preview of a long line", strings.Repeat("x", 10), false, preview("xxxx"), true},
		{"preview of the whole line", "ééé\n", true, preview("ééé"), true},
		{"preview of another line", strings.Repeat("y", 10), false, preview("xxxx"), false},
		{"a line that reads like a preview", "ab" + rg.Previewed + "\n", true, "ab" + rg.Previewed, true},
	} {
		assert.Equal(t, tc.want, printedAs([]byte(tc.line), tc.whole, []byte(tc.text)), tc.name)
	}
}

// TestRGSource checks lines against files as grep does: read once, in
// order, through the byte-order mark as rg reads it.
func TestRGSource(t *testing.T) {
	t.Parallel()
	utf16le := func(s string) string {
		b := []byte{0xFF, 0xFE}
		for _, r := range s {
			b = append(b, byte(r), 0)
		}
		return string(b)
	}
	long := strings.Repeat("x", 70<<10) // longer than the reader's buffer
	c, root := newTestFS(t, Options{Tools: []string{ToolGrep}, DeniedPatterns: []string{"*.secret"}}, map[string]string{
		"a.txt":    "one\ntwo\r\nthree",
		"bom.txt":  "\xEF\xBB\xBFfirst\nsecond\n",
		"u16.txt":  utf16le("wide\nline\n"),
		"long.txt": long + "\nafter\n",
		"out.txt":  "outside\n",
	})
	mustSymlink(t, "out.txt", filepath.Join(root, "link.txt"))
	type line struct {
		rel, number, text string
		want              bool
	}
	for _, tc := range []struct {
		name  string
		lines []line
	}{
		{"lines in order", []line{{"a.txt", "1", "one", true}, {"a.txt", "2", "two", true}, {"a.txt", "3", "three", true}}},
		{"skipping lines", []line{{"a.txt", "3", "three", true}}},
		{"past the end", []line{{"a.txt", "4", "", false}}},
		{"a line twice or backwards", []line{{"a.txt", "2", "two", true}, {"a.txt", "2", "two", false}, {"a.txt", "1", "one", false}}},
		{"one wrong line spoils no other", []line{{"a.txt", "1", "OUTSIDE", false}, {"a.txt", "2", "two", true}}},
		{"utf-8 byte-order mark kept", []line{{"bom.txt", "1", "\uFEFFfirst", true}, {"bom.txt", "2", "second", true}}},
		{"utf-16 is binary", []line{{"u16.txt", "1", "w\x00i\x00d\x00e\x00", false}, {"u16.txt", "2", "\x00l\x00i\x00n\x00e\x00", false}}},
		{"long line previewed", []line{{"long.txt", "1", long[:4096] + rg.Previewed, true}, {"long.txt", "2", "after", true}}},
		{"past a long line", []line{{"long.txt", "2", "after", true}}},
		{"files one after another", []line{{"a.txt", "1", "one", true}, {"bom.txt", "2", "second", true}, {"a.txt", "3", "three", true}}},
		{"a symlink is not opened", []line{{"link.txt", "1", "outside", false}}},
		{"missing file", []line{{"nope.txt", "1", "x", false}}},
		{"line number zero", []line{{"a.txt", "0", "", false}}},
		{"line number out of range", []line{{"a.txt", "99999999999999999999", "one", false}}},
	} {
		src := rgSource{fs: c.fs}
		for _, l := range tc.lines {
			assert.Equal(t, l.want, src.has(l.rel, []byte(l.number), []byte(l.text)), "%s: %s:%s", tc.name, l.rel, l.number)
		}
		src.close()
	}
}

// grep and search_files agree on which files are text (D: a NUL byte in the
// first 8192 bytes makes a file binary, wherever else NULs are) and on what
// a line holds: a NUL past the first block does not end the search of a
// file, UTF-16 (NULs throughout) is binary whether it has a byte-order mark
// or not, a UTF-8 byte-order mark is part of the first line. rg on its own
// stops at a file's first NUL and decodes UTF-16 after a byte-order mark.
func TestGrepBinaryRuleMatchesSearchFiles(t *testing.T) {
	t.Parallel()
	needRipgrep(t)
	utf16 := func(bom []byte, s string, be bool) string {
		b := append([]byte{}, bom...)
		for _, r := range s {
			if be {
				b = append(b, 0, byte(r))
			} else {
				b = append(b, byte(r), 0)
			}
		}
		return string(b)
	}
	block := strings.Repeat("filler line\n", 8192/12+1) // over 8192 bytes of text
	c, _ := newTestFS(t, Options{Tools: []string{ToolGrep, ToolSearchFiles}}, map[string]string{
		"bom.txt":        "\xEF\xBB\xBFneedle first\nneedle second\n",
		"late-nul.txt":   block + "needle before\n\x00 needle with nul\nneedle after\n",
		"edge-nul.txt":   strings.Repeat("x", 8191) + "\x00\nneedle\n", // NUL at index 8191: binary
		"past-edge.txt":  strings.Repeat("x", 8192) + "\x00\nneedle\n", // NUL at index 8192: text
		"early-nul.txt":  "needle\x00\nneedle\n",
		"u16be.txt":      utf16([]byte{0xFE, 0xFF}, "hello\nneedle wide\n", true),
		"u16le.txt":      utf16([]byte{0xFF, 0xFE}, "needle wide\n", false),
		"u16nobom.txt":   utf16(nil, "needle wide\n", false),
		"plain.txt":      "a needle\n",
		"sub/deeper.txt": block + "\x00needle deep\n",
	})
	const want = "bom.txt:1:\uFEFFneedle first\n" +
		"bom.txt:2:needle second\n" +
		"late-nul.txt:684:needle before\n" +
		"late-nul.txt:685:\x00 needle with nul\n" +
		"late-nul.txt:686:needle after\n" +
		"past-edge.txt:2:needle\n" +
		"plain.txt:1:a needle\n" +
		"sub/deeper.txt:684:\x00needle deep"
	grep := result(callTool(context.Background(), t, c, ToolGrep, map[string]any{"pattern": "needle"}))
	search := result(callTool(context.Background(), t, c, ToolSearchFiles, map[string]any{"pattern": "needle"}))
	assert.Equal(t, want, grep)
	assert.Equal(t, search, grep)
	// A file named directly follows the same rule.
	for _, name := range []string{"u16be.txt", "edge-nul.txt", "early-nul.txt"} {
		assert.Equal(t, "No matches found.", result(callTool(context.Background(), t, c, ToolGrep,
			map[string]any{"pattern": "needle", "path": name})), name)
	}
	assert.Equal(t, "past-edge.txt:2:needle", result(callTool(context.Background(), t, c, ToolGrep,
		map[string]any{"pattern": "needle", "path": "past-edge.txt"})))
}

// Long lines rg cuts still pass the check.
func TestGrepLongWideLine(t *testing.T) {
	t.Parallel()
	needRipgrep(t)
	wide := strings.Repeat("é", 3000) // over 4096 bytes, under 4096 characters
	c, _ := newTestFS(t, Options{Tools: []string{ToolGrep}}, map[string]string{"wide.txt": wide + " needle\n"})
	got := result(callTool(context.Background(), t, c, ToolGrep, map[string]any{"pattern": "needle"}))
	assert.Equal(t, "wide.txt:1:"+wide+" needle"+rg.Previewed, got)
}

// A newline in a file name must not let a denied file's lines pass as
// another file's.
func TestGrepNewlineInFileName(t *testing.T) {
	t.Parallel()
	needRipgrep(t)
	c, _ := newTestFS(t, Options{Tools: []string{ToolGrep, ToolListFiles}, DeniedPatterns: []string{"secret*"}},
		map[string]string{"secret\nok.txt": "password\n", "ok.txt": "fine\n", "new\nline.txt": "password too\n"})
	got := result(callTool(context.Background(), t, c, ToolGrep, map[string]any{"pattern": "password"}))
	assert.Equal(t, `new\x0aline.txt:1:password too`, got, "the name shown escaped")
	got = result(callTool(context.Background(), t, c, ToolListFiles, map[string]any{}))
	assert.Equal(t, lines(`new\x0aline.txt`, "ok.txt"), got)
}
