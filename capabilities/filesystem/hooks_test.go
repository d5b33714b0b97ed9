package filesystem

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gitIn runs git in dir and fails the test when it fails.
func gitIn(t *testing.T, dir string, args ...string) {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
	require.NoError(t, err, "%s", out)
}

// A hooks directory that core.hooksPath puts in the root, outside .git, is
// read-only to the tools, as .git is: a hook written there would run at
// the user's next commit.
func TestHooksPathIsProtected(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	ctx := context.Background()
	c, root := newTestFS(t, Options{}, map[string]string{
		".githooks/pre-push": "#!/bin/sh\n", "README.md": "hello\n", "sub/README.md": "sub\n",
		"hooks/README.md": "", ".githooks2/README.md": "", "sub/.githooks/README.md": "",
	})
	gitIn(t, root, "init", "-q")
	gitIn(t, root, "config", "core.hooksPath", ".githooks")
	gitIn(t, filepath.Join(root, "sub"), "init", "-q")
	gitIn(t, filepath.Join(root, "sub"), "config", "core.hooksPath", "hooks") // missing
	require.NoError(t, os.Symlink(".githooks", filepath.Join(root, "link")))

	refused := map[string]struct {
		tool    string
		args    map[string]any
		rel, by string
	}{
		"write a new hook": {ToolWriteFile, map[string]any{"path": ".githooks/pre-commit", "content": "evil\n"},
			".githooks/pre-commit", ".githooks"},
		"edit a hook": {ToolEditFile, map[string]any{"path": ".githooks/pre-push", "old_text": "sh", "new_text": "sh -x"},
			".githooks/pre-push", ".githooks"},
		"through a symlink": {ToolWriteFile, map[string]any{"path": "link/post-checkout", "content": "evil\n"},
			".githooks/post-checkout", ".githooks"},
		"a nested repository's": {ToolWriteFile, map[string]any{"path": "sub/hooks/pre-commit", "content": "evil\n"},
			"sub/hooks/pre-commit", "sub/hooks"},
		"make the missing one": {ToolCreateDirectory, map[string]any{"path": "sub/hooks"}, "sub/hooks", "sub/hooks"},
		"another case of the name": {ToolWriteFile, map[string]any{"path": ".GitHooks/pre-commit", "content": "evil\n"},
			".GitHooks/pre-commit", ".githooks"},
	}
	for name, tc := range refused {
		out, err := callTool(ctx, t, c, tc.tool, tc.args)
		assert.Equal(t, "RETRY: Path "+pyRepr(tc.rel)+" is protected (matches "+pyRepr(tc.by)+").", result(out, err), name)
	}
	assert.NoFileExists(t, filepath.Join(root, ".githooks", "pre-commit"))
	assert.NoDirExists(t, filepath.Join(root, "sub", "hooks"))
	assert.Equal(t, "#!/bin/sh\n", readBack(t, root, ".githooks/pre-push"))

	// The rest of the work trees stays writable, a directory named hooks
	// elsewhere too.
	for _, p := range []string{"README.md", "sub/README.md", "hooks/pre-commit", ".githooks2/x", "sub/.githooks/x"} {
		_, err := callTool(ctx, t, c, ToolWriteFile, map[string]any{"path": p, "content": "ok\n"})
		assert.NoError(t, err, p)
	}
}

// The root is a directory of a repository whose hooks lie in it.
func TestHooksPathOfTheRepositoryAboveTheRoot(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	outer := t.TempDir()
	gitIn(t, outer, "init", "-q")
	gitIn(t, outer, "config", "core.hooksPath", "pkg/hooks")
	inner := filepath.Join(outer, "pkg")
	require.NoError(t, os.MkdirAll(inner, 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(inner, "hooks"), 0o755))
	c, err := New(Options{Tools: []string{ToolWriteFile}}, inner)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	out, err := callTool(context.Background(), t, c, ToolWriteFile, map[string]any{"path": "hooks/pre-commit", "content": "evil\n"})
	assert.Equal(t, "RETRY: Path 'hooks/pre-commit' is protected (matches 'hooks').", result(out, err))
	_, err = callTool(context.Background(), t, c, ToolWriteFile, map[string]any{"path": "main.go", "content": "package main\n"})
	assert.NoError(t, err)

	// Without core.hooksPath, git's hooks are in .git, which D11 covers,
	// and a directory named hooks is a directory like any other.
	plain := t.TempDir()
	gitIn(t, plain, "init", "-q")
	require.NoError(t, os.MkdirAll(filepath.Join(plain, "hooks"), 0o755))
	c2, err := New(Options{Tools: []string{ToolWriteFile}}, plain)
	require.NoError(t, err)
	t.Cleanup(func() { c2.Close() })
	_, err = callTool(context.Background(), t, c2, ToolWriteFile, map[string]any{"path": "hooks/pre-commit", "content": "fine\n"})
	assert.NoError(t, err)
}

// A hooks directory that is the root itself or a nested work tree's top
// (core.hooksPath ".") keeps the files named as git's hooks read-only, and
// nothing else there.
func TestHooksPathIsAWorkTree(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	ctx := context.Background()
	c, root := newTestFS(t, Options{}, map[string]string{"README.md": "hello\n", "sub/README.md": "sub\n", "src/main.go": ""})
	gitIn(t, root, "init", "-q")
	gitIn(t, root, "config", "core.hooksPath", ".")
	gitIn(t, filepath.Join(root, "sub"), "init", "-q")
	gitIn(t, filepath.Join(root, "sub"), "config", "core.hooksPath", ".")

	for _, p := range []string{"pre-commit", "Post-Checkout", "sub/pre-push"} {
		out, err := callTool(ctx, t, c, ToolWriteFile, map[string]any{"path": p, "content": "evil\n"})
		assert.Equal(t, "RETRY: Path "+pyRepr(p)+" is protected (matches "+pyRepr(p)+").", result(out, err), p)
		assert.NoFileExists(t, filepath.Join(root, p))
	}
	for _, p := range []string{"README.md", "sub/README.md", "src/pre-commit", "pre-commit.sample"} {
		_, err := callTool(ctx, t, c, ToolWriteFile, map[string]any{"path": p, "content": "ok\n"})
		assert.NoError(t, err, p)
	}
}
