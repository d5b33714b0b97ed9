//go:build !linux

package filesystem

import (
	"errors"

	"github.com/fsnotify/fsnotify"
)

// watchTarget names the directory rel for fsnotify by its real path.
func (fs *FS) watchTarget(rel string) (watchTarget, error) { return fs.pathTarget(rel) }

// fsnotifyWatcher is a FileSystem's own fsnotify watcher.
type fsnotifyWatcher struct {
	w       *fsnotify.Watcher
	drained chan struct{}
}

func newWatcher(q *eventQueue) (watcher, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	fw := &fsnotifyWatcher{w: w, drained: make(chan struct{})}
	go fw.drain(q)
	return fw, nil
}

func (fw *fsnotifyWatcher) add(key string) error { return fw.w.Add(key) }
func (fw *fsnotifyWatcher) remove(key string)    { _ = fw.w.Remove(key) } // fails when fsnotify already dropped it
func (fw *fsnotifyWatcher) list() []string       { return fw.w.WatchList() }

func (fw *fsnotifyWatcher) close() {
	_ = fw.w.Close() // removes every watch with the watcher's descriptors
	<-fw.drained
}

// drain moves what fsnotify reports to the queue. fsnotify's reading
// goroutine holds its lock while it hands some errors over, so this one never
// waits on anything but the queue.
func (fw *fsnotifyWatcher) drain(q *eventQueue) {
	defer close(fw.drained)
	for {
		select {
		case ev, ok := <-fw.w.Events:
			if !ok {
				return
			}
			var op dirOp
			if ev.Has(fsnotify.Create) {
				op |= opCreate
			}
			if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
				op |= opGone
			}
			if ev.Has(fsnotify.Write) {
				op |= opWrite
			}
			if op != 0 { // Chmod alone is metadata: the content is the same
				q.push(dirEvent{name: ev.Name, op: op})
			}
		case err, ok := <-fw.w.Errors:
			if !ok {
				return
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				q.lose()
			}
			// Anything else loses nothing the write-time check would miss.
		}
	}
}
