package queue

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"path/filepath"
	gort "runtime"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// heapWatchingStore is an object store whose Put reads what it is given
// in chunks, as the JetStream one does, and notes the heap still in use
// (after a collection) every few MiB of it.
type heapWatchingStore struct {
	jetstream.ObjectStore
	base, peak uint64
	size       int64
}

func (s *heapWatchingStore) Put(_ context.Context, _ jetstream.ObjectMeta, r io.Reader) (*jetstream.ObjectInfo, error) {
	chunk := make([]byte, 128<<10)
	next := int64(0)
	for {
		n, err := r.Read(chunk)
		s.size += int64(n)
		if s.size >= next {
			next += 4 << 20
			gort.GC()
			var ms gort.MemStats
			gort.ReadMemStats(&ms)
			s.peak = max(s.peak, ms.HeapAlloc)
		}
		if err == io.EOF {
			return &jetstream.ObjectInfo{}, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

func (s *heapWatchingStore) PutBytes(ctx context.Context, name string, data []byte) (*jetstream.ObjectInfo, error) {
	return s.Put(ctx, jetstream.ObjectMeta{Name: name}, bytes.NewReader(data))
}

// Shipping a workspace holds no more than a file of it and a chunk or so in
// memory, however large its archive: the archive is made in a temporary
// file and goes up from there, where it was once made in a buffer that grew
// to twice its size.
func TestShippingHoldsNoWholeArchive(t *testing.T) {
	// Not parallel: the heap is the process's.
	dir := t.TempDir()
	data := make([]byte, 256<<10)
	for i := range 128 { // 32 MiB that does not compress
		_, _ = rand.Read(data)
		require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%03d.bin", i)), data, 0o644))
	}
	data = nil
	gort.GC()
	var ms gort.MemStats
	gort.ReadMemStats(&ms)
	obs := &heapWatchingStore{base: ms.HeapAlloc}
	m, err := shipTo(context.Background(), obs, "x", dir, "", DefaultShipMax, nil)
	require.NoError(t, err)
	assert.Len(t, m, 128)
	held := int64(obs.peak) - int64(obs.base)
	t.Logf("shipping a %d MiB archive held %.1f MiB", obs.size>>20, float64(held)/(1<<20))
	assert.Greater(t, obs.size, int64(32<<20))
	assert.Less(t, held, int64(8<<20), "held %.1f MiB for a %d MiB archive", float64(held)/(1<<20), obs.size>>20)
}

// A workspace whose archive is over the cap by a byte is refused before
// its job is published, and leaves nothing in the object store; one whose
// archive is the cap exactly is shipped.
func TestShipMaxIsExact(t *testing.T) {
	t.Parallel()
	url := startServer(t)
	root := t.TempDir()
	specPath, s := writeSpec(t, t.TempDir(), agentYAML, copyTurns)
	dirs := jobDirs(t, root, 1)
	data := make([]byte, 300<<10) // more than two of the store's chunks
	_, _ = rand.Read(data)
	require.NoError(t, os.WriteFile(filepath.Join(dirs[0], "data.bin"), data, 0o644))
	archive, _, err := packDir(dirs[0], DefaultShipMax, nil)
	require.NoError(t, err)
	size := int64(len(archive))
	q := connect(t, url, 0)

	b, err := q.NewBatch(BatchOptions{SpecPath: specPath, Spec: s, Workspaces: dirs, Ship: true, ShipMax: size - 1})
	require.NoError(t, err)
	err = b.Publish(context.Background())
	require.EqualError(t, err, fmt.Sprintf("shipping %s: %s: the archive would be more than %d bytes", dirs[0], dirs[0], size-1))
	st, err := q.Stats(context.Background(), "")
	require.NoError(t, err)
	assert.Zero(t, st.Pending, "no job is published")
	obs, err := q.shipStore(context.Background())
	require.NoError(t, err)
	_, err = obs.GetInfo(context.Background(), b.Jobs[0].Ship.Object)
	require.ErrorIs(t, err, jetstream.ErrObjectNotFound, "nothing of it stays in the store")
	info, err := obs.Status(context.Background())
	require.NoError(t, err)
	assert.Zero(t, info.Size(), "not a chunk of it")

	b, err = q.NewBatch(BatchOptions{SpecPath: specPath, Spec: s, Workspaces: dirs, Ship: true, ShipMax: size})
	require.NoError(t, err)
	require.NoError(t, b.Publish(context.Background()))
	got, err := obs.GetBytes(context.Background(), b.Jobs[0].Ship.Object)
	require.NoError(t, err)
	assert.Equal(t, archive, got)
}

// countingStore is an object store that counts what its Put is given, and
// notes the file it is read from.
type countingStore struct {
	jetstream.ObjectStore
	puts  int
	read  int64
	spool string
	from  string
}

func (s *countingStore) Put(_ context.Context, _ jetstream.ObjectMeta, r io.Reader) (*jetstream.ObjectInfo, error) {
	s.puts++
	if f, ok := r.(*os.File); ok {
		s.from = f.Name()
	}
	n, err := io.Copy(io.Discard, r)
	s.read += n
	return &jetstream.ObjectInfo{}, err
}

// An archive over the cap is found before anything of it is uploaded: the
// store is not asked to take a byte of it, rather than given chunks up to
// the cap and told to purge them. One within the cap goes up whole.
func TestArchiveOverTheCapUploadsNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	data := make([]byte, 600<<10) // several of the store's chunks, that do not compress
	_, _ = rand.Read(data)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "data.bin"), data, 0o644))
	archive, _, err := packDir(dir, DefaultShipMax, nil)
	require.NoError(t, err)

	spool := t.TempDir()
	obs := &countingStore{spool: spool}
	_, err = shipTo(context.Background(), obs, "x", dir, spool, int64(len(archive))-1, nil)
	require.EqualError(t, err, fmt.Sprintf("%s: the archive would be more than %d bytes", dir, len(archive)-1))
	assert.Zero(t, obs.puts, "no upload was started")
	assert.Zero(t, obs.read, "not a byte was uploaded")

	m, err := shipTo(context.Background(), obs, "x", dir, spool, int64(len(archive)), nil)
	require.NoError(t, err)
	assert.Len(t, m, 1)
	assert.Equal(t, int64(len(archive)), obs.read)
	assert.Equal(t, spool, filepath.Dir(obs.from), "it went up from a file in the directory asked")
	left, err := os.ReadDir(spool)
	require.NoError(t, err)
	assert.Empty(t, left, "nothing of it stays there")
}

// A workspace may hold the temporary directory the archive is made in (a
// submitter's $TMPDIR set to a directory of its project): the archive
// does not take in the file it is being made in, half written, which the
// worker would unpack into the job's copy and which counted against the
// cap as much again as what was packed before it.
func TestArchiveLeavesOutItsOwnTemporaryFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	data := make([]byte, 600<<10) // more than a chunk of the archive, so that some is written before tmp is packed
	_, _ = rand.Read(data)
	writeFiles(t, dir, map[string]string{"a.bin": string(data), "tmp/kept.txt": "a file of the project's own\n", "z.txt": "last\n"})
	spool := filepath.Join(dir, "tmp")
	obs := &countingStore{spool: spool}
	m, err := shipTo(context.Background(), obs, "x", dir, spool, DefaultShipMax, nil)
	require.NoError(t, err)
	var names []string
	for rel := range m {
		names = append(names, rel)
	}
	assert.ElementsMatch(t, []string{"a.bin", "tmp/kept.txt", "z.txt"}, names)
}
