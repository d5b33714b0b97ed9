package queue

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A worker whose disk takes A.txt and a.txt for one file fails a shipped
// job whose workspace holds both before anything runs: unpacked, one would
// overwrite the other, and the run's changes would then delete it here.
// Nothing of the submitter's workspace changes. Linux disks here do not
// fold names, so the worker is told its disk does.
func TestShippedNamesOneOnTheWorkersDiskFailTheJob(t *testing.T) {
	t.Parallel()
	url := startServer(t)
	specPath, s := writeSpec(t, t.TempDir(), agentYAML, copyTurns)
	dirs := jobDirs(t, t.TempDir(), 1)
	writeFiles(t, dirs[0], map[string]string{"A.txt": "upper\n", "a.txt": "lower\n"})
	startFoldingWorker(t, url, nameFolding{cases: true})
	q := connect(t, url, 0)

	got, _ := submit(t, q, BatchOptions{SpecPath: specPath, Spec: s, Workspaces: dirs, Ship: true})
	require.Len(t, got, 1)
	assert.False(t, got[0].OK)
	assert.Equal(t, 1, got[0].Attempt, "not retried")
	assert.Equal(t, "the shipped workspace: A.txt and a.txt are one name on this worker's disk, which does not tell "+
		"upper and lower case apart; the job is not run, since its changes could then overwrite or delete the submitter's files",
		got[0].Error)
	assert.Nil(t, got[0].Changes, "nothing comes back")
	for name, want := range map[string]string{"A.txt": "upper\n", "a.txt": "lower\n", "input.txt": "input of job 0\n"} {
		b, err := os.ReadFile(filepath.Join(dirs[0], name))
		require.NoError(t, err)
		assert.Equal(t, want, string(b), name)
	}
	_, err := os.Stat(filepath.Join(dirs[0], "out.txt"))
	assert.ErrorIs(t, err, os.ErrNotExist, "the job did not run")
}

// startFoldingWorker starts a worker whose probe of a shipped copy's
// directory finds that its disk matches names as f.
func startFoldingWorker(t *testing.T, url string, f nameFolding) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w, err := NewWorker(ctx, connect(t, url, 0), WorkerOptions{WorkspaceRoot: t.TempDir(),
		Backoff: func(int) time.Duration { return 10 * time.Millisecond }})
	require.NoError(t, err)
	w.foldingOf = func(string) (nameFolding, error) { return f, nil }
	done := make(chan struct{})
	go func() {
		defer close(done)
		assert.NoError(t, w.Run(ctx))
	}()
	t.Cleanup(func() { cancel(); <-done })
}

// The paths of a shipped workspace, and the directories that hold them,
// are checked as the worker's disk matches names: two that are one name
// there are named, with the directories that are when the files are not.
func TestFoldedNames(t *testing.T) {
	t.Parallel()
	const (
		nfc = "caf\u00e9.txt"  // é composed
		nfd = "cafe\u0301.txt" // e and a combining acute accent
	)
	cases, forms, both := nameFolding{cases: true}, nameFolding{forms: true}, nameFolding{cases: true, forms: true}
	apart := func(what string) string {
		return " are one name on the disk, which does not tell " + what + " apart"
	}
	for _, c := range []struct {
		name  string
		f     nameFolding
		paths []string
		want  string // "": no collision
	}{
		{"a disk that folds nothing", nameFolding{}, []string{"A.txt", "a.txt", nfc, nfd}, ""},
		{"case", cases, []string{"A.txt", "b.txt", "a.txt"}, "A.txt and a.txt" + apart("upper and lower case")},
		{"case of a directory", cases, []string{"Dir/x.txt", "dir/y.txt"},
			"Dir/x.txt and dir/y.txt: Dir and dir" + apart("upper and lower case")},
		{"a file and a directory", cases, []string{"docs", "DOCS/a.md"}, "docs and DOCS/a.md: docs and DOCS" + apart("upper and lower case")},
		{"case of a letter outside ASCII", cases, []string{"\u00c9t\u00e9", "\u00e9T\u00c9"},
			"\u00c9t\u00e9 and \u00e9T\u00c9" + apart("upper and lower case")},
		{"the Kelvin sign is a K", cases, []string{"k", "\u212a"}, "k and \u212a" + apart("upper and lower case")},
		{"files in one directory", cases, []string{"sub/a", "sub/b", "sub/c/d"}, ""},
		{"forms are told apart where case alone folds", cases, []string{nfc, nfd}, ""},
		{"forms", forms, []string{nfc, nfd}, nfc + " and " + nfd + apart("a name's Unicode forms (NFC, NFD)")},
		{"case is told apart where forms alone fold", forms, []string{"A.txt", "a.txt"}, ""},
		{"a letter whose case folds to two, where forms fold too (APFS)", both, []string{"Stra\u00dfe.txt", "STRASSE.txt"},
			"Stra\u00dfe.txt and STRASSE.txt" + apart("upper and lower case")},
		{"a ligature, where forms fold too", both, []string{"\ufb01le", "FILE"}, "\ufb01le and FILE" + apart("upper and lower case")},
		{"a letter whose case folds to two is itself where case alone folds (NTFS)", cases, []string{"Stra\u00dfe.txt", "STRASSE.txt"}, ""},
		{"case and forms", both, []string{"CAF\u00c9.txt", nfd},
			"CAF\u00c9.txt and " + nfd + apart("upper and lower case, nor a name's Unicode forms (NFC, NFD),")},
	} {
		t.Run(c.name, func(t *testing.T) {
			names := foldedNames{f: c.f}
			var err error
			for _, p := range c.paths {
				if err = names.add(p); err != nil {
					break
				}
			}
			if c.want == "" {
				assert.NoError(t, err)
			} else {
				assert.EqualError(t, err, c.want)
			}
		})
	}
}

// The probe asks the disk itself, and leaves nothing behind: the disks of
// Linux machines tell every name apart.
func TestProbeFolding(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	f, err := probeFolding(dir)
	require.NoError(t, err)
	if goruntime.GOOS == "linux" {
		assert.Equal(t, nameFolding{}, f)
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, entries)

	_, err = probeFolding(filepath.Join(dir, "none"))
	assert.ErrorContains(t, err, "asking the disk how it matches names")
}

// Changes from a worker whose disk tells apart names that the submitter's
// takes for one (a run that made X.txt and x.txt) are not applied there,
// not one of them: unpacked, the second would overwrite the first, and the
// changes would stop half-way. They are saved beside the workspace, and
// the error names both. Linux disks here do not fold names, so the
// submitter is told its disk does.
func TestChangesWhoseNamesAreOneHereAreNotApplied(t *testing.T) {
	t.Parallel()
	setup := func(t *testing.T) (string, manifest, *Changes, []byte) {
		home := t.TempDir()
		writeFiles(t, home, map[string]string{"keep.txt": "keep\n", "gone.txt": "gone\n"})
		_, shipped, err := packDir(home, DefaultShipMax, nil)
		require.NoError(t, err)
		copyDir := t.TempDir()
		writeFiles(t, copyDir, map[string]string{"keep.txt": "keep\n", "X.txt": "upper\n", "x.txt": "lower\n"})
		changed, deleted, err := changesSince(copyDir, shipped)
		require.NoError(t, err)
		archive, _, err := packDir(copyDir, DefaultShipMax, func(rel string) bool { return rel != "keep.txt" })
		require.NoError(t, err)
		return home, shipped, &Changes{Files: changed, Deleted: deleted}, archive
	}
	folds := func(string) (nameFolding, error) { return nameFolding{cases: true}, nil }

	home, shipped, ch, archive := setup(t)
	err := applyFolded(home, shipped, ch, archive, DefaultShipMax, noRefusal, folds)
	require.Error(t, err)
	prefix := "the run's changes were not applied: X.txt and x.txt are one name on this disk, which does not tell upper and lower case apart; " +
		"they are saved in "
	require.True(t, strings.HasPrefix(err.Error(), prefix), err.Error())
	path, _, _ := strings.Cut(strings.TrimPrefix(err.Error(), prefix), ", ")
	assert.Equal(t, prefix+path+", which unpacked here would make one file of them too: take x.txt out under a name of its own "+
		"(tar -xzOf "+path+" x.txt > NAME)", err.Error(), "how to have both")
	saved, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, archive, saved, "the run's changes are kept")
	got, err := hashDir(home)
	require.NoError(t, err)
	assert.Equal(t, shipped, got, "nothing is applied, nor deleted, nor left behind")
	entries, err := os.ReadDir(home)
	require.NoError(t, err)
	assert.Len(t, entries, 2, "no staging directory is left")

	// Where the disk tells them apart, both are applied.
	home, shipped, ch, archive = setup(t)
	require.NoError(t, applyFolded(home, shipped, ch, archive, DefaultShipMax, noRefusal,
		func(string) (nameFolding, error) { return nameFolding{}, nil }))
	for name, want := range map[string]string{"X.txt": "upper\n", "x.txt": "lower\n", "keep.txt": "keep\n"} {
		b, err := os.ReadFile(filepath.Join(home, name))
		require.NoError(t, err)
		assert.Equal(t, want, string(b), name)
	}
	assert.NoFileExists(t, filepath.Join(home, "gone.txt"))
}

// Two names that fold to one by the rule are tried on the disk probed
// before they are refused: each disk folds by rules of its own (k and the
// Kelvin sign are two names on NTFS, one on APFS), so a job is refused
// only for the names its disk takes for one. The disks of Linux machines
// tell every name apart, whatever the rule says; and the tries leave
// nothing behind.
func TestFoldedNamesAreTriedOnTheDisk(t *testing.T) {
	t.Parallel()
	if goruntime.GOOS != "linux" {
		t.Skip("the disk here may fold names")
	}
	dir := t.TempDir()
	names := foldedNames{f: nameFolding{cases: true, forms: true, dir: dir}}
	for _, p := range []string{"A.txt", "a.txt", "k", "\u212a", "Stra\u00dfe", "STRASSE", "caf\u00e9", "cafe\u0301", "Dir/x", "dir/x", "dir/X"} {
		assert.NoError(t, names.add(p), p)
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, entries)
}

// A worker whose disk does not keep the form a name was written in (HFS+
// lists every name decomposed) sends back a shipped file whose name was
// composed under that name, changed or not, and as changed only when its
// run changed it: not as deleted and made again under its decomposed name,
// which a submitter whose disk folds forms took for a conflict with the
// file it has, and one whose disk does not for a rename. Linux disks keep
// both forms, so a symbolic link of the composed name stands for the
// disk finding it as the decomposed one.
func TestChangesOfANameTheDiskDecomposedKeepItsShippedName(t *testing.T) {
	t.Parallel()
	const (
		nfc = "caf\u00e9.txt"
		nfd = "cafe\u0301.txt"
	)
	home := t.TempDir()
	writeFiles(t, home, map[string]string{nfc: "caf\u00e9\n", "other.txt": "other\n"})
	_, shipped, err := packDir(home, DefaultShipMax, nil)
	require.NoError(t, err)
	copyDir := t.TempDir()
	writeFiles(t, copyDir, map[string]string{nfd: "caf\u00e9\n", "other.txt": "other\n"})
	if err := os.Symlink(nfd, filepath.Join(copyDir, nfc)); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	forms := nameFolding{forms: true}

	changed, deleted, shippedAs, err := changesFolded(copyDir, shipped, forms)
	require.NoError(t, err)
	assert.Empty(t, changed, "unchanged")
	assert.Empty(t, deleted, "not deleted")

	require.NoError(t, os.WriteFile(filepath.Join(copyDir, nfd), []byte("changed\n"), 0o644))
	changed, deleted, shippedAs, err = changesFolded(copyDir, shipped, forms)
	require.NoError(t, err)
	assert.Equal(t, []string{nfc}, changed, "changed, under its shipped name")
	assert.Empty(t, deleted)
	assert.Equal(t, map[string]string{nfd: nfc}, shippedAs)

	// Where the disk keeps both forms, they are two names.
	changed, deleted, _, err = changesFolded(copyDir, shipped, nameFolding{})
	require.NoError(t, err)
	assert.Equal(t, []string{nfd}, changed)
	assert.Equal(t, []string{nfc}, deleted)
}

// A run on a worker whose disk tells case apart may rename a.txt to A.txt
// alone; a submitter whose disk does not finds its a.txt under the new
// name too, and took that for a change made since the workspace was
// shipped. The rename is applied there, the only change to that name:
// a.txt goes, and A.txt comes with the run's content. A rename that moves
// a file into a directory whose name differs in case alone is not: a
// directory here keeps its name, and the file would stay where it was; it
// is said so, and the changes are saved. Linux disks here do not fold
// names, so the submitter is told its disk does, and a second link to the
// file, under the other case, stands for the disk finding it by both.
func TestACaseOnlyRenameIsAppliedWhereTheDiskFoldsCase(t *testing.T) {
	t.Parallel()
	folds := func(string) (nameFolding, error) { return nameFolding{cases: true}, nil }
	setup := func(t *testing.T, was, now string) (string, manifest, *Changes, []byte) {
		home := t.TempDir()
		writeFiles(t, home, map[string]string{was: "before\n", "keep.txt": "keep\n"})
		_, shipped, err := packDir(home, DefaultShipMax, nil)
		require.NoError(t, err)
		copyDir := t.TempDir()
		writeFiles(t, copyDir, map[string]string{now: "after\n", "keep.txt": "keep\n"})
		changed, deleted, err := changesSince(copyDir, shipped)
		require.NoError(t, err)
		require.Equal(t, []string{now}, changed)
		require.Equal(t, []string{was}, deleted)
		archive, _, err := packDir(copyDir, DefaultShipMax, func(rel string) bool { return rel == now })
		require.NoError(t, err)
		if err := os.MkdirAll(filepath.Dir(filepath.Join(home, now)), 0o755); err != nil && !os.IsExist(err) {
			require.NoError(t, err)
		}
		if err := os.Link(filepath.Join(home, was), filepath.Join(home, now)); err != nil {
			t.Skip("no hard links here:", err)
		}
		return home, shipped, &Changes{Files: changed, Deleted: deleted}, archive
	}

	home, shipped, ch, archive := setup(t, "a.txt", "A.txt")
	require.NoError(t, applyFolded(home, shipped, ch, archive, DefaultShipMax, noRefusal, folds))
	got, err := hashDir(home)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"A.txt", "keep.txt"}, slices.Collect(maps.Keys(got)), "a.txt is renamed")
	b, err := os.ReadFile(filepath.Join(home, "A.txt"))
	require.NoError(t, err)
	assert.Equal(t, "after\n", string(b))

	home, shipped, ch, archive = setup(t, "dir/x", "Dir/x")
	err = applyFolded(home, shipped, ch, archive, DefaultShipMax, noRefusal, folds)
	require.Error(t, err)
	prefix := "the run's changes were not applied: the run renamed dir/x to Dir/x, which this disk takes for one name " +
		"(it does not tell upper and lower case apart), and a directory here keeps the name it has: the file would stay in dir; " +
		"they are saved in "
	require.True(t, strings.HasPrefix(err.Error(), prefix), err.Error())
	saved, err := os.ReadFile(strings.TrimPrefix(err.Error(), prefix))
	require.NoError(t, err)
	assert.Equal(t, archive, saved, "the run's changes are kept")
	got, err = hashDir(home)
	require.NoError(t, err)
	assert.Equal(t, shipped["dir/x"], got["dir/x"], "nothing is applied")
}

// Windows makes some names no file can have, whatever its disk: a name
// ending in a dot or a space is the name without them, a device's name is
// the device with any extension, and a colon names a stream of another
// file. Each is refused, in any directory of a path too.
func TestNamesWindowsCannotMake(t *testing.T) {
	t.Parallel()
	win := nameFolding{win32: true}
	for _, c := range []struct{ path, want string }{
		{"a.txt", ""},
		{"sub/console.txt", ""},
		{"COM0", ""},
		{"LPT10.txt", ""},
		{".hidden", ""},
		{"a.txt.", "it drops the dots and spaces that end a name"},
		{"a.txt ", "it drops the dots and spaces that end a name"},
		{"dir./x", "it drops the dots and spaces that end a name"},
		{"CON", "it keeps CON for a device, with any extension"},
		{"sub/nul.txt", "it keeps NUL for a device, with any extension"},
		{"Aux.tar.gz", "it keeps AUX for a device, with any extension"},
		{"prn .md", "it keeps PRN for a device, with any extension"},
		{"com1", "it keeps COM1 for a device, with any extension"},
		{"LPT9.log", "it keeps LPT9 for a device, with any extension"},
		{"COM\u00b9", "it keeps COM\u00b9 for a device, with any extension"},
		{"conout$", "it keeps CONOUT$ for a device, with any extension"},
		{"a:b", `it takes no ':' in a name`},
		{"what?", `it takes no '?' in a name`},
		{"tab\there", `it takes no '\t' in a name`},
	} {
		err := win.unmade(c.path)
		if c.want == "" {
			assert.NoError(t, err, c.path)
			continue
		}
		assert.EqualError(t, err, fmt.Sprintf("%q is a name Windows cannot make on the disk: %s", c.path, c.want), c.path)
		assert.NoError(t, nameFolding{cases: true}.unmade(c.path), "elsewhere, %s is a name like any", c.path)
	}
}

// A worker on Windows fails a shipped job whose workspace holds a name it
// cannot make before anything of it is written: unpacked, sub/CON.txt
// would be written to a device, a.txt. over a.txt. Nothing of the
// submitter's workspace changes. Linux disks here make every name, so the
// worker is told it is on Windows.
func TestShippedNamesWindowsCannotMakeFailTheJob(t *testing.T) {
	t.Parallel()
	url := startServer(t)
	specPath, s := writeSpec(t, t.TempDir(), agentYAML, copyTurns)
	dirs := jobDirs(t, t.TempDir(), 1)
	writeFiles(t, dirs[0], map[string]string{"sub/CON.txt": "console\n"})
	startFoldingWorker(t, url, nameFolding{cases: true, win32: true})
	q := connect(t, url, 0)

	got, _ := submit(t, q, BatchOptions{SpecPath: specPath, Spec: s, Workspaces: dirs, Ship: true})
	require.Len(t, got, 1)
	assert.False(t, got[0].OK)
	assert.Equal(t, 1, got[0].Attempt, "not retried")
	assert.Equal(t, `the shipped workspace: "sub/CON.txt" is a name Windows cannot make on this worker: it keeps CON for a device, `+
		"with any extension; the job is not run, since the file would be another there: rename it, or run the job on a worker that is not on Windows",
		got[0].Error)
	assert.Nil(t, got[0].Changes, "nothing comes back")
	_, err := os.Stat(filepath.Join(dirs[0], "out.txt"))
	assert.ErrorIs(t, err, os.ErrNotExist, "the job did not run")
}

// A submitter on Windows applies none of a run's changes when one of them
// names a file Windows cannot make (a worker elsewhere made a.txt.): the
// file would land on a.txt. The changes are saved, and the error names the
// path. Linux disks here make every name, so the submitter is told it is
// on Windows.
func TestChangesWindowsCannotMakeAreNotApplied(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	writeFiles(t, home, map[string]string{"a.txt": "mine\n"})
	_, shipped, err := packDir(home, DefaultShipMax, nil)
	require.NoError(t, err)
	copyDir := t.TempDir()
	writeFiles(t, copyDir, map[string]string{"a.txt": "mine\n", "a.txt.": "theirs\n"})
	changed, deleted, err := changesSince(copyDir, shipped)
	require.NoError(t, err)
	require.Equal(t, []string{"a.txt."}, changed)
	archive, _, err := packDir(copyDir, DefaultShipMax, func(rel string) bool { return rel == "a.txt." })
	require.NoError(t, err)

	err = applyFolded(home, shipped, &Changes{Files: changed, Deleted: deleted}, archive, DefaultShipMax, noRefusal,
		func(string) (nameFolding, error) { return nameFolding{cases: true, win32: true}, nil })
	require.Error(t, err)
	prefix := `the run's changes were not applied: "a.txt." is a name Windows cannot make here: it drops the dots and spaces that end a name; ` +
		"they are saved in "
	require.True(t, strings.HasPrefix(err.Error(), prefix), err.Error())
	saved, err := os.ReadFile(strings.TrimPrefix(err.Error(), prefix))
	require.NoError(t, err)
	assert.Equal(t, archive, saved, "the run's changes are kept")
	got, err := hashDir(home)
	require.NoError(t, err)
	assert.Equal(t, shipped, got, "nothing is applied, nor left behind")
}
