package shell

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/capabilities/filesystem"
	"github.com/agentspec/agentspec/internal/confine"
	"github.com/agentspec/agentspec/internal/nobodytest"
)

// confinedShell is a Shell with the sandbox on, over a fresh workspace;
// the test is skipped where commands cannot be confined.
func confinedShell(t *testing.T, js string) (*Capability, string) {
	t.Helper()
	if err := confine.Available(); err != nil {
		t.Skipf("commands cannot be confined here: %v", err)
	}
	w := realTemp(t)
	o := options(t, js)
	o.Sandbox = escapeSandbox
	s, err := New(o, w)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, s.Close()) })
	return s, w
}

// escapeSandbox is "on"; setting it to "off" shows that every test of this
// file fails when the commands run unconfined.
var escapeSandbox = func() any {
	if v := os.Getenv("AGENTSPEC_SHELL_ESCAPE_TESTS_SANDBOX"); v != "" {
		return v
	}
	return "on"
}()

// outsideTemp is a fresh directory outside the workspace that a confined
// command sees as this user does: realTemp's, unless that lies below /dev
// (TMPDIR on /dev/shm), which commands get a fresh /dev in place of, with
// only their workspace and temporary directory put back; then one below
// /var/tmp or /tmp, so that what a test says of files outside the
// workspace is shown by a command that can reach them.
func outsideTemp(t *testing.T) string {
	t.Helper()
	d := realTemp(t)
	if !strings.HasPrefix(d, "/dev/") {
		return d
	}
	for _, base := range []string{"/var/tmp", "/tmp"} {
		if dir, err := os.MkdirTemp(base, "agentspec-outside-"); err == nil {
			t.Cleanup(func() { assert.NoError(t, os.RemoveAll(dir)) })
			d, err := filepath.EvalSymlinks(dir)
			require.NoError(t, err)
			return d
		}
	}
	t.Fatalf("no directory outside /dev to make one in: TMPDIR is %s, and neither /var/tmp nor /tmp is writable", d)
	return ""
}

func write(t *testing.T, path, content string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
}

// A secret in the workspace reads as empty however a command goes at it,
// and its template stays readable.
func TestSecretsReadAsEmpty(t *testing.T) {
	t.Parallel()
	s, w := confinedShell(t, `{}`)
	write(t, filepath.Join(w, ".env"), "API_KEY=hunter2\n")
	write(t, filepath.Join(w, "app", "id_rsa"), "PRIVATE hunter2\n")
	write(t, filepath.Join(w, ".env.example"), "API_KEY=changeme\n")
	for _, command := range []string{
		"cat .env app/id_rsa",
		"ln -s .env link && cat link",
		"cp .env copy && cat copy",
		"tar cf - . 2>/dev/null | tar xOf - 2>/dev/null",
		"grep -r hunter2 . ; true",
		"cat " + filepath.Join(w, ".env"),
	} {
		out := run(t, s, command)
		assert.NotContains(t, out, "hunter2", command)
	}
	assert.Contains(t, run(t, s, "cat .env.example"), "changeme")
	b, err := os.ReadFile(filepath.Join(w, ".env"))
	require.NoError(t, err)
	assert.Equal(t, "API_KEY=hunter2\n", string(b), "the mask hides the file from commands, it does not change it")
}

// A secret whose name is not UTF-8 reads as empty too: its path reaches
// the command's init byte for byte.
func TestSecretsNamedNotUTF8ReadAsEmpty(t *testing.T) {
	t.Parallel()
	s, w := confinedShell(t, `{}`)
	write(t, filepath.Join(w, "d\xfe", "k\xff.pem"), "PRIVATE hunter2\n")
	write(t, filepath.Join(w, "d\xfe", "plain.txt"), "visible\n")
	out := run(t, s, "cat */*")
	assert.NotContains(t, out, "hunter2")
	assert.Contains(t, out, "visible")
}

// The spec's FileSystem decides what is secret or denied: its denied
// directory is empty for commands too.
func TestPeerFileSystemDeniesForCommands(t *testing.T) {
	t.Parallel()
	s, w := confinedShell(t, `{}`)
	write(t, filepath.Join(w, "private", "notes.txt"), "hunter2\n")
	fs, err := filesystem.New(filesystem.Options{DeniedPatterns: []string{"private"}}, w)
	require.NoError(t, err)
	defer fs.Close()
	require.NoError(t, s.Peers([]capabilities.Capability{fs, s}))
	assert.Equal(t, "[stdout]\n0\n", run(t, s, "ls -A private | wc -l"))
	assert.NotContains(t, run(t, s, "cat private/notes.txt"), "hunter2")
}

// A command cannot plant a hook or change the config of the workspace's
// repositories, unless allow_git_writes; git still reads them.
func TestGitIsReadOnly(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	s, w := confinedShell(t, `{}`)
	init := exec.Command("git", "init", "-q", w)
	require.NoError(t, init.Run())
	out := run(t, s, "echo '#!/bin/sh' > .git/hooks/pre-commit; echo x >> .git/config; git status --short; echo done")
	assert.Contains(t, out, "done")
	_, err := os.Stat(filepath.Join(w, ".git", "hooks", "pre-commit"))
	assert.ErrorIs(t, err, os.ErrNotExist)
	cfg, err := os.ReadFile(filepath.Join(w, ".git", "config"))
	require.NoError(t, err)
	assert.NotContains(t, string(cfg), "x\n")

	writable, w2 := confinedShell(t, `{"allow_git_writes": true}`)
	require.NoError(t, exec.Command("git", "init", "-q", w2).Run())
	run(t, writable, "echo '#!/bin/sh' > .git/hooks/pre-commit")
	_, err = os.Stat(filepath.Join(w2, ".git", "hooks", "pre-commit"))
	assert.NoError(t, err)
}

// Nothing outside the workspace and the private temporary directory can
// be written; the temporary directory can.
func TestWritesStayInTheWorkspace(t *testing.T) {
	t.Parallel()
	s, w := confinedShell(t, `{}`)
	outside := outsideTemp(t)
	write(t, filepath.Join(outside, "victim"), "intact\n")
	run(t, s, fmt.Sprintf("cat %[1]s/victim > seen; echo pwned > %[1]s/victim; touch %[1]s/new; ln -s %[1]s/victim escape; echo pwned > escape; chmod 777 %[1]s/victim; echo ok > $TMPDIR/t && cat $TMPDIR/t > inside", outside))
	// The command saw the file it could not write, so that its writes
	// failing shows the confinement, not a file it could not reach.
	b, err := os.ReadFile(filepath.Join(w, "seen"))
	require.NoError(t, err)
	assert.Equal(t, "intact\n", string(b), "what the command read of the file outside")
	b, err = os.ReadFile(filepath.Join(outside, "victim"))
	require.NoError(t, err)
	assert.Equal(t, "intact\n", string(b))
	_, err = os.Stat(filepath.Join(outside, "new"))
	assert.ErrorIs(t, err, os.ErrNotExist)
	st, err := os.Stat(filepath.Join(outside, "victim"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o644), st.Mode().Perm())
	b, err = os.ReadFile(filepath.Join(w, "inside"))
	require.NoError(t, err)
	assert.Equal(t, "ok\n", string(b))
}

// The credentials in the user's home directory read as empty.
func TestHomeCredentialsReadAsEmpty(t *testing.T) {
	home := outsideTemp(t)
	t.Setenv("HOME", home)
	write(t, filepath.Join(home, ".ssh", "id_ed25519"), "PRIVATE hunter2\n")
	write(t, filepath.Join(home, ".netrc"), "machine x password hunter2\n")
	// As FileSystem's defaults keep them secret; git's other store.
	write(t, filepath.Join(home, ".pgpass"), "db:5432:*:me:hunter2\n")
	write(t, filepath.Join(home, ".vault-token"), "hvs.hunter2\n")
	write(t, filepath.Join(home, ".config", "git", "credentials"), "https://me:hunter2@example.com\n")
	write(t, filepath.Join(home, "notes.txt"), "visible\n")
	s, _ := confinedShell(t, `{}`)
	out := run(t, s, fmt.Sprintf("cat %[1]s/.ssh/id_ed25519 %[1]s/.netrc %[1]s/.pgpass %[1]s/.vault-token %[1]s/.config/git/credentials %[1]s/notes.txt", home))
	assert.NotContains(t, out, "hunter2")
	assert.Contains(t, out, "visible")
}

// The credentials in the user's home directory, as the system's user
// database gives it, read as empty too when HOME says another directory or
// none (a service started without it): they are this user's all the same.
// The test reads one that is there, when one is.
func TestHomeCredentialsWhateverHOMESays(t *testing.T) {
	u, err := user.Current()
	if err != nil || u.HomeDir == "" {
		t.Skipf("no home directory in the user database: %v", err)
	}
	var secret string
	for _, rel := range HomeCredentials {
		p := filepath.Join(u.HomeDir, rel)
		if entries, err := os.ReadDir(p); err == nil {
			for _, e := range entries {
				if e.Type().IsRegular() {
					p = filepath.Join(p, e.Name())
					break
				}
			}
		}
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Size() > 0 {
			if f, err := os.Open(p); err == nil {
				f.Close()
				secret = p
				break
			}
		}
	}
	if secret == "" {
		t.Skipf("no credential to read in %s", u.HomeDir)
	}
	for _, home := range []string{realTemp(t), ""} {
		t.Setenv("HOME", home)
		s, _ := confinedShell(t, `{}`)
		assert.Equal(t, "[stdout]\n0\n", run(t, s, "wc -c < "+shQuote(secret)), "HOME=%q", home)
	}
}

// Without network: true a command cannot reach a listener on this
// machine's loopback; with it, it can.
func TestNoNetworkUnlessAllowed(t *testing.T) {
	t.Parallel()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 to connect with")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("hello from the host\n"))
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	connect := fmt.Sprintf(`%s -c "import socket; s=socket.create_connection(('127.0.0.1', %d), 5); print(s.recv(100).decode())"`, py, port)
	s, _ := confinedShell(t, `{}`)
	assert.NotContains(t, run(t, s, connect), "hello from the host")
	open, _ := confinedShell(t, `{"network": true}`)
	assert.Contains(t, run(t, open, connect), "hello from the host")
}

// A command sees no other process: not agentspec, nor its environment.
func TestProcessesAreInvisible(t *testing.T) {
	t.Parallel()
	s, _ := confinedShell(t, `{}`)
	out := run(t, s, fmt.Sprintf("cat /proc/%d/environ", os.Getpid()))
	assert.NotContains(t, out, "PATH=")
	out = run(t, s, "ls /proc | grep -c '^[0-9]'")
	var n int
	_, err := fmt.Sscanf(out, "[stdout]\n%d\n", &n)
	require.NoError(t, err, out)
	assert.Less(t, n, 8, "the processes of the command alone")
}

// chain sets $c to a path of 15 directories of 200 characters (3015
// bytes): a directory moved below a second one is past PATH_MAX.
const chain = `d=$(printf 'a%.0s' $(seq 1 200)); c=$d; for i in $(seq 2 15); do c=$c/$d; done; `

// A command may move the directory holding a secret so deep that its path
// is longer than PATH_MAX, where the walk of the workspace cannot read: the
// next command still finds it empty, and, moved back up, the secret is
// found and masked again.
func TestSecretMovedPastPathMax(t *testing.T) {
	t.Parallel()
	s, w := confinedShell(t, `{}`)
	write(t, filepath.Join(w, "cfg", ".env"), "API_KEY=hunter2\n")
	assert.Equal(t, "[stdout]\nmoved\n", run(t, s, chain+`mkdir -p A/$c B/$c && mv cfg B/$c/ && mv B A/$c/ && echo moved`))
	assert.NotContains(t, run(t, s, chain+`cd A/$c && cat B/$c/cfg/.env`), "hunter2")
	assert.Equal(t, "[stdout]\nback\n", run(t, s, chain+`W=$PWD; cd A/$c && mv B "$W/" && echo back`))
	assert.Equal(t, "[stdout]\n.env\n", run(t, s, chain+`ls -A B/$c/cfg; cat B/$c/cfg/.env`))
}

// The same for a .git: moved past PATH_MAX, written there and moved back,
// it would carry what was planted in it back to the user.
func TestGitMovedPastPathMax(t *testing.T) {
	t.Parallel()
	s, w := confinedShell(t, `{}`)
	write(t, filepath.Join(w, "sub", ".git", "config"), "[core]\n")
	assert.Equal(t, "[stdout]\nmoved\n", run(t, s, chain+`mkdir -p A/$c B/$c && mv sub B/$c/ && mv B A/$c/ && echo moved`))
	run(t, s, chain+`W=$PWD; cd A/$c && echo '#!/bin/sh' > B/$c/sub/.git/planted; mv B/$c/sub "$W/sub"`)
	_, err := os.Stat(filepath.Join(w, "sub", ".git", "planted"))
	assert.ErrorIs(t, err, os.ErrNotExist, "a command wrote into sub/.git of the workspace")
}

// A directory the walk may not read (a command took its permissions away)
// is masked whole: the next command can neither give them back nor read
// the secret in it. A workspace the walk may not read at all runs no
// command. Root reads any directory, so this runs as nobody.
func TestUnreadableDirectoryIsMasked(t *testing.T) {
	if os.Geteuid() == 0 {
		nobodytest.Rerun(t)
		return
	}
	s, w := confinedShell(t, `{}`)
	write(t, filepath.Join(w, "cfg", ".env"), "API_KEY=hunter2\n")
	// Before the workspace's own cleanup: a locked directory could not go.
	t.Cleanup(func() {
		os.Chmod(w, 0o755)
		os.Chmod(filepath.Join(w, "cfg"), 0o755)
	})
	assert.Equal(t, "(no output)", run(t, s, "chmod 000 cfg"))
	assert.NotContains(t, run(t, s, "chmod 755 cfg; cat cfg/.env"), "hunter2")

	assert.Equal(t, "(no output)", run(t, s, "chmod 100 ."))
	_, err := call(t, context.Background(), s, ToolRunCommand, `{"command": "chmod 755 cfg; cat cfg/.env"}`)
	assert.Equal(t, "The command was not run: the workspace directory cannot be read (permission denied), "+
		"so the secrets in it cannot be found and hidden from commands. Ask the user to make it readable again.", retryOf(t, err))
}

// A secret the walk found but the command's init cannot cover (it may not
// enter another user's private directory, which root's walk reads) stops
// the command, with the reason; it never runs with the secret uncovered.
func TestSecretThatCannotBeCoveredStopsTheCommand(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("notice: needs root, to give a directory of the workspace to another user")
	}
	s, w := confinedShell(t, `{}`)
	private := filepath.Join(w, "private")
	write(t, filepath.Join(private, ".env"), "API_KEY=hunter2\n")
	require.NoError(t, os.Chmod(private, 0o700))
	require.NoError(t, os.Chown(private, nobodytest.UID, nobodytest.UID))
	_, err := call(t, context.Background(), s, ToolRunCommand, `{"command": "echo ran > ran"}`)
	assert.Equal(t, "The command was not run: private/.env cannot be hidden from commands (permission denied), "+
		"and it may hold secrets. Ask the user to make it readable again or move it out of the workspace.", retryOf(t, err))
	assert.NoFileExists(t, filepath.Join(w, "ran"))
}

// The spec's FileSystem lists apply to every file of the workspace, not
// only below its root_dir (D13.2): outside it, matched from the workspace.
func TestPeerPatternsApplyOutsideItsRoot(t *testing.T) {
	t.Parallel()
	s, w := confinedShell(t, `{}`)
	write(t, filepath.Join(w, "top.secret"), "hunter2\n")
	write(t, filepath.Join(w, "src", "in.secret"), "hunter3\n")
	fs, err := filesystem.New(filesystem.Options{RootDir: "src", SecretPatterns: []string{"*.secret"}}, w)
	require.NoError(t, err)
	defer fs.Close()
	require.NoError(t, s.Peers([]capabilities.Capability{fs, s}))
	out := run(t, s, "cat src/in.secret top.secret")
	assert.NotContains(t, out, "hunter2")
	assert.NotContains(t, out, "hunter3")
}

// A .git may be a symlink to the repository, or a file naming it
// (`gitdir: DIR`, as git init --separate-git-dir and worktrees write):
// git uses that repository, so it is read-only as a .git directory is,
// and so is the common one a worktree's names.
func TestGitDirNamedByDotGitIsReadOnly(t *testing.T) {
	t.Parallel()
	s, w := confinedShell(t, `{}`)
	for _, repo := range []string{"linked", "separate", "main.repo"} {
		write(t, filepath.Join(w, repo, "HEAD"), "ref: refs/heads/main\n")
		require.NoError(t, os.MkdirAll(filepath.Join(w, repo, "hooks"), 0o755))
	}
	write(t, filepath.Join(w, "main.repo", "worktrees", "wt", "HEAD"), "ref: refs/heads/wt\n")
	write(t, filepath.Join(w, "main.repo", "worktrees", "wt", "commondir"), "../..\n")
	require.NoError(t, os.MkdirAll(filepath.Join(w, "a"), 0o755))
	require.NoError(t, os.Symlink("../linked", filepath.Join(w, "a", ".git")))
	write(t, filepath.Join(w, "b", ".git"), "gitdir: ../separate\n")
	write(t, filepath.Join(w, "c", ".git"), "gitdir: "+filepath.Join(w, "main.repo", "worktrees", "wt")+"\n")
	run(t, s, "echo evil > a/.git/hooks/pre-commit; echo evil > separate/hooks/pre-commit; "+
		"echo evil > main.repo/worktrees/wt/hooks-planted; echo evil > main.repo/hooks/pre-commit; echo ok > b/other")
	for _, planted := range []string{"linked/hooks/pre-commit", "separate/hooks/pre-commit", "main.repo/worktrees/wt/hooks-planted", "main.repo/hooks/pre-commit"} {
		assert.NoFileExists(t, filepath.Join(w, planted))
	}
	assert.FileExists(t, filepath.Join(w, "b", "other"), "the work tree stays writable")
}

// core.hooksPath may put a repository's hooks in its work tree (husky's
// .husky/_, a .githooks), where the user's next commit runs them: that
// directory is read-only as a .git is, made empty when it is missing, and
// also when the repository lies above the workspace; allow_git_writes
// lifts it.
func TestHooksPathIsReadOnly(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	gitIn := func(dir string, args ...string) {
		t.Helper()
		out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	s, w := confinedShell(t, `{}`)
	gitIn(w, "init", "-q")
	gitIn(w, "config", "core.hooksPath", ".husky/_")
	require.NoError(t, os.MkdirAll(filepath.Join(w, ".husky", "_"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(w, "sub"), 0o755))
	gitIn(filepath.Join(w, "sub"), "init", "-q")
	gitIn(filepath.Join(w, "sub"), "config", "core.hooksPath", "githooks") // missing
	out := run(t, s, "echo evil > .husky/_/pre-commit; echo evil > sub/githooks/pre-commit; echo ok > .husky/pre-commit; echo done")
	assert.Contains(t, out, "done")
	assert.NoFileExists(t, filepath.Join(w, ".husky", "_", "pre-commit"))
	assert.NoFileExists(t, filepath.Join(w, "sub", "githooks", "pre-commit"))
	assert.DirExists(t, filepath.Join(w, "sub", "githooks"), "made so that it could be read-only")
	assert.FileExists(t, filepath.Join(w, ".husky", "pre-commit"), "the rest of the work tree stays writable")

	// The workspace is a directory of a repository whose hooks lie in it.
	outer := realTemp(t)
	gitIn(outer, "init", "-q")
	gitIn(outer, "config", "core.hooksPath", "pkg/hooks")
	inner := filepath.Join(outer, "pkg")
	require.NoError(t, os.MkdirAll(filepath.Join(inner, "hooks"), 0o755))
	o := options(t, `{}`)
	o.Sandbox = escapeSandbox
	sub, err := New(o, inner)
	require.NoError(t, err)
	t.Cleanup(func() { sub.Close() })
	run(t, sub, "echo evil > hooks/pre-commit")
	assert.NoFileExists(t, filepath.Join(inner, "hooks", "pre-commit"))

	writable, w2 := confinedShell(t, `{"allow_git_writes": true}`)
	gitIn(w2, "init", "-q")
	gitIn(w2, "config", "core.hooksPath", ".githooks")
	require.NoError(t, os.MkdirAll(filepath.Join(w2, ".githooks"), 0o755))
	run(t, writable, "echo '#!/bin/sh' > .githooks/pre-commit")
	assert.FileExists(t, filepath.Join(w2, ".githooks", "pre-commit"))
}

// A configuration file that a repository's .git/config includes may lie in
// its work tree (a gitconfig.local beside it), where a core.hooksPath
// written there would have the user's next commit run what a command put
// in the directory it names: it is read-only as the .git is, made empty
// when it is missing, and also when the repository lies above the
// workspace; allow_git_writes lifts it.
func TestIncludedGitConfigIsReadOnly(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	gitIn := func(dir string, args ...string) {
		t.Helper()
		out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	const local = "[user]\n\tname = Me\n"
	s, w := confinedShell(t, `{}`)
	gitIn(w, "init", "-q")
	gitIn(w, "config", "include.path", "../gitconfig.local")
	write(t, filepath.Join(w, "gitconfig.local"), local)
	require.NoError(t, os.MkdirAll(filepath.Join(w, "sub"), 0o755))
	gitIn(filepath.Join(w, "sub"), "init", "-q")
	gitIn(filepath.Join(w, "sub"), "config", `includeIf.onbranch:main.path`, "../conf/local.gitconfig") // missing
	out := run(t, s, "echo x >> gitconfig.local; echo '[core] hooksPath = h' > sub/conf/local.gitconfig; "+
		"echo ok > other; echo ok > sub/conf/other; echo done")
	assert.Contains(t, out, "done")
	got, err := os.ReadFile(filepath.Join(w, "gitconfig.local"))
	require.NoError(t, err)
	assert.Equal(t, local, string(got))
	got, err = os.ReadFile(filepath.Join(w, "sub", "conf", "local.gitconfig"))
	require.NoError(t, err, "made so that it could be read-only")
	assert.Empty(t, got)
	assert.FileExists(t, filepath.Join(w, "other"), "the rest of the work tree stays writable")
	assert.FileExists(t, filepath.Join(w, "sub", "conf", "other"))

	// The workspace is a directory of a repository that includes a file in it.
	outer := realTemp(t)
	gitIn(outer, "init", "-q")
	gitIn(outer, "config", "include.path", "../pkg/gitconfig.local")
	inner := filepath.Join(outer, "pkg")
	write(t, filepath.Join(inner, "gitconfig.local"), local)
	o := options(t, `{}`)
	o.Sandbox = escapeSandbox
	sub, err := New(o, inner)
	require.NoError(t, err)
	t.Cleanup(func() { sub.Close() })
	run(t, sub, "echo x >> gitconfig.local")
	got, err = os.ReadFile(filepath.Join(inner, "gitconfig.local"))
	require.NoError(t, err)
	assert.Equal(t, local, string(got))

	writable, w2 := confinedShell(t, `{"allow_git_writes": true}`)
	gitIn(w2, "init", "-q")
	gitIn(w2, "config", "include.path", "../gitconfig.local")
	write(t, filepath.Join(w2, "gitconfig.local"), local)
	run(t, writable, "echo x >> gitconfig.local")
	got, err = os.ReadFile(filepath.Join(w2, "gitconfig.local"))
	require.NoError(t, err)
	assert.Equal(t, local+"x\n", string(got))
}

// A symlink whose name is a secret's hides what it leads to, the secret,
// inside the workspace or out of it, except where that is the workspace or
// holds it (key.pem -> .) or is nothing: then the link itself reads as
// empty and leads nowhere, and the workspace stays as it was.
func TestSecretNamedSymlinkHidesWhatItLeadsToButNeverTheWorkspace(t *testing.T) {
	t.Parallel()
	s, w := confinedShell(t, `{}`)
	write(t, filepath.Join(w, "README.md"), "readme\n")
	write(t, filepath.Join(w, "config", "prod.txt"), "password=hunter2\n")
	outside := filepath.Join(outsideTemp(t), "deploy.pem")
	write(t, outside, "PRIVATE hunter2\n")
	for link, to := range map[string]string{"key.pem": ".", "id_rsa": "config/prod.txt", "app.pem": outside, ".env": "missing"} {
		require.NoError(t, os.Symlink(to, filepath.Join(w, link)))
	}
	assert.Equal(t, "[stdout]\nreadme\n", run(t, s, "cat README.md"))
	assert.Equal(t, "[stdout]\nREADME.md\napp.pem\nconfig\nid_rsa\nkey.pem\n", run(t, s, "ls"))
	// Each link reads as empty, and cannot be entered; what one leads to
	// reads as empty by its own name too.
	assert.Equal(t, "(no output)", run(t, s, "cat key.pem id_rsa app.pem .env config/prod.txt "+outside+" && "+
		"for l in key.pem id_rsa app.pem .env; do (cd $l 2>/dev/null) && echo entered $l; done; true"))
	// The workspace stays writable.
	assert.Equal(t, "[stdout]\nnew\n", run(t, s, "echo new > new.txt && cat new.txt"))
}

// A credential store of the home that is a symlink into the workspace
// (~/.aws -> W/dot/aws, a dotfiles repository) stays hidden where a command
// moves it, alone or with the directory that holds it, and a later command
// finds it empty there too: it is known by what it is, not by the path
// the link gave.
func TestHomeCredentialMovedInTheWorkspace(t *testing.T) {
	home := realTemp(t)
	t.Setenv("HOME", home)
	s, w := confinedShell(t, `{}`)
	write(t, filepath.Join(w, "dot", "aws", "credentials"), "aws_secret_access_key = hunter2\n")
	write(t, filepath.Join(w, "dot", "netrc"), "machine x password hunter2\n")
	require.NoError(t, os.Symlink(filepath.Join(w, "dot", "aws"), filepath.Join(home, ".aws")))
	require.NoError(t, os.Symlink(filepath.Join(w, "dot", "netrc"), filepath.Join(home, ".netrc")))
	assert.NotContains(t, run(t, s, "cat dot/aws/credentials dot/netrc"), "hunter2")
	run(t, s, "mv dot moved")
	assert.NotContains(t, run(t, s, "cat moved/aws/credentials moved/netrc"), "hunter2")
	run(t, s, "mv moved/aws aws; mv moved/netrc netrc")
	assert.NotContains(t, run(t, s, "cat aws/credentials netrc; cat */credentials"), "hunter2")
}
