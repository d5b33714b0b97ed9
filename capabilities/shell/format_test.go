package shell

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestLabelled(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name                           string
		stdout, stderr, empty, trailer string
		want                           string
	}{
		{"stdout", "hello\n", "", "(no output)", "", "[stdout]\nhello\n"},
		{"nothing", "", "", "(no output)", "", "(no output)"},
		{"both", "out\n", "err\n", "(no output)", "", "[stdout]\nout\n\n[stderr]\nerr\n"},
		{"exit", "out\n", "", "(no output)", "[exit code: 3]", "[stdout]\nout\n\n[exit code: 3]"},
		{"exit, nothing", "", "", "(no output)", "[exit code: 3]", "(no output)\n[exit code: 3]"},
		{"timeout", "before\n", "", "", "[Command timed out after 1.0s]", "[stdout]\nbefore\n\n[Command timed out after 1.0s]"},
		{"timeout, nothing", "", "", "", "[Command timed out after 0.5s]", "[Command timed out after 0.5s]"},
		{"no final newline", "a", "b", "", "", "[stdout]\na\n[stderr]\nb"},
	} {
		assert.Equal(t, tc.want, labelled(tc.stdout, tc.stderr, tc.empty, tc.trailer), tc.name)
	}
}

func TestTrailers(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "[exit code: 143]", exitLine(143))
	assert.Equal(t, "[Command timed out after 30.0s]", timeoutTrailer(30))
	assert.Equal(t, "[Command timed out after 0.5s]", timeoutTrailer(0.5))
	assert.Equal(t, "[Command timed out after 1.0s]", timeoutTrailer(1))
	for _, code := range []int{-25, 153, 281} {
		assert.Equal(t, "[File-size limit exceeded: max_file_bytes=1024. Reduce file output before retrying.]", fileLimitNote(code, 1024))
	}
	assert.Equal(t, "[Command failed with max_file_bytes=1024; file writes may have reached the per-file limit.]", fileLimitNote(1, 1024))
}

func TestPyFloat(t *testing.T) {
	t.Parallel()
	// Python's str(float) of each.
	for f, want := range map[float64]string{
		1: "1.0", 0.5: "0.5", 30: "30.0", 600: "600.0", 1e16: "1e+16", 0.0001: "0.0001",
		0.00001: "1e-05", 2.5e-5: "2.5e-05", 123456789.123: "123456789.123", 0.1: "0.1",
	} {
		assert.Equal(t, want, pyFloat(f), "%v", f)
	}
}

func TestTruncateTail(t *testing.T) {
	t.Parallel()
	// The reference's two tests.
	out := truncateTail(strings.Repeat("x", 400)+"\n[exit code: 7]", 200)
	assert.True(t, strings.HasPrefix(out, "[... output truncated, showing last 153 chars]\n"), out)
	assert.True(t, strings.HasSuffix(out, "[exit code: 7]"), out)
	assert.Len(t, []rune(out), 200)
	out = truncateTail(strings.Repeat("y", 400), 50)
	assert.Equal(t, "[... output truncated, showing last 5 chars]\nyyyyy", out)

	assert.Equal(t, "short", truncateTail("short", 5), "fits exactly")
	assert.Equal(t, "ééé", truncateTail("ééé", 3), "code points, not bytes")
	out = truncateTail(strings.Repeat("é", 100)+"end", 60)
	assert.Len(t, []rune(out), 60)
	assert.True(t, strings.HasSuffix(out, "éend"))
	assert.Equal(t, "6789", truncateTail("0123456789", 4), "too small for a marker: the bare tail")
}
