package queue

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPackAndUnpack(t *testing.T) {
	t.Parallel()
	src := t.TempDir()
	writeFiles(t, src, map[string]string{"a.txt": "a\n", "sub/b.txt": "b\n", ".env": "x=1\n"})
	require.NoError(t, os.Chmod(filepath.Join(src, "a.txt"), 0o755))
	require.NoError(t, os.Symlink("/etc/passwd", filepath.Join(src, "link")))

	archive, m, err := packDir(src, DefaultShipMax, nil)
	require.NoError(t, err)
	assert.Len(t, m, 3, "regular files travel, hidden ones included, links do not: %v", m)

	dst := t.TempDir()
	got, err := unpackInto(dst, bytes.NewReader(archive), DefaultShipMax)
	require.NoError(t, err)
	assert.Equal(t, m, got)
	b, err := os.ReadFile(filepath.Join(dst, "sub", "b.txt"))
	require.NoError(t, err)
	assert.Equal(t, "b\n", string(b))
	st, err := os.Stat(filepath.Join(dst, "a.txt"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o755), st.Mode().Perm(), "permission bits travel")
	_, err = os.Lstat(filepath.Join(dst, "link"))
	assert.ErrorIs(t, err, os.ErrNotExist)

	_, _, err = packDir(src, 64, nil)
	assert.ErrorContains(t, err, "the archive would be more than 64 bytes")
}

// A file that grows or shrinks while it is packed (a build writing it, an
// editor saving it) travels as it was read, its manifest hash that of what
// travelled, rather than failing the job with the archive's "write too
// long" or "missed writing".
func TestPackFileChangingAsItIsRead(t *testing.T) {
	t.Parallel()
	src := t.TempDir()
	name := filepath.Join(src, "log.txt")
	require.NoError(t, os.WriteFile(name, bytes.Repeat([]byte("x"), 1<<20), 0o644))
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		line := bytes.Repeat([]byte("y"), 4096)
		for size := 1 << 20; ; size = (size + 4096) % (2 << 20) {
			select {
			case <-stop:
				return
			default:
			}
			f, err := os.OpenFile(name, os.O_WRONLY, 0)
			if err != nil {
				continue
			}
			f.Truncate(int64(size)) // shrinks it now and then
			f.WriteAt(line, int64(size))
			f.Close()
		}
	}()
	defer func() { close(stop); <-done }()
	for range 30 {
		archive, m, err := packDir(src, DefaultShipMax, nil)
		require.NoError(t, err)
		dst := t.TempDir()
		got, err := unpackInto(dst, bytes.NewReader(archive), DefaultShipMax)
		require.NoError(t, err)
		assert.Equal(t, m, got, "the manifest is of what travelled")
	}
}

// An archive cannot place a file outside the directory it is unpacked in.
func TestUnpackRefusesEscapes(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"../evil", "/etc/evil", "a/../../evil", `..\evil`, ""} {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		tw := tar.NewWriter(zw)
		require.NoError(t, tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Size: 1, Mode: 0o644}))
		_, _ = tw.Write([]byte("x"))
		require.NoError(t, tw.Close())
		require.NoError(t, zw.Close())
		dir := t.TempDir()
		_, err := unpackInto(filepath.Join(dir), bytes.NewReader(buf.Bytes()), DefaultShipMax)
		assert.ErrorContains(t, err, "does not name a file inside the workspace", name)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	require.NoError(t, tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: "l", Linkname: "/etc"}))
	require.NoError(t, tw.Close())
	require.NoError(t, zw.Close())
	_, err := unpackInto(t.TempDir(), bytes.NewReader(buf.Bytes()), DefaultShipMax)
	assert.ErrorContains(t, err, "not a regular file")
}

// The changes a run made come back whole, deletions included, unless the
// submitter's copy changed meanwhile: then nothing is touched and the
// changes are saved beside the workspace.
func TestApplyChanges(t *testing.T) {
	t.Parallel()
	setup := func(t *testing.T) (home string, shipped manifest, ch *Changes, archive []byte) {
		home = t.TempDir()
		writeFiles(t, home, map[string]string{"keep.txt": "keep\n", "edit.txt": "old\n", "gone.txt": "gone\n"})
		_, shipped, err := packDir(home, DefaultShipMax, nil)
		require.NoError(t, err)
		copyDir := t.TempDir()
		writeFiles(t, copyDir, map[string]string{"keep.txt": "keep\n", "edit.txt": "new\n", "sub/new.txt": "fresh\n"})
		changed, deleted, err := changesSince(copyDir, shipped)
		require.NoError(t, err)
		assert.Equal(t, []string{"edit.txt", "sub/new.txt"}, changed)
		assert.Equal(t, []string{"gone.txt"}, deleted)
		want := map[string]bool{"edit.txt": true, "sub/new.txt": true}
		archive, _, err = packDir(copyDir, DefaultShipMax, func(rel string) bool { return want[rel] })
		require.NoError(t, err)
		return home, shipped, &Changes{Files: changed, Deleted: deleted}, archive
	}

	t.Run("applied", func(t *testing.T) {
		t.Parallel()
		home, shipped, ch, archive := setup(t)
		require.NoError(t, applyChanges(home, shipped, ch, archive, DefaultShipMax, noRefusal))
		got, err := hashDir(home)
		require.NoError(t, err)
		assert.Len(t, got, 3)
		for name, want := range map[string]string{"keep.txt": "keep\n", "edit.txt": "new\n", "sub/new.txt": "fresh\n"} {
			b, err := os.ReadFile(filepath.Join(home, name))
			require.NoError(t, err)
			assert.Equal(t, want, string(b))
		}
		_, err = os.Stat(filepath.Join(home, "gone.txt"))
		assert.ErrorIs(t, err, os.ErrNotExist)
	})
	t.Run("conflict", func(t *testing.T) {
		t.Parallel()
		home, shipped, ch, archive := setup(t)
		writeFiles(t, home, map[string]string{"edit.txt": "edited here meanwhile\n"})
		err := applyChanges(home, shipped, ch, archive, DefaultShipMax, noRefusal)
		var conflict *ConflictError
		require.ErrorAs(t, err, &conflict)
		assert.Equal(t, []string{"edit.txt"}, conflict.Files)
		b, err := os.ReadFile(filepath.Join(home, "edit.txt"))
		require.NoError(t, err)
		assert.Equal(t, "edited here meanwhile\n", string(b), "nothing is touched")
		_, err = os.Stat(filepath.Join(home, "gone.txt"))
		require.NoError(t, err, "nothing is deleted")
		saved, err := os.ReadFile(conflict.Saved)
		require.NoError(t, err)
		assert.Equal(t, archive, saved, "the run's changes are kept")
	})
	t.Run("a file made a directory", func(t *testing.T) {
		t.Parallel()
		// The run replaced the file "sub" with a directory holding a file,
		// and the directory "dir" with a file.
		home := t.TempDir()
		writeFiles(t, home, map[string]string{"sub": "a file\n", "dir/x": "x\n"})
		_, shipped, err := packDir(home, DefaultShipMax, nil)
		require.NoError(t, err)
		copyDir := t.TempDir()
		writeFiles(t, copyDir, map[string]string{"sub/new.txt": "fresh\n", "dir": "now a file\n"})
		changed, deleted, err := changesSince(copyDir, shipped)
		require.NoError(t, err)
		archive, _, err := packDir(copyDir, DefaultShipMax, nil)
		require.NoError(t, err)
		require.NoError(t, applyChanges(home, shipped, &Changes{Files: changed, Deleted: deleted}, archive, DefaultShipMax, noRefusal))
		for name, want := range map[string]string{"sub/new.txt": "fresh\n", "dir": "now a file\n"} {
			b, err := os.ReadFile(filepath.Join(home, name))
			require.NoError(t, err)
			assert.Equal(t, want, string(b))
		}
	})
	t.Run("a file here where a directory must go", func(t *testing.T) {
		t.Parallel()
		home, shipped, ch, archive := setup(t)
		writeFiles(t, home, map[string]string{"sub": "made here meanwhile\n"})
		err := applyChanges(home, shipped, ch, archive, DefaultShipMax, noRefusal)
		var conflict *ConflictError
		require.ErrorAs(t, err, &conflict)
		assert.Equal(t, []string{"sub"}, conflict.Files)
		b, err := os.ReadFile(filepath.Join(home, "edit.txt"))
		require.NoError(t, err)
		assert.Equal(t, "old\n", string(b), "nothing is applied, not even the files before it")
		saved, err := os.ReadFile(conflict.Saved)
		require.NoError(t, err)
		assert.Equal(t, archive, saved, "the run's changes are kept")
	})
}

func TestResolveWorkspace(t *testing.T) {
	t.Parallel()
	root, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	outside := t.TempDir()
	writeFiles(t, root, map[string]string{"jobs/a/x": "", "file": "", ".agentspec-ship/job-1/x": ""})
	require.NoError(t, os.Symlink(outside, filepath.Join(root, "out")))
	require.NoError(t, os.Symlink("jobs/a", filepath.Join(root, "in")))
	require.NoError(t, os.Symlink(".", filepath.Join(root, "self")))
	require.NoError(t, os.Symlink(".agentspec-ship", filepath.Join(root, "ships")))

	for rel, want := range map[string]string{
		"jobs/a": filepath.Join(root, "jobs", "a"),
		"in":     filepath.Join(root, "jobs", "a"),
		"./jobs": filepath.Join(root, "jobs"),
	} {
		got, err := ResolveWorkspace(root, rel)
		require.NoError(t, err, rel)
		assert.Equal(t, want, got, rel)
	}
	for rel, msg := range map[string]string{
		"":                      "the job names no workspace",
		"/etc":                  `workspace "/etc": absolute paths are not allowed`,
		"../x":                  `workspace "../x": '..' is not allowed`,
		"jobs/../..":            `workspace "jobs/../..": '..' is not allowed`,
		"out":                   `workspace "out": escapes the workspace root`,
		"missing":               `workspace "missing": not found under the workspace root`,
		"file":                  `workspace "file": not a directory`,
		`jobs\..\..`:            `workspace "jobs\\..\\..": '..' is not allowed`,
		".":                     `workspace ".": the workspace root itself; a job's workspace must be a directory below it`,
		"./":                    `workspace "./": the workspace root itself; a job's workspace must be a directory below it`,
		"jobs/a/./../..":        `workspace "jobs/a/./../..": '..' is not allowed`,
		"self":                  `workspace "self": the workspace root itself; a job's workspace must be a directory below it`,
		"self/jobs/..":          `workspace "self/jobs/..": '..' is not allowed`,
		".agentspec-ship/job-1": `workspace ".agentspec-ship/job-1": the worker's own directory of shipped workspaces`,
		".agentspec-ship":       `workspace ".agentspec-ship": the worker's own directory of shipped workspaces`,
		"ships":                 `workspace "ships": the worker's own directory of shipped workspaces`,
	} {
		_, err := ResolveWorkspace(root, rel)
		assert.EqualError(t, err, msg, rel)
	}
}

// A workspace root that holds the temporary directory, where workers keep
// their scratch directories (every job's spec and files), gives no job
// one of those, nor the temporary directory itself; a workspace elsewhere
// in the temporary directory is a workspace.
func TestResolveWorkspaceKeepsOutOfScratch(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	writeFiles(t, root, map[string]string{"tmp/" + scratchPrefix + "123/bundle-1/agent.yaml": "", "tmp/jobs/a/x": ""})
	require.NoError(t, os.Symlink("tmp/"+scratchPrefix+"123", filepath.Join(root, "link")))
	t.Setenv("TMPDIR", filepath.Join(root, "tmp"))

	got, err := ResolveWorkspace(root, "tmp/jobs/a")
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(root, "tmp", "jobs", "a"), got)
	for rel, msg := range map[string]string{
		"tmp/" + scratchPrefix + "123/bundle-1": `workspace "tmp/` + scratchPrefix + `123/bundle-1": a worker's scratch directory`,
		"tmp/" + scratchPrefix + "123":          `workspace "tmp/` + scratchPrefix + `123": a worker's scratch directory`,
		"link":                                  `workspace "link": a worker's scratch directory`,
		"tmp":                                   `workspace "tmp": holds the temporary directory, where workers keep their scratch directories`,
	} {
		_, err := ResolveWorkspace(root, rel)
		assert.EqualError(t, err, msg, rel)
	}
}

// The temporary directory a workspace may not hold, nor be a scratch
// directory of, is the worker's, which the submitter does not know: a
// submitter whose own $TMPDIR lies in a workspace, or is named like a
// worker's scratch directory, names the workspace all the same, and leaves
// the check to the workers.
func TestSubmitterLeavesTheTemporaryDirectoryToTheWorkers(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	writeFiles(t, root, map[string]string{"jobs/a/tmp/x": "", "jobs/" + scratchPrefix + "1/x": "", shipDir + "/x": ""})
	t.Setenv("TMPDIR", filepath.Join(root, "jobs", "a", "tmp"))
	name, err := WorkspaceName(root, filepath.Join(root, "jobs", "a"))
	require.NoError(t, err)
	assert.Equal(t, "jobs/a", name)

	t.Setenv("TMPDIR", filepath.Join(root, "jobs"))
	name, err = WorkspaceName(root, filepath.Join(root, "jobs", scratchPrefix+"1"))
	require.NoError(t, err)
	assert.Equal(t, "jobs/"+scratchPrefix+"1", name)

	specPath, s := writeSpec(t, t.TempDir(), agentYAML, copyTurns)
	b, err := (&Queue{}).NewBatch(BatchOptions{SpecPath: specPath, Spec: s, Workspaces: []string{filepath.Join(root, "jobs")}, WorkspaceRoot: root})
	require.NoError(t, err)
	assert.Equal(t, "jobs", b.Jobs[0].Workspace)

	// What the workers check on the same tree stays refused here.
	_, err = WorkspaceName(root, filepath.Join(root, shipDir))
	if assert.Error(t, err) {
		assert.Contains(t, err.Error(), "shipped workspaces")
	}
}

func TestBundlePath(t *testing.T) {
	t.Parallel()
	for name, ok := range map[string]bool{
		"turns.yaml": true, "scripts/t.yaml": true, "./t.yaml": true,
		"../t.yaml": false, "/abs/t.yaml": false, "": false, "a/../../t": false,
	} {
		_, err := bundlePath(name)
		assert.Equal(t, ok, err == nil, "%q: %v", name, err)
	}
}

// A worker takes shipped workspaces up to its own limit, whatever the
// submitter allowed itself: a bigger one fails at once, without running.
func TestWorkerShipLimitIsTheWorkers(t *testing.T) {
	t.Parallel()
	url := startServer(t)
	specPath, s := writeSpec(t, t.TempDir(), agentYAML, copyTurns)
	dirs := jobDirs(t, t.TempDir(), 1)
	noise := make([]byte, 8<<10)
	_, err := rand.Read(noise) // does not compress below the limit
	require.NoError(t, err)
	writeFiles(t, dirs[0], map[string]string{"noise.bin": string(noise)})
	startWorker(t, url, WorkerOptions{ShipMax: 4 << 10})
	q := connect(t, url, 0)

	got, _ := submit(t, q, BatchOptions{SpecPath: specPath, Spec: s, Workspaces: dirs, Ship: true, ShipMax: 1 << 20})
	require.Len(t, got, 1)
	assert.False(t, got[0].OK)
	assert.Equal(t, 1, got[0].Attempt, "not retried")
	assert.Equal(t, "the shipped workspace is more than this worker's limit of 4 KiB (agentspec worker --ship-max)", got[0].Error)
	_, err = os.Stat(filepath.Join(dirs[0], "out.txt"))
	assert.ErrorIs(t, err, os.ErrNotExist, "the job did not run")
}

// The bytes of an object are counted as they come, whatever size it
// claims.
func TestCappedReader(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		data string
		cap  int64
		over bool
	}{
		{"0123456789", 4, true},
		{"0123", 4, false},
		{"", 4, false},
		{"0123456789", 10, false},
		{"0123456789", 9, true},
	} {
		r := &cappedReader{r: iotest.OneByteReader(strings.NewReader(tc.data)), left: tc.cap}
		b, err := io.ReadAll(r)
		if tc.over {
			assert.ErrorIs(t, err, errTooBig, tc)
			assert.True(t, r.over)
			assert.Len(t, b, int(tc.cap))
			continue
		}
		require.NoError(t, err, tc)
		assert.Equal(t, tc.data, string(b))
		assert.False(t, r.over)
	}
}

// An archive cannot make directories without bound from entries that hold
// nothing: each entry costs its header and name against the limit, and
// one deeper or longer than a workspace's files is refused.
func TestUnpackCountsEntries(t *testing.T) {
	t.Parallel()
	archive := func(names ...string) []byte {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		tw := tar.NewWriter(zw)
		for _, n := range names {
			require.NoError(t, tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: n, Mode: 0o644}))
		}
		require.NoError(t, tw.Close())
		require.NoError(t, zw.Close())
		return buf.Bytes()
	}
	var names []string
	for i := range 100 {
		names = append(names, fmt.Sprintf("d%d/e/f/empty", i))
	}
	dir := t.TempDir()
	_, err := unpackInto(dir, bytes.NewReader(archive(names...)), 10_000)
	assert.ErrorContains(t, err, "archive: more than")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Less(t, len(entries), 20, "stopped once the entries' cost passed the limit")

	_, err = unpackInto(t.TempDir(), bytes.NewReader(archive(strings.Repeat("d/", 200)+"f")), DefaultShipMax)
	assert.ErrorContains(t, err, "deeper or longer than a workspace's files may be")
	got, err := unpackInto(t.TempDir(), bytes.NewReader(archive("a/b/empty")), DefaultShipMax)
	require.NoError(t, err)
	assert.Contains(t, got, "a/b/empty")
}

// A run that changes a file's permission bits alone (chmod +x) brings the
// change back, as one that changes its content does, and it conflicts the
// same way with a file whose bits or content changed here meanwhile.
func TestApplyModeChanges(t *testing.T) {
	t.Parallel()
	setup := func(t *testing.T) (home string, shipped manifest, ch *Changes, archive []byte) {
		home = t.TempDir()
		writeFiles(t, home, map[string]string{"run.sh": "echo hi\n", "keep.txt": "keep\n"})
		shippedArchive, shipped, err := packDir(home, DefaultShipMax, nil)
		require.NoError(t, err)
		copyDir := t.TempDir()
		unpacked, err := unpackInto(copyDir, bytes.NewReader(shippedArchive), DefaultShipMax)
		require.NoError(t, err)
		require.NoError(t, os.Chmod(filepath.Join(copyDir, "run.sh"), 0o755))
		changed, deleted, err := changesSince(copyDir, unpacked)
		require.NoError(t, err)
		assert.Equal(t, []string{"run.sh"}, changed, "a change of mode alone is a change")
		assert.Empty(t, deleted)
		archive, _, err = packDir(copyDir, DefaultShipMax, func(rel string) bool { return rel == "run.sh" })
		require.NoError(t, err)
		return home, shipped, &Changes{Files: changed}, archive
	}
	mode := func(t *testing.T, p string) os.FileMode {
		st, err := os.Stat(p)
		require.NoError(t, err)
		return st.Mode().Perm()
	}

	t.Run("applied", func(t *testing.T) {
		t.Parallel()
		home, shipped, ch, archive := setup(t)
		require.NoError(t, applyChanges(home, shipped, ch, archive, DefaultShipMax, noRefusal))
		assert.Equal(t, os.FileMode(0o755), mode(t, filepath.Join(home, "run.sh")))
		b, err := os.ReadFile(filepath.Join(home, "run.sh"))
		require.NoError(t, err)
		assert.Equal(t, "echo hi\n", string(b))
	})
	t.Run("mode changed here", func(t *testing.T) {
		t.Parallel()
		home, shipped, ch, archive := setup(t)
		require.NoError(t, os.Chmod(filepath.Join(home, "run.sh"), 0o700))
		err := applyChanges(home, shipped, ch, archive, DefaultShipMax, noRefusal)
		var conflict *ConflictError
		require.ErrorAs(t, err, &conflict)
		assert.Equal(t, []string{"run.sh"}, conflict.Files)
		assert.Equal(t, os.FileMode(0o700), mode(t, filepath.Join(home, "run.sh")), "nothing is touched")
	})
	t.Run("content changed here", func(t *testing.T) {
		t.Parallel()
		home, shipped, ch, archive := setup(t)
		writeFiles(t, home, map[string]string{"run.sh": "echo edited here\n"})
		err := applyChanges(home, shipped, ch, archive, DefaultShipMax, noRefusal)
		var conflict *ConflictError
		require.ErrorAs(t, err, &conflict)
		assert.Equal(t, []string{"run.sh"}, conflict.Files)
		assert.Equal(t, os.FileMode(0o644), mode(t, filepath.Join(home, "run.sh")), "nothing is touched")
	})
	t.Run("a deleted file's mode changed here", func(t *testing.T) {
		t.Parallel()
		home, shipped, _, archive := setup(t)
		require.NoError(t, os.Chmod(filepath.Join(home, "keep.txt"), 0o600))
		err := applyChanges(home, shipped, &Changes{Deleted: []string{"keep.txt"}}, archive, DefaultShipMax, noRefusal)
		var conflict *ConflictError
		require.ErrorAs(t, err, &conflict)
		assert.Equal(t, []string{"keep.txt"}, conflict.Files)
	})
}

// Permission bits travel as they are, whatever the umask of the process
// that unpacks them, and setuid, setgid and sticky never do.
func TestUnpackSetsExactPermissions(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for name, m := range map[string]int64{"open": 0o777, "shared": 0o664, "suid": 0o4755 | 0o2000 | 0o1000} {
		require.NoError(t, tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Size: 1, Mode: m}))
		_, _ = tw.Write([]byte("x"))
	}
	require.NoError(t, tw.Close())
	require.NoError(t, zw.Close())
	dst := t.TempDir()
	m, err := unpackInto(dst, bytes.NewReader(buf.Bytes()), DefaultShipMax)
	require.NoError(t, err)
	now, err := hashDir(dst)
	require.NoError(t, err)
	assert.Equal(t, now, m, "the manifest is of the files as they are")
	for name, want := range map[string]os.FileMode{"open": 0o777, "shared": 0o664, "suid": 0o755} {
		st, err := os.Stat(filepath.Join(dst, name))
		require.NoError(t, err)
		assert.Equal(t, want, st.Mode()&(os.ModePerm|os.ModeSetuid|os.ModeSetgid|os.ModeSticky), name)
	}
}

// A shipped run that failed still sends back what it changed; when that
// cannot go back (past the worker's limit), its failure says so besides
// its own error, as a run that succeeded says it, rather than report the
// job as if it had changed nothing.
func TestFailedRunsChangesThatCannotGoBackAreNamed(t *testing.T) {
	t.Parallel()
	url := startServer(t)
	noise := make([]byte, 8<<10)
	_, err := rand.Read(noise)
	require.NoError(t, err)
	// The script ends after the write: the run fails for good.
	specPath, s := writeSpec(t, t.TempDir(), agentYAML, fmt.Sprintf(`turns:
  - tool_calls:
      - {name: write_file, arguments: {path: out.txt, content: %x}}
`, noise))
	dirs := jobDirs(t, t.TempDir(), 1)
	startWorker(t, url, WorkerOptions{ShipMax: 4 << 10})
	q := connect(t, url, 0)

	got, _ := submit(t, q, BatchOptions{SpecPath: specPath, Spec: s, Workspaces: dirs, Ship: true})
	require.Len(t, got, 1)
	assert.False(t, got[0].OK)
	assert.Equal(t, 1, got[0].Attempt, "not retried")
	assert.Contains(t, got[0].Error, "script")
	assert.True(t, strings.HasSuffix(got[0].Error, "; its changes could not be sent back: "+dirs[0]+": the archive would be more than 4 KiB"),
		got[0].Error)
	assert.NoFileExists(t, filepath.Join(dirs[0], "out.txt"))
}
