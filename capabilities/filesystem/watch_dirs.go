package filesystem

// The directories one FileSystem watches
//
// The watcher only makes a change known early (see watch.go). It watches,
// non-recursively, the directory of every file whose hash is remembered and
// every directory listed, plus the subdirectories that appear in a watched
// directory, at most maxWatchedDirs at once. Subdirectories that appear may
// take only half of that budget, and hidden or denied ones none, so that a
// tool unpacking a large tree cannot crowd out the directories the agent
// works in.
//
// A watch never lands outside the root. On Linux fsnotify is given the
// /proc/self/fd name of a descriptor the no-follow walk reached
// (sandbox.Dir.NameDir): inotify follows it to exactly that directory,
// whatever the path leads to by then, and the descriptor, held while the
// watch lives, keeps the name unique and the inode number from being reused.
// Elsewhere, or without procfs, the watch is set on the real path and
// dropped unless, once set, the path still names the directory the walk
// reaches; a symlink swapped in and back out between the two could still
// slip one watch outside, whose events then only mark in-root paths dirty,
// since every hash is taken through the walk.
//
// Tool calls add watches while holding the tracker's lock, and fsnotify's
// reading goroutine hands over some errors while holding its own, so the
// hub's goroutine takes neither: it queues events (eventQueue) for the
// tracker's own goroutine, which applies them.

import (
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/agentspec/agentspec/internal/sandbox"
)

const (
	// maxWatchedDirs bounds the directories one FileSystem watches.
	maxWatchedDirs = 512
	// maxQueuedEvents bounds the watcher's events waiting to be handled;
	// past it they are dropped and every remembered file is re-checked, as
	// when the kernel's own queue overflows.
	maxQueuedEvents = 4096
)

// watchedDir is one directory's watch.
type watchedDir struct {
	sub  *dirWatch // nil when it could not be watched
	auto bool      // watched because it appeared, not because the agent read or listed it
}

// dirEvent is one thing a watch reported.
type dirEvent struct {
	dir  *dirWatch
	name string // the entry of the directory; "" for the directory itself, which is gone
	op   dirOp
}

type dirOp uint8

const (
	opCreate dirOp = 1 << iota // created, or moved in
	opGone                     // removed, or moved away
	opWrite                    // written
)

// startLocked gets the FileSystem's share of the process's watcher on first
// use, with WatchChanges on, and reports whether there is one. When none can
// be made (the user's inotify instances are used up, say) the write-time
// check alone protects.
func (t *changeTracker) startLocked() bool {
	if !t.tried && t.protect {
		t.tried = true
		h, err := sharedHub()
		if err != nil {
			return false
		}
		t.w = &watcher{hub: h, q: &t.queue, subs: map[*dirWatch]struct{}{}}
		t.wg.Go(t.handle)
	}
	return t.w != nil
}

// watchLocked watches the directory rel. auto marks a directory that
// appeared in a watched one, which is skipped when it is not a directory
// (any more), hidden or denied, or when it would exceed its share of the
// budget. A directory the agent asked for that cannot be watched is
// remembered as such, so that it is not retried on every read.
func (t *changeTracker) watchLocked(rel string, auto bool) {
	if _, ok := t.dirs[rel]; ok || len(t.dirs) >= t.limit || !t.startLocked() {
		return
	}
	if auto {
		_, name := sandbox.Split(rel)
		if t.auto >= t.limit/2 || hiddenName(name) || t.fs.checkWalkRoot(rel) != nil {
			return
		}
	}
	var sub *dirWatch
	tg, err := t.fs.watchTarget(rel)
	if err == nil {
		sub, err = t.w.add(tg)
	}
	switch {
	case err == nil:
		sub.rel = rel
		t.dirs[rel] = &watchedDir{sub: sub, auto: auto}
		if auto {
			t.auto++
		}
	case !auto:
		t.dirs[rel] = &watchedDir{}
	}
}

// unwatchLocked drops the watch of rel, if any.
func (t *changeTracker) unwatchLocked(rel string) {
	d, ok := t.dirs[rel]
	if !ok {
		return
	}
	delete(t.dirs, rel)
	if d.auto {
		t.auto--
	}
	if d.sub != nil {
		t.w.remove(d.sub)
	}
}

// handle applies the queued events until the tracker is closed.
func (t *changeTracker) handle() {
	for range t.queue.kick {
		events, lost := t.queue.take()
		t.mu.Lock()
		if t.closed {
			t.mu.Unlock()
			return
		}
		if lost {
			for rel := range t.seen {
				t.dirty[rel] = struct{}{}
			}
		}
		for _, ev := range events {
			t.applyLocked(ev)
		}
		t.mu.Unlock()
	}
}

// applyLocked takes one event into account: a remembered file touched is
// dirty; a watched directory gone is unwatched; a directory that appeared
// is watched. Events of a watch dropped since are ignored.
func (t *changeTracker) applyLocked(ev dirEvent) {
	dir := ev.dir.rel
	if d := t.dirs[dir]; d == nil || d.sub != ev.dir {
		return
	}
	if ev.name == "" { // the directory itself, gone
		t.unwatchLocked(dir)
		return
	}
	rel := sandbox.Join(dir, ev.name)
	if _, ok := t.seen[rel]; ok {
		t.dirty[rel] = struct{}{}
	}
	switch d := t.dirs[rel]; {
	case ev.op&opGone != 0:
		t.unwatchLocked(rel)
	case ev.op&opCreate != 0:
		// Whatever was watched under this name is not what is there now. A
		// directory the agent asked for is watched again as one it asked for.
		t.unwatchLocked(rel)
		t.watchLocked(rel, d == nil || d.auto)
	}
}

// close releases every watch of the FileSystem and forgets what was
// remembered.
func (t *changeTracker) close() {
	t.mu.Lock()
	t.closed = true
	if t.w != nil {
		t.w.close()
		t.w = nil
	}
	clear(t.dirs)
	clear(t.seen)
	clear(t.dirty)
	t.auto = 0
	t.mu.Unlock()
	t.queue.signal() // wakes handle to see closed; nothing is pushed any more
	t.wg.Wait()
}

// watches returns the number of directories watched.
func (t *changeTracker) watches() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.w == nil {
		return 0
	}
	return len(t.w.list())
}

// watchTarget is what the watcher is given to watch one directory.
type watchTarget struct {
	path    string      // the name fsnotify watches and reports events under
	id      dirID       // the directory's identity
	verify  func() bool // nil, or whether the watch, once set, is on the directory
	release func()      // releases what path names, once the watch is removed
}

// dirID identifies a directory (see watch_hub.go).
type dirID struct {
	dev, ino uint64
	path     string
}

// pathTarget watches the directory rel under its real path.
func (fs *FS) pathTarget(rel string) (watchTarget, error) {
	st, err := fs.root.Lstat(rel)
	if err != nil {
		return watchTarget{}, err
	}
	if !st.IsDir() {
		return watchTarget{}, syscall.ENOTDIR
	}
	path := filepath.Join(fs.rootDir, filepath.FromSlash(rel))
	verify := func() bool {
		in, err := fs.root.Lstat(rel)
		if err != nil || !in.IsDir() {
			return false
		}
		at, err := os.Stat(path)
		return err == nil && os.SameFile(in, at)
	}
	return watchTarget{path: path, id: pathID(path, st), verify: verify, release: func() {}}, nil
}

// eventQueue hands events from the hub's goroutine to the tracker's.
type eventQueue struct {
	mu     sync.Mutex
	events []dirEvent
	lost   bool
	kick   chan struct{} // capacity 1: something is queued
}

func (q *eventQueue) push(ev dirEvent) {
	q.mu.Lock()
	if len(q.events) < maxQueuedEvents {
		q.events = append(q.events, ev)
	} else {
		q.lost = true
	}
	q.mu.Unlock()
	q.signal()
}

// lose records that events were lost.
func (q *eventQueue) lose() {
	q.mu.Lock()
	q.lost = true
	q.mu.Unlock()
	q.signal()
}

func (q *eventQueue) signal() {
	select {
	case q.kick <- struct{}{}:
	default:
	}
}

func (q *eventQueue) take() ([]dirEvent, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	events, lost := q.events, q.lost
	q.events, q.lost = nil, false
	return events, lost
}
