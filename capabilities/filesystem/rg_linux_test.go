package filesystem

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A name whose type the listing did not report, or a directory that could
// not be listed, is looked up on its own.
func TestRGListingLooksUpUnknownTypes(t *testing.T) {
	t.Parallel()
	c, _ := newTestFS(t, Options{}, map[string]string{"a.txt": "", "d/x.txt": ""})
	cur, err := c.fs.dir.Walk(".")
	require.NoError(t, err)
	defer cur.Close()
	var buf []byte
	unknown := rgListing{read: true, names: map[string]bool{"a.txt": false, "d": false}}
	assert.True(t, unknown.regular(&cur, "a.txt", &buf))
	assert.False(t, unknown.regular(&cur, "d", &buf))
	assert.False(t, unknown.regular(&cur, "missing", &buf), "a name the listing lacks")
	unlisted := rgListing{read: true}
	assert.True(t, unlisted.regular(&cur, "a.txt", &buf))
	assert.False(t, unlisted.regular(&cur, "d", &buf))

	// The first names are looked up one by one, the rest in the listing.
	var l rgListing
	for i := range rgListAfter + 2 {
		assert.True(t, l.regular(&cur, "a.txt", &buf))
		assert.False(t, l.regular(&cur, "d", &buf))
		assert.Equal(t, i >= rgListAfter/2, l.read, "after %d names", 2*(i+1))
	}
	assert.Equal(t, map[string]bool{"a.txt": true}, l.names)
}
