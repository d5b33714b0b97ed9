package walk

import (
	"bytes"
	"cmp"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The tracker keeps one inotify instance for the process, never closed
// (closing one waits for an RCU grace period, about 10 ms), and reads it
// without blocking, under its lock, before it answers whether a directory
// changed. The kernel queues an event inside the system call that makes the
// change, before that call returns, so every change that happened before a
// lookup is read by that lookup: a stamp is never current for a directory
// that changed before it was asked about.
//
// A directory is watched for its names (created, deleted, moved) and its
// attributes; each regular file whose size a listing showed is watched on
// its own inode, so a write through a hard link elsewhere is seen too (the
// directory's watch hears only of changes made through its own names).
//
// It is process-wide so that a directory's watches outlive the FileSystem
// that set them, at no cost per FileSystem. Its gain, measured with
// BenchmarkListDirectory (capabilities/filesystem, 120 files and 12
// directories): 11 us a listing against 513 us without it.
var tracker trackerState

type trackerState struct {
	mu      sync.Mutex
	fd      int // the inotify descriptor; 0 before the first use, -1 when none
	dirs    map[fileID]*trackedDir
	watches map[int32][]*trackedDir // watch descriptor → the directories it informs
	limit   int                     // most watches held at once
	version uint64                  // the last version handed out
	buf     []byte
}

type fileID struct{ dev, ino uint64 }

// trackedDir is a watched directory: version changes whenever anything a
// listing of it shows may have.
type trackedDir struct {
	id      fileID
	wd      int32
	version uint64
	used    uint64           // the tracker's version when last asked about
	files   map[string]int32 // the watched regular files, by name
}

const (
	dirEvents  = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_ATTRIB | unix.IN_DELETE_SELF | unix.IN_ONLYDIR
	fileEvents = unix.IN_MODIFY | unix.IN_DONT_FOLLOW
)

// localFS lists the file systems whose every change passes through this
// kernel, which is what makes inotify complete: on a network or FUSE file
// system another machine or process may change a file without an event.
var localFS = map[uint32]bool{
	0xEF53:     true, // ext2, ext3, ext4
	0x58465342: true, // xfs
	0x9123683E: true, // btrfs
	0x01021994: true, // tmpfs
	0x858458F6: true, // ramfs
	0xF2F52010: true, // f2fs
	0x2FC12FC1: true, // zfs
	0x794C7630: true, // overlayfs
}

// track starts tracking the directory sys and returns it with its current
// version, or nil when it cannot be tracked.
func (sys sysDir) track() (*trackedDir, uint64) {
	fd := int(sys)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return nil, 0
	}
	id := fileID{uint64(st.Dev), st.Ino}
	t := &tracker
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.readyLocked() {
		return nil, 0
	}
	t.drainLocked()
	if d := t.dirs[id]; d != nil {
		d.used = t.next()
		return d, d.version
	}
	var sf unix.Statfs_t
	if unix.Fstatfs(fd, &sf) != nil || !localFS[uint32(sf.Type)] {
		return nil, 0
	}
	if len(t.watches) >= t.limit*3/4 {
		t.evictLocked()
	}
	wd, err := unix.InotifyAddWatch(t.fd, fdPath(fd, ""), dirEvents)
	if err != nil {
		return nil, 0
	}
	d := &trackedDir{id: id, wd: int32(wd), version: t.next(), files: map[string]int32{}}
	d.used = d.version
	t.dirs[id] = d
	t.own(int32(wd), d)
	return d, d.version
}

// watchFile watches the regular file name in d for td, unless it is watched
// already. false means it cannot be.
func (d sysDir) watchFile(td *trackedDir, name string) bool {
	t := &tracker
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.dirs[td.id] != td {
		return false // dropped since the walk began
	}
	if _, ok := td.files[name]; ok {
		return true
	}
	if len(t.watches) >= t.limit {
		t.evictLocked() // td, asked about last, goes last
		if t.dirs[td.id] != td {
			return false
		}
	}
	wd, err := unix.InotifyAddWatch(t.fd, fdPath(int(d), name), fileEvents)
	if err != nil {
		return false
	}
	td.files[name] = int32(wd)
	t.own(int32(wd), td)
	return true
}

func fdPath(fd int, name string) string {
	p := "/proc/self/fd/" + strconv.Itoa(fd)
	if name != "" {
		p += "/" + name
	}
	return p
}

func (t *trackerState) readyLocked() bool {
	if t.fd == 0 {
		t.fd = -1
		if fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC); err == nil {
			t.fd = fd
			t.dirs = map[fileID]*trackedDir{}
			t.watches = map[int32][]*trackedDir{}
			t.limit = watchLimit()
			t.buf = make([]byte, 16<<10)
		}
	}
	return t.fd >= 0
}

// watchLimit is how many watches the tracker holds at most: an eighth of
// the user's inotify watches (which editors and the stale-write watcher
// need too), and no more than 8192.
func watchLimit() int {
	b, err := os.ReadFile("/proc/sys/fs/inotify/max_user_watches")
	if err != nil {
		return 1024
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n <= 0 {
		return 1024
	}
	return min(n/8, 8192)
}

func (t *trackerState) next() uint64 { t.version++; return t.version }

func (t *trackerState) own(wd int32, d *trackedDir) {
	if !slices.Contains(t.watches[wd], d) {
		t.watches[wd] = append(t.watches[wd], d)
	}
}

// disown stops wd informing d, and removes the watch when it informs no
// directory any more.
func (t *trackerState) disown(wd int32, d *trackedDir) {
	owners := t.watches[wd]
	if i := slices.Index(owners, d); i >= 0 {
		owners = append(owners[:i:i], owners[i+1:]...)
	}
	if len(owners) > 0 {
		t.watches[wd] = owners
		return
	}
	delete(t.watches, wd)
	unix.InotifyRmWatch(t.fd, uint32(wd))
}

// drop stops tracking d and its files; its own watch the caller removes
// (disown), unless the kernel has (IN_IGNORED).
func (t *trackerState) drop(d *trackedDir) {
	for _, wd := range d.files {
		t.disown(wd, d)
	}
	delete(t.dirs, d.id)
}

// forget stops watching the file d's name stood for, unless another of
// d's names is a hard link to it.
func (t *trackerState) forget(d *trackedDir, name string) {
	wd, ok := d.files[name]
	if !ok {
		return
	}
	delete(d.files, name)
	for _, other := range d.files {
		if other == wd {
			return
		}
	}
	t.disown(wd, d)
}

// evictLocked stops tracking the directories asked about longest ago, until
// at most half the watches are in use.
func (t *trackerState) evictLocked() {
	dirs := slices.SortedFunc(maps.Values(t.dirs), func(a, b *trackedDir) int { return cmp.Compare(a.used, b.used) })
	for _, d := range dirs {
		if len(t.watches) <= t.limit/2 {
			return
		}
		t.drop(d)
		t.disown(d.wd, d)
	}
}

// drainLocked reads every queued event and moves on the version of each
// directory one informs.
func (t *trackerState) drainLocked() {
	for {
		n, err := unix.Read(t.fd, t.buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n <= 0 {
			return // EAGAIN: nothing queued
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&t.buf[off]))
			// The name, if any, is padded with NULs.
			name := t.buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)]
			off += unix.SizeofInotifyEvent + int(ev.Len)
			t.event(ev.Wd, ev.Mask, string(bytes.TrimRight(name, "\x00")))
		}
	}
}

func (t *trackerState) event(wd int32, mask uint32, name string) {
	if mask&unix.IN_Q_OVERFLOW != 0 {
		// Events were lost, those that said which watches still stand
		// for which names among them: start again from nothing.
		for _, d := range t.dirs {
			t.drop(d)
			t.disown(d.wd, d)
		}
		return
	}
	gone := mask&unix.IN_IGNORED != 0
	for _, d := range append([]*trackedDir(nil), t.watches[wd]...) {
		d.version = t.next()
		switch {
		case d.wd == wd && gone:
			t.drop(d)
		case d.wd == wd && name != "":
			t.forget(d, name)
		case gone:
			for n, fwd := range d.files {
				if fwd == wd {
					delete(d.files, n)
				}
			}
		}
	}
	if gone {
		delete(t.watches, wd)
	}
}
