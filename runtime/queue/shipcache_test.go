package queue

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A shipped job whose changes the submitter refuses leaves nothing in the
// shared cache: its key covers input.txt alone, not the out.txt it wrote,
// so an entry stored by the worker would replay, on the next run, a success
// whose out.txt was never applied. Once its changes are applied, the result
// is cached, and the next run is replayed.
func TestShippedChangesRefusedAreNotCached(t *testing.T) {
	t.Parallel()
	// No expected_output_files: a hit does not need out.txt to be there.
	agent := strings.Replace(agentYAML, "  expected_output_files: [out.txt]\n", "", 1) + "cache: true\n"
	specPath, s := writeSpec(t, t.TempDir(), agent, copyTurns)
	url := startServer(t)
	startWorker(t, url, WorkerOptions{Name: "w1", WorkspaceRoot: t.TempDir(), MaxAttempts: 1})
	q := connect(t, url, 0)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ws := jobDirs(t, t.TempDir(), 1)[0]

	opts := BatchOptions{SpecPath: specPath, Spec: s, Workspaces: []string{ws}, Ship: true,
		Claim: func(file string) string {
			if filepath.Base(file) == "out.txt" {
				return "conflict: taken by another item"
			}
			return ""
		}}
	_, err := q.Run(ctx, opts)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "out.txt: conflict: taken by another item")
	assert.NoFileExists(t, filepath.Join(ws, "out.txt"))

	opts.Claim = nil
	res, err := q.Run(ctx, opts)
	require.NoError(t, err)
	assert.False(t, res.Cached, "the refused run's answer is not replayed")
	assert.FileExists(t, filepath.Join(ws, "out.txt"), "the run again wrote it, and it is applied")

	res, err = q.Run(ctx, opts)
	require.NoError(t, err)
	assert.True(t, res.Cached, "a run whose changes were applied is cached")
}

// A shipped job's result is what anyone could have published: the entry
// it brings is stored only when it is one, under a cache key; the job's
// outcome is its own all the same, with a warning.
func TestShippedResultsForgedEntryIsNotStored(t *testing.T) {
	t.Parallel()
	url := startServer(t)
	q := connect(t, url, 0)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	handBacks, err := q.handBacks(ctx)
	require.NoError(t, err)
	specPath, s := writeSpec(t, t.TempDir(), agentYAML, copyTurns)
	b, err := q.NewBatch(BatchOptions{SpecPath: specPath, Spec: s, Workspaces: jobDirs(t, t.TempDir(), 1), Ship: true})
	require.NoError(t, err)
	key := strings.Repeat("ab", 32)
	for _, e := range []CacheEntry{
		{Bucket: handBacks.Bucket(), Key: b.Jobs[0].ID, Data: json.RawMessage(`{"key":"` + b.Jobs[0].ID + `"}`)},
		{Bucket: handBacks.Bucket(), Key: key, Data: json.RawMessage(`7`)},
		{Bucket: handBacks.Bucket(), Key: key, Data: json.RawMessage(`{"key":"` + strings.Repeat("cd", 32) + `"}`)},
	} {
		o := b.outcome(ctx, Result{Job: b.Jobs[0].ID, Batch: b.ID, OK: true, Output: json.RawMessage(`"done"`), Entry: &e})
		require.NoError(t, o.Err)
		assert.Nil(t, o.Entry, "the entry is no part of the outcome")
		require.Len(t, o.Warnings, 1)
		assert.Contains(t, o.Warnings[0], "the result was not cached: its entry is not one filed under")
	}
	keys, err := handBacks.ListKeys(ctx)
	require.NoError(t, err)
	var written []string
	for k := range keys.Keys() {
		written = append(written, k)
	}
	assert.Empty(t, written)
}

// A shipped job's result that fits in a message without its cache entry,
// and not with it, goes without it: the job succeeds, uncached, rather than
// fail as too big.
func TestShippedResultTooBigWithItsEntryGoesWithout(t *testing.T) {
	t.Parallel()
	url := startServer(t)
	// The answer is 400 kB, in the result once and in the entry twice (as
	// text and as JSON): 1.2 MB with it, over the server's 1 MB default
	// max_payload.
	agent := "model: test\ninstructions: Answer.\ncache: true\n" +
		"output_schema: {type: object, required: [s], properties: {s: {type: string, minLength: 400000}}}\n"
	specPath, s := writeSpec(t, t.TempDir(), agent, "turns: []\n")
	q := connect(t, url, 10*time.Second) // a long answer under -race (see TestResultOverTheServersMaxPayload)
	startWorkerOn(t, q, WorkerOptions{Name: "w", WorkspaceRoot: t.TempDir()})
	opts := BatchOptions{SpecPath: specPath, Spec: s, Workspaces: jobDirs(t, t.TempDir(), 1), Ship: true}
	for range 2 {
		got, _ := submit(t, q, opts)
		require.Len(t, got, 1)
		require.NoError(t, got[0].Err)
		assert.False(t, got[0].Cached)
	}
}
