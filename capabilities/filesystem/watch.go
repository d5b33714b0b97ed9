package filesystem

// Files changed on disk by someone else: what the agent last saw
//
// A file the agent read can be changed by another process (an editor, a
// build, another agent) before the agent writes it back. The reference only
// protects a write whose model remembered to pass expected_hash; a FileSystem
// protects every one, unless Options.WatchChanges is false. The protection is
// the write-time hash check of this file; the watcher (watch_dirs.go, on the
// process's hub of watch_hub.go) only makes the event timely.
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
// Options.RequireReadBeforeWrite, which does not depend on WatchChanges,
// refuses to change an existing file whose content the agent has neither read
// nor written, unless the call gives expected_hash, which the file must then
// match.

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/internal/sandbox"
)

const (
	// maxSeenFiles bounds the remembered hashes (evictLocked); a file
	// forgotten is written as if unseen.
	maxSeenFiles = 1 << 16
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
	auto  int                    // dirs with auto set

	queue eventQueue
	wg    sync.WaitGroup // the goroutine handling the queue
}

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
		queue:     eventQueue{kick: make(chan struct{}, 1)},
	}
}

// saw records that the agent was shown the hash (and, when known, the
// content) of the file rel, and watches its directory.
func (fs *FS) saw(rel, hash string, known bool) {
	t := fs.changes
	if !t.tracking {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.closed {
		t.sawLocked(rel, hash, known)
	}
}

// watchDir watches the directory rel, which the agent listed.
func (fs *FS) watchDir(rel string) {
	t := fs.changes
	if !t.protect {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.closed {
		t.watchLocked(rel, false)
	}
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

// writeTracked is writeThrough with the file marked in flight while it runs
// (see the top), and what it wrote remembered once landed. It returns the
// hash of what it wrote.
func (fs *FS) writeTracked(path, rel string, data []byte, g guard, create bool) (string, error) {
	hash := contentHash(data)
	t := fs.changes
	if !t.tracking {
		return hash, fs.writeThrough(path, rel, data, g, create)
	}
	t.mu.Lock()
	e := t.entryLocked(rel)
	e.writing++
	e.gen++
	t.mu.Unlock()

	err := fs.writeThrough(path, rel, data, g, create)

	t.mu.Lock()
	defer t.mu.Unlock()
	e.writing--
	switch {
	case t.closed:
	case err == nil:
		t.sawLocked(rel, hash, true)
	case e.hash == "" && e.writing == 0 && t.seen[rel] == e:
		delete(t.seen, rel) // a new file that was not written after all
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
	return capabilities.Refuse(capabilities.RefusedConflict, "Conflict: file %s was changed on disk since you last read it (read hash:%s, now hash:%s). "+
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
	emitting := capabilities.Emitting(ctx)
	t.mu.Lock()
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

// sawLocked remembers the hash (and, when known, the content) of rel as
// what the agent saw, and watches its directory.
func (t *changeTracker) sawLocked(rel, hash string, known bool) {
	e := t.entryLocked(rel)
	t.tick++
	e.known = known || (e.known && e.hash == hash)
	e.hash, e.reported, e.used = hash, "", t.tick
	dir, _ := sandbox.Split(rel)
	t.watchLocked(dir, false)
}

// entryLocked returns what is remembered of rel, adding it, as just seen,
// if need be. A file already remembered is not seen again by this alone: a
// write that fails showed the agent nothing.
func (t *changeTracker) entryLocked(rel string) *seenFile {
	e := t.seen[rel]
	if e == nil {
		if len(t.seen) >= t.seenLimit {
			t.evictLocked()
		}
		t.tick++
		e = &seenFile{used: t.tick}
		t.seen[rel] = e
	}
	return e
}

// evictLocked forgets the least recently seen quarter of the files not
// being written.
func (t *changeTracker) evictLocked() {
	var rels []string
	for rel, e := range t.seen {
		if e.writing == 0 {
			rels = append(rels, rel)
		}
	}
	slices.SortFunc(rels, func(a, b string) int { return cmp.Compare(t.seen[a].used, t.seen[b].used) })
	for _, rel := range rels[:min(len(rels), len(t.seen)/4+1)] {
		delete(t.seen, rel)
		delete(t.dirty, rel)
	}
}
