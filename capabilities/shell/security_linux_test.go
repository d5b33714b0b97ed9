package shell

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/capabilities/filesystem"
	"github.com/agentspec/agentspec/internal/confine"
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
	outside := realTemp(t)
	write(t, filepath.Join(outside, "victim"), "intact\n")
	run(t, s, fmt.Sprintf("echo pwned > %[1]s/victim; touch %[1]s/new; ln -s %[1]s/victim escape; echo pwned > escape; chmod 777 %[1]s/victim; echo ok > $TMPDIR/t && cat $TMPDIR/t > inside", outside))
	b, err := os.ReadFile(filepath.Join(outside, "victim"))
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
	home := realTemp(t)
	t.Setenv("HOME", home)
	write(t, filepath.Join(home, ".ssh", "id_ed25519"), "PRIVATE hunter2\n")
	write(t, filepath.Join(home, ".netrc"), "machine x password hunter2\n")
	write(t, filepath.Join(home, "notes.txt"), "visible\n")
	s, _ := confinedShell(t, `{}`)
	out := run(t, s, fmt.Sprintf("cat %[1]s/.ssh/id_ed25519 %[1]s/.netrc %[1]s/notes.txt", home))
	assert.NotContains(t, out, "hunter2")
	assert.Contains(t, out, "visible")
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
