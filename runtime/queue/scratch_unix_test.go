//go:build unix

package queue

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A worker starting removes the scratch directories of workers that were
// killed, and leaves those of live workers, and directories it cannot tell
// about, alone.
func TestWorkerSweepsScratchOfKilledWorkers(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // not parallel: the environment is the process's
	scratch := func(name string) string {
		dir := filepath.Join(tmp, scratchPrefix+name)
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "0123456789abcdef"), 0o700))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "0123456789abcdef", "agent.yaml"), []byte("model: test\n"), 0o600))
		return dir
	}
	dead := scratch("dead")
	f, err := os.Create(filepath.Join(dead, scratchLock)) // its worker's lock, let go at its death
	require.NoError(t, err)
	require.NoError(t, f.Close())
	live := scratch("live")
	release, err := holdScratch(live)
	require.NoError(t, err)
	defer release()
	unlocked := scratch("starting") // no lock yet: a worker between mkdir and lock

	url := startServer(t)
	w := startWorker(t, url, WorkerOptions{Name: "sweeper", Concurrency: 1})
	require.Eventually(t, func() bool {
		_, err := os.Stat(dead)
		return os.IsNotExist(err)
	}, 10*time.Second, 10*time.Millisecond, "the killed worker's scratch directory stays")
	for _, dir := range []string{live, unlocked} {
		_, err := os.Stat(dir)
		assert.NoError(t, err, "%s was removed", dir)
	}
	own, err := filepath.Glob(filepath.Join(tmp, scratchPrefix+"*"))
	require.NoError(t, err)
	assert.Len(t, own, 3, "the sweeper's own, the live one and the starting one: %v", own)
	w.stop()
	left, err := filepath.Glob(filepath.Join(tmp, scratchPrefix+"*"))
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{live, unlocked}, left, "a worker removes its own scratch directory when it stops")
}

// Of the shipped workspaces' copies below a root, a sweep removes those a
// killed worker of this host left, with their locks, and leaves a live
// worker's, another host's (whose lock need not be seen here) and a copy
// without a lock alone.
func TestSweepCopies(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	host, err := os.Hostname()
	require.NoError(t, err)
	copyOf := func(name, owner string) string {
		dir := filepath.Join(base, name)
		writeFiles(t, dir, map[string]string{"input.txt": "shipped\n"})
		if owner != "" {
			require.NoError(t, os.WriteFile(dir+copyLock, []byte(owner), 0o600))
		}
		return dir
	}
	dead := copyOf("job-0-1", host)
	elsewhere := copyOf("job-0-2", host+".elsewhere")
	unlocked := copyOf("job-0-3", "")
	live, release, err := newCopyDir(base, "job-0-")
	require.NoError(t, err)
	defer release()

	sweepCopies(base)
	for _, p := range []string{dead, dead + copyLock} {
		_, err := os.Stat(p)
		assert.True(t, os.IsNotExist(err), "%s stays", p)
	}
	for _, p := range []string{elsewhere, elsewhere + copyLock, unlocked, live, live + copyLock} {
		_, err := os.Stat(p)
		assert.NoError(t, err, "%s was removed", p)
	}
	release()
	entries, err := os.ReadDir(base)
	require.NoError(t, err)
	assert.Len(t, entries, 3, "a live copy goes with its lock: %v", entries)
}
