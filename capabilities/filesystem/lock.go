package filesystem

import (
	"crypto/rand"
	"encoding/hex"
	"strings"
	"sync"
	"sync/atomic"
)

// What every atomic replacement shares: the process-wide lock of each file,
// the names of temporary files, and the fault-injection points tests use.

// keyedMutex is one file's lock, shared by every FileSystem of the process
// that writes that file, whatever root it reaches it from.
type keyedMutex struct {
	sync.Mutex
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
	m.Lock()
	return m
}

func (m *keyedMutex) unlock() {
	m.Unlock()
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

// tempPrefix starts the name of every temporary file a write makes. It is a
// dot name, so no walker lists it, and tools refuse to make a file that
// starts with it (see checkNewName), so a sweep never removes a file the
// model made.
const tempPrefix = ".agentspec-tmp."

func tempName() string {
	var b [8]byte
	rand.Read(b[:])
	return tempPrefix + hex.EncodeToString(b[:])
}

func isTempName(name string) bool { return strings.HasPrefix(name, tempPrefix) }

// Fault-injection points of a replacement, for tests.
const (
	hookWrite        = "write"         // before each chunk is written to the temporary file
	hookBeforeRename = "before-rename" // once the temporary file is complete
)

// faultHook, when set, is called at each point; an error it returns fails the
// replacement there as the OS would.
var faultHook atomic.Pointer[func(point string) error]

func testHook(point string) error {
	if h := faultHook.Load(); h != nil {
		return (*h)(point)
	}
	return nil
}
