//go:build unix

package shell

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/internal/nobodytest"
)

// A kept directory the command may no longer enter (here its search
// permission is gone, which root is not refused, so this runs as nobody)
// is forgotten with the reference's retry: the next command starts in the
// workspace, confined or not, and a background command is no different.
func TestPersistCwdThatCannotBeEntered(t *testing.T) {
	if os.Geteuid() == 0 {
		nobodytest.Rerun(t)
		return
	}
	for _, mode := range sandboxModes(t) {
		for _, tool := range []string{ToolRunCommand, ToolStartCommand} {
			t.Run(mode+"/"+tool, func(t *testing.T) {
				s, w := newShell(t, `{"persist_cwd": true, "sandbox": "`+mode+`"}`)
				sub := filepath.Join(w, "sub")
				require.NoError(t, os.Mkdir(sub, 0o755))
				t.Cleanup(func() { os.Chmod(sub, 0o755) })
				assert.Equal(t, "(no output)", run(t, s, "cd sub"))
				require.NoError(t, os.Chmod(sub, 0o600)) // listable, not enterable
				_, err := call(t, context.Background(), s, tool, `{"command": "pwd"}`)
				assert.Equal(t, "The saved working directory was lost; now in the workspace working directory.", retryOf(t, err))
				assert.Equal(t, "[stdout]\n"+w+"\n", run(t, s, "pwd"), "the next command starts in the workspace")
			})
		}
	}
}

// A cd through a symlink is kept as the shell's pwd reported it, as the
// reference keeps it and cds there again: the next command's pwd is the
// link's path, cd .. leaves the link, and a link pointed elsewhere since
// leads where it now points.
func TestPersistCwdThroughASymlink(t *testing.T) {
	t.Parallel()
	for _, mode := range sandboxModes(t) {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			s, w := newShell(t, `{"persist_cwd": true, "sandbox": "`+mode+`"}`)
			require.NoError(t, os.MkdirAll(filepath.Join(w, "a", "b"), 0o755))
			require.NoError(t, os.Mkdir(filepath.Join(w, "c"), 0o755))
			link := filepath.Join(w, "link")
			require.NoError(t, os.Symlink("a/b", link))
			assert.Equal(t, "[stdout]\n"+link+"\n", run(t, s, "cd link && pwd"))
			assert.Equal(t, "[stdout]\n"+link+"\n"+link+"\n", run(t, s, `pwd; echo "$PWD"`))
			assert.Equal(t, "[stdout]\n"+w+"\n", run(t, s, "cd .. && pwd"))

			assert.Equal(t, "(no output)", run(t, s, "cd link"))
			require.NoError(t, os.Remove(link))
			require.NoError(t, os.Symlink("c", link))
			assert.Equal(t, "[stdout]\n"+link+"\n"+filepath.Join(w, "c")+"\n", run(t, s, "pwd; pwd -P"))
		})
	}
}

// A command that removes its temporary directory (rm -rf "$TMPDIR", find
// "$TMPDIR" -delete, which with the sandbox off takes the directory itself,
// and confined all in it) does not break the commands after it:
// persist_cwd still follows their cd, and each gets a HOME and a TMPDIR
// that exist.
func TestPersistCwdAfterTheTempDirIsRemoved(t *testing.T) {
	t.Parallel()
	for _, mode := range sandboxModes(t) {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			s, w := newShell(t, `{"persist_cwd": true, "sandbox": "`+mode+`"}`)
			require.NoError(t, os.Mkdir(filepath.Join(w, "sub"), 0o755))
			require.NoError(t, os.Mkdir(filepath.Join(w, "other"), 0o755))
			assert.Equal(t, "(no output)", run(t, s, "cd sub"))
			run(t, s, `find "$TMPDIR" -delete`) // confined, T itself stays: find says so
			assert.Equal(t, "[stdout]\n"+filepath.Join(w, "sub")+"\n", run(t, s, "pwd"))
			assert.Equal(t, "(no output)", run(t, s, "cd ../other"))
			assert.Equal(t, "[stdout]\n"+filepath.Join(w, "other")+"\n", run(t, s, "pwd"))
			assert.Equal(t, "[stdout]\nok\n", run(t, s, `test -d "$HOME" && test -d "$TMPDIR" && echo x > "$HOME/f" && echo ok`))
		})
	}
}

// A private temporary directory whose path an unconfined command gave to
// something else (a file in its place) is replaced by a new one for the
// next command, and what took its path is not the Shell's to remove.
func TestTempDirWhosePathWasTaken(t *testing.T) {
	t.Parallel()
	s, _ := newShell(t, `{"persist_cwd": true, "sandbox": "off"}`)
	old := strings.TrimSuffix(strings.TrimPrefix(run(t, s, `echo "$TMPDIR"`), "[stdout]\n"), "\n")
	run(t, s, `find "$TMPDIR" -delete && echo mine > "$TMPDIR"`)
	out := run(t, s, `test -d "$TMPDIR" && test -d "$HOME" && echo "$TMPDIR"`)
	assert.NotEqual(t, "[stdout]\n"+old+"\n", out)
	assert.Regexp(t, `^\[stdout\]\n/.*agentspec-shell-\d+\n$`, out)
	require.NoError(t, s.Close())
	b, err := os.ReadFile(old)
	require.NoError(t, err, "what took the path stays")
	assert.Equal(t, "mine\n", string(b))
	os.Remove(old)
}

// A private temporary directory an unconfined command removed lets anyone
// make a directory at its path, which the system's temporary directory
// shows: one that another user made there (here nobody's, open to all)
// is not taken for it, since its owner could then change the HOME and
// TMPDIR of the commands and what persist_cwd writes, and the next
// command gets a new one.
func TestTempDirRemovedAndMadeByAnotherUser(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("making a directory of another user needs root")
	}
	s, _ := newShell(t, `{"persist_cwd": true, "sandbox": "off"}`)
	old := strings.TrimSuffix(strings.TrimPrefix(run(t, s, `echo "$TMPDIR"`), "[stdout]\n"), "\n")
	run(t, s, `find "$TMPDIR" -delete`)
	require.NoError(t, os.Mkdir(old, 0o777))
	require.NoError(t, os.Chmod(old, 0o777))
	require.NoError(t, os.Chown(old, 65534, 65534))
	t.Cleanup(func() { os.RemoveAll(old) })
	out := run(t, s, `test -d "$TMPDIR" && test -d "$HOME" && echo "$TMPDIR"`)
	assert.NotEqual(t, "[stdout]\n"+old+"\n", out)
	assert.Regexp(t, `^\[stdout\]\n/.*agentspec-shell-\d+\n$`, out)
	require.NoError(t, s.Close())
	assert.DirExists(t, old, "another's directory is not the Shell's to remove")
	_, err := os.Stat(filepath.Join(old, "home"))
	assert.ErrorIs(t, err, os.ErrNotExist, "nothing is made in it")
}

// Close removes the private temporary directory only while it is one:
// after the last command removed it, a directory another user made at its
// path is theirs, not the Shell's to remove.
func TestCloseLeavesAnotherUsersDirectoryAtTheTempDirsPath(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("making a directory of another user needs root")
	}
	s, _ := newShell(t, `{"sandbox": "off"}`)
	old := strings.TrimSuffix(strings.TrimPrefix(run(t, s, `echo "$TMPDIR"`), "[stdout]\n"), "\n")
	run(t, s, `find "$TMPDIR" -delete`)
	require.NoError(t, os.Mkdir(old, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(old, "theirs"), []byte("x"), 0o600))
	require.NoError(t, os.Chown(old, 65534, 65534))
	t.Cleanup(func() { os.RemoveAll(old) })
	require.NoError(t, s.Close())
	assert.FileExists(t, filepath.Join(old, "theirs"))
}
