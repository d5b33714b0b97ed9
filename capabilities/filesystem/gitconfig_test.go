package filesystem

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A configuration file git reads for a repository in the root, lying in
// the root outside .git, is read-only to the tools, as .git is: one that
// .git/config includes (include.path, includeIf.*.path, relative to the
// including file's directory, or one an included file includes in turn)
// would otherwise take a core.hooksPath the model wrote, and the user's
// next commit would run the hooks it planted there.
func TestIncludedGitConfigIsProtected(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	ctx := context.Background()
	c, root := newTestFS(t, Options{}, map[string]string{
		"README.md": "hello\n", "shared.gitconfig": "[include]\n\tpath = more/extra.gitconfig\n",
		"config/other": "", "sub/README.md": "", "local.gitconfig": "",
	})
	gitIn(t, root, "init", "-q")
	gitIn(t, root, "config", "include.path", "../gitconfig.local") // missing
	gitIn(t, root, "config", "--add", "include.path", "../shared.gitconfig")
	gitIn(t, root, "config", "includeIf.onbranch:release.path", "../config/release.gitconfig") // not on that branch
	gitIn(t, filepath.Join(root, "sub"), "init", "-q")
	gitIn(t, filepath.Join(root, "sub"), "config", "include.path", "../local.gitconfig")

	for _, tc := range []struct{ tool, path, by string }{
		{ToolWriteFile, "gitconfig.local", "gitconfig.local"},
		{ToolWriteFile, "GitConfig.Local", "gitconfig.local"},
		{ToolEditFile, "shared.gitconfig", "shared.gitconfig"},
		{ToolWriteFile, "more/extra.gitconfig", "more/extra.gitconfig"},
		{ToolWriteFile, "config/release.gitconfig", "config/release.gitconfig"},
		{ToolWriteFile, "sub/local.gitconfig", "sub/local.gitconfig"},
	} {
		args := map[string]any{"path": tc.path, "content": "[core]\n\thooksPath = evil\n"}
		if tc.tool == ToolEditFile {
			args = map[string]any{"path": tc.path, "old_text": "more/extra.gitconfig", "new_text": "evil.gitconfig"}
		}
		out, err := callTool(ctx, t, c, tc.tool, args)
		assert.Equal(t, "RETRY: Path "+pyRepr(tc.path)+" is protected (matches "+pyRepr(tc.by)+").", result(out, err), tc.path)
	}
	assert.NoFileExists(t, filepath.Join(root, "gitconfig.local"))
	assert.NoFileExists(t, filepath.Join(root, "more", "extra.gitconfig"))
	out, err := exec.Command("git", "-C", root, "config", "--get", "core.hooksPath").Output()
	assert.Error(t, err, "core.hooksPath is %q", out)

	// The rest of the tree stays writable: another repository's include
	// names sub/local.gitconfig, not this one.
	for _, p := range []string{"README.md", "config/other", "sub/README.md", "local.gitconfig", "gitconfig.local2"} {
		_, err := callTool(ctx, t, c, ToolWriteFile, map[string]any{"path": p, "content": "ok\n"})
		assert.NoError(t, err, p)
	}
}

// The repository the root lies in counts as well: its .git/config may
// include a file in the root.
func TestIncludedGitConfigOfTheRepositoryAboveTheRoot(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	outer := t.TempDir()
	gitIn(t, outer, "init", "-q")
	gitIn(t, outer, "config", "include.path", "../pkg/local.gitconfig")
	inner := filepath.Join(outer, "pkg")
	require.NoError(t, os.MkdirAll(inner, 0o755))
	c, err := New(Options{Tools: []string{ToolWriteFile}}, inner)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	out, err := callTool(context.Background(), t, c, ToolWriteFile, map[string]any{"path": "local.gitconfig", "content": "evil\n"})
	assert.Equal(t, "RETRY: Path 'local.gitconfig' is protected (matches 'local.gitconfig').", result(out, err))
	_, err = callTool(context.Background(), t, c, ToolWriteFile, map[string]any{"path": "main.go", "content": "package main\n"})
	assert.NoError(t, err)
}

// Without git nothing is asked, and a file an include names is written: no
// git would read it. Outside any repository, nothing is asked either.
func TestGitConfigWithoutGit(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("a shell script stands for git")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	ctx := context.Background()
	c, root := newTestFS(t, Options{}, nil)
	gitIn(t, root, "init", "-q")
	gitIn(t, root, "config", "include.path", "../gitconfig.local")

	t.Setenv("PATH", t.TempDir())
	_, err := callTool(ctx, t, c, ToolWriteFile, map[string]any{"path": "gitconfig.local", "content": "ok\n"})
	assert.NoError(t, err)

	// A git that says what it was asked.
	bin := t.TempDir()
	log := filepath.Join(t.TempDir(), "asked")
	require.NoError(t, os.WriteFile(filepath.Join(bin, "git"), []byte("#!/bin/sh\necho \"$@\" >> "+log+"\nexit 1\n"), 0o755))
	t.Setenv("PATH", bin)
	c2, _ := newTestFS(t, Options{}, nil)
	for _, p := range []string{"gitconfig.local", "b.txt"} {
		_, err := callTool(ctx, t, c2, ToolWriteFile, map[string]any{"path": p, "content": "ok\n"})
		assert.NoError(t, err, p)
	}
	asked, _ := os.ReadFile(log)
	assert.Empty(t, strings.TrimSpace(string(asked)), "git was asked")
}
