package queue

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/spec"
)

func noRefusal(string) string { return "" }

// tarGz is an archive of files, as packDir makes them.
func tarGz(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for name, content := range files {
		require.NoError(t, tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Size: int64(len(content)), Mode: 0o755}))
		_, err := tw.Write([]byte(content))
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

func loadSpec(t *testing.T, yaml string) *spec.Spec {
	t.Helper()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"agent.yaml": yaml})
	s, err := spec.LoadFile(filepath.Join(dir, "agent.yaml"))
	require.NoError(t, err)
	return s
}

// What ships and what comes back is what the spec's capabilities say of
// each path, asked of them over the workspace, nested ones included; a
// path no capability covers is judged by a FileSystem's defaults.
func TestPathGuards(t *testing.T) {
	t.Parallel()
	guards := func(t *testing.T, caps string) *pathGuards {
		ws := t.TempDir()
		writeFiles(t, ws, map[string]string{"src/main.go": "", "docs/a.md": ""})
		g, err := newPathGuards(context.Background(), loadSpec(t, "model: test\ncapabilities:\n"+caps), ws, nil)
		require.NoError(t, err)
		t.Cleanup(g.Close)
		return g
	}
	t.Run("defaults", func(t *testing.T) {
		t.Parallel()
		g := guards(t, "  - FileSystem\n")
		for rel, want := range map[string]bool{
			".env": true, "sub/.env.local": true, "k.pem": true, "home/.ssh/id": true,
			".env.example": false, "src/main.go": false,
		} {
			assert.Equal(t, want, g.secret(rel), rel)
		}
	})
	t.Run("own patterns, over the root", func(t *testing.T) {
		t.Parallel()
		g := guards(t, "  - FileSystem: {root_dir: src, secret_patterns: ['vault/*', '!vault/README'], protected_patterns: ['gen/*']}\n")
		for rel, want := range map[string]string{
			"src/vault/key":    "src/vault/key: secret (matches 'vault/*')",
			"src/vault/a/b":    "src/vault/a/b: secret (matches 'vault/*')",
			"src/vault/README": "",
			"src/.env":         "", // the spec's patterns replace the defaults
			"src/gen/x.go":     "src/gen/x.go: protected (matches 'gen/*')",
			"src/main.go":      "",
			// Held by no FileSystem: a FileSystem's defaults judge it.
			".env":        ".env: secret (matches '**/.env')",
			"top/.git/x":  `top/.git/x: inside a .git directory (".git")`,
			"README.md":   "",
			"src/.GIT/x":  `src/.GIT/x: inside a .git directory (".GIT")`,
			"src/.git./x": `src/.git./x: inside a .git directory (".git.")`,
			"src/GIT~1/x": `src/GIT~1/x: inside a .git directory ("GIT~1")`,
		} {
			assert.Equal(t, want, g.refusal(rel), rel)
		}
	})
	t.Run("hooks directory", func(t *testing.T) {
		t.Parallel()
		if _, err := exec.LookPath("git"); err != nil {
			t.Skip("no git")
		}
		ws := t.TempDir()
		for _, args := range [][]string{{"init", "-q"}, {"config", "core.hooksPath", ".githooks"}} {
			out, err := exec.Command("git", append([]string{"-C", ws}, args...)...).CombinedOutput()
			require.NoError(t, err, "%s", out)
		}
		g, err := newPathGuards(context.Background(), loadSpec(t, "model: test\ncapabilities: [FileSystem]\n"), ws, nil)
		require.NoError(t, err)
		t.Cleanup(g.Close)
		assert.Equal(t, `.githooks/pre-commit: inside git's hooks directory (".githooks")`, g.refusal(".githooks/pre-commit"))
		assert.Empty(t, g.refusal("githooks/pre-commit"))
	})
	t.Run("hooks in the workspace's top", func(t *testing.T) {
		t.Parallel()
		if _, err := exec.LookPath("git"); err != nil {
			t.Skip("no git")
		}
		ws := t.TempDir()
		for _, args := range [][]string{{"init", "-q"}, {"config", "core.hooksPath", "."}} {
			out, err := exec.Command("git", append([]string{"-C", ws}, args...)...).CombinedOutput()
			require.NoError(t, err, "%s", out)
		}
		g, err := newPathGuards(context.Background(), loadSpec(t, "model: test\ncapabilities: [FileSystem]\n"), ws, nil)
		require.NoError(t, err)
		t.Cleanup(g.Close)
		assert.Equal(t, `pre-commit: a git hook (core.hooksPath names ".")`, g.refusal("pre-commit"))
		assert.Empty(t, g.refusal("main.go"))
		assert.Empty(t, g.refusal("src/pre-commit"))
	})
	t.Run("included git configuration", func(t *testing.T) {
		t.Parallel()
		if _, err := exec.LookPath("git"); err != nil {
			t.Skip("no git")
		}
		ws := t.TempDir()
		for _, args := range [][]string{{"init", "-q"}, {"config", "include.path", "../gitconfig.local"}} {
			out, err := exec.Command("git", append([]string{"-C", ws}, args...)...).CombinedOutput()
			require.NoError(t, err, "%s", out)
		}
		g, err := newPathGuards(context.Background(), loadSpec(t, "model: test\ncapabilities: [FileSystem]\n"), ws, nil)
		require.NoError(t, err)
		t.Cleanup(g.Close)
		// A core.hooksPath written there would run at the user's next commit.
		assert.Equal(t, `gitconfig.local: a file git reads configuration from ("gitconfig.local")`, g.refusal("gitconfig.local"))
		assert.Equal(t, `GitConfig.Local: a file git reads configuration from ("gitconfig.local")`, g.refusal("GitConfig.Local"))
		assert.Empty(t, g.refusal("gitconfig"))
		assert.Empty(t, g.refusal("src/gitconfig.local"))
	})
	t.Run("nested", func(t *testing.T) {
		t.Parallel()
		g := guards(t, "  - PrefixTools: {prefix: d, capability: {FileSystem: {root_dir: docs, protected_patterns: ['*.md']}}}\n")
		assert.Equal(t, "docs/a.md: protected (matches '*.md')", g.refusal("docs/a.md"))
		assert.Empty(t, g.refusal("docs/a.txt"))
	})
}

// A result's changes that touch .git, a secret or protected file, the spec
// itself, or lead out of the directory or through a link in it, are refused
// whole: not even the harmless files among them are written.
func TestApplyChangesRefuses(t *testing.T) {
	t.Parallel()
	s := loadSpec(t, "model: test\ncapabilities:\n  - FileSystem: {protected_patterns: ['docs/*']}\n")
	for forged, want := range map[string]string{
		".git/hooks/pre-commit": `.git/hooks/pre-commit: inside a .git directory (".git")`,
		".GIT/hooks/pre-commit": `.GIT/hooks/pre-commit: inside a .git directory (".GIT")`,
		".git./hooks/x":         `.git./hooks/x: inside a .git directory (".git.")`,
		"GIT~1/hooks/x":         `GIT~1/hooks/x: inside a .git directory ("GIT~1")`,
		"sub/.git/config":       `sub/.git/config: inside a .git directory (".git")`,
		".env":                  ".env: secret (matches '**/.env')",
		"docs/a.md":             "docs/a.md: protected (matches 'docs/*')",
		"agent.yaml":            "agent.yaml: the spec's own file",
		"../evil":               `"../evil": not a path inside the directory`,
		"/etc/evil":             `"/etc/evil": not a path inside the directory`,
		"./ok.txt":              `"./ok.txt": not a clean path`,
		"link/x":                "link/x: link is a symbolic link here",
		"hooks":                 "hooks: hooks is a symbolic link here",
	} {
		t.Run(forged, func(t *testing.T) {
			t.Parallel()
			home := t.TempDir()
			writeFiles(t, home, map[string]string{".git/HEAD": "ref: refs/heads/main\n", "real/keep": ""})
			require.NoError(t, os.Symlink("real", filepath.Join(home, "link")))
			require.NoError(t, os.Symlink(".git/hooks", filepath.Join(home, "hooks")))
			_, shipped, err := packDir(home, DefaultShipMax, nil)
			require.NoError(t, err)
			guards, err := newPathGuards(context.Background(), s, home, nil)
			require.NoError(t, err)
			defer guards.Close()
			refuse := func(rel string) string {
				if rel == "agent.yaml" {
					return rel + ": the spec's own file"
				}
				return guards.refusal(rel)
			}
			archive := tarGz(t, map[string]string{strings.TrimPrefix(forged, "/"): "evil\n", "ok.txt": "fine\n"})
			ch := &Changes{Files: []string{"ok.txt", forged}}
			err = applyChanges(home, shipped, ch, archive, DefaultShipMax, refuse)
			var refused *RefusedError
			require.ErrorAs(t, err, &refused)
			assert.Equal(t, []string{want}, refused.Reasons)
			assert.Equal(t, "the run's changes were refused, and none was applied: "+want, err.Error())
			got, err := hashDir(home)
			require.NoError(t, err)
			assert.Equal(t, shipped, got, "nothing was written")
			entries, err := os.ReadDir(filepath.Dir(home))
			require.NoError(t, err)
			assert.Len(t, entries, 1, "nothing was saved beside the directory")

			// A deletion is judged alike.
			err = applyChanges(home, shipped, &Changes{Deleted: []string{forged}}, nil, DefaultShipMax, refuse)
			require.ErrorAs(t, err, &refused)
		})
	}
}

// A result anyone could have published, claiming changes to .git, writes
// nothing into the submitter's repository: the job fails with the refusal.
func TestForgedResultWritesNothing(t *testing.T) {
	t.Parallel()
	url := startServer(t)
	specPath, s := writeSpec(t, t.TempDir(), agentYAML, copyTurns)
	dirs := jobDirs(t, t.TempDir(), 1)
	writeFiles(t, dirs[0], map[string]string{".git/HEAD": "ref: refs/heads/main\n"})
	q := connect(t, url, 0)
	b, err := q.NewBatch(BatchOptions{SpecPath: specPath, Spec: s, Workspaces: dirs, Ship: true})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, b.Publish(ctx))

	job := b.Jobs[0]
	obs, err := q.shipStore(ctx)
	require.NoError(t, err)
	_, err = obs.PutBytes(ctx, changesObject(job.Ship.Object, "1"), tarGz(t, map[string]string{
		".git/hooks/pre-commit": "#!/bin/sh\necho owned\n", "out.txt": "copied\n",
	}))
	require.NoError(t, err)
	forged, err := json.Marshal(Result{
		Job: job.ID, Batch: b.ID, Index: 0, OK: true, Output: json.RawMessage(`"done"`), Usage: json.RawMessage("null"),
		Changes: &Changes{Object: changesObject(job.Ship.Object, "1"), Files: []string{".git/hooks/pre-commit", "out.txt"}},
	})
	require.NoError(t, err)
	_, err = q.js.Publish(ctx, q.resultSubject("ok", b.ID, "0"), forged)
	require.NoError(t, err)

	var got outcomes
	_, err = b.Wait(ctx, got.add)
	require.NoError(t, err)
	require.Len(t, got.list, 1)
	assert.False(t, got.list[0].OK)
	assert.EqualError(t, got.list[0].Err, `bringing back the run's changes: the run's changes were refused, and none was applied: `+
		`.git/hooks/pre-commit: inside a .git directory (".git")`)
	for _, name := range []string{".git/hooks/pre-commit", "out.txt"} {
		_, err = os.Stat(filepath.Join(dirs[0], filepath.FromSlash(name)))
		assert.ErrorIs(t, err, os.ErrNotExist, name)
	}

	// Nor does a result that points at another object.
	b2, err := q.NewBatch(BatchOptions{SpecPath: specPath, Spec: s, Workspaces: dirs, Ship: true})
	require.NoError(t, err)
	require.NoError(t, b2.Publish(ctx))
	forged, err = json.Marshal(Result{
		Job: b2.Jobs[0].ID, Batch: b2.ID, Index: 0, OK: true, Output: json.RawMessage(`"done"`), Usage: json.RawMessage("null"),
		Changes: &Changes{Object: changesObject(job.Ship.Object, "1"), Files: []string{"out.txt"}},
	})
	require.NoError(t, err)
	_, err = q.js.Publish(ctx, q.resultSubject("ok", b2.ID, "0"), forged)
	require.NoError(t, err)
	got = outcomes{}
	_, err = b2.Wait(ctx, got.add)
	require.NoError(t, err)
	require.Len(t, got.list, 1)
	assert.ErrorContains(t, got.list[0].Err, "are not in "+b2.Jobs[0].ID+".changes.* but in")
	_, err = os.Stat(filepath.Join(dirs[0], "out.txt"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

// --ship leaves behind what the spec's secret patterns hide: it never
// reaches the stream.
func TestShipLeavesSecretsBehind(t *testing.T) {
	t.Parallel()
	url := startServer(t)
	specPath, s := writeSpec(t, t.TempDir(), agentYAML, copyTurns)
	dirs := jobDirs(t, t.TempDir(), 1)
	writeFiles(t, dirs[0], map[string]string{
		".env": "API_KEY=hunter2\n", "sub/.env.local": "TOKEN=hunter2\n", "server.pem": "hunter2\n",
		".env.example": "API_KEY=\n",
	})
	q := connect(t, url, 0)
	b, err := q.NewBatch(BatchOptions{SpecPath: specPath, Spec: s, Workspaces: dirs, Ship: true})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, b.Publish(ctx))

	obs, err := q.shipStore(ctx)
	require.NoError(t, err)
	archive, err := obs.GetBytes(ctx, b.Jobs[0].Ship.Object)
	require.NoError(t, err)
	got, err := unpackInto(t.TempDir(), bytes.NewReader(archive), DefaultShipMax)
	require.NoError(t, err)
	var names []string
	for name := range got {
		names = append(names, name)
	}
	assert.ElementsMatch(t, []string{"input.txt", ".env.example"}, names)

}

// A result's words reach a terminal: a forged one sends no control
// sequence there.
func TestForgedResultIsPrintable(t *testing.T) {
	t.Parallel()
	_, q, b, opts := newBatch(t, copyTurns, 2, 0)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, b.Publish(ctx))
	for i, r := range []Result{
		{OK: true, Output: json.RawMessage(`"done"`), Usage: json.RawMessage("null"), Warnings: []string{"\x1b]0;owned\x07cache"}},
		{Error: "failed\x1b[2J\r\nfake line", Usage: json.RawMessage("null"), Label: "\x1b[31m"},
	} {
		r.Job, r.Batch, r.Index = b.Jobs[i].ID, b.ID, i
		data, err := json.Marshal(r)
		require.NoError(t, err)
		_, err = q.js.Publish(ctx, q.resultSubject("ok", b.ID, fmt.Sprint(i)), data)
		require.NoError(t, err)
	}
	var got outcomes
	_, err := b.Wait(ctx, got.add)
	require.NoError(t, err)
	require.Len(t, got.list, 2)
	for _, o := range got.list {
		switch o.Index {
		case 0:
			require.NoError(t, o.Err)
			assert.Equal(t, []string{"\ufffd]0;owned\ufffdcache"}, o.Warnings)
		case 1:
			assert.EqualError(t, o.Err, "failed\ufffd[2J\ufffd\ufffdfake line")
			assert.Equal(t, opts.Workspaces[1], o.Label, "the label is the submitter's")
		}
	}
}
