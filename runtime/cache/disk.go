package cache

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The layout of a cache directory:
//
//	CACHEDIR.TAG               the marker; Stats and Clear need it
//	entries/0.log … f.log      the entries, by their key's first digit (see log.go)
//	entries/.tmp-*             a log being rewritten without corrupt records
//	entries/ab/ab12...ef.json  an entry as earlier versions wrote them, one file
//	entries/ab/.tmp-*          each, sharded on the first two digits: still
//	                           read, counted and cleared, never written
const (
	markerName = "CACHEDIR.TAG"
	entriesDir = "entries"
	tempPrefix = ".tmp-"
)

// marker follows the Cache Directory Tagging Specification; the second line
// says whose cache it is, and isMarker checks for it.
const marker = "Signature: 8a477f597d28d172789f06886806bc55\n" +
	"# This file is a cache directory tag created by agentspec.\n" +
	"# For information about cache directory tags, see:\n" +
	"#\thttps://bford.info/cachedir/\n"

// entryPath is where earlier versions filed the entry of key.
func (c *Cache) entryPath(key string) string {
	return filepath.Join(c.dir, entriesDir, key[:2], key+".json")
}

// write appends data, an entry's JSON, to the log of key (see
// appendRecord).
//
// Nothing is synced. An entry is a cache, not user data: what a crash can do
// to a record written without fsync is leave it absent, cut short or with
// zeroed blocks, and each of those fails the record's CRC, which Lookup
// reports as a warning, removes and treats as a miss: the run happens again,
// never a wrong answer. A batch fills the cache one entry per job, and an
// fsync per entry made filling it cost nearly twice an uncached batch.
func (c *Cache) write(ctx context.Context, key string, data []byte) error {
	if c.backend != nil {
		return c.backend.Put(ctx, key, append(data, '\n'))
	}
	dir := filepath.Join(c.dir, entriesDir)
	made := c.logs.made.Load()
	if !made {
		if err := c.makeEntries(dir); err != nil {
			return err
		}
	}
	st := &c.logs.logs[logOf(logName(key))]
	st.writing.RLock()
	defer st.writing.RUnlock()
	err := appendRecord(dir, key, data)
	if made && errors.Is(err, fs.ErrNotExist) {
		// The directory was removed since it was made: the whole cache
		// directory deleted, say.
		if err := c.makeEntries(dir); err != nil {
			return err
		}
		err = appendRecord(dir, key, data)
	}
	return err
}

// makeEntries creates the marker and the entries directory if need be, and
// remembers that they exist, so that writing an entry does not look for them
// every time: a batch writes one entry per job, and those looks cost as much
// as the write. What it remembers is never relied on: a write into a
// directory removed since fails as not existing, and write makes it again.
// Measured with BenchmarkBatchCacheFill (runtime, 1000 jobs at -j 8,
// -benchtime 5x, two interleaved runs each) when entries were a file each:
// filling the cache cost 1.52 and 1.67 times an uncached batch with the
// memo, 2.78 and 2.25 without.
func (c *Cache) makeEntries(dir string) error {
	if err := c.ensureMarker(); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	c.logs.made.Store(true)
	return nil
}

// ensureMarker creates the directory and its marker if need be. It marks
// only a directory that is new, empty or holds nothing but the cache's own
// files (another writer's, marking it at the same time): the marker tells
// backup tools (tar --exclude-caches, borg, restic) to skip the whole
// directory, so in a directory of other files it would hide them from every
// backup. A directory that holds other files but no marker is ErrNotCache,
// as for Stats and Clear.
func (c *Cache) ensureMarker() error {
	ok, err := c.owned()
	if ok || err != nil && !errors.Is(err, ErrNotCache) {
		return err
	}
	if err != nil && !c.onlyOwnFiles() {
		if ok, _ := c.owned(); ok {
			return nil // marked meanwhile
		}
		return fmt.Errorf("%w: a cache is kept only in a new or empty directory, "+
			"since its marker tells backup tools to skip everything in it", err)
	}
	if err := os.MkdirAll(c.dir, 0o700); err != nil {
		return err
	}
	return writeAtomic(filepath.Join(c.dir, markerName), []byte(marker), true)
}

// onlyOwnFiles reports whether the cache's directory holds nothing but
// files a cache writes before its marker is in place: the entries
// directory and temporary files.
func (c *Cache) onlyOwnFiles() bool {
	names, err := os.ReadDir(c.dir)
	if err != nil {
		return false
	}
	for _, n := range names {
		if n.Name() != entriesDir && !strings.HasPrefix(n.Name(), tempPrefix) {
			return false
		}
	}
	return true
}

// writeAtomic replaces path with data through a temporary file renamed over
// it. With durable, the temporary file is synced before the rename and the
// rename after it, so that after a crash path holds the old data or the new;
// without, a crash may leave path torn, which only a reader that detects
// that (as decode does for entries) may accept.
func writeAtomic(path string, data []byte, durable bool) (err error) {
	dir, name := filepath.Split(path)
	f, err := os.CreateTemp(dir, tempPrefix+name+"-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err = f.Write(data); err != nil {
		return err
	}
	if durable {
		if err = f.Sync(); err != nil {
			return err
		}
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return err
	}
	if durable {
		syncDir(dir)
	}
	return nil
}

// syncDir makes a rename in dir durable where the platform allows it; where it
// does not (Windows), the rename is still atomic, so the error is dropped.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}

// Stats describes what a cache holds.
type Stats struct {
	Dir     string `json:"dir"`
	Entries int    `json:"entries"` // readable entries
	// Corrupt counts the records of the logs, and the entry files of the
	// earlier layout, that cannot be read back (including those of another
	// format version, but not a log's last line that may be a record being
	// written, which a lookup passes over too); a lookup
	// in a log rewrites it without those it holds but another version's
	// whole records, which are left for that version, and removes an entry
	// file it meets so; Clear removes them all.
	Corrupt int `json:"corrupt"`
	// Bytes is the size of the logs and entry files, records a later one of
	// the same key replaced included.
	Bytes  int64     `json:"bytes"`
	Oldest time.Time `json:"oldest,omitzero"`
	Newest time.Time `json:"newest,omitzero"`
	// Specs counts the readable entries per spec name ("" for specs without
	// one).
	Specs map[string]int `json:"specs,omitempty"`
}

// Stats reads every entry. A directory that does not exist or is empty is an
// empty cache; any other directory without the cache's marker is ErrNotCache.
func (c *Cache) Stats(ctx context.Context) (Stats, error) {
	st := Stats{Dir: c.dir}
	if ok, err := c.owned(); err != nil || !ok {
		return st, err
	}
	t, err := c.tally(ctx)
	if err != nil {
		return st, err
	}
	st.Entries, st.Corrupt, st.Bytes = len(t.entries), t.corrupt, t.size
	for _, e := range t.entries {
		if st.Oldest.IsZero() || e.Created.Before(st.Oldest) {
			st.Oldest = e.Created
		}
		if e.Created.After(st.Newest) {
			st.Newest = e.Created
		}
		if st.Specs == nil {
			st.Specs = map[string]int{}
		}
		st.Specs[e.SpecName]++
	}
	return st, nil
}

// tally is what a cache holds: its readable entries by key, the records and
// entry files that cannot be read back, and their size.
type tally struct {
	entries map[string]*Entry
	corrupt int
	size    int64
}

// tally reads every entry file of the earlier layout, then every log, so
// that a key's record in a log counts over its file, as Lookup reads it.
func (c *Cache) tally(ctx context.Context) (tally, error) {
	t := tally{entries: map[string]*Entry{}}
	err := c.eachFile(ctx, func(p string, d fs.DirEntry, isEntry bool) error {
		if !isEntry {
			return nil
		}
		data, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil // removed meanwhile
		}
		if err != nil {
			return err
		}
		t.size += int64(len(data))
		key := strings.TrimSuffix(d.Name(), ".json")
		if e, err := decode(data, key); err == nil {
			t.entries[key] = e
		} else {
			t.corrupt++
		}
		return nil
	})
	if err != nil {
		return t, err
	}
	size, err := c.eachRecord(ctx, func(key string, data []byte, ok bool) {
		if ok {
			if e, err := decode(data, key); err == nil {
				t.entries[key] = e
				return
			}
		}
		t.corrupt++
	})
	t.size += size
	return t, err
}

// Clear removes every entry, readable or not, and any temporary file left by
// an interrupted write, and returns how many entries and unreadable records
// it removed (Stats' Entries and Corrupt). It removes nothing but the
// cache's own files (the logs, entry files of the earlier layout, temporary
// files beside them) and the shard directories they leave empty, and only
// when the directory holds the cache's marker (else ErrNotCache), so a
// mistaken directory loses nothing. A directory that does not exist or is
// empty is an empty cache.
func (c *Cache) Clear(ctx context.Context) (removed int, err error) {
	if ok, err := c.owned(); err != nil || !ok {
		return 0, err
	}
	t, err := c.tally(ctx)
	if err != nil {
		return 0, err
	}
	root := filepath.Join(c.dir, entriesDir)
	for i := range c.logs.logs {
		p := filepath.Join(root, strconv.FormatUint(uint64(i), 16)+logSuffix)
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return 0, err
		}
		c.logs.logs[i].forget()
	}
	shards := map[string]bool{}
	err = c.eachFile(ctx, func(p string, _ fs.DirEntry, _ bool) error {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		if dir := filepath.Dir(p); dir != root {
			shards[dir] = true
		}
		return nil
	})
	for s := range shards {
		os.Remove(s) // only succeeds when empty, which is the point
	}
	os.Remove(root)
	return len(t.entries) + t.corrupt, err
}

// owned reports whether the directory holds the cache's marker. A directory
// that does not exist, or is empty, is a cache not written yet: not owned,
// but no error either.
func (c *Cache) owned() (bool, error) {
	if c.backend != nil {
		return false, errBackendStats
	}
	data, err := os.ReadFile(filepath.Join(c.dir, markerName))
	if err == nil && isMarker(data) {
		return true, nil
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	names, derr := os.ReadDir(c.dir)
	if errors.Is(derr, fs.ErrNotExist) || derr == nil && len(names) == 0 {
		return false, nil
	}
	return false, fmt.Errorf("%s: %w (no agentspec %s)", c.dir, ErrNotCache, markerName)
}

func isMarker(data []byte) bool {
	first, rest, _ := bytes.Cut(data, []byte("\n"))
	return string(first) == "Signature: 8a477f597d28d172789f06886806bc55" &&
		bytes.Contains(rest, []byte("created by agentspec"))
}

// eachFile calls fn for each file of the cache's own making under entries/
// besides its logs: entry files of the earlier layout (isEntry) and
// temporary files. Nothing else is ever passed, so a stray file, even one in
// a shard directory, is left alone.
func (c *Cache) eachFile(ctx context.Context, fn func(path string, d fs.DirEntry, isEntry bool) error) error {
	root := filepath.Join(c.dir, entriesDir)
	shards, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, s := range shards {
		if s.Type().IsRegular() && strings.HasPrefix(s.Name(), tempPrefix) {
			if err := fn(filepath.Join(root, s.Name()), s, false); err != nil {
				return err
			}
		}
		if !s.IsDir() || !isHex(s.Name(), 2) {
			continue
		}
		dir := filepath.Join(root, s.Name())
		files, err := os.ReadDir(dir)
		if err != nil {
			return err
		}
		for _, f := range files {
			if err := ctx.Err(); err != nil {
				return err
			}
			if !f.Type().IsRegular() {
				continue
			}
			name := f.Name()
			key, isEntry := strings.CutSuffix(name, ".json")
			isEntry = isEntry && isHex(key, 64) && key[:2] == s.Name()
			if !isEntry && !strings.HasPrefix(name, tempPrefix) {
				continue
			}
			if err := fn(filepath.Join(dir, name), f, isEntry); err != nil {
				return err
			}
		}
	}
	return nil
}

// isHex reports whether s is n lower-case hex digits, as keys are written.
func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !hexDigits[s[i]] {
			return false
		}
	}
	return true
}

// hexDigits marks the bytes isHex accepts. Looked up rather than compared
// with '9' and 'f': a key's digits and letters come in no order a branch
// predictor can follow, and the comparisons were four tenths of indexing a
// log (a cache's first lookup reads a sixteenth of its entries).
var hexDigits = func() (t [256]bool) {
	for _, c := range []byte("0123456789abcdef") {
		t[c] = true
	}
	return t
}()
