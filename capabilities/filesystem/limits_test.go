package filesystem

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/capabilities"
)

// Arguments rg cannot take, or that are too long, are retries that name the
// argument; before, a NUL byte made exec fail with "invalid argument", an
// error that ended the run.
func TestRipgrepArgsRefused(t *testing.T) {
	t.Parallel()
	needRipgrep(t)
	c, _ := newTestFS(t, Options{Tools: RipgrepToolNames}, map[string]string{"a.txt": "hello\n"})
	huge := strings.Repeat("a", 100<<10)
	for _, tc := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{ToolGrep, map[string]any{"pattern": "hel\x00lo"},
			"RETRY: Argument 'pattern' contains a NUL byte; ripgrep cannot search for one. Remove it."},
		{ToolGrep, map[string]any{"pattern": "hel\x00lo", "literal": true},
			"RETRY: Argument 'pattern' contains a NUL byte; ripgrep cannot search for one. Remove it."},
		{ToolGrep, map[string]any{"pattern": "hello", "glob": "*.txt\x00"},
			"RETRY: Argument 'glob' contains a NUL byte; ripgrep cannot search for one. Remove it."},
		{ToolGrep, map[string]any{"pattern": "hello", "file_type": "go\x00"},
			"RETRY: Argument 'file_type' contains a NUL byte; ripgrep cannot search for one. Remove it."},
		{ToolListFiles, map[string]any{"glob": "\x00"},
			"RETRY: Argument 'glob' contains a NUL byte; ripgrep cannot search for one. Remove it."},
		{ToolGrep, map[string]any{"pattern": huge},
			fmt.Sprintf("RETRY: Argument 'pattern' is %d bytes long; the limit is %d.", len(huge), MaxRipgrepPattern)},
		{ToolGrep, map[string]any{"pattern": "hello", "glob": huge},
			fmt.Sprintf("RETRY: Argument 'glob' is %d bytes long; the limit is %d.", len(huge), MaxRipgrepGlob)},
		{ToolGrep, map[string]any{"pattern": "hello", "file_type": strings.Repeat("t", MaxRipgrepFileType+1)},
			fmt.Sprintf("RETRY: Argument 'file_type' is %d bytes long; the limit is %d.", MaxRipgrepFileType+1, MaxRipgrepFileType)},
		{ToolListFiles, map[string]any{"glob": huge},
			fmt.Sprintf("RETRY: Argument 'glob' is %d bytes long; the limit is %d.", len(huge), MaxRipgrepGlob)},
		{ToolGrep, map[string]any{"pattern": "hello", "path": "a\x00.txt"}, "RETRY: The path name contains a NUL byte."},
		{ToolGrep, map[string]any{"pattern": "hello\nworld"},
			"RETRY: Argument 'pattern' contains a line break; grep matches within one line. Search for the text of one line at a time."},
		{ToolGrep, map[string]any{"pattern": "wor\nld", "literal": true},
			"RETRY: Argument 'pattern' contains a line break; grep matches within one line. Search for the text of one line at a time."},
		// At the limits everything still works.
		{ToolGrep, map[string]any{"pattern": "hello|" + strings.Repeat("z", MaxRipgrepPattern-len("hello|"))}, "a.txt:1:hello"},
		{ToolListFiles, map[string]any{"glob": "{a.txt," + strings.Repeat("z", MaxRipgrepGlob-len("{a.txt,}")) + "}"}, "a.txt"},
	} {
		got := result(callTool(context.Background(), t, c, tc.tool, tc.args))
		assert.Equal(t, tc.want, got, "%s %.80q", tc.tool, tc.args)
	}
}

// rg refuses a pattern whose compiled form is over RipgrepSizeLimit (which
// is a tenth of rg's default): a clear retry, as search_files gives for a
// pattern it cannot compile, and never rg's advice to pass --pcre2.
func TestGrepRegexRefused(t *testing.T) {
	t.Parallel()
	needRipgrep(t)
	c, _ := newTestFS(t, Options{Tools: []string{ToolGrep, ToolSearchFiles}}, map[string]string{"a.txt": "hello\n"})
	const tooBig = "RETRY: Invalid regex pattern: it compiles to more than ripgrep's size limit (10MB). Use fewer " +
		"alternatives or smaller repetition counts (e.g. \\w+ rather than \\w{1000})."
	alternatives := "(" + strings.Repeat("ab|cd|ef|", 200) + "\\pL){200}"
	for _, tc := range []struct{ pattern, want string }{
		{`\w{1000}`, tooBig},
		{`\w{100}`, tooBig}, // within rg's default limit, not within ours
		{alternatives, tooBig},
		{`a(?=b)`, "RETRY: Invalid regex pattern: look-around, including look-ahead and look-behind, is not supported\n" +
			"    a(?=b)\n     ^^^\n" + re2Hint(`a(?=b)`)},
		{`(a)\1`, "RETRY: Invalid regex pattern: backreferences are not supported\n    (a)\\1\n       ^^\n" + re2Hint(`(a)\1`)},
		{`hel+o`, "a.txt:1:hello"},
	} {
		got := result(callTool(context.Background(), t, c, ToolGrep, map[string]any{"pattern": tc.pattern}))
		assert.Equal(t, tc.want, got, "%.60s", tc.pattern)
		if hint := re2Hint(tc.pattern); hint != "" {
			assert.Contains(t, result(callTool(context.Background(), t, c, ToolSearchFiles, map[string]any{"pattern": tc.pattern})), hint,
				"search_files gives the same advice")
		}
		assert.NotContains(t, got, "PCRE2")
	}
}

// deepFile adds, below root, a file whose path is longer than PATH_MAX: rg
// opens files by path, so it cannot read that one, even as root, and exits
// with status 2 after printing everything else.
func deepFile(t *testing.T, root string) {
	t.Helper()
	r, err := os.OpenRoot(root)
	require.NoError(t, err)
	name := strings.Repeat("d", 200)
	for range 25 { // 25 * 201 bytes > 4096
		require.NoError(t, r.Mkdir(name, 0o755))
		sub, err := r.OpenRoot(name)
		require.NoError(t, err)
		r.Close()
		r = sub
	}
	require.NoError(t, r.WriteFile("deep.txt", []byte("hello deep\n"), 0o644))
	r.Close()
}

// One file rg cannot read costs its matches, with a note, not the call.
func TestRipgrepUnreadableFile(t *testing.T) {
	t.Parallel()
	needRipgrep(t)
	c, root := newTestFS(t, Options{Tools: RipgrepToolNames}, map[string]string{"a.txt": "hello\n", "b.txt": "hello b\n"})
	deepFile(t, root)
	const note = "[... ripgrep could not read 1 file or directory (gone or unreadable); their matches are missing]"
	var rec recorder
	assert.Equal(t, "a.txt:1:hello\nb.txt:1:hello b\n"+note,
		result(callTool(rec.ctx(), t, c, ToolGrep, map[string]any{"pattern": "hello"})))
	assert.Equal(t, "a.txt\nb.txt\n"+note, result(callTool(rec.ctx(), t, c, ToolListFiles, map[string]any{})))
	require.Len(t, rec.events, 2)
	for _, ev := range rec.events {
		searched := ev.(*FilesSearchedEvent)
		assert.Equal(t, 2, searched.MatchCount)
		assert.True(t, searched.Truncated, "an incomplete result is reported truncated")
	}
	// Nothing else found: the note still says what is missing.
	assert.Equal(t, "No matches found.\n"+note,
		result(callTool(context.Background(), t, c, ToolGrep, map[string]any{"pattern": "deep"})))
}

// Not parallel: it lowers the walk limit for every walk.
func TestWalkEntryLimit(t *testing.T) {
	needRipgrep(t)
	files := map[string]string{}
	for i := range 8 {
		files[fmt.Sprintf("f%d.txt", i)] = "needle\n"
		files[fmt.Sprintf("sub/g%d.txt", i)] = "needle\n"
	}
	c, _ := newTestFS(t, Options{Tools: AllToolNames}, files)
	walkLimitOverride.Store(5)
	t.Cleanup(func() { walkLimitOverride.Store(0) })
	const note = "[... stopped after visiting 5 entries; the result is incomplete: narrow the path]"

	got := result(callTool(context.Background(), t, c, ToolListDirectory, map[string]any{"path": "sub"}))
	assert.Equal(t, lines("sub/g0.txt  (7 bytes)", "sub/g1.txt  (7 bytes)", "sub/g2.txt  (7 bytes)",
		"sub/g3.txt  (7 bytes)", "sub/g4.txt  (7 bytes)", note), got)

	// The root holds 9 entries: its first 5 are read, and no directory
	// below it.
	got = result(callTool(context.Background(), t, c, ToolFindFiles, map[string]any{"pattern": "**/*"}))
	assert.True(t, strings.HasSuffix(got, "\n"+note), got)
	assert.Len(t, strings.Split(got, "\n"), 6, got)

	got = result(callTool(context.Background(), t, c, ToolSearchFiles, map[string]any{"pattern": "needle"}))
	assert.True(t, strings.HasSuffix(got, "\n"+note), got)
	assert.LessOrEqual(t, len(strings.Split(got, "\n")), 6, got)

	// Under the limit there is no note.
	walkLimitOverride.Store(100)
	got = result(callTool(context.Background(), t, c, ToolFindFiles, map[string]any{"pattern": "**/*"}))
	assert.Len(t, strings.Split(got, "\n"), 17, got)
	assert.NotContains(t, got, "stopped")
}

// Not parallel: it shortens the default deadline for every call.
func TestDefaultDeadline(t *testing.T) {
	needRipgrep(t)
	c, _ := newTestFS(t, Options{Tools: AllToolNames}, map[string]string{"a.txt": "hello\n", "sub/b.txt": "hello\n"})
	toolTimeoutOverride.Store(int64(time.Nanosecond))
	t.Cleanup(func() { toolTimeoutOverride.Store(0) })
	const note = "[... stopped at the time limit; the result is incomplete: narrow the path or pattern]"

	// Walkers return what they found, which at a deadline already passed
	// is nothing, and say why.
	for _, tc := range []struct {
		tool, empty string
		args        map[string]any
	}{
		{ToolListDirectory, "(empty directory)", map[string]any{}},
		{ToolFindFiles, "No matches found.", map[string]any{"pattern": "**/*"}},
	} {
		assert.Equal(t, tc.empty+"\n"+note, result(callTool(context.Background(), t, c, tc.tool, tc.args)), tc.tool)
	}
	// The others report the deadline as a retry, never as a failure that
	// ends the run.
	for _, tc := range []struct {
		tool string
		args map[string]any
	}{
		{ToolSearchFiles, map[string]any{"pattern": "hello"}},
		{ToolGrep, map[string]any{"pattern": "hello"}},
		{ToolListFiles, map[string]any{}},
	} {
		got := result(callTool(context.Background(), t, c, tc.tool, tc.args))
		assert.Equal(t, "RETRY: "+tc.tool+" stopped at its time limit of 1ns before finishing. Try a narrower path or pattern.",
			got, tc.tool)
	}

	// A deadline of the caller's (the runtime's tool_timeout) wins.
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	assert.Equal(t, "a.txt  (6 bytes)\nsub/", result(callTool(ctx, t, c, ToolListDirectory, map[string]any{})))
	assert.Equal(t, "a.txt:1:hello\nsub/b.txt:1:hello", result(callTool(ctx, t, c, ToolGrep, map[string]any{"pattern": "hello"})))

	// A cancellation is the caller's own error, returned as it is.
	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	_, err := callTool(ctx, t, c, ToolFindFiles, map[string]any{"pattern": "**/*"})
	assert.ErrorIs(t, err, context.Canceled)
}

// The time the listeners take, a person answering --approve, does not
// count against the default deadline: a write approved after it is made.
// Before, the question was given up at the deadline and the write failed
// as "stopped at its time limit". Not parallel: it shortens the default
// deadline for every call.
func TestDefaultDeadlineSparesListeners(t *testing.T) {
	c, root := newTestFS(t, Options{}, map[string]string{"a.txt": "old\n"})
	const limit = 200 * time.Millisecond
	toolTimeoutOverride.Store(int64(limit))
	t.Cleanup(func() { toolTimeoutOverride.Store(0) })
	answered := false
	ctx := capabilities.WithListener(context.Background(), func(ctx context.Context, ev capabilities.Event) error {
		if _, ok := ev.(*FileChangeRequestEvent); !ok {
			return nil
		}
		// The person answers after the call's deadline, had its clock gone
		// on; a listener asking gives up when the call's context ends.
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * limit):
			answered = true
			return nil
		}
	})
	got := result(callTool(ctx, t, c, ToolWriteFile, map[string]any{"path": "a.txt", "content": "new\n"}))
	assert.Equal(t, "Wrote 4 chars (1 lines) to a.txt. [hash:7aa7a5359173]", got)
	assert.True(t, answered, "the listener's context did not end while it waited")
	data, err := os.ReadFile(filepath.Join(root, "a.txt"))
	require.NoError(t, err)
	assert.Equal(t, "new\n", string(data))
}
