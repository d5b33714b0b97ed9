package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/runtime/cache"
)

func invokeCache(t *testing.T, args ...string) runOutcome {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := Main(context.Background(), append([]string{"cache"}, args...), strings.NewReader(""), &stdout, &stderr)
	return runOutcome{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// filledCache stores one entry per spec name in a fresh cache directory, each
// from its own workspace, stamped a day apart from 2025-05-01.
func filledCache(t *testing.T, specNames ...string) string {
	t.Helper()
	dir := t.TempDir()
	day := 0
	clock := func() time.Time { day++; return time.Date(2025, 5, day, 0, 0, 0, 0, time.UTC) }
	c, err := cache.New(dir, cache.WithClock(clock))
	require.NoError(t, err)
	for i, name := range specNames {
		ws := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(ws, "notes.md"), []byte(fmt.Sprint(i)), 0o644))
		k := cache.KeyInput{Spec: []byte(`{"name":"` + name + `"}`), Model: "openai:gpt-4o", Workspace: ws, InputGlobs: []string{"*.md"}}
		_, err := c.Store(context.Background(), k, cache.Entry{Output: "done", SpecName: name})
		require.NoError(t, err)
	}
	return dir
}

func TestCacheStats(t *testing.T) {
	t.Parallel()
	dir := filledCache(t, "summariser", "reviewer", "summariser", "")
	c, err := cache.New(dir)
	require.NoError(t, err)
	want, err := c.Stats(context.Background())
	require.NoError(t, err)

	out := invokeCache(t, "stats", "--dir", dir)
	require.Equal(t, 0, out.code, out.stderr)
	assert.Empty(t, out.stderr)
	assert.Equal(t, fmt.Sprintf(`directory  %s
entries    4
size       %s
oldest     2025-05-01T00:00:00Z
newest     2025-05-04T00:00:00Z
specs      summariser 2, (unnamed) 1, reviewer 1
`, dir, formatBytes(want.Bytes)), out.stdout)

	out = invokeCache(t, "stats", "--dir", dir, "--json")
	require.Equal(t, 0, out.code, out.stderr)
	var got cache.Stats
	require.NoError(t, json.Unmarshal([]byte(out.stdout), &got))
	assert.Equal(t, want, got)
	assert.Equal(t, 4, got.Entries)
	assert.Equal(t, map[string]int{"summariser": 2, "reviewer": 1, "": 1}, got.Specs)
}

func TestCacheStatsCorrupt(t *testing.T) {
	t.Parallel()
	dir := filledCache(t, "summariser")
	key := strings.Repeat("ab", 32)
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "entries", "ab"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "entries", "ab", key+".json"), []byte("{trunc"), 0o600))

	out := invokeCache(t, "stats", "--dir", dir)
	require.Equal(t, 0, out.code, out.stderr)
	assert.Contains(t, out.stdout, "entries    1\ncorrupt    1\n")
}

func TestCacheStatsEmpty(t *testing.T) {
	t.Parallel()
	for _, dir := range []string{t.TempDir(), filepath.Join(t.TempDir(), "never-written")} {
		out := invokeCache(t, "stats", "--dir", dir)
		require.Equal(t, 0, out.code, out.stderr)
		assert.Equal(t, fmt.Sprintf("directory  %s\nentries    0\nsize       0 B\n", dir), out.stdout)
	}
}

func TestCacheClear(t *testing.T) {
	t.Parallel()
	dir := filledCache(t, "a", "b", "c")
	mine := filepath.Join(dir, "notes.txt")
	require.NoError(t, os.WriteFile(mine, []byte("not the cache's"), 0o644))

	out := invokeCache(t, "clear", "--dir", dir)
	require.Equal(t, 0, out.code, out.stderr)
	assert.Equal(t, fmt.Sprintf("removed 3 entries from %s\n", dir), out.stdout)
	assert.FileExists(t, mine)

	out = invokeCache(t, "--dir", dir, "stats", "--json")
	require.Equal(t, 0, out.code, out.stderr)
	var st cache.Stats
	require.NoError(t, json.Unmarshal([]byte(out.stdout), &st))
	assert.Zero(t, st.Entries)
	assert.Zero(t, st.Bytes)

	out = invokeCache(t, "clear", "--dir", dir)
	require.Equal(t, 0, out.code, out.stderr)
	assert.Equal(t, fmt.Sprintf("removed 0 entries from %s\n", dir), out.stdout)
}

func TestCacheRefusesOtherDirectories(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	precious := filepath.Join(dir, "thesis.md")
	require.NoError(t, os.WriteFile(precious, []byte("years of work"), 0o644))

	for _, cmd := range []string{"clear", "stats"} {
		out := invokeCache(t, cmd, "--dir", dir)
		assert.Equal(t, exitUsage, out.code, cmd)
		assert.Contains(t, out.stderr, "not an agentspec cache directory", cmd)
		assert.Empty(t, out.stdout, cmd)
	}
	assert.FileExists(t, precious)
}

func TestCacheUsage(t *testing.T) {
	t.Parallel()
	out := invokeCache(t)
	assert.Equal(t, 0, out.code)
	assert.Contains(t, out.stdout, "stats")
	assert.Contains(t, out.stdout, "clear")

	for _, args := range [][]string{{"purge"}, {"stats", "extra"}, {"clear", "--json"}} {
		out := invokeCache(t, args...)
		assert.Equal(t, exitUsage, out.code, "%v", args)
		assert.NotEmpty(t, out.stderr, "%v", args)
	}
}

// Environment variables are process-wide: no t.Parallel here.
func TestCacheDefaultDirFromEnvironment(t *testing.T) {
	dir := filledCache(t, "summariser")
	t.Setenv(cache.EnvDir, dir)

	out := invokeCache(t, "stats")
	require.Equal(t, 0, out.code, out.stderr)
	assert.Contains(t, out.stdout, "directory  "+dir+"\nentries    1\n")

	out = invokeCache(t, "clear")
	require.Equal(t, 0, out.code, out.stderr)
	assert.Equal(t, fmt.Sprintf("removed 1 entry from %s\n", dir), out.stdout)
}

func TestFormatBytes(t *testing.T) {
	t.Parallel()
	for n, want := range map[int64]string{
		0:          "0 B",
		1023:       "1023 B",
		1024:       "1.0 KiB (1024 bytes)",
		1536:       "1.5 KiB (1536 bytes)",
		5 << 20:    "5.0 MiB (5242880 bytes)",
		3 << 30:    "3.0 GiB (3221225472 bytes)",
		2048 << 30: "2.0 TiB (2199023255552 bytes)",
		5000 << 40: "5000.0 TiB (5497558138880000 bytes)",
	} {
		assert.Equal(t, want, formatBytes(n), "%d", n)
	}
}

// A cache directory that is a file is a usage error, whether --dir or the
// environment names it, and the file is left as it was.
func TestCacheRefusesAFileAsItsDirectory(t *testing.T) {
	file := filepath.Join(t.TempDir(), "notes.txt")
	require.NoError(t, os.WriteFile(file, []byte("keep me"), 0o644))
	for _, cmd := range []string{"stats", "clear"} {
		out := invokeCache(t, cmd, "--dir", file)
		assert.Equal(t, exitUsage, out.code, cmd)
		assert.Equal(t, "agentspec: --dir "+file+" is not a directory\n", out.stderr, cmd)
		assert.Empty(t, out.stdout, cmd)
	}
	t.Setenv(cache.EnvDir, file) // process-wide: no t.Parallel
	out := invokeCache(t, "stats")
	assert.Equal(t, exitUsage, out.code)
	assert.Equal(t, "agentspec: $"+cache.EnvDir+" "+file+" is not a directory\n", out.stderr)
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.Equal(t, "keep me", string(data))
}

// -o with a format stats does not know is a usage error before the cache
// is read, even a cache that cannot be read.
func TestCacheStatsChecksTheFormatFirst(t *testing.T) {
	t.Parallel()
	dir := filledCache(t, "summariser")
	require.NoError(t, os.RemoveAll(filepath.Join(dir, "entries")))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "entries"), nil, 0o644)) // unreadable as a cache
	require.Equal(t, exitFailure, invokeCache(t, "stats", "--dir", dir).code)

	out := invokeCache(t, "stats", "--dir", dir, "-o", "yaml")
	assert.Equal(t, exitUsage, out.code, out.stderr)
	assert.Equal(t, "agentspec: --output must be text or json, not \"yaml\"\n", out.stderr)
}
