package sandbox

import (
	"crypto/rand"
	"encoding/hex"
	"io"
	"strings"
	"sync"
)

// An atomic replacement (Dir.Replace): the new content goes to a temporary
// file beside the target, made through the directory's descriptor with
// O_EXCL, which is synced and then renamed over the target. A reader sees the
// old content or the new, never a part; a failure at any point (a full disk,
// a kill) leaves the old content byte-identical, and the temporary file is
// removed (or, after a kill, by the next replacement in that directory).
//
// Everything from the look at the target (Expect) to the rename happens
// under the file's lock: this process's lock of that file and, on unix, an
// flock on the directory, which other agentspec processes take too, so that
// no check-then-write of one writer interleaves with another's.

// Expect is what Replace requires of the file it replaces, looked at under
// the file's lock before anything is written.
type Expect struct {
	// Create lets Replace make a file that is not there; without it a
	// missing file fails with ENOENT.
	Create bool
	// Absent says no file is expected: with Create the target is not looked
	// at first, the rename that publishes the new file refusing one that is
	// there, at the moment that counts.
	Absent bool
	// Check, when set, reads the content of the file that is there (r) and
	// says whether it may be replaced: its error stops the replacement and
	// is returned as it is. With Check, a file that was absent is published
	// without replacing one that appeared meanwhile; Check is then called
	// on what appeared with appeared true (r nil when it could not be
	// read), and must return an error.
	Check func(r io.Reader, appeared bool) error
	// Soft replaces a file the process may not read without calling Check.
	Soft bool
}

// WriteError is a failure of Replace after the look at the target: while
// writing the temporary file or renaming it over the target.
type WriteError struct{ Err error }

func (e WriteError) Error() string { return e.Err.Error() }
func (e WriteError) Unwrap() error { return e.Err }

// keyedMutex is one file's lock, shared by every FileSystem of the process
// that writes that file, whatever root it reaches it from.
type keyedMutex struct {
	mu   sync.Mutex
	key  string
	refs int // guarded by keyedMutexes.mu
}

type keyedMutexes struct {
	mu sync.Mutex
	m  map[string]*keyedMutex
}

// fileLocks holds the locks of the files being written, keyed by the
// directory's device and inode and the file's name.
var fileLocks = keyedMutexes{m: map[string]*keyedMutex{}}

func (k *keyedMutexes) lock(key string) *keyedMutex {
	k.mu.Lock()
	m := k.m[key]
	if m == nil {
		m = &keyedMutex{key: key}
		k.m[key] = m
	}
	m.refs++
	k.mu.Unlock()
	m.mu.Lock()
	return m
}

// Unlock releases the lock fileLocks.lock took.
func (m *keyedMutex) Unlock() {
	m.mu.Unlock()
	fileLocks.mu.Lock()
	if m.refs--; m.refs == 0 {
		delete(fileLocks.m, m.key)
	}
	fileLocks.mu.Unlock()
}

// sweptDirs remembers the directories whose stray temporary files this
// process has removed, so each is read for them once.
var sweptDirs = onceSet{m: map[string]struct{}{}}

// sweptDirsMax bounds sweptDirs; past it the set starts again, which costs
// another sweep of a directory, never a missed one.
const sweptDirsMax = 1 << 16

type onceSet struct {
	mu sync.Mutex
	m  map[string]struct{}
}

// first reports whether key is new to the set, adding it.
func (s *onceSet) first(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.m[key]; ok {
		return false
	}
	if len(s.m) >= sweptDirsMax {
		clear(s.m)
	}
	s.m[key] = struct{}{}
	return true
}

// TempPrefix starts the name of every temporary file a write makes. It is a
// dot name, so no walker lists it, and tools refuse to make a file that
// starts with it (see filesystem's checkNewName), so a sweep never removes a
// file the model made.
const TempPrefix = ".agentspec-tmp."

// tempName is a fresh random temporary file name.
func tempName() string {
	var b [8]byte
	rand.Read(b[:])
	return TempPrefix + hex.EncodeToString(b[:])
}

// IsTempName reports whether name is one tempName made.
func IsTempName(name string) bool { return strings.HasPrefix(name, TempPrefix) }
