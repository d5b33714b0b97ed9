package sandbox

import (
	"crypto/rand"
	"encoding/hex"
	"strings"
	"sync"
	"sync/atomic"
)

// What every atomic replacement shares: the process-wide lock of each file,
// the names of temporary files, and the fault-injection points tests use.

// KeyedMutex is one file's lock, shared by every FileSystem of the process
// that writes that file, whatever root it reaches it from.
type KeyedMutex struct {
	mu   sync.Mutex
	key  string
	refs int // guarded by keyedMutexes.mu
}

type keyedMutexes struct {
	mu sync.Mutex
	m  map[string]*KeyedMutex
}

// fileLocks holds the locks of the files being written, keyed by the
// directory's device and inode and the file's name.
var fileLocks = keyedMutexes{m: map[string]*KeyedMutex{}}

// LockKey takes the process-wide lock of key, which names one file: every
// writer of the process that may write that file takes the same key.
func LockKey(key string) *KeyedMutex { return fileLocks.lock(key) }

func (k *keyedMutexes) lock(key string) *KeyedMutex {
	k.mu.Lock()
	m := k.m[key]
	if m == nil {
		m = &KeyedMutex{key: key}
		k.m[key] = m
	}
	m.refs++
	k.mu.Unlock()
	m.mu.Lock()
	return m
}

// Unlock releases the lock LockKey took.
func (m *KeyedMutex) Unlock() {
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

// FirstSweep reports whether the directory key has not been swept for stray
// temporary files by this process yet, and records that it now is.
func FirstSweep(key string) bool { return sweptDirs.first(key) }

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

// TempName is a fresh random temporary file name.
func TempName() string {
	var b [8]byte
	rand.Read(b[:])
	return TempPrefix + hex.EncodeToString(b[:])
}

// IsTempName reports whether name is one TempName made.
func IsTempName(name string) bool { return strings.HasPrefix(name, TempPrefix) }

// Fault-injection points of a replacement, for tests.
const (
	HookWrite        = "write"         // before each chunk is written to the temporary file
	HookBeforeRename = "before-rename" // once the temporary file is complete
)

// faultHook, when set, is called at each point; an error it returns fails the
// replacement there as the OS would.
var faultHook atomic.Pointer[func(point string) error]

// SetFaultHook makes h run at each fault-injection point (nil removes it);
// an error h returns fails the replacement there as the OS would. Tests only.
func SetFaultHook(h func(point string) error) {
	if h == nil {
		faultHook.Store(nil)
		return
	}
	faultHook.Store(&h)
}

// Fault runs the fault hook at point; replacements call it where a real
// failure could happen.
func Fault(point string) error {
	if h := faultHook.Load(); h != nil {
		return (*h)(point)
	}
	return nil
}
