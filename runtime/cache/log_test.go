package cache

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// logLine is the record of data under key as appendRecord writes it.
func logLine(key string, data []byte) []byte {
	return fmt.Appendf(nil, "\n%s %08x %s\n", key, crc32.Checksum(data, castagnoli), data)
}

// What a crash or a bug can leave in a log costs the record it hits and
// nothing else: the lookup of that key is a miss, the records around it
// still read back, the log is rewritten without what cannot be read (one
// warning says so), and the key stored again reads back.
func TestLogCorruption(t *testing.T) {
	t.Parallel()
	target, before, after := "a"+strings.Repeat("1", 63), "a"+strings.Repeat("2", 63), "a"+strings.Repeat("3", 63)
	tests := map[string]func(t *testing.T, rec []byte) []byte{
		"cut short":       func(_ *testing.T, rec []byte) []byte { return rec[:len(rec)/2] },
		"cut short, last": nil, // the target cut short with nothing after it
		"zeroed":          func(_ *testing.T, rec []byte) []byte { return make([]byte, len(rec)) },
		"zeroed middle": func(_ *testing.T, rec []byte) []byte {
			return zeroed(rec, len(rec)/3, 2*len(rec)/3)
		},
		"a changed byte": func(_ *testing.T, rec []byte) []byte {
			return bytes.Replace(rec, []byte(`"output":"done"`), []byte(`"output":"dune"`), 1)
		},
		"filed under another key": func(t *testing.T, _ []byte) []byte {
			return logLine(target, recordJSON(t, before, "done"))
		},
		"no output": func(t *testing.T, _ []byte) []byte { return logLine(target, recordJSON(t, target, " ")) },
		"interleaved": func(t *testing.T, rec []byte) []byte {
			other := logLine("a"+strings.Repeat("4", 63), recordJSON(t, "a"+strings.Repeat("4", 63), "other"))
			return slicesConcat(rec[:len(rec)/2], other, rec[len(rec)/2:])
		},
	}
	for name, corrupt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c, warns := newCache(t)
			require.NoError(t, c.write(ctx, before, recordJSON(t, before, "before")))
			p := filepath.Join(c.Dir(), entriesDir, "a.log")
			good, err := os.ReadFile(p)
			require.NoError(t, err)
			rec := logLine(target, recordJSON(t, target, "done"))
			if corrupt == nil {
				good = append(good, rec[:len(rec)-10]...)
			} else {
				good = slicesConcat(good, corrupt(t, rec), logLine(after, recordJSON(t, after, "after")))
			}
			require.NoError(t, os.WriteFile(p, good, 0o600))

			e, err := c.read(ctx, target)
			require.NoError(t, err)
			assert.Nil(t, e, "a miss")
			for key, want := range map[string]string{before: "before", after: "after"} {
				if e, err := c.read(ctx, key); corrupt != nil || key == before {
					require.NoError(t, err)
					require.NotNil(t, e, key)
					assert.Equal(t, want, e.Output)
				}
			}

			require.NoError(t, c.write(ctx, target, recordJSON(t, target, "again")))
			e, err = c.read(ctx, target)
			require.NoError(t, err)
			require.NotNil(t, e)
			assert.Equal(t, "again", e.Output)
			e, err = c.read(ctx, before)
			require.NoError(t, err)
			require.NotNil(t, e, "the record before is kept")

			require.Len(t, warns.list(), 1, "%v", warns.list())
			assert.ErrorIs(t, warns.list()[0], ErrCorrupt)
			st, err := c.Stats(ctx)
			require.NoError(t, err)
			assert.Zero(t, st.Corrupt, "the log was rewritten without it")
			temps, err := filepath.Glob(filepath.Join(c.Dir(), entriesDir, tempPrefix+"*"))
			require.NoError(t, err)
			assert.Empty(t, temps)
		})
	}
}

// A whole record of another format version, which an agentspec of another
// version sharing the cache wrote under a key this one never looks up, is
// not damage: no lookup warns of it or removes it, and a rewrite of its log
// keeps it. Stats counts it among the entries it cannot read.
func TestLogKeepsOtherVersions(t *testing.T) {
	t.Parallel()
	c, warns := newCache(t)
	key, damaged := "e"+strings.Repeat("1", 63), "e"+strings.Repeat("2", 63)
	other := logLine(key, withField(t, recordJSON(t, key, "done"), "version", 99))
	p := filepath.Join(c.Dir(), entriesDir, "e.log")
	require.NoError(t, c.write(ctx, damaged, recordJSON(t, damaged, "x")))
	log, err := os.ReadFile(p)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(p, append(other, log...), 0o600))

	e, err := c.read(ctx, key)
	require.NoError(t, err)
	assert.Nil(t, e)
	assert.Empty(t, warns.list())

	// Damage in the same log has it rewritten; the other version's record stays.
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.Write([]byte("\x00\x00\x00\n"))
	require.NoError(t, err)
	require.NoError(t, f.Close())
	e, err = c.read(ctx, damaged)
	require.NoError(t, err)
	require.NotNil(t, e)
	require.Len(t, warns.list(), 1)
	assert.ErrorIs(t, warns.list()[0], ErrCorrupt)
	log, err = os.ReadFile(p)
	require.NoError(t, err)
	assert.True(t, bytes.Contains(log, bytes.Trim(other, "\n")), "kept")

	st, err := c.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, st.Entries)
	assert.Equal(t, 1, st.Corrupt)
}

// A log holding many more records than keys, each key stored again and
// again, is rewritten with the last of each, without a warning, and no
// record this process appends meanwhile is lost.
func TestLogDropsReplacedRecords(t *testing.T) {
	t.Parallel()
	c, warns := newCache(t)
	again := "f" + strings.Repeat("0", 63)
	for i := range compactAt {
		require.NoError(t, c.write(ctx, again, recordJSON(t, again, fmt.Sprint(i))))
	}
	var wg sync.WaitGroup
	var keys []string
	for w := range 8 {
		for i := range 40 {
			keys = append(keys, fmt.Sprintf("f1%02x%060x", w, i))
		}
		mine := keys[len(keys)-40:]
		wg.Go(func() {
			for _, k := range mine {
				if err := c.write(ctx, k, recordJSON(t, k, k)); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Go(func() {
		for range 50 {
			if _, err := c.With().read(ctx, again); err != nil {
				t.Error(err)
			}
		}
	})
	wg.Wait()
	e, err := c.read(ctx, again)
	require.NoError(t, err)
	require.NotNil(t, e)
	assert.Equal(t, fmt.Sprint(compactAt-1), e.Output)
	for _, k := range keys {
		e, err := c.read(ctx, k)
		require.NoError(t, err)
		if assert.NotNil(t, e, "lost in a rewrite: %s", k) {
			assert.Equal(t, k, e.Output)
		}
	}
	log, err := os.ReadFile(filepath.Join(c.Dir(), entriesDir, "f.log"))
	require.NoError(t, err)
	assert.Equal(t, 1+len(keys), bytes.Count(log, []byte(`{"version"`)), "one record a key")
	assert.Empty(t, warns.list())
}

func slicesConcat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// A Cache reads what another one (another process) appends to a log since
// it last looked, and reads a log replaced since (by a Clear, or a rewrite
// without corrupt records) afresh.
func TestLogFollowsOtherWriters(t *testing.T) {
	t.Parallel()
	c, warns := newCache(t)
	other, err := New(c.Dir())
	require.NoError(t, err)
	key := strings.Repeat("b", 64)
	e, err := c.read(ctx, key)
	require.NoError(t, err)
	require.Nil(t, e)

	require.NoError(t, other.write(ctx, key, recordJSON(t, key, "first")))
	e, err = c.read(ctx, key)
	require.NoError(t, err)
	require.NotNil(t, e)
	assert.Equal(t, "first", e.Output)

	require.NoError(t, other.write(ctx, key, recordJSON(t, key, "second")))
	e, err = c.read(ctx, key)
	require.NoError(t, err)
	assert.Equal(t, "second", e.Output)

	// Replaced by a shorter log, then by one as long as the old.
	_, err = other.Clear(ctx)
	require.NoError(t, err)
	require.NoError(t, other.write(ctx, key, recordJSON(t, key, "3")))
	e, err = c.read(ctx, key)
	require.NoError(t, err)
	assert.Equal(t, "3", e.Output)
	_, err = other.Clear(ctx)
	require.NoError(t, err)
	require.NoError(t, other.write(ctx, key, recordJSON(t, key, "fourth")))
	require.NoError(t, other.write(ctx, key, recordJSON(t, key, "fifth")))
	e, err = c.read(ctx, key)
	require.NoError(t, err)
	assert.Equal(t, "fifth", e.Output)
	assert.Empty(t, warns.list())
}

// A log removed and made again, which the file system may give the file id
// of the old one (ext4 reuses a freed inode at once), is read afresh even
// when it has grown past what was read of the old one: its records are
// found, not taken for lines already read. The log is rewritten in place
// here, which keeps its file id wherever the test runs.
func TestLogReplacedUnderTheSameFileID(t *testing.T) {
	t.Parallel()
	c, warns := newCache(t)
	keys := func(from int) (ks []string) {
		for i := range 4 {
			ks = append(ks, fmt.Sprintf("e%063x", from+i))
		}
		return ks
	}
	old, made := keys(0), keys(100)
	var before, after []byte
	for i := range old {
		before = append(before, logLine(old[i], recordJSON(t, old[i], "old"))...)
		after = append(after, logLine(made[i], recordJSON(t, made[i], "new"))...)
	}
	p := filepath.Join(c.Dir(), entriesDir, "e.log")
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o700))
	require.NoError(t, os.WriteFile(p, before, 0o600))
	e, err := c.read(ctx, old[0])
	require.NoError(t, err)
	require.NotNil(t, e)

	require.Len(t, after, len(before), "records of one length: the old end falls between two records")
	require.NoError(t, os.WriteFile(p, after, 0o600))
	for _, key := range made {
		e, err := c.read(ctx, key)
		require.NoError(t, err)
		require.NotNil(t, e, key)
		assert.Equal(t, "new", e.Output)
	}
	e, err = c.read(ctx, old[1])
	require.NoError(t, err)
	assert.Nil(t, e)
	assert.Empty(t, warns.list())
}

// Records longer than what a lookup reads at a time, and many of them, read
// back whole, while others are being appended.
func TestLogLongRecords(t *testing.T) {
	t.Parallel()
	c, warns := newCache(t)
	var wg sync.WaitGroup
	want := map[string]string{}
	for i := range 12 {
		key := fmt.Sprintf("c%063x", i)
		want[key] = fmt.Sprintf("%d:%s", i, strings.Repeat("y", (i%4)*300<<10+1))
	}
	errs := make(chan error, 2*len(want))
	for key, out := range want {
		wg.Go(func() {
			if err := c.write(ctx, key, recordJSON(t, key, out)); err != nil {
				errs <- err
			}
		})
		wg.Go(func() {
			e, err := c.With().read(ctx, key)
			if err == nil && e != nil && e.Output != out {
				err = errors.New("read a record no writer wrote")
			}
			if err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for key, out := range want {
		e, err := c.read(ctx, key)
		require.NoError(t, err)
		require.NotNil(t, e, key)
		assert.Equal(t, out, e.Output)
	}
	assert.Empty(t, warns.list())
}

// A line longer than what a lookup reads at a time is gathered once, not
// copied again for every chunk read: the bytes allocated to read a 16 MiB
// record are a few times its size, where they were 64 times (over a GB),
// and a lookup took seconds. Not parallel: it reads the process's
// allocation count.
func TestScanLogLongLine(t *testing.T) {
	const size = 16 << 20
	data := slicesConcat([]byte("\nshort\n\n"), bytes.Repeat([]byte("y"), size), []byte("\n\nz"))
	var lines []int
	var before, after goruntime.MemStats
	goruntime.ReadMemStats(&before)
	end, rest, err := scanLog(bytes.NewReader(data), 0, int64(len(data)), func(off int64, line []byte) {
		lines = append(lines, int(off), len(line))
	})
	goruntime.ReadMemStats(&after)
	require.NoError(t, err)
	assert.Equal(t, []int{0, 0, 1, 5, 7, 0, 8, size, 9 + size, 0}, lines)
	assert.Equal(t, int64(len(data)-1), end)
	assert.Equal(t, "z", string(rest))
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(8*size))
}

func TestMayBeRecord(t *testing.T) {
	t.Parallel()
	rec := logLine(strings.Repeat("d", 64), []byte(`{"version":1,"output":"x"}`))[1:]
	for n := range len(rec) - 1 {
		assert.True(t, mayBeRecord(rec[:n]), "%q", rec[:n])
	}
	for _, b := range []string{"x", "dd\x00", strings.Repeat("d", 64) + "x", strings.Repeat("d", 64) + " 0000000g", strings.Repeat("d", 64) + " 00000000 [", "{\"version\""} {
		assert.False(t, mayBeRecord([]byte(b)), "%q", b)
	}
}

// A record being written at a log's end, as another process appends it, is
// not damage to `cache stats` any more than to a lookup: it is counted
// neither as an entry nor as corrupt. What no record begins as, as a crash
// leaves zeroes where it extended the log, is corrupt.
func TestStatsDoesNotCountARecordBeingWritten(t *testing.T) {
	t.Parallel()
	c, _ := newCache(t)
	key, next := "c"+strings.Repeat("1", 63), "c"+strings.Repeat("2", 63)
	require.NoError(t, c.write(ctx, key, recordJSON(t, key, "done")))
	p := filepath.Join(c.Dir(), entriesDir, "c.log")
	rec := logLine(next, recordJSON(t, next, "next"))
	for _, n := range []int{5, 64, 70, len(rec) - 2} { // within the key, the sum, the JSON
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
		require.NoError(t, err)
		_, err = f.Write(rec[:n])
		require.NoError(t, err)
		require.NoError(t, f.Close())

		st, err := c.Stats(ctx)
		require.NoError(t, err)
		assert.Equal(t, 1, st.Entries, "%d bytes written", n)
		assert.Zero(t, st.Corrupt, "%d bytes written", n)
		require.NoError(t, os.Truncate(p, st.Bytes-int64(n)))
	}

	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.Write(make([]byte, 40))
	require.NoError(t, err)
	require.NoError(t, f.Close())
	st, err := c.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, st.Entries)
	assert.Equal(t, 1, st.Corrupt, "zeroes are no record")
}
