package sandbox

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ResolveFound tells a regular file, or a name missing from a directory that
// is there, only from the lstat of the rel it returns; anything else is left
// to the caller to look at.
func TestResolveFound(t *testing.T) {
	t.Parallel()
	root := tree(t, map[string]string{"dir/f.txt": "f", "g.txt": "g"}, map[string]string{
		"link":     "dir/f.txt",
		"dirlink":  "dir",
		"dangling": "dir/none",
		"dot":      ".",
	})
	d := openDir(t, root)
	rv := NewResolver(d, root, NewStrictResolver(d, root).rootParts, nil)
	cases := []struct {
		path  string
		rel   string
		found Found
	}{
		{"g.txt", "g.txt", FoundFile},
		{"dir/f.txt", "dir/f.txt", FoundFile},
		{"./dir/../g.txt", "g.txt", FoundFile},
		{"g.txt/.", "g.txt", FoundFile},
		{"link", "dir/f.txt", FoundFile},
		{"dirlink/f.txt", "dir/f.txt", FoundFile},
		{filepath.ToSlash(root) + "/g.txt", "g.txt", FoundFile},
		{"new.txt", "new.txt", FoundAbsent},
		{"dir/new.txt", "dir/new.txt", FoundAbsent},
		{"dangling", "dir/none", FoundAbsent},
		{"missing/new.txt", "missing/new.txt", FoundUnsure},
		{"g.txt/new.txt", "g.txt/new.txt", FoundUnsure},
		{"new.txt/..", ".", FoundUnsure},
		{"dir/f.txt/..", "dir", FoundUnsure},
		{"dir", "dir", FoundUnsure},
		{"dirlink", "dir", FoundUnsure},
		{"dot", ".", FoundUnsure},
		{".", ".", FoundUnsure},
	}
	for _, tc := range cases {
		rel, found, err := rv.ResolveFound(nil, tc.path)
		require.NoError(t, err, tc.path)
		assert.Equal(t, tc.rel, rel, tc.path)
		assert.Equal(t, tc.found, found, tc.path)
		plain, err := rv.Resolve(nil, tc.path)
		require.NoError(t, err, tc.path)
		assert.Equal(t, rel, plain, "Resolve agrees: %s", tc.path)
	}
}
