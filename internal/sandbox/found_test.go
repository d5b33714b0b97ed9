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

// ResolveGit tells a rel at or below what a symlink named as .git leads to,
// however the path reached that link, from one that only passed through it.
func TestResolveGit(t *testing.T) {
	t.Parallel()
	root := tree(t, map[string]string{"gd/config": "c", "gitfile": "gitdir: gd\n", "sub/f.txt": "f"}, map[string]string{
		".git":        "gd",
		"viagit":      ".git",
		"sub/.git":    "../gitfile",
		"sub/.GIT.":   "..",
		"sub/d/.git":  "missing",
		"plain":       "gd",
		"sub/notagit": "../gd",
	})
	d := openDir(t, root)
	rv := NewResolver(d, root, NewStrictResolver(d, root).rootParts, nil)
	cases := []struct {
		path string
		rel  string
		git  bool
	}{
		{".git", "gd", true},
		{".git/config", "gd/config", true},
		{".git/hooks/pre-commit", "gd/hooks/pre-commit", true},
		{"viagit/config", "gd/config", true},
		{"sub/.git", "gitfile", true},
		{"sub/.GIT./f.txt", "f.txt", true}, // a .git leading to the root covers it all
		{"sub/d/.git/hooks", "sub/d/missing/hooks", true},
		{filepath.ToSlash(root) + "/.git/config", "gd/config", true},
		{".git/..", ".", false},
		{".git/../sub/f.txt", "sub/f.txt", false},
		{"gd/config", "gd/config", false},
		{"plain/config", "gd/config", false},
		{"sub/notagit/config", "gd/config", false},
		{"sub/f.txt", "sub/f.txt", false},
	}
	for _, tc := range cases {
		rel, _, git, err := rv.ResolveGit(nil, tc.path)
		require.NoError(t, err, tc.path)
		assert.Equal(t, tc.rel, rel, tc.path)
		assert.Equal(t, tc.git, git, tc.path)
	}
}
