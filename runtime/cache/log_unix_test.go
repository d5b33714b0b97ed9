//go:build unix

package cache

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// A record another process appends to a log while this one rewrites it is
// kept: the rewrite waits for the append, which holds the log's shared lock
// as every appending agentspec does, and reads the record into the new log.
// Before, the rewrite read the log, replaced it, and the record went to the
// old file, gone.
func TestLogRewriteKeepsARecordAppendedMeanwhile(t *testing.T) {
	t.Parallel()
	c, warns := newCache(t)
	first, meanwhile := "a"+strings.Repeat("1", 63), "a"+strings.Repeat("2", 63)
	require.NoError(t, c.write(ctx, first, recordJSON(t, first, "first")))
	p := filepath.Join(c.Dir(), entriesDir, "a.log")
	appendRaw(t, p, []byte("\nnot a record\n")) // the next lookup rewrites the log

	// Another process, between opening the log and writing its record.
	other, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	require.NoError(t, unix.Flock(int(other.Fd()), unix.LOCK_SH))
	looked := make(chan error, 1)
	go func() {
		_, err := c.read(ctx, first)
		looked <- err
	}()
	select {
	case err := <-looked: // it did not wait: the test fails below
		looked <- err
	case <-time.After(200 * time.Millisecond):
	}
	_, err = other.Write(logLine(meanwhile, recordJSON(t, meanwhile, "meanwhile")))
	require.NoError(t, err)
	require.NoError(t, other.Close())
	require.NoError(t, <-looked)

	fresh, err := New(c.Dir())
	require.NoError(t, err)
	for key, want := range map[string]string{first: "first", meanwhile: "meanwhile"} {
		e, err := fresh.read(ctx, key)
		require.NoError(t, err)
		require.NotNil(t, e, "%s is in the log", want)
		assert.Equal(t, want, e.Output)
	}
	require.Len(t, warns.list(), 1, "%v", warns.list())
	assert.ErrorIs(t, warns.list()[0], ErrCorrupt)
	st, err := fresh.Stats(ctx)
	require.NoError(t, err)
	assert.Zero(t, st.Corrupt, "the log was rewritten without the damage")
}

// Two caches on one directory, as two processes have: one stores entries
// while the other keeps finding damage in the same log and rewriting it, and
// every entry stored reads back.
func TestLogRewritesLoseNoConcurrentRecord(t *testing.T) {
	t.Parallel()
	c, _ := newCache(t)
	writer, err := New(c.Dir())
	require.NoError(t, err)
	const n = 200
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("a%063x", i+1)
	}
	require.NoError(t, writer.write(ctx, keys[0], recordJSON(t, keys[0], "0")))
	p := filepath.Join(c.Dir(), entriesDir, "a.log")
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			f, err := openLog(p)
			if !assert.NoError(t, err) {
				return
			}
			_, err = f.WriteString("\nnot a record\n")
			f.Close()
			if !assert.NoError(t, err) {
				return
			}
			_, err = c.read(ctx, keys[0])
			if !assert.NoError(t, err) {
				return
			}
		}
	})
	for i, key := range keys[1:] {
		require.NoError(t, writer.write(ctx, key, recordJSON(t, key, fmt.Sprint(i+1))))
	}
	close(stop)
	wg.Wait()

	fresh, err := New(c.Dir())
	require.NoError(t, err)
	var lost []string
	for i, key := range keys {
		e, err := fresh.read(ctx, key)
		require.NoError(t, err)
		if e == nil || e.Output != fmt.Sprint(i) {
			lost = append(lost, key)
		}
	}
	assert.Empty(t, lost, "entries lost in a rewrite")
}

// A record goes to the log in place however many times in a row the log is
// rewritten between the append's opening it and its lock, each rewrite
// leaving a new file at the path: the append waited out nine and wrote to
// the tenth log it opened, which was replaced, and the record was lost (the
// rare failures of TestLogRewritesLoseNoConcurrentRecord under load). Here
// the test is the rewriter, replacing the log each time the append waits for
// the lock of the one in place, as /proc/locks shows.
func TestLogAppendOutlastsRewritesInARow(t *testing.T) {
	if _, err := os.Stat("/proc/locks"); err != nil {
		t.Skip("no /proc/locks to see the append wait")
	}
	t.Parallel()
	c, _ := newCache(t)
	dir := filepath.Join(c.Dir(), entriesDir)
	require.NoError(t, c.makeEntries(dir))
	p := filepath.Join(dir, "a.log")
	// replace puts a new log at p, locked exclusively as a rewrite holds it.
	replace := func() *os.File {
		tmp := p + ".new"
		f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		require.NoError(t, err)
		require.NoError(t, unix.Flock(int(f.Fd()), unix.LOCK_EX))
		require.NoError(t, os.Rename(tmp, p))
		return f
	}
	key := "a" + strings.Repeat("1", 63)
	appended := make(chan error, 1)
	// awaited waits until the append waits for the lock of the log held,
	// and reports false if it ended instead.
	awaited := func(held *os.File) bool {
		var st unix.Stat_t
		require.NoError(t, unix.Fstat(int(held.Fd()), &st))
		ino := fmt.Sprintf(":%d ", st.Ino)
		for {
			select {
			case err := <-appended:
				appended <- err
				return false
			default:
			}
			locks, err := os.ReadFile("/proc/locks")
			require.NoError(t, err)
			for line := range strings.Lines(string(locks)) {
				if strings.Contains(line, "-> FLOCK") && strings.Contains(line, ino) {
					return true
				}
			}
			time.Sleep(time.Millisecond)
		}
	}
	held := replace()
	go func() { appended <- appendRecord(dir, key, recordJSON(t, key, "kept")) }()
	for range 15 {
		if !awaited(held) {
			break
		}
		next := replace()
		require.NoError(t, held.Close())
		held = next
	}
	require.NoError(t, held.Close())
	require.NoError(t, <-appended)

	fresh, err := New(c.Dir())
	require.NoError(t, err)
	e, err := fresh.read(ctx, key)
	require.NoError(t, err)
	require.NotNil(t, e, "the record is in the log")
	assert.Equal(t, "kept", e.Output)
}

// appendRaw appends data to the file p.
func appendRaw(t *testing.T, p string, data []byte) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.Write(data)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

// The lock is taken on a descriptor open for reading and writing, both to
// append and to rewrite: NFS takes a flock as a byte-range lock, which it
// refuses (EBADF) when shared on a file not open for reading or exclusive on
// one not open for writing, so that on NFS every record failed to be stored
// and no log was rewritten.
func TestLogLocksOnADescriptorNFSCanLock(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "a.log")
	accessMode := func(f *os.File) int {
		t.Helper()
		fl, err := unix.FcntlInt(f.Fd(), unix.F_GETFL, 0)
		require.NoError(t, err)
		return fl & unix.O_ACCMODE
	}
	f, err := openLog(p)
	require.NoError(t, err)
	assert.Equal(t, unix.O_RDWR, accessMode(f), "to append")
	require.NoError(t, f.Close())
	f, err = openToRewrite(p)
	require.NoError(t, err)
	assert.Equal(t, unix.O_RDWR, accessMode(f), "to rewrite")
	require.NoError(t, f.Close())
}
