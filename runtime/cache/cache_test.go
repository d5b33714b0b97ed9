package cache

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var ctx = context.Background()

func lookup(t *testing.T, c *Cache, k KeyInput) (*Entry, string, bool) {
	t.Helper()
	e, key, ok, err := c.Lookup(ctx, k)
	require.NoError(t, err)
	require.Equal(t, ok, e != nil)
	return e, key, ok
}

func store(t *testing.T, c *Cache, k KeyInput, output string) string {
	t.Helper()
	key, err := c.Store(ctx, k, Entry{Output: output, SpecName: "summariser"})
	require.NoError(t, err)
	return key
}

// run plays an agent run over ws: it writes the expected output file.
func run(t *testing.T, ws string) {
	t.Helper()
	writeFiles(t, ws, map[string]string{"summary.md": "# Summary"})
}

func TestHit(t *testing.T) {
	t.Parallel()
	created := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	c, warns := newCache(t, WithClock(func() time.Time { return created }))
	ws := newWorkspace(t, map[string]string{"notes/a.md": "alpha", "notes/b.md": "beta"})
	k := keyInput(ws)

	_, lookupKey, ok := lookup(t, c, k)
	require.False(t, ok, "an empty cache misses")
	run(t, ws)
	usage := Usage{Requests: 3, InputTokens: 450, OutputTokens: 27, ToolCalls: 2, Elapsed: 1500 * time.Millisecond}
	key, err := c.Store(ctx, k, Entry{Output: `{"ok":true}`, JSON: json.RawMessage(`{"ok":true}`), Usage: usage, SpecName: "summariser"})
	require.NoError(t, err)
	assert.Equal(t, lookupKey, key, "the run did not touch its inputs")

	e, hitKey, ok := lookup(t, c, k)
	require.True(t, ok)
	assert.Equal(t, key, hitKey)
	real, err := filepath.EvalSymlinks(ws)
	require.NoError(t, err)
	_, ing, err := Key(ctx, k)
	require.NoError(t, err)
	assert.Equal(t, &Entry{
		Output:      `{"ok":true}`,
		JSON:        json.RawMessage(`{"ok":true}`),
		Usage:       usage,
		SpecName:    "summariser",
		Key:         key,
		Model:       "openai:gpt-4o",
		Workspace:   real,
		Created:     created,
		Ingredients: ing,
	}, e)
	assert.Empty(t, warns.list())
	assert.FileExists(t, filepath.Join(c.Dir(), "entries", key[:1]+".log"))
}

func TestMisses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		change func(t *testing.T, ws string, k *KeyInput)
	}{
		{"a changed input file", func(t *testing.T, ws string, _ *KeyInput) {
			writeFiles(t, ws, map[string]string{"notes/a.md": "ALPHA"})
		}},
		{"a new file matching a glob", func(t *testing.T, ws string, _ *KeyInput) {
			writeFiles(t, ws, map[string]string{"notes/c.md": "gamma"})
		}},
		{"a removed input file", func(t *testing.T, ws string, _ *KeyInput) {
			require.NoError(t, os.Remove(filepath.Join(ws, "notes/b.md")))
		}},
		{"changed vars", func(_ *testing.T, _ string, k *KeyInput) { k.Vars = map[string]string{"audience": "managers"} }},
		{"a changed input", func(_ *testing.T, _ string, k *KeyInput) { k.Input = "Summarise in French." }},
		{"another model", func(_ *testing.T, _ string, k *KeyInput) { k.Model = "openai:gpt-4o-mini" }},
		{"a changed spec meaning", func(_ *testing.T, _ string, k *KeyInput) {
			k.Spec = []byte(strings.Replace(testSpec, "Summarise the notes", "Summarise the notes tersely", 1))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, _ := newCache(t)
			ws := newWorkspace(t, map[string]string{"notes/a.md": "alpha", "notes/b.md": "beta"})
			k := keyInput(ws)
			run(t, ws)
			store(t, c, k, "done")
			_, _, ok := lookup(t, c, k)
			require.True(t, ok)

			tt.change(t, ws, &k)
			_, _, ok = lookup(t, c, k)
			assert.False(t, ok)
		})
	}
}

func TestSameKeyForReformattedSpec(t *testing.T) {
	t.Parallel()
	c, _ := newCache(t)
	ws := newWorkspace(t, map[string]string{"notes/a.md": "alpha"})
	run(t, ws)
	store(t, c, keyInput(ws), "done")

	k := keyInput(ws)
	var doc any
	require.NoError(t, json.Unmarshal(k.Spec, &doc))
	k.Spec, _ = json.MarshalIndent(doc, "", "\t")
	_, _, ok := lookup(t, c, k)
	assert.True(t, ok)
}

// A cache kept inside the workspace, under input globs that match its
// files, is not an input of the runs it serves: the entry a run stores
// must not change the key of the next run over the same files.
func TestCacheInsideTheWorkspace(t *testing.T) {
	t.Parallel()
	for _, dir := range []string{".cache", "."} {
		t.Run(dir, func(t *testing.T) {
			t.Parallel()
			ws := newWorkspace(t, map[string]string{"notes/a.md": "alpha"})
			if dir == "." {
				// The workspace was made a cache while it was empty: its
				// marker is there already.
				require.NoError(t, os.WriteFile(filepath.Join(ws, markerName), []byte(marker), 0o600))
			}
			c, err := New(filepath.Join(ws, dir))
			require.NoError(t, err)
			k := keyInput(ws)
			k.InputGlobs = []string{"**"}
			k.ExpectedOutputFiles = nil

			_, _, ok := lookup(t, c, k)
			require.False(t, ok)
			key := store(t, c, k, "first")
			e, hitKey, ok := lookup(t, c, k)
			require.True(t, ok, "the entry just stored is found")
			assert.Equal(t, key, hitKey)
			assert.Equal(t, "first", e.Output)
			assert.Equal(t, 1, e.Ingredients.Files, "notes/a.md alone")

			writeFiles(t, ws, map[string]string{"notes/a.md": "changed"})
			_, _, ok = lookup(t, c, k)
			assert.False(t, ok, "the workspace's own files still count")
		})
	}
}

func TestStoreMarksOnlyANewOrEmptyDirectory(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t, map[string]string{"notes/a.md": "alpha"})
	// A project directory given as the cache's: marking it would make
	// backup tools skip the project.
	c, err := New(ws)
	require.NoError(t, err)
	_, err = c.Store(context.Background(), keyInput(ws), Entry{Output: "done"})
	require.ErrorIs(t, err, ErrNotCache)
	assert.Contains(t, err.Error(), "new or empty directory")
	assert.NoFileExists(t, filepath.Join(ws, markerName))
	assert.NoDirExists(t, filepath.Join(ws, entriesDir))

	// An empty directory, or one not made yet, becomes a cache.
	for _, dir := range []string{t.TempDir(), filepath.Join(t.TempDir(), "new", "cache")} {
		c, err := New(dir)
		require.NoError(t, err)
		store(t, c, keyInput(ws), "done")
		assert.FileExists(t, filepath.Join(dir, markerName))
	}
}

// The files a host writes for the run as it goes (an events log, a
// directory of them) are not its inputs: a key leaves out the paths
// Exclude names and what lies below them, but never the workspace itself.
func TestKeyLeavesOutExcludedPaths(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t, map[string]string{"notes/a.md": "alpha", "events.jsonl": "{}\n", "logs/job-1.jsonl": "{}\n"})
	k := keyInput(ws)
	k.InputGlobs = []string{"**"}
	k.Exclude = []string{filepath.Join(ws, "events.jsonl"), filepath.Join(ws, "logs"), t.TempDir()}
	key, ing, err := Key(context.Background(), k)
	require.NoError(t, err)
	assert.Equal(t, 1, ing.Files, "notes/a.md alone")

	writeFiles(t, ws, map[string]string{"events.jsonl": "{}\n{}\n", "logs/job-2.jsonl": "{}\n"})
	again, _, err := Key(context.Background(), k)
	require.NoError(t, err)
	assert.Equal(t, key, again, "the host's own files changed, not the inputs")

	writeFiles(t, ws, map[string]string{"notes/a.md": "changed"})
	changed, _, err := Key(context.Background(), k)
	require.NoError(t, err)
	assert.NotEqual(t, key, changed)

	k.Exclude = []string{ws}
	_, ing, err = Key(context.Background(), k)
	require.NoError(t, err)
	assert.Equal(t, 4, ing.Files, "the workspace itself is never left out")
}

func TestWorkspacesNeverShare(t *testing.T) {
	t.Parallel()
	c, _ := newCache(t)
	files := map[string]string{"notes/a.md": "alpha", "summary.md": "# Summary"}
	ws1, ws2 := newWorkspace(t, files), newWorkspace(t, files)
	store(t, c, keyInput(ws1), "one")

	_, _, ok := lookup(t, c, keyInput(ws2))
	assert.False(t, ok)
	store(t, c, keyInput(ws2), "two")
	e1, _, _ := lookup(t, c, keyInput(ws1))
	e2, _, _ := lookup(t, c, keyInput(ws2))
	assert.Equal(t, "one", e1.Output)
	assert.Equal(t, "two", e2.Output)
}

func TestMissingExpectedOutput(t *testing.T) {
	t.Parallel()
	c, warns := newCache(t)
	ws := newWorkspace(t, map[string]string{"notes/a.md": "alpha"})
	k := keyInput(ws)
	k.ExpectedOutputFiles = []string{"summary.md", "out/details.md"}
	writeFiles(t, ws, map[string]string{"summary.md": "s", "out/details.md": "d"})
	store(t, c, k, "done")

	// A fresh checkout: the entry is there, its files are not.
	require.NoError(t, os.Remove(filepath.Join(ws, "out/details.md")))
	_, key, ok := lookup(t, c, k)
	assert.False(t, ok)
	require.Len(t, warns.list(), 1)
	w := warns.list()[0]
	assert.ErrorIs(t, w, ErrOutputsMissing)
	assert.Contains(t, w.Error(), "out/details.md")
	assert.NotContains(t, w.Error(), "summary.md")
	assert.Contains(t, w.Error(), key[:12])

	// Running again writes the file; the entry serves again.
	writeFiles(t, ws, map[string]string{"out/details.md": "d"})
	_, _, ok = lookup(t, c, k)
	assert.True(t, ok)
}

func TestExpectedOutputEscapingWorkspace(t *testing.T) {
	t.Parallel()
	c, warns := newCache(t)
	outside := newWorkspace(t, map[string]string{"summary.md": "elsewhere"})
	ws := newWorkspace(t, map[string]string{"notes/a.md": "alpha"})
	symlink(t, filepath.Join(outside, "summary.md"), filepath.Join(ws, "summary.md"))
	k := keyInput(ws)
	store(t, c, k, "done")

	_, _, ok := lookup(t, c, k)
	assert.False(t, ok, "a link out of the workspace is no output")
	require.Len(t, warns.list(), 1)
	assert.ErrorIs(t, warns.list()[0], ErrOutputsMissing)
}

// A run that edits its own inputs is stored under the key of the edited
// files: a later run over them hits, a run over the unedited files does not.
func TestStoreRecomputesKeyAfterRun(t *testing.T) {
	t.Parallel()
	c, _ := newCache(t)
	ws := newWorkspace(t, map[string]string{"notes/a.md": "draft"})
	k := keyInput(ws)

	_, before, ok := lookup(t, c, k)
	require.False(t, ok)
	writeFiles(t, ws, map[string]string{"notes/a.md": "edited by the run", "summary.md": "s"})
	after := store(t, c, k, "done")
	assert.NotEqual(t, before, after)

	e, key, ok := lookup(t, c, k)
	assert.True(t, ok, "found over the edited files")
	assert.Equal(t, after, key)
	assert.Equal(t, "done", e.Output)

	writeFiles(t, ws, map[string]string{"notes/a.md": "draft"})
	_, key, ok = lookup(t, c, k)
	assert.False(t, ok, "never replayed over the unedited files")
	assert.Equal(t, before, key)
}

func TestFailuresAreNotStored(t *testing.T) {
	t.Parallel()
	tests := map[string]Entry{
		"the run's error":   {Output: "a half answer", Err: errors.New("output validation failed after 3 attempts")},
		"no output":         {},
		"blank output":      {Output: " \n\t"},
		"JSON that is not":  {Output: "x", JSON: json.RawMessage(`{"a":`)},
		"an error, no text": {Err: context.DeadlineExceeded},
	}
	for name, e := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c, _ := newCache(t)
			ws := newWorkspace(t, map[string]string{"notes/a.md": "alpha", "summary.md": "s"})
			key, err := c.Store(ctx, keyInput(ws), e)
			assert.ErrorIs(t, err, ErrNotCacheable)
			if e.Err != nil {
				assert.ErrorIs(t, err, e.Err)
			}
			assert.Empty(t, key)
			_, _, ok := lookup(t, c, keyInput(ws))
			assert.False(t, ok)
			assert.NoDirExists(t, filepath.Join(c.Dir(), "entries"), "nothing written")
		})
	}
}

func TestCorruptEntries(t *testing.T) {
	t.Parallel()
	tests := map[string]func(good []byte, key string) []byte{
		"bad JSON":        func([]byte, string) []byte { return []byte("not json") },
		"truncated":       func(good []byte, _ string) []byte { return good[:len(good)/2] },
		"empty file":      func([]byte, string) []byte { return nil },
		"another version": func(good []byte, _ string) []byte { return withField(t, good, "version", 99) },
		"another key":     func(good []byte, _ string) []byte { return withField(t, good, "key", strings.Repeat("0", 64)) },
		"no output":       func(good []byte, _ string) []byte { return withField(t, good, "output", "") },
		"trailing data":   func(good []byte, _ string) []byte { return append(good, []byte(`{"x":1}`)...) },
		// Entries are written without fsync (see write): what a crash can
		// leave of one must read as a miss too, never as a hit.
		"all zeros":     func(good []byte, _ string) []byte { return make([]byte, len(good)) },
		"zeroed tail":   func(good []byte, _ string) []byte { return zeroed(good, len(good)/2, len(good)) },
		"zeroed head":   func(good []byte, _ string) []byte { return zeroed(good, 0, len(good)/2) },
		"zeroed middle": func(good []byte, _ string) []byte { return zeroed(good, len(good)/3, 2*len(good)/3) },
		"zeros after":   func(good []byte, _ string) []byte { return append(bytes.Clone(good), make([]byte, 4096)...) },
		"cut short":     func(good []byte, _ string) []byte { return good[:len(good)-2] },
	}
	for name, corrupt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c, warns := newCache(t)
			ws := newWorkspace(t, map[string]string{"notes/a.md": "alpha", "summary.md": "s"})
			k := keyInput(ws)
			key := store(t, c, k, "done")
			p, good := toEarlierLayout(t, c, key)
			require.NoError(t, os.WriteFile(p, corrupt(good, key), 0o600))

			_, _, ok := lookup(t, c, k)
			assert.False(t, ok)
			require.Len(t, warns.list(), 1)
			assert.ErrorIs(t, warns.list()[0], ErrCorrupt)
			assert.NoFileExists(t, p, "a corrupt entry is removed")

			store(t, c, k, "again")
			e, _, ok := lookup(t, c, k)
			require.True(t, ok)
			assert.Equal(t, "again", e.Output)
		})
	}
}

// toEarlierLayout moves the entry of key from its log to a file of its own,
// where earlier versions wrote it, and returns the file and its content.
func toEarlierLayout(t *testing.T, c *Cache, key string) (string, []byte) {
	t.Helper()
	e, err := c.readLog(key)
	require.NoError(t, err)
	require.NotNil(t, e)
	data, err := json.Marshal(record{Version: ProtocolVersion, Entry: *e})
	require.NoError(t, err)
	data = append(data, '\n')
	require.NoError(t, os.Remove(filepath.Join(c.Dir(), "entries", key[:1]+".log")))
	p := c.entryPath(key)
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o700))
	require.NoError(t, os.WriteFile(p, data, 0o600))
	return p, data
}

func zeroed(data []byte, from, to int) []byte {
	out := bytes.Clone(data)
	clear(out[from:to])
	return out
}

func withField(t *testing.T, data []byte, name string, value any) []byte {
	var m map[string]any
	require.NoError(t, json.Unmarshal(data, &m))
	m[name] = value
	out, err := json.Marshal(m)
	require.NoError(t, err)
	return out
}

// Many writers of one key and many readers: every read is a miss or a whole
// entry written by one of the writers, never a torn one.
func TestConcurrentStoreAndLookup(t *testing.T) {
	t.Parallel()
	c, warns := newCache(t)
	ws := newWorkspace(t, map[string]string{"notes/a.md": "alpha", "summary.md": "s"})
	k := keyInput(ws)

	const writers, readers, rounds = 8, 8, 20
	// A large output makes a torn write likely to be seen if writes were not atomic.
	outputs := map[string]bool{}
	for w := range writers {
		outputs[fmt.Sprintf("writer %d: %s", w, strings.Repeat("x", 64<<10))] = true
	}
	var wg sync.WaitGroup
	errs := make(chan error, writers*rounds+readers*rounds)
	for out := range outputs {
		wg.Go(func() {
			for range rounds {
				if _, err := c.Store(ctx, k, Entry{Output: out}); err != nil {
					errs <- err
				}
			}
		})
	}
	for range readers {
		wg.Go(func() {
			for range rounds {
				e, _, ok, err := c.Lookup(ctx, k)
				switch {
				case err != nil:
					errs <- err
				case ok && !outputs[e.Output]:
					errs <- fmt.Errorf("read an entry no writer wrote (%d bytes)", len(e.Output))
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	assert.Empty(t, warns.list())

	e, _, ok := lookup(t, c, k)
	require.True(t, ok)
	assert.True(t, outputs[e.Output])
	st, err := c.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, st.Entries)
	temps, err := filepath.Glob(filepath.Join(c.Dir(), "entries", "*", ".tmp-*"))
	require.NoError(t, err)
	assert.Empty(t, temps, "no temporary file left behind")
}

func TestStats(t *testing.T) {
	t.Parallel()
	times := []time.Time{
		time.Date(2025, 5, 2, 0, 0, 0, 0, time.UTC),
		time.Date(2025, 5, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2025, 5, 3, 0, 0, 0, 0, time.UTC),
	}
	var mu sync.Mutex
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		t := times[0]
		times = times[1:]
		return t
	}
	c, _ := newCache(t, WithClock(clock))

	st, err := c.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, Stats{Dir: c.Dir()}, st, "an empty directory is an empty cache")

	for i, name := range []string{"summariser", "summariser", "reviewer"} {
		ws := newWorkspace(t, map[string]string{"notes/a.md": fmt.Sprint(i), "summary.md": "s"})
		_, err := c.Store(ctx, keyInput(ws), Entry{Output: "done", SpecName: name})
		require.NoError(t, err)
	}
	// A corrupt entry, a stray file and a temporary file.
	bad := strings.Repeat("ab", 32)
	writeFiles(t, c.Dir(), map[string]string{
		"entries/ab/" + bad + ".json": "{",
		"entries/ab/notes.txt":        "not ours",
		"entries/ab/.tmp-x-1":         "partial",
	})

	st, err = c.Stats(ctx)
	require.NoError(t, err)
	var size int64
	files, err := filepath.Glob(filepath.Join(c.Dir(), "entries", "*", "*.json"))
	require.NoError(t, err)
	require.Len(t, files, 1, "the corrupt entry file")
	logs, err := filepath.Glob(filepath.Join(c.Dir(), "entries", "*.log"))
	require.NoError(t, err)
	require.NotEmpty(t, logs)
	for _, f := range append(files, logs...) {
		info, err := os.Stat(f)
		require.NoError(t, err)
		size += info.Size()
	}
	assert.Equal(t, Stats{
		Dir:     c.Dir(),
		Entries: 3,
		Corrupt: 1,
		Bytes:   size,
		Oldest:  time.Date(2025, 5, 1, 0, 0, 0, 0, time.UTC),
		Newest:  time.Date(2025, 5, 3, 0, 0, 0, 0, time.UTC),
		Specs:   map[string]int{"summariser": 2, "reviewer": 1},
	}, st)
}

func TestClearRemovesOnlyOwnFiles(t *testing.T) {
	t.Parallel()
	c, _ := newCache(t)
	for i := range 3 {
		ws := newWorkspace(t, map[string]string{"notes/a.md": fmt.Sprint(i), "summary.md": "s"})
		store(t, c, keyInput(ws), "done")
	}
	hex := strings.Repeat("cd", 32)
	strays := []string{
		"notes.txt",                        // beside the cache
		"entries/readme.md",                // in entries/, not in a shard
		"entries/ab.log",                   // in entries/, not a log
		"entries/ab/notes.txt",             // in a shard, not an entry
		"entries/zz/" + hex + ".json",      // a shard that is not one
		"entries/ab/" + hex + ".json",      // an entry in the wrong shard
		"entries/cd/" + hex[:10] + ".json", // not a key
		"mine/" + hex + ".json",
	}
	for _, s := range strays {
		writeFiles(t, c.Dir(), map[string]string{s: "user data"})
	}
	writeFiles(t, c.Dir(), map[string]string{"entries/ef/.tmp-" + hex + ".json-123": "partial"})

	removed, err := c.Clear(ctx)
	require.NoError(t, err)
	assert.Equal(t, 3, removed)
	for _, s := range strays {
		assert.FileExists(t, filepath.Join(c.Dir(), s))
	}
	assert.NoFileExists(t, filepath.Join(c.Dir(), "entries/ef/.tmp-"+hex+".json-123"))
	assert.FileExists(t, filepath.Join(c.Dir(), markerName))
	st, err := c.Stats(ctx)
	require.NoError(t, err)
	assert.Zero(t, st.Entries)
	assert.Zero(t, st.Corrupt)
}

// Pointed at a directory that is not a cache, Stats and Clear refuse and
// nothing is deleted, even files that look like entries.
func TestNotACacheDirectory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	hex := strings.Repeat("ab", 32)
	user := map[string]string{"report.md": "mine", "entries/ab/" + hex + ".json": `{"version":1}`}
	writeFiles(t, dir, user)
	// Someone else's cache directory tag is not ours either.
	writeFiles(t, dir, map[string]string{markerName: "Signature: 8a477f597d28d172789f06886806bc55\n# created by another tool\n"})
	c, err := New(dir)
	require.NoError(t, err)

	_, err = c.Clear(ctx)
	assert.ErrorIs(t, err, ErrNotCache)
	_, err = c.Stats(ctx)
	assert.ErrorIs(t, err, ErrNotCache)
	for name := range user {
		assert.FileExists(t, filepath.Join(dir, name))
	}

	for _, empty := range []string{filepath.Join(dir, "nothing-here"), t.TempDir()} {
		c, err := New(empty)
		require.NoError(t, err)
		removed, err := c.Clear(ctx)
		assert.NoError(t, err, "a cache never written is empty")
		assert.Zero(t, removed)
		st, err := c.Stats(ctx)
		assert.NoError(t, err)
		assert.Zero(t, st.Entries)
	}
}

func TestMarker(t *testing.T) {
	t.Parallel()
	assert.True(t, isMarker([]byte(marker)))
	assert.False(t, isMarker([]byte("Signature: 8a477f597d28d172789f06886806bc55\n")))
	assert.False(t, isMarker([]byte("# created by agentspec\n")))
}

// Environment variables are process-wide: no t.Parallel here.
func TestDefaultDir(t *testing.T) {
	override := t.TempDir()
	t.Setenv(EnvDir, override)
	dir, err := DefaultDir()
	require.NoError(t, err)
	assert.Equal(t, override, dir)
	c, err := New("")
	require.NoError(t, err)
	assert.Equal(t, override, c.Dir())

	t.Setenv(EnvDir, "")
	base, err := os.UserCacheDir()
	if err != nil {
		t.Skipf("no user cache directory: %v", err)
	}
	dir, err = DefaultDir()
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(base, "agentspec"), dir)
}

func TestNewMakesDirAbsolute(t *testing.T) {
	t.Parallel()
	c, err := New("relative/cache")
	require.NoError(t, err)
	assert.True(t, filepath.IsAbs(c.Dir()))
	_, err = os.Stat(c.Dir())
	assert.ErrorIs(t, err, os.ErrNotExist, "New touches nothing")
}

func BenchmarkKey(b *testing.B) {
	ws := b.TempDir()
	files := map[string]string{}
	for i := range 1000 {
		files[fmt.Sprintf("notes/d%02d/n%04d.md", i%20, i)] = fmt.Sprintf("# Note %d\n\nSome text of note %d.\n", i, i)
	}
	writeFiles(b, ws, files)
	k := keyInput(ws)
	k.InputGlobs = []string{"notes/**/*.md"}
	_, ing, err := Key(ctx, k)
	require.NoError(b, err)
	require.Equal(b, 1000, ing.Files)
	b.ResetTimer()
	for b.Loop() {
		if _, _, err := Key(ctx, k); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1000, "ns/file")
}

func TestStoreErrors(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t, map[string]string{"notes/a.md": "alpha", "summary.md": "s"})
	file := filepath.Join(t.TempDir(), "a-file")
	writeFiles(t, filepath.Dir(file), map[string]string{"a-file": "x"})
	c, err := New(file)
	require.NoError(t, err)
	_, err = c.Store(ctx, keyInput(ws), Entry{Output: "done"})
	assert.Error(t, err, "a cache directory that is a file")
	assert.NotErrorIs(t, err, ErrNotCacheable)

	good, _ := newCache(t)
	k := keyInput(ws)
	k.Spec = []byte("{")
	_, err = good.Store(ctx, k, Entry{Output: "done"})
	assert.Error(t, err, "a key that cannot be computed")
	_, _, _, err = good.Lookup(ctx, k)
	assert.Error(t, err)
}
