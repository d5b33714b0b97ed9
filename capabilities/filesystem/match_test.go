package filesystem

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/internal/glob"
	"github.com/agentspec/agentspec/internal/sandbox"
	"github.com/stretchr/testify/assert"
)

func TestMatchAnyAncestors(t *testing.T) {
	t.Parallel()
	ps := compilePatterns([]string{"private", "*.log"})
	tests := []struct {
		rel       string
		ancestors bool
		want      string
	}{
		{"private", false, "private"},
		{"private/secret.txt", false, ""},
		{"private/secret.txt", true, "private"},
		{"a/private/x", true, ""},
		{"logs/x.log/y", true, "*.log"},
		{"privateer/x", true, ""},
	}
	for _, tt := range tests {
		got, _ := matchAny(ps, tt.rel, tt.ancestors)
		assert.Equal(t, tt.want, got, "%s ancestors=%v", tt.rel, tt.ancestors)
	}
}

func TestDefaultProtectedPatterns(t *testing.T) {
	t.Parallel()
	ps := compilePatterns(DefaultProtectedPatterns)
	for _, rel := range []string{
		".git/config", ".git/refs/heads/main", ".env", ".env.local", "server.pem", "certs/server.pem", "id.key",
		"secrets.yaml", "config/secrets.json", "apps/.env", "apps/web/.env", "apps/.env.prod", "vendor/lib/.git/HEAD",
		// Files that run code when a folder is opened, at the next git
		// command, in CI or on entering a directory, at any depth.
		".vscode/tasks.json", ".vscode/settings.json", "apps/web/.vscode/launch.json", "proj.code-workspace",
		"tools/all.code-workspace", ".idea/workspace.xml", "sub/.idea/runConfigurations/Run.xml",
		".mcp.json", "pkg/.mcp.json", ".cursor/mcp.json", ".cursor/rules/x.mdc", ".claude/settings.json",
		"sub/.claude/settings.local.json", ".claude/commands/deploy.md",
		".husky/pre-commit", ".husky/_/husky.sh", "web/.husky/pre-push",
		"lefthook.yml", ".lefthook.yaml", "lefthook-local.yml", ".lefthook-local.toml", "svc/lefthook.json",
		".config/lefthook.yml", ".pre-commit-config.yaml", ".pre-commit-config.yml", "py/.pre-commit-config.yaml",
		".gitattributes", "docs/.gitattributes", ".gitmodules", "vendor/x/.gitmodules",
		".github/workflows/ci.yml", ".github/workflows/sub/x.yaml", ".github/actions/setup/action.yml",
		"sub/.github/workflows/ci.yml", ".gitlab-ci.yml", "svc/.gitlab-ci.yml", ".circleci/config.yml",
		".envrc", "apps/api/.envrc",
	} {
		_, ok := matchAny(ps, rel, true)
		assert.True(t, ok, "%s should be protected", rel)
	}
	for _, rel := range []string{
		".gitignore", "notes.md", ".git", "env", "src/environment.go", "keys.txt",
		".vscode", "src/vscode.go", "idea.txt", ".github/CODEOWNERS", ".github/dependabot.yml", ".github/workflows",
		"lefthook", "lefthook/main.go", "docs/lefthook-guide.md", "claude.md", "CLAUDE.md", "mcp.json", "envrc", "gitattributes",
		".pre-commit-hooks.yaml", "circleci/config.yml",
	} {
		p, ok := matchAny(ps, rel, true)
		assert.False(t, ok, "%s should not be protected (matches %s)", rel, p)
	}
	// protected_patterns: [] protects nothing by pattern, as in the reference.
	_, ok := matchAny(compilePatterns([]string{}), ".vscode/tasks.json", true)
	assert.False(t, ok)
}

func TestAccessChecks(t *testing.T) {
	t.Parallel()
	c, _ := newTestFS(t, Options{
		AllowedPatterns: []string{"*.py", "*.txt", "*.md", "it's/*", "private/*"},
		DeniedPatterns:  []string{"config/*", "private"},
		SecretPatterns:  []string{}, // the reference's behaviour
	}, nil)
	fs := c.fs
	tests := []struct {
		rel, read, write string
	}{
		{"a.py", "", ""},
		{"notes.md", "", ""},
		{"config/secret.txt", "Path 'config/secret.txt' is denied by pattern 'config/*'.", "Path 'config/secret.txt' is denied by pattern 'config/*'."},
		{"private/x.txt", "Path 'private/x.txt' is denied by pattern 'private'.", "Path 'private/x.txt' is denied by pattern 'private'."},
		{"image.png", "Path 'image.png' does not match any allowed pattern.", "Path 'image.png' does not match any allowed pattern."},
		{".env.txt", "", "Path '.env.txt' is protected (matches '.env.*')."},
		{"deploy.key", "Path 'deploy.key' does not match any allowed pattern.", "Path 'deploy.key' is protected (matches '*.key')."},
		{"it's/a", "", ""},
		{"it's/.env", "", "Path \"it's/.env\" is protected (matches '*/.env')."},
		{"it's", "Path \"it's\" does not match any allowed pattern.", "Path \"it's\" does not match any allowed pattern."},
	}
	msg := func(err error) string {
		if err == nil {
			return ""
		}
		m, _ := capabilities.AsRetry(err)
		return m
	}
	for _, tt := range tests {
		assert.Equal(t, tt.read, msg(fs.checkRead(tt.rel)), "read %s", tt.rel)
		assert.Equal(t, tt.write, msg(fs.checkWrite(tt.rel)), "write %s", tt.rel)
		assert.Equal(t, tt.read == "", fs.readable(tt.rel), "readable %s", tt.rel)
	}
	assert.NoError(t, fs.checkWalkRoot("."), "a walk root is not gated by allowed patterns")
	assert.NoError(t, fs.checkWalkRoot("config"), "config/* does not cover config itself")
	assert.Error(t, fs.checkWalkRoot("config/sub"))
	assert.Error(t, fs.checkWalkRoot("private/sub"))

	star, _ := newTestFS(t, Options{DeniedPatterns: []string{"*"}}, nil)
	assert.Equal(t, "Path '.' is denied by pattern '*'.", msg(star.fs.checkWalkRoot(".")))
}

// Walkers call readable for every entry: it must not allocate.
func TestReadableDoesNotAllocate(t *testing.T) {
	c, _ := newTestFS(t, Options{AllowedPatterns: []string{"*.go", "[a-z]*.md"}, DeniedPatterns: []string{"vendor", "**/testdata/*"}}, nil)
	allocs := testing.AllocsPerRun(100, func() {
		c.fs.readable("src/pkg/deep/file_test.go")
		c.fs.readable("vendor/x/y.go")
		c.fs.readable("docs/readme.md")
	})
	assert.Zero(t, allocs)
}

// readableIn, given deniedBelow of the entry's directory, answers as
// readable does for every entry: the rg checks rely on it.
func TestReadableInAgreesWithReadable(t *testing.T) {
	t.Parallel()
	var paths []string
	names := []string{"a", "x.go", ".env", "secrets.yaml", "id_rsa", "private", "k.pem", "config", "?", "*"}
	for _, a := range names {
		paths = append(paths, a)
		for _, b := range names {
			paths = append(paths, a+"/"+b)
			for _, c := range names[:5] {
				paths = append(paths, a+"/"+b+"/"+c, "deep/er/"+a+"/"+b+"/"+c)
			}
		}
	}
	for _, opts := range []Options{
		{},
		{SecretPatterns: []string{}},
		{DeniedPatterns: []string{"private", "config/*", "?"}, AllowedPatterns: []string{"*.go", "a/*"}},
		{DeniedPatterns: []string{"*/x.go", "a", "**/config"}, SecretPatterns: []string{"*.pem", "!a/*"}},
		{DeniedPatterns: []string{"*"}},
		{AllowedPatterns: []string{"x.go", "*/a"}},
	} {
		c, _ := newTestFS(t, opts, nil)
		for _, rel := range paths {
			dir, _ := sandbox.Split(rel)
			assert.Equal(t, c.fs.readable(rel), c.fs.readableIn(c.fs.deniedBelow(dir), rel), "%s with %+v", rel, opts)
		}
	}
}

// A walk matches each entry alone, having entered only the directories
// entryDenied passed: it must hide exactly what readable hides.
func TestEntryReadableAsWalked(t *testing.T) {
	t.Parallel()
	c, _ := newTestFS(t, Options{
		AllowedPatterns: []string{"*.go", "*/keep/*"},
		DeniedPatterns:  []string{"vendor", "**/testdata", "a/b*", "*.gen.go"},
	}, nil)
	fs := c.fs
	// Every path is listed after its parent, as a walk meets them.
	paths := []string{
		"a", "a/x.go", "a/b", "a/b/y.go", "a/c", "a/c/z.go", "a/c/bz", "a/c/bz/w.go",
		"vendor", "vendor/v.go", "src", "src/vendor", "src/vendor/v.go", "src/testdata", "src/testdata/t.go",
		"src/keep", "src/keep/notes.md", "src/m.gen.go", "src/m.go", "src/m.md", "testdata", "testdata/t.go",
	}
	entered := map[string]bool{"": true}
	for _, rel := range paths {
		parent := ""
		if i := strings.LastIndexByte(rel, '/'); i >= 0 {
			parent = rel[:i]
		}
		if !entered[parent] {
			continue // below a directory the walk skipped
		}
		_, deniedAbove := matchAny(fs.denied, rel, true)
		assert.Equal(t, deniedAbove, fs.entryDenied(rel), "entryDenied %s", rel)
		assert.Equal(t, fs.readable(rel), fs.entryReadable(rel), "entryReadable %s", rel)
		entered[rel] = !fs.entryDenied(rel)
	}
	assert.False(t, entered["src/testdata"])
	assert.True(t, entered["a/c/bz"])
}

// Compiled patterns are kept for the FileSystems that follow, up to a bound,
// and one taken from the store matches as a fresh one does.
func TestCompiledPatternsKept(t *testing.T) {
	t.Parallel()
	for _, text := range []string{"*.pem", "**/secrets/*", "[!a]*.env"} {
		fresh := glob.NewFnmatch(text)
		for range 2 {
			kept := compiledFnmatch(text)
			for _, name := range []string{"a.pem", "x/secrets/k", "secrets/k", "b.env", "a.env", "c.txt"} {
				assert.Equal(t, fresh.Match(name), kept.Match(name), "%s ~ %s", text, name)
			}
		}
	}
	for i := range maxFnmatches + 10 {
		p := compiledFnmatch(fmt.Sprintf("kept-%d-*", i))
		assert.True(t, p.Match(fmt.Sprintf("kept-%d-x", i)))
	}
	fnmatches.RLock()
	defer fnmatches.RUnlock()
	assert.LessOrEqual(t, len(fnmatches.m), maxFnmatches)
}
