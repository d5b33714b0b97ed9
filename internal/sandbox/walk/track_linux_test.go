package walk

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// listTracked walks dir's own entries the way list_directory does (a size
// for each regular file) and returns them with the stamp and whether the
// stamp covers them. A nil listing means the directory was unchanged since
// last.
func listTracked(t *testing.T, root *os.Root, dir string, last Stamp) ([]string, Stamp, bool) {
	t.Helper()
	out, stamp, tracked, err := tryListTracked(root, dir, last)
	require.NoError(t, err)
	return out, stamp, tracked
}

func tryListTracked(root *os.Root, dir string, last Stamp) ([]string, Stamp, bool, error) {
	w, stamp, err := NewTracked(root, dir, 0, last)
	if err != nil || w == nil {
		return nil, stamp, err == nil, err
	}
	defer w.Close()
	out := []string{}
	for w.Next() {
		e := w.Entry()
		line := e.Path + " " + e.Type.String()
		if e.Type == Regular {
			_, size, err := w.Lstat()
			if err != nil {
				return nil, Stamp{}, false, err
			}
			line += fmt.Sprint(" ", size)
		}
		out = append(out, line)
	}
	return out, stamp, w.Tracked(), nil
}

// settled lists dir afresh and then again under the stamp it got, which
// must not read the directory a second time, and returns that stamp.
func settled(t *testing.T, root *os.Root, dir string) Stamp {
	t.Helper()
	_, stamp, tracked := listTracked(t, root, dir, Stamp{})
	if stamp == (Stamp{}) {
		t.Skip("directories are not tracked on this file system")
	}
	require.True(t, tracked)
	out, again, _ := listTracked(t, root, dir, stamp)
	require.Nil(t, out, "an unchanged directory is not read again")
	require.Equal(t, stamp, again)
	return stamp
}

// TestTrackedStampMovesOnEveryChange changes a tracked directory each way
// a listing can show, from outside the walk, and checks that the next
// NewTracked reads the directory again and sees the change.
func TestTrackedStampMovesOnEveryChange(t *testing.T) {
	t.Parallel()
	top := t.TempDir()
	dir := filepath.Join(top, "d")
	write(t, dir, "a.txt", "aaa")
	write(t, dir, "b.txt", "b")
	require.NoError(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	elsewhere := filepath.Join(top, "elsewhere")
	require.NoError(t, os.Mkdir(elsewhere, 0o755))
	root := mustOpenRoot(t, top)

	changes := []struct {
		name   string
		change func()
		want   string // a line the next listing must hold
	}{
		{"append through the name", func() { appendTo(t, filepath.Join(dir, "a.txt"), "aa") }, "d/a.txt file 5"},
		{"truncate", func() { require.NoError(t, os.Truncate(filepath.Join(dir, "a.txt"), 1)) }, "d/a.txt file 1"},
		{"write through a hard link elsewhere", func() {
			link := filepath.Join(elsewhere, "b-link")
			require.NoError(t, os.Link(filepath.Join(dir, "b.txt"), link))
			appendTo(t, link, "bbbb")
		}, "d/b.txt file 5"},
		{"create", func() { write(t, dir, "c.txt", "cc") }, "d/c.txt file 2"},
		{"rename over", func() {
			write(t, elsewhere, "new", "123456")
			require.NoError(t, os.Rename(filepath.Join(elsewhere, "new"), filepath.Join(dir, "c.txt")))
		}, "d/c.txt file 6"},
		{"remove a file", func() { require.NoError(t, os.Remove(filepath.Join(dir, "a.txt"))) }, "d/b.txt file 5"},
		{"a directory replaced by a file", func() {
			require.NoError(t, os.Remove(filepath.Join(dir, "sub")))
			write(t, dir, "sub", "now a file")
		}, "d/sub file 10"},
		{"renamed away and back, then written", func() {
			require.NoError(t, os.Rename(filepath.Join(dir, "sub"), filepath.Join(elsewhere, "sub")))
			require.NoError(t, os.Rename(filepath.Join(elsewhere, "sub"), filepath.Join(dir, "sub")))
			appendTo(t, filepath.Join(dir, "sub"), "!")
		}, "d/sub file 11"},
	}
	stamp := settled(t, root, "d")
	for _, c := range changes {
		c.change()
		out, next, tracked := listTracked(t, root, "d", stamp)
		require.NotNil(t, out, "%s: the directory was not read again", c.name)
		assert.NotEqual(t, stamp, next, c.name)
		assert.Contains(t, out, c.want, c.name)
		assert.True(t, tracked, c.name)
		stamp = settled(t, root, "d")
	}
	_, err := os.Stat(filepath.Join(dir, "a.txt"))
	require.ErrorIs(t, err, os.ErrNotExist)
}

// A name that comes to stand for another file, or for the same file again,
// is watched for that file once listed: a write after the listing is seen.
func TestTrackedNameGivenToAnotherFile(t *testing.T) {
	t.Parallel()
	top := t.TempDir()
	dir := filepath.Join(top, "d")
	other := filepath.Join(top, "elsewhere")
	write(t, dir, "a", "123")
	write(t, other, "b", "12")
	root := mustOpenRoot(t, top)
	settled(t, root, "d")
	// The file a named lives on elsewhere, so its watch is not ended by the
	// kernel (IN_IGNORED) when a stops naming it.
	require.NoError(t, os.Link(filepath.Join(dir, "a"), filepath.Join(other, "old-a")))
	require.NoError(t, os.Rename(filepath.Join(other, "b"), filepath.Join(dir, "a"))) // a new inode
	stamp := settled(t, root, "d")
	appendTo(t, filepath.Join(dir, "a"), "3")
	out, _, _ := listTracked(t, root, "d", stamp)
	require.NotNil(t, out, "a write to the file now named a went unseen")
	assert.Equal(t, []string{"d/a file 3"}, out)

	require.NoError(t, os.Rename(filepath.Join(dir, "a"), filepath.Join(other, "a")))
	require.NoError(t, os.Rename(filepath.Join(other, "a"), filepath.Join(dir, "a"))) // the same inode
	stamp = settled(t, root, "d")
	appendTo(t, filepath.Join(dir, "a"), "4")
	out, _, _ = listTracked(t, root, "d", stamp)
	require.NotNil(t, out, "a write after the file came back went unseen")
	assert.Equal(t, []string{"d/a file 4"}, out)
}

// Two names of one file in a tracked directory share a watch: removing one
// name keeps the other's.
func TestTrackedHardLinksInOneDirectory(t *testing.T) {
	t.Parallel()
	top := t.TempDir()
	dir := filepath.Join(top, "d")
	write(t, dir, "a", "123")
	require.NoError(t, os.Link(filepath.Join(dir, "a"), filepath.Join(dir, "b")))
	root := mustOpenRoot(t, top)
	settled(t, root, "d")
	require.NoError(t, os.Remove(filepath.Join(dir, "b")))
	stamp := settled(t, root, "d")
	appendTo(t, filepath.Join(dir, "a"), "4")
	out, _, _ := listTracked(t, root, "d", stamp)
	require.NotNil(t, out, "a write to the remaining name went unseen")
	assert.Equal(t, []string{"d/a file 4"}, out)
}

func appendTo(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.WriteString(s)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

// TestTrackedCoversOnlyWhatItWatches: a symlink (whose target may change
// anywhere) or a descent ends what a stamp covers, and so does a directory
// on a file system whose changes need not pass through this kernel.
func TestTrackedCoversOnlyWhatItWatches(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write(t, dir, "plain/a", "a")
	write(t, dir, "linked/a", "a")
	require.NoError(t, os.Symlink("a", filepath.Join(dir, "linked", "b")))
	write(t, dir, "nested/sub/a", "a")
	root := mustOpenRoot(t, dir)

	_, stamp, tracked := listTracked(t, root, "plain", Stamp{})
	if stamp == (Stamp{}) {
		t.Skip("directories are not tracked on this file system")
	}
	assert.True(t, tracked)
	_, _, tracked = listTracked(t, root, "linked", Stamp{})
	assert.False(t, tracked, "a symlink's target is not watched")

	w, _, err := NewTracked(root, "nested", 0, Stamp{})
	require.NoError(t, err)
	for w.Next() {
		w.Descend(0)
	}
	assert.False(t, w.Tracked(), "only the directory's own entries are watched")
	w.Close()

	proc := mustOpenRoot(t, "/proc/self")
	_, stamp, err = NewTracked(proc, "fd", 0, Stamp{})
	require.NoError(t, err)
	assert.Equal(t, Stamp{}, stamp, "procfs is not a local file system")
}

// TestTrackedUnderConcurrentWrites lists a directory while another goroutine
// grows a file in it: once the writer stops, the next listing, read again or
// not, shows the final size. Run with -race, it also checks the tracker's
// locking.
func TestTrackedUnderConcurrentWrites(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write(t, dir, "d/grow", "")
	write(t, dir, "d/still", "x")
	root := mustOpenRoot(t, dir)
	settled(t, root, "d")

	f, err := os.OpenFile(filepath.Join(dir, "d", "grow"), os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	const writes, listers = 3000, 2
	type kept struct {
		out   []string
		stamp Stamp
		err   error
	}
	final := make([]kept, listers)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for i := range listers {
		wg.Go(func() {
			k := &final[i]
			for {
				select {
				case <-stop:
					return
				default:
				}
				out, stamp, tracked, err := tryListTracked(root, "d", k.stamp)
				if err != nil {
					k.err = err
					return
				}
				if out != nil && tracked {
					k.out, k.stamp = out, stamp
				}
			}
		})
	}
	for range writes {
		_, err := f.WriteString("y")
		require.NoError(t, err)
	}
	require.NoError(t, f.Close())
	close(stop)
	wg.Wait()
	want := fmt.Sprintf("d/grow file %d", writes)
	for _, k := range final {
		require.NoError(t, k.err)
		out, _, _ := listTracked(t, root, "d", k.stamp)
		if out == nil {
			// The stamp says the listing the lister kept is current.
			out = k.out
		}
		assert.Contains(t, out, want)
	}
}

// TestTrackerEvictsTheLeastRecentlyAsked keeps the tracker's watches
// within its limit by forgetting the directories asked about longest ago,
// which are then read again and tracked anew.
func TestTrackerEvictsTheLeastRecentlyAsked(t *testing.T) {
	// Not parallel: it lowers the process's watch limit.
	dir := t.TempDir()
	for i := range 6 {
		for j := range 3 {
			write(t, dir, fmt.Sprintf("d%d/f%d", i, j), "x")
		}
	}
	root := mustOpenRoot(t, dir)
	stamps := make([]Stamp, 6)
	stamps[0] = settled(t, root, "d0")
	tracker.mu.Lock()
	saved := tracker.limit
	tracker.limit = len(tracker.watches) + 12
	tracker.mu.Unlock()
	defer func() {
		tracker.mu.Lock()
		tracker.limit = saved
		tracker.mu.Unlock()
	}()
	for i := 1; i < 6; i++ {
		stamps[i] = settled(t, root, fmt.Sprintf("d%d", i))
	}
	tracker.mu.Lock()
	held, limit := len(tracker.watches), tracker.limit
	tracker.mu.Unlock()
	assert.LessOrEqual(t, held, limit)
	out, next, _ := listTracked(t, root, "d0", stamps[0])
	assert.NotNil(t, out, "d0 was evicted: it is read again")
	assert.NotEqual(t, stamps[0], next)
	appendTo(t, filepath.Join(dir, "d5", "f0"), "more")
	out, _, _ = listTracked(t, root, "d5", stamps[5])
	assert.Contains(t, out, "d5/f0 file 5")
}

// TestTrackerSurvivesAnOverflow: when the kernel's event queue overflows,
// every tracked directory counts as changed, and its files are watched
// anew (the lost events may have been a file's replacement).
func TestTrackerSurvivesAnOverflow(t *testing.T) {
	// Not parallel: the overflow moves on every tracked directory's stamp,
	// those of other tests too.
	dir := t.TempDir()
	write(t, dir, "d/f", "x")
	root := mustOpenRoot(t, dir)
	stamp := settled(t, root, "d")
	tracker.mu.Lock()
	tracker.event(-1, unix.IN_Q_OVERFLOW, "")
	assert.Empty(t, tracker.dirs, "the overflow dropped every directory")
	assert.Empty(t, tracker.watches)
	tracker.mu.Unlock()
	out, _, _ := listTracked(t, root, "d", stamp)
	assert.NotNil(t, out)
	stamp = settled(t, root, "d")
	appendTo(t, filepath.Join(dir, "d", "f"), "yz")
	out, _, _ = listTracked(t, root, "d", stamp)
	assert.Contains(t, out, "d/f file 3")
}
