package filesystem

// Files changed on disk by someone else
//
// A file the agent read can be changed by another process (an editor, a
// build, another agent) before the agent writes it back. The reference only
// protects a write whose model remembered to pass expected_hash; a FileSystem
// protects every one, unless Options.WatchChanges is false:
//
//   - It remembers, per canonical path, the hash of the content the agent last
//     saw: read by read_file (the whole file, whatever window was shown),
//     described by file_info (text files), or written by write_file and
//     edit_file; at most maxSeenFiles of them, the least recently seen
//     forgotten first.
//   - write_file and edit_file without expected_hash compare the file with
//     that hash where expected_hash is compared (before the change request),
//     and again under the descriptor they write through once a listener has
//     approved. A write_file outside a run reads no snapshot, so its one
//     check is the guard of change.go: no second read. A file changed since
//     is a Conflict telling the model to re-read it. A file deleted since is
//     created by write_file and is "File not found" for edit_file, as for
//     any missing file.
//   - A watcher notices changes as they happen, so that a listener
//     learns of them (file_system.external_change) before the model trips
//     over them. It watches, non-recursively, the directory of every file
//     whose hash is remembered and every directory listed, plus the
//     subdirectories that appear in a watched directory, at most
//     maxWatchedDirs at once; past that the write-time check alone protects.
//     Subdirectories that appear may take only half of that budget, and
//     hidden or denied ones none, so that a tool unpacking a large tree
//     cannot crowd out the directories the agent works in.
//   - The watcher only marks remembered paths dirty. Their hashes are taken
//     when the next tool call delivers the pending changes, in that call's
//     goroutine and through the contained descriptor walk: a burst of writes
//     costs one hash, and a file the agent is writing itself (marked in flight
//     until the new hash is remembered) is never taken for someone else's
//     change.
//   - Events only ever reach a listener synchronously from a tool call, in
//     order: the changes noticed since the previous call go out through the
//     listener of the next call on this FileSystem, before it runs (a call
//     without a listener drops them), and at the latest with the write they
//     make fail. A change the watcher did not notice is reported when a write
//     finds it. Each change is reported once.
//
// On Linux a watch never lands outside the root: fsnotify is given the
// /proc/self/fd name of a descriptor that the no-follow walk of path.go
// reached, and inotify follows that name to exactly the directory that was
// checked, whatever happens to the path meanwhile; the descriptor is held
// while the watch lives, which keeps that name unique. Elsewhere the watch is
// set on the real path and dropped unless, once set, the path still names the
// directory the walk reaches; a symlink swapped in and back out between the
// two could still slip one watch outside, whose events then only mark in-root
// paths dirty, since every hash is taken through the walk.
//
// Options.RequireReadBeforeWrite, which does not depend on WatchChanges,
// refuses to change an existing file whose content the agent has neither read
// nor written, unless the call gives expected_hash, which the file must then
// match.
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
//     with it); the path elsewhere. Subscribers are counted, and the watch is removed when the
//     last one lets go, so Close removes its FileSystem's watches, and no
//     other's, before it returns.
//   - One goroutine reads the watcher and hands each event to the
//     subscribers of the watch it names. A watch whose directory is gone is
//     dropped by fsnotify, and so from the table at once, so that the next
//     subscriber to that directory (moved, not deleted) gets a watch of its
//     own.
//   - When the kernel refuses a watch (the user's inotify watches, counted
//     across processes, are used up), the directory is not watched and the
//     write-time check alone protects; when its queue overflows, every
//     subscriber re-checks what its FileSystem remembers.
//
// Tool calls add watches while holding the tracker's lock, and fsnotify's
// reading goroutine hands over some errors while holding its own, so the
// goroutine routing events takes neither, nor any lock held across a call
// into fsnotify: it queues them for each tracker's own goroutine, which
// applies them.

import (
	"cmp"
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/internal/sandbox"
	"github.com/fsnotify/fsnotify"
)

const (
	// maxWatchedDirs bounds the directories one FileSystem watches.
	maxWatchedDirs = 512
	// maxSeenFiles bounds the remembered hashes; past it the least recently
	// seen quarter is forgotten, and those files are written as if unseen.
	maxSeenFiles = 1 << 16
	// maxQueuedEvents bounds the watcher's events waiting to be handled;
	// past it they are dropped and every remembered file is re-checked, as
	// when the kernel's own queue overflows.
	maxQueuedEvents = 4096
	// deletedState is what a reported deletion is remembered as.
	deletedState = "<deleted>"
)

// seenFile is what the agent last saw of one file.
type seenFile struct {
	hash     string // content hash; "" while the agent's first write of a new file is in flight
	known    bool   // the agent read or wrote the content, not just its hash (file_info)
	reported string // the state last reported in an external change, so it is reported once
	writing  int    // the agent's own writes in flight
	gen      uint64 // bumped when one starts, so a hash taken meanwhile is discarded
	used     uint64 // when last seen, for eviction
}

// watchedDir is one directory's watch.
type watchedDir struct {
	sub  *dirWatch // nil when it could not be watched
	auto bool      // watched because it appeared, not because the agent read or listed it
}

// changeTracker remembers what the agent saw and watches for changes.
type changeTracker struct {
	fs        *FS
	protect   bool // Options.WatchChanges
	tracking  bool // seen is kept: protect or Options.RequireReadBeforeWrite
	limit     int  // maxWatchedDirs, lowered by tests
	seenLimit int  // maxSeenFiles, lowered by tests

	mu     sync.Mutex
	closed bool
	seen   map[string]*seenFile // by canonical rel
	dirty  map[string]struct{}  // remembered files the watcher saw touched, not checked yet
	tick   uint64

	tried bool                   // a watcher was asked for (once)
	w     *watcher               // nil until then, or when none could be had
	dirs  map[string]*watchedDir // by rel, including those that could not be watched
	subs  map[*dirWatch]string   // the rel of each live subscription
	auto  int                    // dirs with auto set

	queue eventQueue
	wg    sync.WaitGroup // the goroutine handling the queue
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

func newChangeTracker(fs *FS) *changeTracker {
	protect := *fs.opts.WatchChanges
	return &changeTracker{
		fs:        fs,
		protect:   protect,
		tracking:  protect || fs.opts.RequireReadBeforeWrite,
		limit:     maxWatchedDirs,
		seenLimit: maxSeenFiles,
		seen:      map[string]*seenFile{},
		dirty:     map[string]struct{}{},
		dirs:      map[string]*watchedDir{},
		subs:      map[*dirWatch]string{},
		queue:     eventQueue{kick: make(chan struct{}, 1)},
	}
}

// What the tools call.

// saw records that the agent was shown the hash (and, when known, the
// content) of the file rel, and watches its directory.
func (fs *FS) saw(rel, hash string, known bool) {
	t := fs.changes
	if !t.tracking {
		return
	}
	t.mu.Lock()
	if !t.closed {
		t.rememberLocked(rel, hash, known)
	}
	t.mu.Unlock()
	dir, _ := sandbox.Split(rel)
	fs.watchDir(dir)
}

// watchDir watches the directory rel, which the agent read a file in or
// listed, if it is not watched yet and the budget allows.
func (fs *FS) watchDir(rel string) {
	t := fs.changes
	if !t.protect {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed || !t.startLocked() {
		return
	}
	t.watchLocked(rel, false)
}

// lastSeen returns the hash of the content the agent last saw in rel, and
// whether it read or wrote that content itself.
func (fs *FS) lastSeen(rel string) (hash string, known, ok bool) {
	t := fs.changes
	if !t.tracking {
		return "", false, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if e := t.seen[rel]; e != nil && e.hash != "" {
		return e.hash, e.known, true
	}
	return "", false, false
}

// guardsChanges reports whether writes are checked against what the agent
// last saw.
func (fs *FS) guardsChanges() bool { return fs.changes.protect }

// requireKnown enforces Options.RequireReadBeforeWrite for a change to the
// existing file rel. A change that gives expected_hash goes through: the
// hash check that follows lets it change only the content the hash names.
func (fs *FS) requireKnown(path, rel string, expectedHash *string) error {
	if !fs.opts.RequireReadBeforeWrite || expectedHash != nil {
		return nil
	}
	if _, known, _ := fs.lastSeen(rel); known {
		return nil
	}
	return capabilities.Retry("Refusing to change %s: read it with read_file first, so you know what it holds.", pyRepr(path))
}

// writeTracked is writeThrough for write_file and edit_file. While it runs
// the file is marked as being written by the agent, so the watcher's view of
// the half-written file is never taken for someone else's change; once the
// bytes landed, they are what the agent last saw. It returns their hash.
func (fs *FS) writeTracked(path, rel string, data []byte, g guard, create bool) (string, error) {
	hash := contentHash(data)
	t := fs.changes
	if !t.tracking {
		return hash, fs.writeThrough(path, rel, data, g, create)
	}
	t.mu.Lock()
	e := t.seen[rel]
	if e == nil {
		e = &seenFile{}
		t.addLocked(rel, e)
	}
	e.writing++
	e.gen++
	t.mu.Unlock()

	err := fs.writeThrough(path, rel, data, g, create)

	t.mu.Lock()
	e.writing--
	switch {
	case t.closed:
	case err == nil:
		t.rememberLocked(rel, hash, true)
	case e.hash == "" && e.writing == 0 && t.seen[rel] == e:
		delete(t.seen, rel) // a new file that was not written after all
	}
	t.mu.Unlock()
	if err == nil {
		dir, _ := sandbox.Split(rel)
		fs.watchDir(dir)
	}
	return hash, err
}

// staleConflict words writeThrough's refusal of a file whose content moved
// off the guard: as a change on disk when the guard was what the agent last
// saw (watched), as the reference's Conflict otherwise.
func (fs *FS) staleConflict(ctx context.Context, path, rel string, err error, watched bool) error {
	var stale *staleError
	if !errors.As(err, &stale) {
		return err
	}
	if watched && stale.want != absentHash {
		return fs.changedOnDisk(ctx, path, rel, stale.want, stale.got)
	}
	return conflict(path, stale.want, stale.got)
}

// changedOnDisk is the Conflict of a write or edit, made without
// expected_hash, of a file that no longer holds what the agent last saw
// (seen) but now. The change is reported unless it already was. When now is
// what the agent itself wrote in the meantime, in a concurrent call, nobody
// else changed the file: that is the reference's Conflict, and no event.
func (fs *FS) changedOnDisk(ctx context.Context, path, rel, seen, now string) error {
	t := fs.changes
	var ev *ExternalChangeEvent
	t.mu.Lock()
	e := t.seen[rel]
	own := e != nil && e.hash == now && now != seen
	if e != nil && !own {
		ev = e.report(now, false)
	}
	t.mu.Unlock()
	if own {
		return conflict(path, seen, now)
	}
	if ev != nil {
		ev.EventBase = fs.base(ctx, rel)
		if err := fs.emit(ctx, ev); err != nil {
			return err
		}
	}
	return capabilities.Retry("Conflict: file %s was changed on disk since you last read it (read hash:%s, now hash:%s). "+
		"Re-read the file and retry.", pyRepr(path), seen, now)
}

// deliverChanges reports, through ctx's listener, the remembered files the
// watcher saw touched since the previous call whose content is no longer
// what the agent saw. Without a listener they are dropped unchecked.
func (fs *FS) deliverChanges(ctx context.Context) error {
	t := fs.changes
	if !t.protect {
		return nil
	}
	type check struct {
		rel string
		gen uint64
	}
	var checks []check
	t.mu.Lock()
	if len(t.dirty) == 0 {
		t.mu.Unlock()
		return nil
	}
	emitting := capabilities.Emitting(ctx)
	for rel := range t.dirty {
		e := t.seen[rel]
		switch {
		case e == nil || !emitting:
			delete(t.dirty, rel)
		case e.writing > 0:
			// The agent's own write: checked once it has landed.
		default:
			checks = append(checks, check{rel, e.gen})
			delete(t.dirty, rel)
		}
	}
	t.mu.Unlock()

	slices.SortFunc(checks, func(a, b check) int { return strings.Compare(a.rel, b.rel) })
	for _, c := range checks {
		now, deleted, ok := fs.hashNow(c.rel)
		if !ok {
			continue
		}
		var ev *ExternalChangeEvent
		t.mu.Lock()
		if e := t.seen[c.rel]; e != nil && e.gen == c.gen && e.writing == 0 {
			ev = e.report(now, deleted)
		}
		t.mu.Unlock()
		if ev == nil {
			continue
		}
		ev.EventBase = fs.base(ctx, c.rel)
		if err := fs.emit(ctx, ev); err != nil {
			return err
		}
	}
	return nil
}

// hashNow hashes what rel holds now. deleted says no regular file is there
// any more; ok is false when that cannot be told (a file it may not read).
func (fs *FS) hashNow(rel string) (hash string, deleted, ok bool) {
	f, err := fs.dir.OpenReader(rel)
	switch {
	case errors.Is(err, syscall.ENOENT), errors.Is(err, syscall.ENOTDIR), errors.Is(err, syscall.EISDIR),
		errors.Is(err, syscall.ELOOP), errors.Is(err, sandbox.ErrNotRegular):
		return "", true, true
	case err != nil:
		return "", false, false
	}
	defer f.Close()
	hash, err = hashRest(nil, f)
	return hash, false, err == nil
}

// report returns the event for the file now holding now (or deleted), or nil
// when that is what the agent saw or was already reported.
func (e *seenFile) report(now string, deleted bool) *ExternalChangeEvent {
	state := now
	if deleted {
		state = deletedState
	}
	switch {
	case !deleted && now == e.hash:
		e.reported = "" // back to what the agent saw
		return nil
	case state == e.reported:
		return nil
	}
	e.reported = state
	return &ExternalChangeEvent{PreviousHash: e.hash, CurrentHash: now, Deleted: deleted}
}

// The remembered hashes.

func (t *changeTracker) rememberLocked(rel, hash string, known bool) {
	e := t.seen[rel]
	if e == nil {
		e = &seenFile{}
		t.addLocked(rel, e)
	}
	t.tick++
	e.known = known || (e.known && e.hash == hash)
	e.hash, e.reported, e.used = hash, "", t.tick
}

func (t *changeTracker) addLocked(rel string, e *seenFile) {
	if len(t.seen) >= t.seenLimit {
		t.evictLocked()
	}
	t.tick++
	e.used = t.tick
	t.seen[rel] = e
}

// evictLocked forgets the least recently seen quarter of the files not
// being written.
func (t *changeTracker) evictLocked() {
	type aged struct {
		rel  string
		used uint64
	}
	var all []aged
	for rel, e := range t.seen {
		if e.writing == 0 {
			all = append(all, aged{rel, e.used})
		}
	}
	slices.SortFunc(all, func(a, b aged) int { return cmp.Compare(a.used, b.used) })
	for _, a := range all[:min(len(all), len(t.seen)/4+1)] {
		delete(t.seen, a.rel)
		delete(t.dirty, a.rel)
	}
}

// The tracker's watches.

// startLocked gets the FileSystem's share of the process's watcher on first
// use and reports whether there is one. When none can be made (the user's
// inotify instances are used up, say) the write-time check alone protects.
func (t *changeTracker) startLocked() bool {
	if !t.tried {
		t.tried = true
		w, err := newWatcher(&t.queue)
		if err != nil {
			return false
		}
		t.w = w
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
	if _, ok := t.dirs[rel]; ok || len(t.dirs) >= t.limit {
		return
	}
	if auto {
		_, name := sandbox.Split(rel)
		if t.auto >= t.limit/2 || strings.HasPrefix(name, ".") || t.fs.checkWalkRoot(rel) != nil {
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
		t.dirs[rel] = &watchedDir{sub: sub, auto: auto}
		t.subs[sub] = rel
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
		delete(t.subs, d.sub)
		t.w.remove(d.sub)
	}
}

// handle applies the queued events until the queue is closed.
func (t *changeTracker) handle() {
	for range t.queue.kick {
		events, lost := t.queue.take()
		t.mu.Lock()
		if !t.closed {
			if lost {
				for rel := range t.seen {
					t.dirty[rel] = struct{}{}
				}
			}
			for _, ev := range events {
				t.applyLocked(ev)
			}
		}
		t.mu.Unlock()
	}
}

// applyLocked takes one event into account: a remembered file touched is
// dirty; a watched directory gone is unwatched; a directory that appeared
// is watched. Events of a watch dropped since are ignored.
func (t *changeTracker) applyLocked(ev dirEvent) {
	dir, ok := t.subs[ev.dir]
	if !ok {
		return
	}
	gone := ev.op&opGone != 0
	if ev.name == "" { // the directory itself, gone
		t.unwatchLocked(dir)
		return
	}
	rel := sandbox.Join(dir, ev.name)
	if _, ok := t.seen[rel]; ok {
		t.dirty[rel] = struct{}{}
	}
	switch {
	case gone:
		t.unwatchLocked(rel)
	case ev.op&opCreate != 0:
		// Whatever was watched under this name is not what is there now.
		auto := true
		if d, ok := t.dirs[rel]; ok {
			auto = d.auto
			t.unwatchLocked(rel)
		}
		t.watchLocked(rel, auto)
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
	clear(t.subs)
	clear(t.seen)
	clear(t.dirty)
	t.auto = 0
	t.mu.Unlock()
	t.queue.close()
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

// dirID identifies a directory: by device and inode on Linux, by path
// elsewhere (see the top of this file).
type dirID struct {
	dev, ino uint64
	path     string
}

// pathTarget watches the directory rel under its real path, where no
// descriptor can be named instead (see the top of this file).
func (fs *FS) pathTarget(rel string) (watchTarget, error) {
	st, err := fs.root.Lstat(rel)
	if err != nil {
		return watchTarget{}, err
	}
	if !st.IsDir() {
		return watchTarget{}, syscall.ENOTDIR
	}
	path := fs.rootDir
	if rel != "." {
		path = filepath.Join(fs.rootDir, filepath.FromSlash(rel))
	}
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

// eventQueue hands events from the watcher to the tracker's goroutine.
type eventQueue struct {
	mu     sync.Mutex
	events []dirEvent
	lost   bool
	closed bool
	kick   chan struct{} // capacity 1: something is queued; closed with the queue
}

func (q *eventQueue) push(ev dirEvent) {
	q.mu.Lock()
	defer q.mu.Unlock()
	switch {
	case q.closed:
		return
	case len(q.events) < maxQueuedEvents:
		q.events = append(q.events, ev)
	default:
		q.lost = true
	}
	q.signalLocked()
}

// lose records that events were lost.
func (q *eventQueue) lose() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.lost = true
	q.signalLocked()
}

func (q *eventQueue) signalLocked() {
	if q.closed {
		return
	}
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

// close ends the handling goroutine's loop.
func (q *eventQueue) close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.closed {
		q.closed = true
		close(q.kick)
	}
}

// The process's watcher (see the top of this file).

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

func newWatcher(q *eventQueue) (*watcher, error) {
	h, err := sharedHub()
	if err != nil {
		return nil, err
	}
	return &watcher{hub: h, q: q, subs: map[*dirWatch]struct{}{}}, nil
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
		_ = h.fsw.Remove(tg.path)
		err = errWatchMoved
	}
	if err != nil {
		h.mu.Lock()
		delete(w.subs, sub)
		h.dropLocked(s)
		h.mu.Unlock()
		tg.release()
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

// failed takes an error of fsnotify's into account: when the kernel's queue
// overflowed, every subscriber is told events were lost and re-checks what
// its FileSystem remembers. Anything else loses nothing the write-time check
// would miss.
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
