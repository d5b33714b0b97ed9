package filesystem

import (
	"bufio"
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// kernelWatches returns how many watches the process's inotify instance holds
// on the directory dir, as the kernel lists them in fdinfo.
func kernelWatches(t *testing.T, dir string) int {
	t.Helper()
	h, err := sharedHub()
	require.NoError(t, err)
	var st unix.Stat_t
	require.NoError(t, unix.Stat(dir, &st))
	f, err := os.Open("/proc/self/fdinfo/" + strconv.Itoa(h.fd))
	require.NoError(t, err)
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// inotify wd:1 ino:8a2 sdev:800001 mask:... (numbers in hex)
		fields := strings.Fields(sc.Text())
		if len(fields) < 4 || fields[0] != "inotify" {
			continue
		}
		ino, err := strconv.ParseUint(strings.TrimPrefix(fields[2], "ino:"), 16, 64)
		require.NoError(t, err)
		if ino == st.Ino {
			n++
		}
	}
	require.NoError(t, sc.Err())
	return n
}

// Close removes the kernel's watches before it returns: none is left to
// report anything, whatever happens to the shared instance afterwards.
func TestCloseRemovesKernelWatches(t *testing.T) {
	t.Parallel()
	c, root := newTestFS(t, Options{}, map[string]string{"a.txt": "a\n", "sub/b.txt": "b\n"})
	for _, p := range []string{"a.txt", "sub/b.txt"} {
		_, err := callTool(context.Background(), t, c, ToolReadFile, map[string]any{"path": p})
		require.NoError(t, err)
	}
	dirs := []string{root, filepath.Join(root, "sub")}
	for _, d := range dirs {
		require.Equal(t, 1, kernelWatches(t, d), "watched before Close")
	}
	require.NoError(t, c.Close())
	for _, d := range dirs {
		assert.Zero(t, kernelWatches(t, d), "no watch survives Close")
	}
}

// Two FileSystems on one directory share its kernel watch: each hears of a
// change, and the watch stays until the last lets go.
func TestFileSystemsShareWatches(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	mustWrite(t, root, "f.txt", "one\n")
	var cs [2]*Capability
	for i := range cs {
		c, err := New(Options{Tools: []string{ToolReadFile, ToolFileInfo}}, root)
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		_, err = callTool(context.Background(), t, c, ToolReadFile, map[string]any{"path": "f.txt"})
		require.NoError(t, err)
		cs[i] = c
	}
	assert.Equal(t, 1, kernelWatches(t, root), "one kernel watch for both")

	mustWrite(t, root, "f.txt", "two\n")
	for _, c := range cs {
		waitFor(t, "the change to be noticed", func() bool { return pending(c, "f.txt") })
	}

	require.NoError(t, cs[0].Close())
	assert.Equal(t, 1, kernelWatches(t, root), "still held by the other")
	settle(t, cs[1], root, ".") // which the other still hears of

	require.NoError(t, cs[1].Close())
	assert.Zero(t, kernelWatches(t, root))
}

// rawEvent encodes one struct inotify_event, its name NUL-padded to a
// multiple of 16 bytes as the kernel pads it.
func rawEvent(wd int32, mask uint32, name string) []byte {
	nameLen := 0
	if name != "" {
		nameLen = (len(name) + 16) / 16 * 16
	}
	b := make([]byte, unix.SizeofInotifyEvent+nameLen)
	binary.NativeEndian.PutUint32(b[0:], uint32(wd))
	binary.NativeEndian.PutUint32(b[4:], mask)
	binary.NativeEndian.PutUint32(b[12:], uint32(nameLen))
	copy(b[unix.SizeofInotifyEvent:], name)
	return b
}

func TestHubDispatch(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		events [][]byte
		wantA  []dirEvent
		wantB  []dirEvent
		lost   bool
		keysA  int // subscriptions a keeps
	}{
		{
			name:   "entry created, to every subscriber under its own key",
			events: [][]byte{rawEvent(1, unix.IN_CREATE|unix.IN_ISDIR, "new")},
			wantA:  []dirEvent{{"a1/new", opCreate}},
			wantB:  []dirEvent{{"b1/new", opCreate}},
			keysA:  2,
		},
		{
			name: "each kind of event",
			events: [][]byte{
				rawEvent(2, unix.IN_MODIFY, "f.txt"),
				rawEvent(2, unix.IN_MOVED_TO, "g.txt"),
				rawEvent(2, unix.IN_MOVED_FROM, "h.txt"),
				rawEvent(2, unix.IN_DELETE, "i.txt"),
				rawEvent(2, unix.IN_DELETE_SELF, ""),
				rawEvent(2, unix.IN_MOVE_SELF, ""),
			},
			wantA: []dirEvent{
				{"a2/f.txt", opWrite}, {"a2/g.txt", opCreate}, {"a2/h.txt", opGone},
				{"a2/i.txt", opGone}, {"a2", opGone}, {"a2", opGone},
			},
			keysA: 2,
		},
		{
			name:   "a watch the kernel dropped is forgotten",
			events: [][]byte{rawEvent(1, unix.IN_DELETE_SELF, ""), rawEvent(1, unix.IN_IGNORED, "")},
			wantA:  []dirEvent{{"a1", opGone}},
			wantB:  []dirEvent{{"b1", opGone}},
			keysA:  1,
		},
		{
			name:   "an unknown descriptor, or metadata only, is dropped",
			events: [][]byte{rawEvent(9, unix.IN_CREATE, "x"), rawEvent(1, unix.IN_ATTRIB, "y")},
			keysA:  2,
		},
		{
			name:   "an overflow loses events for everyone",
			events: [][]byte{rawEvent(-1, unix.IN_Q_OVERFLOW, "")},
			lost:   true,
			keysA:  2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := &inotifyHub{fd: -1, subs: map[int32][]inotifySub{}}
			var qa, qb eventQueue
			qa.kick, qb.kick = make(chan struct{}, 1), make(chan struct{}, 1)
			a := &inotifyWatcher{hub: h, q: &qa, wds: map[string]int32{"a1": 1, "a2": 2}}
			b := &inotifyWatcher{hub: h, q: &qb, wds: map[string]int32{"b1": 1}}
			h.subs[1] = []inotifySub{{a, "a1"}, {b, "b1"}}
			h.subs[2] = []inotifySub{{a, "a2"}}

			var buf []byte
			for _, ev := range tt.events {
				buf = append(buf, ev...)
			}
			h.dispatch(buf)

			gotA, lostA := qa.take()
			gotB, lostB := qb.take()
			assert.Equal(t, tt.wantA, gotA)
			assert.Equal(t, tt.wantB, gotB)
			assert.Equal(t, tt.lost, lostA)
			assert.Equal(t, tt.lost, lostB)
			assert.Len(t, a.wds, tt.keysA)
		})
	}
}
