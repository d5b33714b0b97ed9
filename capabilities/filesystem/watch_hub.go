package filesystem

// The process's one fsnotify watcher, shared by every FileSystem
//
// Every FileSystem of the process watches through one fsnotify.Watcher, made
// on first use and never closed. Closing an inotify instance that ever held a
// watch makes the kernel wait for an RCU grace period, around 10 ms however
// few watches are left: with a watcher per FileSystem every Close would wait
// that long (a batch of short jobs would spend most of its time there), and
// every open FileSystem would count against the user's inotify instances, 128
// by default. So:
//
//   - A directory has one watch however many FileSystems, or names, watch it.
//     It is known by its identity: device and inode on Linux, where inotify
//     keeps one watch per inode while fsnotify keys its watches by name (a
//     watch set through a second name would report under the first and go
//     with it); the path elsewhere. Subscribers are counted, and the watch is
//     removed when the last one lets go, so Close removes its FileSystem's
//     watches, and no other's, before it returns.
//   - One goroutine reads the watcher and hands each event to the
//     subscribers of the watch it names, through each one's eventQueue. A
//     watch whose directory is gone is dropped by fsnotify, and so from the
//     tables at once, so that the next subscriber to that directory (moved,
//     not deleted) gets a watch of its own.
//   - When the kernel refuses a watch (the user's inotify watches, counted
//     across processes, are used up), the directory is not watched and the
//     write-time check alone protects; when its queue overflows, every
//     subscriber re-checks what its FileSystem remembers.

import (
	"errors"
	"maps"
	"path/filepath"
	"slices"
	"sync"

	"github.com/fsnotify/fsnotify"
)

// watchHub is the process's fsnotify watcher and who listens to each watch.
type watchHub struct {
	fsw *fsnotify.Watcher

	// opMu serializes adding and removing watches, fsnotify's calls
	// included, so that a watch is removed before another one of the same
	// directory is set: inotify would hand back the watch being removed.
	opMu sync.Mutex
	// mu guards the tables. It is never held across a call into fsnotify,
	// so that routing an event never waits on one.
	mu     sync.Mutex
	byID   map[dirID]*sharedWatch
	byPath map[string]*sharedWatch
}

// sharedWatch is one watch of the process's watcher.
type sharedWatch struct {
	path    string
	id      dirID
	release func()
	subs    []*dirWatch // guarded by watchHub.mu
}

// dirWatch is one FileSystem's subscription to a sharedWatch.
type dirWatch struct {
	shared *sharedWatch
	w      *watcher
	rel    string // the directory, as its tracker knows it; set and read under the tracker's lock
}

// watcher is one FileSystem's share of the process's watcher: it delivers
// the events of its subscriptions to the queue it was made with, and never
// calls back into the tracker.
type watcher struct {
	hub  *watchHub
	q    *eventQueue
	subs map[*dirWatch]struct{} // guarded by hub.mu
}

var (
	hubMu sync.Mutex
	hub   *watchHub
)

// sharedHub returns the process's watcher, making it if need be. A failure
// (the user's inotify instances used up, say) is not remembered: the next
// FileSystem tries again.
func sharedHub() (*watchHub, error) {
	hubMu.Lock()
	defer hubMu.Unlock()
	if hub == nil {
		fsw, err := fsnotify.NewWatcher()
		if err != nil {
			return nil, err
		}
		hub = newHub(fsw)
		go hub.run()
	}
	return hub, nil
}

func newHub(fsw *fsnotify.Watcher) *watchHub {
	return &watchHub{fsw: fsw, byID: map[dirID]*sharedWatch{}, byPath: map[string]*sharedWatch{}}
}

// add subscribes to the watch of tg's directory, setting it if there is none
// yet. It owns tg: tg is released at once when the directory is watched
// already or cannot be, else once its watch is removed.
func (w *watcher) add(tg watchTarget) (*dirWatch, error) {
	h := w.hub
	h.opMu.Lock()
	defer h.opMu.Unlock()
	h.mu.Lock()
	s, shared := h.byID[tg.id]
	if !shared {
		// Routed to from now on; fsnotify reports nothing of it before Add.
		s = &sharedWatch{path: tg.path, id: tg.id, release: tg.release}
		h.byID[s.id] = s
		h.byPath[s.path] = s
	}
	sub := &dirWatch{shared: s, w: w}
	s.subs = append(s.subs, sub)
	w.subs[sub] = struct{}{}
	h.mu.Unlock()
	if shared {
		tg.release()
		return sub, nil
	}

	err := h.fsw.Add(tg.path)
	if err == nil && tg.verify != nil && !tg.verify() {
		err = errWatchMoved
	}
	if err != nil {
		w.removeLocked(sub) // the only subscriber: the watch goes, if set, and tg is released
		return nil, err
	}
	return sub, nil
}

var errWatchMoved = errors.New("the directory moved while its watch was set")

// remove ends the subscription sub and, with the last one of its watch, the
// watch itself.
func (w *watcher) remove(sub *dirWatch) {
	w.hub.opMu.Lock()
	defer w.hub.opMu.Unlock()
	w.removeLocked(sub)
}

func (w *watcher) removeLocked(sub *dirWatch) {
	h, s := w.hub, sub.shared
	h.mu.Lock()
	if _, ok := w.subs[sub]; !ok {
		h.mu.Unlock()
		return
	}
	delete(w.subs, sub)
	s.subs = slices.DeleteFunc(s.subs, func(d *dirWatch) bool { return d == sub })
	last := len(s.subs) == 0
	// A watch dropped on its directory's removal may still be fsnotify's
	// (not every backend drops it), unless its name now watches another.
	owned := h.byPath[s.path]
	if last {
		h.dropLocked(s)
	}
	h.mu.Unlock()
	if !last {
		return
	}
	if owned == nil || owned == s {
		_ = h.fsw.Remove(s.path) // fails when fsnotify already dropped it
	}
	s.release()
}

// list returns the names fsnotify watches for this FileSystem.
func (w *watcher) list() []string {
	w.hub.mu.Lock()
	defer w.hub.mu.Unlock()
	paths := make([]string, 0, len(w.subs))
	for sub := range w.subs {
		paths = append(paths, sub.shared.path)
	}
	return paths
}

// close ends every subscription: once it returns, nothing more is pushed,
// and no watch is left that only this FileSystem held.
func (w *watcher) close() {
	w.hub.opMu.Lock()
	defer w.hub.opMu.Unlock()
	w.hub.mu.Lock()
	subs := slices.Collect(maps.Keys(w.subs))
	w.hub.mu.Unlock()
	for _, sub := range subs {
		w.removeLocked(sub)
	}
}

// dropLocked takes s out of the tables, so that the directory's next
// subscriber sets a watch of its own.
func (h *watchHub) dropLocked(s *sharedWatch) {
	if h.byID[s.id] == s {
		delete(h.byID, s.id)
	}
	if h.byPath[s.path] == s {
		delete(h.byPath, s.path)
	}
}

// run hands out what fsnotify reports, for the life of the process.
func (h *watchHub) run() {
	for {
		select {
		case ev, ok := <-h.fsw.Events:
			if !ok {
				return
			}
			h.route(ev)
		case err, ok := <-h.fsw.Errors:
			if !ok {
				return
			}
			h.failed(err)
		}
	}
}

// route hands ev to the subscribers of the watch it came from. fsnotify
// names an event of an entry after the watch's name and the entry's, and
// the removal of the watched directory itself after the watch's name alone.
// With real paths (not on Linux) a name can be both, an entry of one watched
// directory and another watched directory: a removal goes to both.
func (h *watchHub) route(ev fsnotify.Event) {
	op := fsnotifyOp(ev.Op)
	if op == 0 {
		return // Chmod alone is metadata: the content is the same
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if s := h.byPath[ev.Name]; s != nil && op&opGone != 0 {
		s.push("", opGone)
		h.dropLocked(s) // as fsnotify did
	}
	if s := h.byPath[filepath.Dir(ev.Name)]; s != nil {
		s.push(filepath.Base(ev.Name), op)
	}
}

func (s *sharedWatch) push(name string, op dirOp) {
	for _, sub := range s.subs {
		sub.w.q.push(dirEvent{dir: sub, name: name, op: op})
	}
}

// failed tells every subscriber that events were lost when the kernel's
// queue overflowed. Any other error loses nothing the write-time check would
// miss.
func (h *watchHub) failed(err error) {
	if !errors.Is(err, fsnotify.ErrEventOverflow) {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, s := range h.byPath {
		for _, sub := range s.subs {
			sub.w.q.lose()
		}
	}
}

func fsnotifyOp(o fsnotify.Op) dirOp {
	var op dirOp
	if o.Has(fsnotify.Create) {
		op |= opCreate
	}
	if o.Has(fsnotify.Remove) || o.Has(fsnotify.Rename) {
		op |= opGone
	}
	if o.Has(fsnotify.Write) {
		op |= opWrite
	}
	return op
}
