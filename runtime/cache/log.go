package cache

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
)

// Entries live in sixteen append-only logs, entries/0.log to entries/f.log,
// by the first hex digit of their key. A record is one line:
//
//	\n<key, 64 hex digits> <CRC-32C of the JSON, 8 hex digits> <the entry's JSON>\n
//
// The line break before a record ends whatever a crash left unfinished
// before it, so a torn record never takes the next one with it; JSON written
// compactly holds no line break of its own. Of several records of one key the
// last whole one is the entry.
//
// A log rather than a file per entry: a batch fills the cache one entry per
// job, and making a file per entry (an inode, a directory entry, a rename)
// while the jobs sync their own files cost more than the rest of the cache's
// work together. Measured with BenchmarkBatchCacheFill (runtime, 1000 jobs
// at -j 8, -benchtime 5x, builds run in turn): filling the cache cost 1.67
// to 1.97 times an uncached batch with a file per entry in 256 directories
// (four runs), 1.30 and 1.38 with 256 logs, and 1.13 and 1.21 with one
// log; with sixteen, 1.18 to 1.33 (four runs, interleaved with a build of a
// file per entry, which gave 1.43 to 1.84). Sixteen keep the logs' files
// few, and a lookup in a large cache to reading a sixteenth of it, once for
// all the runs of a batch (see logIndex).
const (
	logCount  = 16
	logSuffix = ".log"
	keyLen    = 64
	// headLen is the length of a record's line before its JSON.
	headLen = keyLen + 1 + 8 + 1
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func logName(key string) string { return key[:1] + logSuffix }

// logOf returns the log number of a file name in entries/, or -1.
func logOf(name string) int {
	if len(name) != 1+len(logSuffix) || name[1:] != logSuffix || !isHex(name[:1], 1) {
		return -1
	}
	n, _ := strconv.ParseUint(name[:1], 16, 8)
	return int(n)
}

// appendRecord writes one record of data, an entry's compact JSON, under
// key to the log in dir. The record goes in a single write to a file opened
// for appending, so concurrent writers, other processes included, never
// interleave on a local file system; where they might, the CRC finds it.
// It is written under the log's shared lock (see openLog).
func appendRecord(dir, key string, data []byte) error {
	rec := make([]byte, 0, 1+headLen+len(data)+1)
	rec = append(rec, '\n')
	rec = append(rec, key...)
	rec = append(rec, ' ')
	rec = fmt.Appendf(rec, "%08x", crc32.Checksum(data, castagnoli))
	rec = append(rec, ' ')
	rec = append(rec, data...)
	rec = append(rec, '\n')
	f, err := openLog(filepath.Join(dir, logName(key)))
	if err != nil {
		return err
	}
	_, err = f.Write(rec)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// openLog opens the log p for appending, made if need be, under its shared
// lock: a rewrite (compact), which takes the exclusive lock, waits for the
// record to be written, and reads it into the new log. A log rewritten
// between its opening and the lock is the old file, no longer p: the new one
// is opened instead, lest the record be appended to a file already read,
// for up to maxReopens rewrites in a row.
func openLog(p string) (*os.File, error) {
	for try := 0; ; try++ {
		// Open for reading too: NFS takes a flock as a byte-range lock,
		// and refuses a shared one (EBADF) on a file not open for reading.
		f, err := os.OpenFile(p, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return nil, err
		}
		if err := lockLog(f, false); err != nil {
			f.Close()
			return nil, err
		}
		if try == maxReopens || isFile(f, p) {
			return f, nil
		}
		f.Close()
	}
}

// maxReopens is how many rewrites in a row an append waits out before it
// writes to the file it opened all the same. It is there for a file system
// whose file identities never compare equal, where openLog would try for
// ever; rewrites come only with damage found in a log, though ten in a row,
// the bound before, were seen between two caches sharing a log on a starved
// CPU, and the record was lost. (The identity of the file at p cannot tell
// the two apart: a rewrite's new file often takes an inode number an earlier
// one freed.)
const maxReopens = 1000

// isFile reports whether f, which was opened as p, still is the file p
// names.
func isFile(f *os.File, p string) bool {
	fi, err := f.Stat()
	if err != nil {
		return false
	}
	pi, err := os.Stat(p)
	return err == nil && os.SameFile(fi, pi)
}

// parseRecord checks one line of a log (without its line break) and returns
// its key and JSON; ok is false for a line that is not a whole record of
// this format version.
func parseRecord(line []byte) (key string, data []byte, ok bool) {
	k, sum, ok := parseHead(line)
	if !ok || !verify(line[headLen:], sum) {
		return "", nil, false
	}
	return hex.EncodeToString(k[:]), line[headLen:], true
}

// parseHead reads the key and checksum at the start of a record's line.
func parseHead(line []byte) (key [keyLen / 2]byte, sum uint32, ok bool) {
	if len(line) < headLen || line[keyLen] != ' ' || line[headLen-1] != ' ' {
		return key, 0, false
	}
	var s [4]byte
	_, kerr := hex.Decode(key[:], line[:keyLen])
	_, serr := hex.Decode(s[:], line[keyLen+1:headLen-1])
	if kerr != nil || serr != nil || !isHex(string(line[:keyLen]), keyLen) {
		return key, 0, false // upper-case digits decode, but keys are written in lower case
	}
	return key, uint32(s[0])<<24 | uint32(s[1])<<16 | uint32(s[2])<<8 | uint32(s[3]), true
}

// verify reports whether data, a record's JSON, is whole and of this format
// version.
func verify(data []byte, sum uint32) bool {
	return whole(data, sum) && bytes.HasPrefix(data, versionPrefix)
}

// whole reports whether data is as it was written, whatever its version.
func whole(data []byte, sum uint32) bool {
	return crc32.Checksum(data, castagnoli) == sum
}

// otherVersion reports whether line is a whole record of another format
// version: an agentspec of another version sharing the cache wrote it, under
// a key this one never looks up (the version is part of the key). It is left
// alone, not taken for damage.
func otherVersion(line []byte) bool {
	_, sum, ok := parseHead(line)
	return ok && whole(line[headLen:], sum) && !bytes.HasPrefix(line[headLen:], versionPrefix)
}

// versionPrefix is how a record of this format version begins: record
// marshals its version first. A record of another version is bad, as an
// entry file of another version is corrupt.
var versionPrefix = []byte(`{"version":` + strconv.Itoa(ProtocolVersion) + `,`)

// eachLine calls fn for each line of data that ends in a line break, with
// its offset and without the break, and returns the offset after the last.
// A last line without its break is left out: it may be a record being
// written.
func eachLine(data []byte, fn func(off int, line []byte)) int {
	start := 0
	for {
		i := bytes.IndexByte(data[start:], '\n')
		if i < 0 {
			return start
		}
		fn(start, data[start:start+i])
		start += i + 1
	}
}

// scanLog is eachLine over r from offset from to to, read a chunk at a
// time. It returns the offset after the last line passed, and what follows
// it. A line longer than a chunk is gathered in a buffer that doubles as
// it grows, and only what each chunk adds is looked through: copying what
// was gathered for every chunk made reading a record of 16 MiB allocate
// 1.2 GB, and a lookup of one of 32 MiB take seconds.
func scanLog(r io.ReaderAt, from, to int64, fn func(off int64, line []byte)) (end int64, rest []byte, err error) {
	const chunk = 256 << 10
	var buf []byte // buf[:n]: read from offset start, not passed yet
	start, pos, n := from, from, 0
	for pos < to {
		want := int(min(int64(chunk), to-pos))
		if len(buf)-n < want {
			grown := make([]byte, max(2*len(buf), n+want))
			copy(grown, buf[:n])
			buf = grown
		}
		got, err := r.ReadAt(buf[n:n+want], pos)
		pos += int64(got)
		line := 0 // where the line being looked through begins
		for i := n; i < n+got; {
			j := bytes.IndexByte(buf[i:n+got], '\n')
			if j < 0 {
				break
			}
			fn(start+int64(line), buf[line:i+j])
			line, i = i+j+1, i+j+1
		}
		n += got
		if line > 0 {
			n = copy(buf, buf[line:n])
			start += int64(line)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return start, buf[:n], err
		}
	}
	return start, buf[:n], nil
}

// mayBeRecord reports whether b, a log's last line without its line break,
// may be a record still being written: it begins as a record does, as far as
// it goes, and holds no NUL byte, which JSON never does and a crash leaves
// where it extended a file without writing it.
func mayBeRecord(b []byte) bool {
	if bytes.IndexByte(b, 0) >= 0 {
		return false
	}
	for i, ch := range b[:min(len(b), headLen+1)] {
		switch i {
		case keyLen, headLen - 1:
			if ch != ' ' {
				return false
			}
		case headLen:
			if ch != '{' {
				return false
			}
		default:
			if !isHex(string(ch), 1) {
				return false
			}
		}
	}
	return true
}

// logIndex is what a Cache knows of its logs: for each, where in the file
// each key's last whole record lies, up to the offset read so far. A lookup
// reads only what was appended since (a batch's lookups each read the few
// records stored since the last), so the runs that share a Cache (a batch's
// jobs, a pipeline's steps) read each record once. It is shared by the
// views With makes.
type logIndex struct {
	made atomic.Bool // the marker and entries/ were made or found (see makeEntries)
	logs [logCount]logState
}

type logState struct {
	mu   sync.Mutex
	file os.FileInfo // the file indexed, nil for none
	// head is how the file indexed begins, up to its first record's
	// checksum (nhead bytes of it): a log removed (by a Clear) and made
	// again may get the same file id, its inode reused, and grow past end,
	// but does not begin as the old one did, each record's checksum
	// covering the time it was stored.
	head  [headLen + 1]byte
	nhead int
	end   int64 // offset indexed up to
	at    map[[keyLen / 2]byte]span
	bad   int // lines that are not records
	whole int // records indexed, those a later one of their key replaced included

	// writing is held to append to the log, and exclusively to rewrite
	// it, so that no record this process appends is lost in a rewrite.
	writing sync.RWMutex
}

// A log is rewritten without its replaced records once it holds at least
// compactAt records and more than twice as many as keys: a key is stored
// again whenever its entry is not replayed (its expected output files
// missing, its answer refused), and its old records would stay for good.
const compactAt = 1024

// span is where a record's JSON lies in its log, and its checksum, checked
// again when the record is read.
type span struct {
	off int64
	n   int
	sum uint32
}

// find returns the JSON of key's last whole record in the log open as f,
// reading what was appended since the last look; nil when there is none. bad
// is true when the log holds lines that are not whole records, or enough
// replaced ones to be rewritten (see compactAt).
func (st *logState) find(f *os.File, key string) (data []byte, bad bool, err error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, false, err
	}
	st.mu.Lock()
	if st.file == nil || !os.SameFile(st.file, fi) || fi.Size() < st.end || !st.sameHead(f) {
		st.file, st.nhead, st.end, st.at, st.bad, st.whole = fi, 0, 0, map[[keyLen / 2]byte]span{}, 0, 0
	}
	if fi.Size() > st.end {
		var rest []byte
		st.end, rest, err = scanLog(f, st.end, fi.Size(), func(off int64, line []byte) {
			if len(line) == 0 {
				return
			}
			switch k, sum, ok := parseHead(line); {
			case ok && verify(line[headLen:], sum):
				st.at[k] = span{off + headLen, len(line) - headLen, sum}
				st.whole++
			case !otherVersion(line):
				st.bad++
			}
		})
		if !mayBeRecord(rest) {
			st.bad++
		}
	}
	if n := int(min(st.end, int64(len(st.head)))); st.nhead < n {
		if _, herr := f.ReadAt(st.head[:n], 0); herr == nil {
			st.nhead = n
		}
	}
	var k [keyLen / 2]byte
	hex.Decode(k[:], []byte(key))
	sp, found := st.at[k]
	bad = st.bad > 0 || st.whole >= compactAt && st.whole > 2*len(st.at)
	st.mu.Unlock()
	if err != nil || !found {
		return nil, bad, err
	}
	data = make([]byte, sp.n)
	if _, err := f.ReadAt(data, sp.off); err != nil {
		return nil, bad, err
	}
	if !verify(data, sp.sum) {
		return nil, true, nil // changed since it was indexed
	}
	return data, bad, nil
}

// sameHead reports whether the log open as f begins as the file indexed
// did, as far as that was read.
func (st *logState) sameHead(f *os.File) bool {
	if st.nhead == 0 {
		return true
	}
	var b [headLen + 1]byte
	n, _ := f.ReadAt(b[:st.nhead], 0)
	return n == st.nhead && bytes.Equal(b[:n], st.head[:n])
}

// drop forgets key's record, found unreadable.
func (st *logState) drop(key string) {
	var k [keyLen / 2]byte
	hex.Decode(k[:], []byte(key))
	st.mu.Lock()
	delete(st.at, k)
	st.mu.Unlock()
}

// quiet forgets the damage found so far, which could not be removed, so
// that lookups do not try again, and warn again, each time.
func (st *logState) quiet() {
	st.mu.Lock()
	st.bad, st.whole = 0, 0
	st.mu.Unlock()
}

// forget drops what is known of a log, to be read afresh.
func (st *logState) forget() {
	st.mu.Lock()
	st.file, st.nhead, st.end, st.at, st.bad, st.whole = nil, 0, 0, nil, 0, 0
	st.mu.Unlock()
}

// readLog returns the entry under key from its log, nil when there is none.
// A log holding lines that are not whole records (a crash cut one short,
// say) is rewritten without them, and that is reported; whole records of
// another format version are kept.
// A record a crash cut short at the end of a log cannot be told from one
// being written: it is a miss, and becomes a line of its own to remove when
// the next record is appended after it.
func (c *Cache) readLog(key string) (*Entry, error) {
	name := logName(key)
	p := filepath.Join(c.dir, entriesDir, name)
	st := &c.logs.logs[logOf(name)]
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		st.forget()
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	data, bad, err := st.find(f, key)
	f.Close()
	if err != nil || data == nil && !bad {
		return nil, err
	}
	var e *Entry
	var derr error
	if data != nil {
		e, derr = decode(data, key)
	}
	if derr != nil || bad {
		if derr != nil {
			st.drop(key)
		}
		dropped, err := c.compact(p, st)
		switch {
		case err != nil:
			// Not tried again, nor reported, until more damage is found.
			st.quiet()
			c.warn(fmt.Errorf("cache %s: rewriting it: %w", logPath(name), err))
		case derr != nil:
			c.warn(fmt.Errorf("cache entry %s: %w: %w; removed", short(key), ErrCorrupt, derr))
		case dropped > 0:
			c.warn(fmt.Errorf("cache %s: %w: removed %d record(s) that could not be read back "+
				"(cut short or zeroed by a crash, say)", logPath(name), ErrCorrupt, dropped))
		}
	}
	if derr != nil {
		return nil, nil
	}
	return e, nil
}

func logPath(name string) string { return entriesDir + "/" + name }

// compact rewrites the log p with its last whole, readable record of each
// key alone (and the records of other format versions), and returns how
// many lines it dropped that were not whole records; the log is read afresh
// after it. It holds the log's exclusive lock from before it reads the log
// until the new one has replaced it, so that no record another process
// appends is lost with the old file (see openLog).
func (c *Cache) compact(p string, st *logState) (dropped int, err error) {
	st.writing.Lock()
	defer st.writing.Unlock()
	f, err := openToRewrite(p)
	if errors.Is(err, fs.ErrNotExist) {
		st.forget()
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	closed := false
	defer func() {
		if !closed {
			f.Close() // after the rename: releases the lock
		}
	}()
	if err := lockLog(f, true); err != nil {
		return 0, err
	}
	if !isFile(f, p) {
		st.forget() // another process rewrote it meanwhile
		return 0, nil
	}
	old, err := io.ReadAll(f)
	if err != nil {
		return 0, err
	}
	if !locksLogs {
		// No lock to hold (Windows), and a file open there cannot be
		// renamed over: it is closed before the new log replaces it.
		closed = true
		f.Close()
	}
	var keep [][]byte
	last := map[string]int{}
	replaced := 0
	end := eachLine(old, func(_ int, line []byte) {
		if len(line) == 0 {
			return
		}
		k, data, ok := parseRecord(line)
		if ok {
			if _, err := decode(data, k); err != nil {
				ok = false
			}
		}
		switch i, seen := last[k]; {
		case !ok && otherVersion(line):
			keep = append(keep, line)
		case !ok:
			dropped++
		case seen:
			keep[i] = line // a later record of the key
			replaced++
		default:
			last[k] = len(keep)
			keep = append(keep, line)
		}
	})
	if len(bytes.TrimLeft(old[end:], "\n")) > 0 {
		dropped++
	}
	if dropped+replaced == 0 {
		st.forget()
		return 0, nil
	}
	var out bytes.Buffer
	for _, line := range keep {
		out.WriteByte('\n')
		out.Write(line)
		out.WriteByte('\n')
	}
	if err := writeAtomic(p, out.Bytes(), false); err != nil {
		return 0, err
	}
	st.forget()
	return dropped, nil
}

// openToRewrite opens the log p to be read by compact under its exclusive
// lock. It is open for writing too, though compact never writes to it: NFS
// takes a flock as a byte-range lock, and refuses an exclusive one (EBADF)
// on a file not open for writing, so that no log there was ever rewritten.
func openToRewrite(p string) (*os.File, error) {
	return os.OpenFile(p, os.O_RDWR, 0)
}

// eachRecord calls fn for every record in the cache's logs, with its key
// and JSON when it is whole (ok), and returns the logs' size. A last line
// without its line break is passed over when it may be a record being
// written (as a lookup passes it over), else passed as not whole.
func (c *Cache) eachRecord(ctx context.Context, fn func(key string, data []byte, ok bool)) (size int64, err error) {
	for i := range logCount {
		if err := ctx.Err(); err != nil {
			return size, err
		}
		data, err := os.ReadFile(filepath.Join(c.dir, entriesDir, strconv.FormatUint(uint64(i), 16)+logSuffix))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return size, err
		}
		size += int64(len(data))
		end := eachLine(data, func(_ int, line []byte) {
			if len(line) > 0 {
				fn(parseRecord(line))
			}
		})
		if rest := bytes.TrimLeft(data[end:], "\n"); len(rest) > 0 && !mayBeRecord(rest) {
			fn("", nil, false)
		}
	}
	return size, nil
}
