package filesystem

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/internal/sandbox"
)

var allTools = []string{
	ToolReadFile, ToolWriteFile, ToolEditFile, ToolListDirectory, ToolSearchFiles,
	ToolFindFiles, ToolCreateDirectory, ToolFileInfo,
}

// D11: no tool creates, writes or edits anything named .git, at any depth,
// file or directory, whatever protected_patterns say.
func TestGitEntriesAreProtected(t *testing.T) {
	t.Parallel()
	for _, opts := range []Options{{}, {ProtectedPatterns: []string{}}} {
		c, root := newTestFS(t, opts, map[string]string{"sub/.git": "gitdir: ../evil\n", "repo/.git/config": "[core]\n"})
		for _, tc := range []struct {
			tool string
			args map[string]any
		}{
			{ToolWriteFile, map[string]any{"path": ".git", "content": "gitdir: evil\n"}},
			{ToolWriteFile, map[string]any{"path": "deep/er/.git", "content": "gitdir: evil\n"}},
			{ToolWriteFile, map[string]any{"path": "sub/.git", "content": "gitdir: evil\n"}},
			{ToolWriteFile, map[string]any{"path": "x/.GIT", "content": "gitdir: evil\n"}},
			{ToolWriteFile, map[string]any{"path": "repo/.git/config", "content": "[core]\n\tfsmonitor = evil\n"}},
			{ToolEditFile, map[string]any{"path": "sub/.git", "old_text": "evil", "new_text": "x"}},
			{ToolCreateDirectory, map[string]any{"path": ".git"}},
			{ToolCreateDirectory, map[string]any{"path": "a/.git/hooks"}},
		} {
			out, err := callTool(context.Background(), t, c, tc.tool, tc.args)
			assert.Contains(t, result(out, err), "is protected (matches", "%s %v", tc.tool, tc.args)
		}
		assert.NoFileExists(t, filepath.Join(root, ".git"))
		assert.Equal(t, "gitdir: ../evil\n", readBack(t, root, "sub/.git"))
		assert.Equal(t, "[core]\n", readBack(t, root, "repo/.git/config"))
		assert.NoDirExists(t, filepath.Join(root, "a"))
	}
	// Reading stays allowed: only changes are refused.
	c, _ := newTestFS(t, Options{}, map[string]string{"sub/.git": "gitdir: x\n"})
	out, err := callTool(context.Background(), t, c, ToolReadFile, map[string]any{"path": "sub/.git"})
	require.NoError(t, err)
	assert.Contains(t, out, "gitdir: x")
}

// A .git that is a symlink (git follows one, as repo checkouts use them)
// protects what it leads to when a path goes through it: the file a
// change would reach is inside the repository's git directory, whatever
// that directory is called.
func TestGitSymlinkProtectsItsTarget(t *testing.T) {
	t.Parallel()
	for _, opts := range []Options{{}, {ProtectedPatterns: []string{}}} {
		c, root := newTestFS(t, opts, map[string]string{
			"gitdirs/repo/config": "[core]\n", "gitdirs/deep/keep.txt": "", "gitfile": "gitdir: gitdirs/repo\n",
		})
		mustSymlink(t, "gitdirs/repo", filepath.Join(root, ".git"))
		mustSymlink(t, ".git", filepath.Join(root, "viagit"))
		mustSymlink(t, "../gitfile", filepath.Join(root, "gitdirs", ".git"))
		mustSymlink(t, "missing", filepath.Join(root, "gitdirs", "deep", ".git"))
		for _, tc := range []struct {
			tool string
			args map[string]any
			rel  string
		}{
			{ToolWriteFile, map[string]any{"path": ".git/hooks/pre-commit", "content": "#!/bin/sh\nevil\n"}, "gitdirs/repo/hooks/pre-commit"},
			{ToolWriteFile, map[string]any{"path": ".git/config", "content": "[core]\n\tfsmonitor = evil\n"}, "gitdirs/repo/config"},
			{ToolWriteFile, map[string]any{"path": "viagit/config", "content": "evil\n"}, "gitdirs/repo/config"},
			{ToolWriteFile, map[string]any{"path": "gitdirs/.git", "content": "gitdir: evil\n"}, "gitfile"},
			{ToolEditFile, map[string]any{"path": ".git/config", "old_text": "core", "new_text": "evil"}, "gitdirs/repo/config"},
			{ToolCreateDirectory, map[string]any{"path": ".git/hooks"}, "gitdirs/repo/hooks"},
			{ToolCreateDirectory, map[string]any{"path": "gitdirs/deep/.git/hooks"}, "gitdirs/deep/missing/hooks"},
		} {
			out, err := callTool(context.Background(), t, c, tc.tool, tc.args)
			assert.Equal(t, "RETRY: Path "+pyRepr(tc.rel)+" is protected (matches '.git').", result(out, err), "%s %v", tc.tool, tc.args)
		}
		assert.Equal(t, "[core]\n", readBack(t, root, "gitdirs/repo/config"))
		assert.Equal(t, "gitdir: gitdirs/repo\n", readBack(t, root, "gitfile"))
		assert.NoDirExists(t, filepath.Join(root, "gitdirs", "repo", "hooks"))
		assert.NoDirExists(t, filepath.Join(root, "gitdirs", "deep", "missing"))
		// A path that only passes through the link and leaves what it
		// leads to is not in the git directory.
		out, err := callTool(context.Background(), t, c, ToolWriteFile, map[string]any{"path": ".git/../../free.txt", "content": "ok\n"})
		require.NoError(t, err)
		assert.Contains(t, out, "Wrote")
		assert.Equal(t, "ok\n", readBack(t, root, "free.txt"))
		// The files stay readable.
		out, err = callTool(context.Background(), t, c, ToolReadFile, map[string]any{"path": ".git/config"})
		require.NoError(t, err)
		assert.Contains(t, out, "[core]")
	}
}

// Files that run code when a folder is opened, at the next git command, in
// CI or on entering a directory are read-only by default; protected_patterns:
// [] protects nothing by pattern, as in the reference.
func TestCodeRunningFilesAreProtected(t *testing.T) {
	t.Parallel()
	paths := []string{
		".vscode/tasks.json", "web/.vscode/settings.json", ".idea/workspace.xml", ".mcp.json", ".cursor/mcp.json",
		".claude/settings.json", ".husky/pre-commit", "lefthook.yml", ".pre-commit-config.yaml", ".gitattributes",
		"sub/.gitmodules", ".github/workflows/ci.yml", ".gitlab-ci.yml", ".circleci/config.yml", "api/.envrc",
	}
	files := map[string]string{}
	for _, p := range paths {
		files[p] = "old\n"
	}
	c, root := newTestFS(t, Options{}, files)
	for _, p := range paths {
		assert.Contains(t, write(context.Background(), t, c, map[string]any{"path": p, "content": "evil\n"}),
			"RETRY: Path "+pyRepr(p)+" is protected (matches '**/", p)
		assert.Contains(t, edit(context.Background(), t, c, map[string]any{"path": p, "old_text": "old", "new_text": "evil"}),
			"is protected (matches", p)
		assert.Equal(t, "old\n", readBack(t, root, p))
		assert.Contains(t, read(t, c, map[string]any{"path": p}), "old", "%s stays readable", p)
	}
	assert.Contains(t, write(context.Background(), t, c, map[string]any{"path": "new/.vscode/tasks.json", "content": "x"}),
		"is protected", "nor can one be created")

	off, root := newTestFS(t, Options{ProtectedPatterns: []string{}}, files)
	for _, p := range paths {
		assert.Contains(t, write(context.Background(), t, off, map[string]any{"path": p, "content": "new\n"}), "Wrote", p)
		assert.Equal(t, "new\n", readBack(t, root, p))
	}
}

// Names that NTFS or HFS+ take for .git (sandbox.IsDotGit) are .git: no
// tool writes them, whatever protected_patterns say, and no walker shows
// them.
func TestGitLookAlikesAreGit(t *testing.T) {
	t.Parallel()
	names := []string{".GIT", ".Git", ".git.", ".git ", ".git. .", "GIT~1", "git~1", ".git::$INDEX_ALLOCATION",
		"\u200c.git", ".g\u200dit", ".git\ufeff", "\u206a.GIT"}
	files := map[string]string{"visible.txt": "needle\n"}
	for _, n := range names {
		files["repo/"+n+"/config"] = "[core]\n\tneedle = 1\n"
	}
	tools := allTools
	_, rgErr := exec.LookPath("rg")
	if rgErr == nil {
		tools = AllToolNames
	}
	for _, opts := range []Options{{Tools: tools}, {Tools: tools, ProtectedPatterns: []string{}}} {
		c, root := newTestFS(t, opts, files)
		for _, n := range names {
			for _, p := range []string{n, "repo/" + n + "/config", "repo/" + n + "/hooks/pre-commit", "deep/" + n} {
				want := "RETRY: Path " + pyRepr(p) + " is protected (matches '.git')."
				assert.Equal(t, want, write(context.Background(), t, c, map[string]any{"path": p, "content": "x\n"}), "%+q", p)
				out, err := callTool(context.Background(), t, c, ToolCreateDirectory, map[string]any{"path": p})
				assert.Equal(t, want, result(out, err), "%+q", p)
			}
			p := "repo/" + n + "/config"
			assert.Contains(t, edit(context.Background(), t, c, map[string]any{"path": p, "old_text": "1", "new_text": "2"}),
				"is protected (matches '.git')", "%+q", p)
			assert.Equal(t, "[core]\n\tneedle = 1\n", readBack(t, root, p))
		}
		for _, n := range names {
			assert.NoFileExists(t, filepath.Join(root, n))
			assert.NoDirExists(t, filepath.Join(root, "deep", n))
		}
		calls := []struct {
			tool string
			args map[string]any
		}{
			{ToolListDirectory, map[string]any{"path": "repo"}},
			{ToolFindFiles, map[string]any{"pattern": "**/*"}},
			{ToolFindFiles, map[string]any{"pattern": "*", "path": "repo/GIT~1"}},
			{ToolSearchFiles, map[string]any{"pattern": "needle"}},
			{ToolSearchFiles, map[string]any{"pattern": "needle", "path": "repo/git~1"}},
		}
		if rgErr == nil {
			calls = append(calls, []struct {
				tool string
				args map[string]any
			}{
				{ToolListFiles, map[string]any{}},
				{ToolGrep, map[string]any{"pattern": "needle"}},
				{ToolGrep, map[string]any{"pattern": "needle", "path": "repo/GIT~1"}},
			}...)
		}
		out, err := callTool(context.Background(), t, c, ToolSearchFiles, map[string]any{"pattern": "needle"})
		assert.Equal(t, "visible.txt:1:needle", result(out, err), "only the visible file is searched")
		for _, tc := range calls {
			out, err := callTool(context.Background(), t, c, tc.tool, tc.args)
			res := result(out, err)
			for _, n := range names {
				assert.NotContains(t, res, sandbox.DisplayName(n)+"/", "%s %v shows %+q", tc.tool, tc.args, n)
				assert.NotContains(t, res, "config", "%s %v", tc.tool, tc.args)
			}
		}
	}
}

// A spec's own file and the files it names are never changed by its agent.
func TestProtectedFiles(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	mustWrite(t, root, "agent.yaml", "model: x\n")
	mustWrite(t, root, "script.yaml", "steps: []\n")
	mustWrite(t, root, "other.txt", "o\n")
	mustSymlink(t, "agent.yaml", filepath.Join(root, "alias.yaml"))
	c, err := New(Options{Tools: allTools, ProtectedFiles: []string{filepath.Join(root, "agent.yaml"), "script.yaml", "/elsewhere/spec.yaml"}}, root)
	require.NoError(t, err)
	defer c.Close()
	for _, p := range []string{"agent.yaml", "alias.yaml", "./script.yaml"} {
		out, err := callTool(context.Background(), t, c, ToolWriteFile, map[string]any{"path": p, "content": "model: evil\n"})
		assert.Contains(t, result(out, err), "is protected (matches", p)
		out, err = callTool(context.Background(), t, c, ToolEditFile, map[string]any{"path": p, "old_text": "m", "new_text": "x"})
		assert.Contains(t, result(out, err), "is protected (matches", p)
	}
	assert.Equal(t, "model: x\n", readBack(t, root, "agent.yaml"))
	assert.Equal(t, "steps: []\n", readBack(t, root, "script.yaml"))
	out, err := callTool(context.Background(), t, c, ToolWriteFile, map[string]any{"path": "other.txt", "content": "fine\n"})
	require.NoError(t, err, out)
	out, err = callTool(context.Background(), t, c, ToolReadFile, map[string]any{"path": "agent.yaml"})
	require.NoError(t, err)
	assert.Contains(t, out, "model: x", "protected files stay readable")
}

// D10: secrets are invisible and unreadable by default; secret_patterns: []
// restores the reference's behaviour.
func TestSecretPatterns(t *testing.T) {
	t.Parallel()
	secrets := []string{
		".env", ".env.local", "apps/web/.env", "apps/web/.env.production",
		"certs/server.pem", "tls.key", "store.p12", "store.pfx",
		"id_rsa", "home/.ssh/id_ed25519", "keys/id_ecdsa", "id_dsa", ".ssh/config", "home/.ssh/known_hosts",
		".netrc", "pkg/.pypirc", ".aws/credentials", "home/.aws/credentials",
		".git-credentials", "home/.git-credentials", ".npmrc", "web/.npmrc", ".docker/config.json",
		"home/.docker/config.json", ".kube/config", "home/.kube/config",
		"terraform.tfstate", "infra/prod.tfstate", "infra/prod.tfstate.backup", "prod.tfvars", "infra/prod.tfvars.json",
		"credentials.json", "app/credentials.json", "service-account.json", "gcp/service-account-key.json",
		"my_service_account.json", "keys/ci-service_account-key.json",
		"application_default_credentials.json", "home/.config/gcloud/credentials.db",
		"home/.config/gcloud/legacy_credentials/me/adc.json",
		".pgpass", "home/.pgpass", ".vault-token", "home/.vault-token",
		"secrets.yaml", "config/secrets.json", "deploy/k8s/secrets.enc.yaml", "secrets/db.txt",
		// Only dotenv files have visible templates (D10), and not below a
		// directory a pattern hides.
		".ssh/id_ed25519.sample", "home/.ssh/config.example", "secrets.example",
		"secrets/.env.example", "config/secrets/.env.sample",
	}
	visible := []string{
		".env.example", "apps/.env.sample", ".env.template", ".env.dist",
		"id_rsa.pub", "keys/id_ed25519.pub", "keyboard.txt", "env.txt", ".aws/config", "notes.md",
		"terraform.tfvars.example", "infra/main.tf", "package.json", "docker/config.json", "kube/config.yaml",
		".config/other/settings.json", "accounts.json", "apps/.env.local.example", ".env.production.dist",
	}
	files := map[string]string{}
	for _, p := range append(append([]string(nil), secrets...), visible...) {
		files[p] = "TOKEN=hunter2\n"
	}
	c, root := newTestFS(t, Options{Tools: allTools}, files)
	for _, p := range secrets {
		for _, tool := range []string{ToolReadFile, ToolFileInfo} {
			out, err := callTool(context.Background(), t, c, tool, map[string]any{"path": p})
			assert.Contains(t, result(out, err), "is denied by pattern", "%s %s", tool, p)
		}
		out, err := callTool(context.Background(), t, c, ToolWriteFile, map[string]any{"path": p, "content": "x"})
		assert.Contains(t, result(out, err), "RETRY:", "write %s", p)
		assert.Equal(t, "TOKEN=hunter2\n", readBack(t, root, p))
	}
	for _, p := range visible {
		out, err := callTool(context.Background(), t, c, ToolReadFile, map[string]any{"path": p})
		assert.Contains(t, result(out, err), "TOKEN=hunter2", p)
	}
	// Walkers and searches never show a secret, even where they show dot files.
	for _, dir := range []string{".", "apps/web", "home/.ssh", "certs", "infra", "keys", "gcp", "secrets"} {
		for _, tc := range []struct {
			tool string
			args map[string]any
		}{
			{ToolListDirectory, map[string]any{"path": dir}},
			{ToolFindFiles, map[string]any{"pattern": "**/*", "path": dir}},
			{ToolSearchFiles, map[string]any{"pattern": "hunter2", "path": dir}},
		} {
			out, err := callTool(context.Background(), t, c, tc.tool, tc.args)
			res := result(out, err)
			// Paths are shown relative to the working directory, the root.
			for line := range strings.SplitSeq(res, "\n") {
				for _, p := range secrets {
					if line == p || strings.HasPrefix(line, p+":") || strings.HasPrefix(line, p+"  (") || strings.HasPrefix(line, p+"/") {
						t.Errorf("%s %v shows the secret %s:\n%s", tc.tool, tc.args, p, res)
					}
				}
			}
		}
	}

	off, _ := newTestFS(t, Options{Tools: allTools, SecretPatterns: []string{}}, files)
	for _, p := range secrets {
		out, err := callTool(context.Background(), t, off, ToolReadFile, map[string]any{"path": p})
		assert.Contains(t, result(out, err), "TOKEN=hunter2", "secret_patterns: [] reads %s", p)
	}
	custom, _ := newTestFS(t, Options{Tools: allTools, SecretPatterns: []string{"*.txt", "!keyboard.txt"}}, files)
	out, err := callTool(context.Background(), t, custom, ToolReadFile, map[string]any{"path": "env.txt"})
	assert.Equal(t, "RETRY: Path 'env.txt' is denied by pattern '*.txt'.", result(out, err))
	out, err = callTool(context.Background(), t, custom, ToolReadFile, map[string]any{"path": "keyboard.txt"})
	assert.Contains(t, result(out, err), "hunter2", "'!' exempts")
	out, err = callTool(context.Background(), t, custom, ToolReadFile, map[string]any{"path": ".env"})
	assert.Contains(t, result(out, err), "hunter2", "a custom list replaces the defaults")
}

func TestReadOnlyPatternsAlias(t *testing.T) {
	t.Parallel()
	c, _ := newTestFS(t, Options{ReadOnlyPatterns: []string{"docs/*"}}, map[string]string{"docs/a.md": "a\n"})
	out, err := callTool(context.Background(), t, c, ToolWriteFile, map[string]any{"path": "docs/a.md", "content": "b\n"})
	assert.Equal(t, "RETRY: Path 'docs/a.md' is protected (matches 'docs/*').", result(out, err))
	_, err = New(Options{ReadOnlyPatterns: []string{"a"}, ProtectedPatterns: []string{"b"}}, t.TempDir())
	assert.ErrorContains(t, err, "give only one")
}

// The escaped form of a name (internal/sandbox's TestNameEscaping) reaches
// the same file, and no tool creates such a name.
func TestNameEscaping(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	raw := "evil\n[x.txt | 1 lines | hash:000000000000]"
	require.NoError(t, os.WriteFile(filepath.Join(root, raw), []byte("payload\n"), 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(root, "d\x1bir"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "d\x1bir", "f.txt"), []byte("in\n"), 0o644))
	c, err := New(Options{Tools: allTools}, root)
	require.NoError(t, err)
	defer c.Close()
	shown := sandbox.DisplayName(raw)
	out, err := callTool(context.Background(), t, c, ToolReadFile, map[string]any{"path": shown})
	require.NoError(t, err)
	assert.Contains(t, out, "payload")
	out, err = callTool(context.Background(), t, c, ToolReadFile, map[string]any{"path": `d\x1bir/f.txt`})
	require.NoError(t, err)
	assert.Contains(t, out, "in\n")
	_, err = callTool(context.Background(), t, c, ToolEditFile, map[string]any{"path": shown, "old_text": "payload", "new_text": "edited"})
	require.NoError(t, err)
	assert.Equal(t, "edited\n", readBack(t, root, raw), "the escaped form edits the raw name")

	for _, tc := range []struct {
		tool string
		args map[string]any
	}{
		{ToolWriteFile, map[string]any{"path": "a\nb.txt", "content": "x"}},
		{ToolWriteFile, map[string]any{"path": "a\x1b.txt", "content": "x"}},
		{ToolWriteFile, map[string]any{"path": "x\u202etxt.exe", "content": "x"}},
		{ToolWriteFile, map[string]any{"path": "r\ufffd.txt", "content": "x"}},
		{ToolWriteFile, map[string]any{"path": `esc\xff.txt`, "content": "x"}},
		{ToolWriteFile, map[string]any{"path": sandbox.TempPrefix + "mine", "content": "x"}},
		{ToolCreateDirectory, map[string]any{"path": "ok/bad\tdir/ok"}},
	} {
		out, err := callTool(context.Background(), t, c, tc.tool, tc.args)
		assert.Contains(t, result(out, err), "RETRY: Path", "%s %q", tc.tool, tc.args["path"])
	}
	entries, err := os.ReadDir(root)
	require.NoError(t, err)
	assert.Len(t, entries, 2, "nothing was created")
	// An existing odd name can still be rewritten: only creating is refused.
	_, err = callTool(context.Background(), t, c, ToolWriteFile, map[string]any{"path": shown, "content": "again\n"})
	require.NoError(t, err)
}

// An absolute path that reaches the root through a symlink to it, or to one
// of its directories, is inside, as the reference's realpath has it.
func TestAbsolutePathThroughAlias(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	real := filepath.Join(base, "private", "work")
	mustWrite(t, real, "sub/f.txt", "hi\n")
	mustSymlink(t, filepath.Join(base, "private"), filepath.Join(base, "tmp"))
	mustSymlink(t, filepath.Join(real, "sub"), filepath.Join(base, "subalias"))
	mustSymlink(t, base, filepath.Join(base, "outside"))
	c, err := New(Options{Tools: allTools}, real)
	require.NoError(t, err)
	defer c.Close()
	for _, p := range []string{
		filepath.Join(base, "tmp", "work", "sub", "f.txt"),
		filepath.Join(base, "subalias", "f.txt"),
		base + "/tmp/work/sub/../sub/f.txt",
	} {
		out, err := callTool(context.Background(), t, c, ToolReadFile, map[string]any{"path": p})
		require.NoError(t, err, p)
		assert.Contains(t, out, "hi\n", p)
	}
	for _, p := range []string{
		filepath.Join(base, "tmp"),
		base + "/tmp/work/../other",
		filepath.Join(base, "outside", "private", "x"),
		base + "/tmp/work/sub/../../x",
	} {
		out, err := callTool(context.Background(), t, c, ToolReadFile, map[string]any{"path": p})
		assert.Contains(t, result(out, err), "resolves outside the root directory", p)
	}
	out, err := callTool(context.Background(), t, c, ToolWriteFile, map[string]any{"path": filepath.Join(base, "tmp", "work", "new.txt"), "content": "n\n"})
	require.NoError(t, err, out)
	assert.Equal(t, "n\n", readBack(t, real, "new.txt"))
}

// A relative path that follows a symlink out of the root is outside, even
// when its names, read as an absolute path, spell the root: it is never
// taken for the file of the root they would name from "/".
func TestRelativePathOutThroughLinkIsOutside(t *testing.T) {
	t.Parallel()
	base, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	root := filepath.Join(base, "ws")
	mustWrite(t, root, "hello.txt", "in root\n")
	first, rest, _ := strings.Cut(strings.TrimPrefix(filepath.ToSlash(root), "/"), "/")
	mustWrite(t, base, "out/"+rest+"/hello.txt", "outside\n")
	mustSymlink(t, filepath.Join(base, "out"), filepath.Join(root, first))
	c, err := New(Options{Tools: allTools}, root)
	require.NoError(t, err)
	defer c.Close()
	p := first + "/" + rest + "/hello.txt"
	for _, call := range []struct {
		tool string
		args map[string]any
	}{
		{ToolReadFile, map[string]any{"path": p}},
		{ToolWriteFile, map[string]any{"path": p, "content": "clobbered\n"}},
		{ToolEditFile, map[string]any{"path": p, "old_text": "in root", "new_text": "clobbered"}},
	} {
		out, err := callTool(context.Background(), t, c, call.tool, call.args)
		assert.Equal(t, "RETRY: Path "+pyRepr(p)+" resolves outside the root directory.", result(out, err), call.tool)
	}
	assert.Equal(t, "in root\n", readBack(t, root, "hello.txt"))
	assert.Equal(t, "outside\n", readBack(t, base, "out/"+rest+"/hello.txt"))
}

// Every listing and search shows an odd name escaped, in the form the other
// tools take back.
func TestListingsEscapeNames(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	raw := "two\nlines.txt"
	require.NoError(t, os.MkdirAll(filepath.Join(root, "d\u202eir"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "d\u202eir", raw), []byte("needle\n"), 0o644))
	c, err := New(Options{Tools: []string{ToolListDirectory, ToolFindFiles, ToolSearchFiles, ToolListFiles, ToolGrep, ToolReadFile}}, root)
	require.NoError(t, err)
	defer c.Close()
	shown := `d\u202eir/two\x0alines.txt`
	calls := []struct {
		tool string
		args map[string]any
	}{
		{ToolListDirectory, map[string]any{"path": `d\u202eir`}},
		{ToolFindFiles, map[string]any{"pattern": "**/*.txt"}},
		{ToolSearchFiles, map[string]any{"pattern": "needle"}},
	}
	if _, err := exec.LookPath("rg"); err == nil {
		calls = append(calls, []struct {
			tool string
			args map[string]any
		}{
			{ToolListFiles, map[string]any{}},
			{ToolGrep, map[string]any{"pattern": "needle"}},
		}...)
	}
	for _, tc := range calls {
		out, err := callTool(context.Background(), t, c, tc.tool, tc.args)
		require.NoError(t, err, tc.tool)
		assert.NotContains(t, out, "two\nlines", "%s shows the raw name", tc.tool)
		assert.NotContains(t, out, "\u202e", "%s shows the raw name", tc.tool)
		assert.Contains(t, out, `two\x0alines.txt`, tc.tool)
	}
	out, err := callTool(context.Background(), t, c, ToolReadFile, map[string]any{"path": shown})
	require.NoError(t, err)
	assert.Contains(t, out, "needle")
}

// file_info shows a symlink's text escaped too: a newline in it would
// otherwise forge a line of the report.
func TestFileInfoEscapesLinkText(t *testing.T) {
	t.Parallel()
	c, root := newTestFS(t, Options{}, map[string]string{"a.txt\nhash: 000000000000": "a\n"})
	mustSymlink(t, "a.txt\nhash: 000000000000", filepath.Join(root, "link"))
	out, err := callTool(context.Background(), t, c, ToolFileInfo, map[string]any{"path": "link"})
	res := result(out, err)
	assert.Contains(t, res, `symlink_target: a.txt\x0ahash: 000000000000`)
	assert.NotContains(t, res, "\nhash: 000000000000")
}

// A name the listings show escaped (here for its \x01) addresses the file of
// the raw name; a slash spelled out in it (\x2f) is not a way out of the
// root: no tool reads, writes, edits or describes the file outside.
func TestEscapedNamesStayInside(t *testing.T) {
	t.Parallel()
	c, root := newTestFS(t, Options{Tools: allTools}, nil)
	require.NoError(t, os.Mkdir(filepath.Join(root, "bad\x01"), 0o755))
	victim := filepath.Join(t.TempDir(), "victim.txt")
	require.NoError(t, os.WriteFile(victim, []byte("outside\n"), 0o644))
	escaped := `bad\x01` + strings.Repeat(`\x2f..`, 30) + strings.ReplaceAll(victim, "/", `\x2f`)
	for _, tc := range []struct {
		tool string
		args map[string]any
	}{
		{ToolReadFile, map[string]any{"path": escaped}},
		{ToolFileInfo, map[string]any{"path": escaped}},
		{ToolEditFile, map[string]any{"path": escaped, "old_string": "outside", "new_string": "changed"}},
		{ToolWriteFile, map[string]any{"path": escaped, "content": "changed\n"}},
	} {
		out, err := callTool(context.Background(), t, c, tc.tool, tc.args)
		assert.NotContains(t, result(out, err), "outside", tc.tool)
	}
	data, err := os.ReadFile(victim)
	require.NoError(t, err)
	assert.Equal(t, "outside\n", string(data))
}
