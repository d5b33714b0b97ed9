package confine

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestUnescapeMount(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		`/plain`:             "/plain",
		`/with\040space`:     "/with space",
		`/tab\011and\134bs`:  "/tab\tand\\bs",
		`/trailing\04`:       `/trailing\04`,
		`/not\999octal`:      `/not\999octal`,
		`/two\040\040spaces`: "/two  spaces",
	} {
		assert.Equal(t, want, unescapeMount(in), in)
	}
}

func TestBelowAny(t *testing.T) {
	t.Parallel()
	dirs := []string{"/w", "/proc"}
	assert.True(t, belowAny(dirs, "/w"))
	assert.True(t, belowAny(dirs, "/w/.git"))
	assert.False(t, belowAny(dirs, "/work"))
	assert.True(t, belowAny(dirs, "/proc/sys"))
	assert.False(t, belowAny(dirs, "/"))
}

func TestSplitPath(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		rel         string
		limit       int
		piece, rest string
	}{
		{"a/b/c", 5, "a/b/c", ""},
		{"a/b/c", 4, "a/b", "c"},
		{"a/b/c", 3, "a/b", "c"},
		{"a/b/c", 2, "a", "b/c"},
		{"aaaa/b", 3, "aaaa/b", ""}, // no slash in reach: the kernel refuses it
		{"/abc", 2, "/abc", ""},
	} {
		piece, rest := splitPath(tc.rel, tc.limit)
		assert.Equal(t, tc.piece, piece, "%q %d", tc.rel, tc.limit)
		assert.Equal(t, tc.rest, rest, "%q %d", tc.rel, tc.limit)
	}
}

// TestTrialWithTempBelowDev: with TMPDIR on /dev/shm, the trial confined
// command, whose W and T are made there, runs, and Available does not
// call confinement missing from the system.
func TestTrialWithTempBelowDev(t *testing.T) {
	if err := Available(); err != nil {
		t.Skip(err)
	}
	tmp, err := os.MkdirTemp("/dev/shm", "agentspec-confine-test-")
	if err != nil {
		t.Skipf("no directory can be made below /dev here (%v): the case needs one, as a TMPDIR on /dev/shm is", err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	t.Setenv("TMPDIR", tmp)
	assert.NoError(t, trial())
}
