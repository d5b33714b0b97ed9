//go:build unix

package walk

import (
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// A walk reads no more entries than its limit, counting every entry of
// every directory it lists, and says when it stopped there.
func TestLimit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, rel := range []string{"a/1", "a/2", "a/3", "b/1", "b/2", "c"} {
		write(t, dir, rel, "x")
	}
	root := mustOpenRoot(t, dir)
	walk := func(limit int) ([]string, bool) {
		w, err := New(root, ".", 0)
		require.NoError(t, err)
		defer w.Close()
		w.Limit(limit)
		var out []string
		for w.Next() {
			out = append(out, w.Entry().Path)
			if w.Entry().Type == Dir {
				w.Descend(0)
			}
		}
		return out, w.Capped()
	}
	for _, tc := range []struct {
		limit  int
		want   []string
		capped bool
	}{
		{100, []string{"a", "a/1", "a/2", "a/3", "b", "b/1", "b/2", "c"}, false},
		{8, []string{"a", "a/1", "a/2", "a/3", "b", "b/1", "b/2", "c"}, false}, // exactly all
		{6, []string{"a", "a/1", "a/2", "a/3", "b", "c"}, true},                // b's entries are over the limit
		{3, []string{"a", "b", "c"}, true},                                     // the root's own three
		{2, []string{"a", "b"}, true},
		{0, nil, true},
	} {
		got, capped := walk(tc.limit)
		assert.Equal(t, tc.want, got, "limit %d", tc.limit)
		assert.Equal(t, tc.capped, capped, "limit %d", tc.limit)
	}
}

// The listing of one directory stops past the limit: a directory of many
// entries costs the limit, not its size.
func TestListStopsPastLimit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for i := range 3000 { // several getdents64 batches
		require.NoError(t, os.WriteFile(fmt.Sprintf("%s/file-%04d", dir, i), nil, 0o644))
	}
	d, err := sysDir(unix.AT_FDCWD).openDir(dir)
	require.NoError(t, err)
	defer d.close()
	var buf []byte
	got, err := d.list(&buf, 10)
	require.NoError(t, err)
	assert.Len(t, got, 11) // one more than the limit says there are more
	d2, err := sysDir(unix.AT_FDCWD).openDir(dir)
	require.NoError(t, err)
	defer d2.close()
	got, err = d2.list(&buf, MaxEntries)
	require.NoError(t, err)
	assert.Len(t, got, 3000)
}
