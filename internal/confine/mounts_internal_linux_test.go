package confine

import (
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
