package filesystem

// The process's inotify instance
//
// Every FileSystem of the process watches through one inotify instance, made
// on first use and never closed. Closing an instance that ever held a watch
// makes the kernel wait for an RCU grace period, around 10 ms however few
// watches are left: with an instance per FileSystem every Close would wait
// that long (a batch of short jobs would spend most of its time there), and
// every open FileSystem would count against the user's inotify instances, 128
// by default.
//
// One goroutine reads the instance and hands each event to the queues of
// the watchers subscribed to its watch descriptor, named by each one's key
// for the directory. Two FileSystems watching the same directory get the
// same descriptor from the kernel and share its watch, which is removed when
// the last of them lets go. The kernel does not reuse a watch descriptor (it
// counts up), so an event of a watch already removed matches no subscriber
// and is dropped: once a watcher's close returns it hears of nothing again,
// and no kernel watch is left that only it held. The kernel's queue of
// events (max_queued_events, 16384 by default) is the instance's: when it
// overflows, every watcher is told events were lost and re-checks what its
// FileSystem remembers, as it would with an instance of its own.

import (
	"encoding/binary"
	"errors"
	"os"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// procFDs reports whether /proc/self/fd can name descriptors (procfs is
// mounted).
var procFDs = sync.OnceValue(func() bool {
	_, err := os.Stat("/proc/self/fd")
	return err == nil
})

// watchTarget names the directory rel for inotify by a descriptor the
// no-follow walk reached: inotify follows the /proc/self/fd link to exactly
// that directory, whatever the path leads to by then. The descriptor is held
// until release, so the name stays unique while the watch lives.
func (fs *FS) watchTarget(rel string) (watchTarget, error) {
	if !procFDs() {
		return fs.pathTarget(rel)
	}
	c, err := fs.walk(rel)
	if err != nil {
		return watchTarget{}, err
	}
	defer c.close()
	fd, err := unix.FcntlInt(uintptr(c.at()), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return watchTarget{}, err
	}
	return watchTarget{
		key:     "/proc/self/fd/" + strconv.Itoa(fd),
		release: func() { unix.Close(fd) },
	}, nil
}

// inotifyMask is what a watch reports: entries created, written, removed or
// moved, and the directory itself removed or moved. Metadata changes are
// left out: the content is the same.
const inotifyMask = unix.IN_CREATE | unix.IN_MOVED_TO | unix.IN_MODIFY | unix.IN_DELETE |
	unix.IN_MOVED_FROM | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR

// inotifyHub is the process's inotify instance.
type inotifyHub struct {
	fd   int
	file *os.File // fd, read through the runtime's poller

	mu     sync.Mutex
	subs   map[int32][]inotifySub // by watch descriptor
	broken bool                   // reading failed: no new watcher
}

type inotifySub struct {
	w   *inotifyWatcher
	key string
}

var (
	hubMu sync.Mutex
	hub   *inotifyHub
)

// sharedHub returns the process's inotify instance, making it if need be. A
// failure (the user's instances used up, say) is not remembered: the next
// FileSystem tries again.
func sharedHub() (*inotifyHub, error) {
	hubMu.Lock()
	defer hubMu.Unlock()
	if hub == nil {
		fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
		if err != nil {
			return nil, os.NewSyscallError("inotify_init1", err)
		}
		hub = &inotifyHub{fd: fd, file: os.NewFile(uintptr(fd), "inotify"), subs: map[int32][]inotifySub{}}
		go hub.read()
	}
	return hub, nil
}

// inotifyWatcher is one FileSystem's share of the hub.
type inotifyWatcher struct {
	hub *inotifyHub
	q   *eventQueue
	wds map[string]int32 // key -> watch descriptor; guarded by hub.mu
}

func newWatcher(q *eventQueue) (watcher, error) {
	h, err := sharedHub()
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.broken {
		return nil, errHubBroken
	}
	return &inotifyWatcher{hub: h, q: q, wds: map[string]int32{}}, nil
}

var errHubBroken = errors.New("reading the inotify instance failed")

func (w *inotifyWatcher) add(key string) error {
	h := w.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := w.wds[key]; ok {
		return nil
	}
	wd, err := unix.InotifyAddWatch(h.fd, key, inotifyMask)
	if err != nil {
		return os.NewSyscallError("inotify_add_watch", err)
	}
	w.wds[key] = int32(wd)
	h.subs[int32(wd)] = append(h.subs[int32(wd)], inotifySub{w, key})
	return nil
}

func (w *inotifyWatcher) remove(key string) {
	h := w.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	w.removeLocked(key)
}

// removeLocked drops the subscription of key and, with the last one of its
// descriptor, the kernel's watch.
func (w *inotifyWatcher) removeLocked(key string) {
	h := w.hub
	wd, ok := w.wds[key]
	if !ok {
		return
	}
	delete(w.wds, key)
	subs := h.subs[wd]
	for i, s := range subs {
		if s.w == w && s.key == key {
			subs = append(subs[:i], subs[i+1:]...)
			break
		}
	}
	if len(subs) > 0 {
		h.subs[wd] = subs
		return
	}
	delete(h.subs, wd)
	// EINVAL when the kernel already dropped it (the directory is gone).
	_, _ = unix.InotifyRmWatch(h.fd, uint32(wd))
}

func (w *inotifyWatcher) list() []string {
	w.hub.mu.Lock()
	defer w.hub.mu.Unlock()
	keys := make([]string, 0, len(w.wds))
	for key := range w.wds {
		keys = append(keys, key)
	}
	return keys
}

func (w *inotifyWatcher) close() {
	h := w.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	for key := range w.wds {
		w.removeLocked(key)
	}
}

// read hands out what the kernel reports, for the life of the process.
func (h *inotifyHub) read() {
	// Room for at least 4096 events with a name of up to NAME_MAX bytes
	// would be 1 MiB; events with names are rarely that long, and a read
	// takes as many whole events as fit.
	buf := make([]byte, 64<<10)
	for {
		n, err := h.file.Read(buf)
		if err != nil {
			h.fail()
			return
		}
		h.dispatch(buf[:n])
	}
}

// dispatch hands out the events in buf, whole struct inotify_event records.
func (h *inotifyHub) dispatch(buf []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for len(buf) >= unix.SizeofInotifyEvent {
		wd := int32(binary.NativeEndian.Uint32(buf[0:]))
		mask := binary.NativeEndian.Uint32(buf[4:])
		size := unix.SizeofInotifyEvent + int(binary.NativeEndian.Uint32(buf[12:]))
		name := cString(buf[unix.SizeofInotifyEvent:min(size, len(buf))])
		buf = buf[min(size, len(buf)):]

		if mask&unix.IN_Q_OVERFLOW != 0 {
			for _, subs := range h.subs {
				for _, s := range subs {
					s.w.q.lose()
				}
			}
			continue
		}
		subs := h.subs[wd]
		if mask&unix.IN_IGNORED != 0 {
			// The kernel dropped the watch: its directory is gone (reported
			// just before) or its filesystem unmounted.
			for _, s := range subs {
				delete(s.w.wds, s.key)
			}
			delete(h.subs, wd)
			continue
		}
		op := inotifyOp(mask)
		if op == 0 {
			continue
		}
		for _, s := range subs {
			evName := s.key
			if name != "" {
				evName += "/" + name
			}
			s.w.q.push(dirEvent{name: evName, op: op})
		}
	}
}

// fail gives up on the instance after a failed read, which inotify does not
// produce in practice: every subscriber is told that events were lost, and no
// new watcher is made, so the write-time check alone protects.
func (h *inotifyHub) fail() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.broken = true
	for _, subs := range h.subs {
		for _, s := range subs {
			s.w.q.lose()
		}
	}
}

func inotifyOp(mask uint32) dirOp {
	var op dirOp
	if mask&(unix.IN_CREATE|unix.IN_MOVED_TO) != 0 {
		op |= opCreate
	}
	if mask&(unix.IN_DELETE|unix.IN_DELETE_SELF|unix.IN_MOVED_FROM|unix.IN_MOVE_SELF) != 0 {
		op |= opGone
	}
	if mask&unix.IN_MODIFY != 0 {
		op |= opWrite
	}
	return op
}

// cString returns the NUL-padded name of an inotify event.
func cString(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}
