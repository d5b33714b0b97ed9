package filesystem

// Tests of the process's shared fsnotify hub (watch_hub.go): routing,
// sharing, failures.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/fsnotify/fsnotify"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// queued collects what q holds until cond does.
func queued(t *testing.T, q *eventQueue, cond func([]dirEvent) bool) []dirEvent {
	t.Helper()
	var all []dirEvent
	waitFor(t, "events", func() bool {
		evs, _ := q.take()
		all = append(all, evs...)
		return cond(all)
	})
	return all
}

func newQueue() *eventQueue { return &eventQueue{kick: make(chan struct{}, 1)} }

func TestHubRoute(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("w", "a")
	sub := filepath.Join(dir, "sub")
	tests := []struct {
		name    string
		event   fsnotify.Event
		wantA   []string // "watch name op" as a's subscriptions hear it
		wantB   []string
		dropped bool // the watch of sub leaves the tables
	}{
		{
			name:  "entry created, to every subscriber",
			event: fsnotify.Event{Name: filepath.Join(dir, "new"), Op: fsnotify.Create},
			wantA: []string{"dir new create"}, wantB: []string{"dir new create"},
		},
		{
			name:  "written",
			event: fsnotify.Event{Name: filepath.Join(sub, "f.txt"), Op: fsnotify.Write},
			wantA: []string{"sub f.txt write"},
		},
		{
			name:  "removed",
			event: fsnotify.Event{Name: filepath.Join(dir, "f.txt"), Op: fsnotify.Remove},
			wantA: []string{"dir f.txt gone"}, wantB: []string{"dir f.txt gone"},
		},
		{
			name:  "moved away",
			event: fsnotify.Event{Name: filepath.Join(dir, "f.txt"), Op: fsnotify.Rename},
			wantA: []string{"dir f.txt gone"}, wantB: []string{"dir f.txt gone"},
		},
		{
			name:  "metadata along with a creation",
			event: fsnotify.Event{Name: filepath.Join(dir, "g"), Op: fsnotify.Create | fsnotify.Chmod},
			wantA: []string{"dir g create"}, wantB: []string{"dir g create"},
		},
		{
			name:  "metadata alone is dropped",
			event: fsnotify.Event{Name: filepath.Join(dir, "f.txt"), Op: fsnotify.Chmod},
		},
		{
			name:  "an unknown watch is dropped",
			event: fsnotify.Event{Name: filepath.Join("w", "other", "f.txt"), Op: fsnotify.Write},
		},
		{
			name:    "a watched directory gone, as itself and as an entry",
			event:   fsnotify.Event{Name: sub, Op: fsnotify.Remove},
			wantA:   []string{"sub  gone", "dir sub gone"},
			wantB:   []string{"dir sub gone"},
			dropped: true,
		},
		{
			name:  "a watched directory created again, as an entry",
			event: fsnotify.Event{Name: sub, Op: fsnotify.Create},
			wantA: []string{"dir sub create"}, wantB: []string{"dir sub create"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHub(nil)
			a := &watcher{hub: h, q: newQueue(), subs: map[*dirWatch]struct{}{}}
			b := &watcher{hub: h, q: newQueue(), subs: map[*dirWatch]struct{}{}}
			names := map[*dirWatch]string{}
			watch := func(path, name string, ws ...*watcher) {
				s := &sharedWatch{path: path, id: dirID{path: path}}
				for _, w := range ws {
					d := &dirWatch{shared: s, w: w}
					s.subs = append(s.subs, d)
					w.subs[d] = struct{}{}
					names[d] = name
				}
				h.byID[s.id], h.byPath[path] = s, s
			}
			watch(dir, "dir", a, b)
			watch(sub, "sub", a)

			h.route(tt.event)
			heard := func(w *watcher) []string {
				evs, _ := w.q.take()
				var got []string
				for _, ev := range evs {
					op := map[dirOp]string{opCreate: "create", opGone: "gone", opWrite: "write"}[ev.op]
					got = append(got, names[ev.dir]+" "+ev.name+" "+op)
				}
				return got
			}
			assert.Equal(t, tt.wantA, heard(a))
			assert.Equal(t, tt.wantB, heard(b))
			_, watched := h.byPath[sub]
			assert.Equal(t, tt.dropped, !watched)
			assert.Len(t, h.byID, len(h.byPath))
		})
	}
}

func TestHubErrors(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		err  error
		lost bool
	}{
		{fsnotify.ErrEventOverflow, true},
		{fmt.Errorf("reading: %w", fsnotify.ErrEventOverflow), true},
		{errors.New("some other failure"), false},
	} {
		h := newHub(nil)
		w := &watcher{hub: h, q: newQueue(), subs: map[*dirWatch]struct{}{}}
		s := &sharedWatch{path: "w", id: dirID{path: "w"}}
		s.subs = []*dirWatch{{shared: s, w: w}}
		h.byID[s.id], h.byPath[s.path] = s, s
		h.failed(tt.err)
		_, lost := w.q.take()
		assert.Equal(t, tt.lost, lost, tt.err.Error())
	}
}

// privateHub is a hub of the test's own, with a watcher closed at the end.
func privateHub(t *testing.T) *watchHub {
	t.Helper()
	fsw, err := fsnotify.NewWatcher()
	require.NoError(t, err)
	h := newHub(fsw)
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.run()
	}()
	t.Cleanup(func() {
		fsw.Close()
		<-done
	})
	return h
}

// target watches path as the directory id, counting its releases.
func target(path string, released *atomic.Int32) watchTarget {
	return watchTarget{path: path, id: dirID{path: path}, release: func() { released.Add(1) }}
}

// Two subscribers of one directory share one watch of fsnotify's, which
// stays until the last lets go and is released once.
func TestHubSharesWatches(t *testing.T) {
	t.Parallel()
	h := privateHub(t)
	a := &watcher{hub: h, q: newQueue(), subs: map[*dirWatch]struct{}{}}
	b := &watcher{hub: h, q: newQueue(), subs: map[*dirWatch]struct{}{}}
	dir := t.TempDir()
	var releasedA, releasedB atomic.Int32
	subA, err := a.add(target(dir, &releasedA))
	require.NoError(t, err)
	subB, err := b.add(target(dir, &releasedB))
	require.NoError(t, err)
	assert.Same(t, subA.shared, subB.shared)
	assert.Equal(t, []string{dir}, h.fsw.WatchList())
	assert.Equal(t, int32(1), releasedB.Load(), "the second subscriber's target is not needed")

	heard := func(sub *dirWatch, name string) func([]dirEvent) bool {
		return func(evs []dirEvent) bool {
			return slices.Contains(evs, dirEvent{dir: sub, name: name, op: opCreate})
		}
	}
	mustWrite(t, dir, "one.txt", "1\n")
	queued(t, a.q, heard(subA, "one.txt"))
	queued(t, b.q, heard(subB, "one.txt"))

	a.remove(subA)
	assert.Empty(t, a.list())
	assert.Equal(t, []string{dir}, h.fsw.WatchList(), "still b's")
	assert.Zero(t, releasedA.Load())
	mustWrite(t, dir, "two.txt", "2\n")
	queued(t, b.q, heard(subB, "two.txt"))

	b.close()
	assert.Empty(t, h.fsw.WatchList())
	assert.Equal(t, int32(1), releasedA.Load(), "released with the watch")
	assert.Empty(t, h.byID)
	assert.Empty(t, h.byPath)
	b.remove(subB) // already gone: harmless
	assert.Equal(t, int32(1), releasedA.Load())
}

// A watch that cannot be set, or that is not on the directory once set, is
// not kept: the target is released and the tables are left as they were.
func TestHubAddFails(t *testing.T) {
	t.Parallel()
	h := privateHub(t)
	w := &watcher{hub: h, q: newQueue(), subs: map[*dirWatch]struct{}{}}
	dir := t.TempDir()
	tests := map[string]watchTarget{
		"missing": {path: filepath.Join(dir, "missing")},
		"moved":   {path: dir, verify: func() bool { return false }},
	}
	for name, tg := range tests {
		var released atomic.Int32
		tg.id = dirID{path: tg.path}
		tg.release = func() { released.Add(1) }
		sub, err := w.add(tg)
		assert.Error(t, err, name)
		assert.Nil(t, sub, name)
		assert.Equal(t, int32(1), released.Load(), name)
		assert.Empty(t, h.fsw.WatchList(), name)
		assert.Empty(t, h.byID, name)
		assert.Empty(t, h.byPath, name)
		assert.Empty(t, w.list(), name)
	}
}

// A watched directory that is removed leaves the tables at once, so that a
// directory made again under its name gets a watch of its own.
func TestHubDirectoryGone(t *testing.T) {
	t.Parallel()
	h := privateHub(t)
	w := &watcher{hub: h, q: newQueue(), subs: map[*dirWatch]struct{}{}}
	dir := filepath.Join(t.TempDir(), "d")
	require.NoError(t, os.Mkdir(dir, 0o755))
	var released atomic.Int32
	old, err := w.add(target(dir, &released))
	require.NoError(t, err)

	require.NoError(t, os.Remove(dir))
	queued(t, w.q, func(evs []dirEvent) bool {
		return slices.Contains(evs, dirEvent{dir: old, op: opGone})
	})
	h.mu.Lock()
	assert.Empty(t, h.byID)
	h.mu.Unlock()

	require.NoError(t, os.Mkdir(dir, 0o755))
	sub, err := w.add(target(dir, &released))
	require.NoError(t, err)
	assert.NotSame(t, old.shared, sub.shared)
	w.remove(old)
	assert.Equal(t, []string{dir}, h.fsw.WatchList(), "the old subscription does not remove the new watch")
	mustWrite(t, dir, "f.txt", "f\n")
	queued(t, w.q, func(evs []dirEvent) bool {
		return slices.Contains(evs, dirEvent{dir: sub, name: "f.txt", op: opCreate})
	})
	w.close()
	assert.Empty(t, h.fsw.WatchList())
	assert.Equal(t, int32(2), released.Load())
}
