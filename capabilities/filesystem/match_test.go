package filesystem

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/agentspec/agentspec/capabilities"
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

// samePatterns reports whether x and y are one slice, not two equal ones.
func samePatterns(x, y []pattern) bool {
	return len(x) == len(y) && (len(x) == 0 || &x[0] == &y[0])
}

// uniquePatternOptions are options whose four pattern lists no other test
// uses, each not empty, so that sharing shows in the slices' addresses.
func uniquePatternOptions(tag string) Options {
	return Options{
		AllowedPatterns:   []string{"*.go", tag + "-allowed/*"},
		DeniedPatterns:    []string{"vendor", tag + "-denied"},
		ProtectedPatterns: []string{".git/*", tag + "-protected/*"},
		SecretPatterns:    []string{"*.pem", tag + "-secret*", "!*.example"},
	}
}

// FileSystems built from the same pattern lists share one compiled set;
// other lists get their own. Not parallel: FileSystems built meanwhile with
// other lists could push the set out of patternSets between the two News.
func TestPatternSetsShared(t *testing.T) {
	a, _ := newTestFS(t, uniquePatternOptions("shared"), nil)
	b, _ := newTestFS(t, uniquePatternOptions("shared"), nil) // equal lists, other slices
	for name, pair := range map[string][2][]pattern{
		"allowed":   {a.fs.allowed, b.fs.allowed},
		"denied":    {a.fs.denied, b.fs.denied},
		"protected": {a.fs.protected, b.fs.protected},
		"secret":    {a.fs.secret, b.fs.secret},
	} {
		assert.True(t, samePatterns(pair[0], pair[1]), "%s compiled twice for the same lists", name)
	}

	for name, opts := range map[string]Options{
		"allowed":   {AllowedPatterns: []string{"*.go", "other-allowed/*"}},
		"denied":    {DeniedPatterns: []string{"vendor", "other-denied"}},
		"protected": {ProtectedPatterns: []string{".git/*", "other-protected/*"}},
		"secret":    {SecretPatterns: []string{"*.pem", "other-secret*", "!*.example"}},
	} {
		o := uniquePatternOptions("shared")
		switch name {
		case "allowed":
			o.AllowedPatterns = opts.AllowedPatterns
		case "denied":
			o.DeniedPatterns = opts.DeniedPatterns
		case "protected":
			o.ProtectedPatterns = opts.ProtectedPatterns
		case "secret":
			o.SecretPatterns = opts.SecretPatterns
		}
		c, _ := newTestFS(t, o, nil)
		assert.False(t, samePatterns(a.fs.denied, c.fs.denied), "other %s patterns share a's set", name)
		assert.False(t, samePatterns(a.fs.allowed, c.fs.allowed), "other %s patterns share a's set", name)
	}

	// The defaults are one set too.
	d1, _ := newTestFS(t, Options{}, nil)
	d2, _ := newTestFS(t, Options{}, nil)
	assert.True(t, samePatterns(d1.fs.denied, d2.fs.denied))
	assert.True(t, samePatterns(d1.fs.protected, d2.fs.protected))
}

// A shared set matches what each FileSystem compiled for itself before
// sets were shared: the same pattern, or none, for every path.
func TestPatternSetsMatchAsCompiled(t *testing.T) {
	t.Parallel()
	var paths []string
	names := []string{"a", "x.go", ".env", ".env.example", "secrets.yaml", "id_rsa", "k.pem", ".git", "config", "vendor"}
	for _, a := range names {
		paths = append(paths, a)
		for _, b := range names {
			paths = append(paths, a+"/"+b, "deep/er/"+a+"/"+b)
		}
	}
	for _, opts := range []Options{
		{},
		{SecretPatterns: []string{}, ProtectedPatterns: []string{}},
		{DeniedPatterns: []string{"vendor", "config/*", "?"}, AllowedPatterns: []string{"*.go", "a/*"}},
		{DeniedPatterns: []string{"*/x.go", "a", "**/config"}, SecretPatterns: []string{"*.pem", "!a/*"}},
		{ReadOnlyPatterns: []string{"a/*", "**/.env"}},
	} {
		c, _ := newTestFS(t, opts, nil)
		o := c.fs.opts
		secret := compileExcepting(o.SecretPatterns)
		want := map[string][]pattern{
			"allowed":   compilePatterns(o.AllowedPatterns),
			"denied":    append(compilePatterns(o.DeniedPatterns), secret...),
			"protected": compilePatterns(o.ProtectedPatterns),
			"secret":    secret,
		}
		got := map[string][]pattern{
			"allowed": c.fs.allowed, "denied": c.fs.denied, "protected": c.fs.protected, "secret": c.fs.secret,
		}
		for name, ps := range want {
			assert.Len(t, got[name], len(ps), "%s with %+v", name, opts)
			for _, rel := range paths {
				for _, ancestors := range []bool{false, true} {
					wp, wok := matchAny(ps, rel, ancestors)
					gp, gok := matchAny(got[name], rel, ancestors)
					assert.Equal(t, [2]any{wp, wok}, [2]any{gp, gok}, "%s %s ancestors=%v with %+v", name, rel, ancestors, opts)
				}
			}
		}
	}
}

// A set is clipped, so an append to one of its slices cannot write into
// the array another FileSystem reads.
func TestPatternSetsClipped(t *testing.T) {
	t.Parallel()
	set := compilePatternSet(patternLists{
		allowed:   []string{"*.go"},
		denied:    []string{"vendor"},
		protected: []string{".git/*"},
		secret:    []string{"*.pem", "*.key", "!*.example"},
	})
	for name, ps := range map[string][]pattern{
		"allowed": set.allowed, "denied": set.denied, "protected": set.protected, "secret": set.secret,
	} {
		assert.Equal(t, len(ps), cap(ps), name)
	}
	assert.Len(t, set.denied, 3)
}

// The cache keeps copies of the lists: a caller that changes its slice
// after New gets the patterns it now holds at the next New.
func TestPatternSetsKeyCopied(t *testing.T) {
	t.Parallel()
	denied := []string{"copied-before"}
	a, _ := newTestFS(t, Options{DeniedPatterns: denied}, nil)
	denied[0] = "copied-after"
	b, _ := newTestFS(t, Options{DeniedPatterns: denied}, nil)
	p, _ := matchAny(a.fs.denied, "copied-before", false)
	assert.Equal(t, "copied-before", p)
	p, _ = matchAny(b.fs.denied, "copied-after", false)
	assert.Equal(t, "copied-after", p)
	_, ok := matchAny(b.fs.denied, "copied-before", false)
	assert.False(t, ok)
}

// patternSets keeps the sets of the last maxPatternSets distinct lists:
// one used again stays, the least recently used goes. Not parallel, as it
// counts what patternSets holds.
func TestPatternSetsBounded(t *testing.T) {
	lists := func(i int) patternLists {
		return patternLists{denied: []string{fmt.Sprintf("bounded-%d", i)}}
	}
	first := compiledPatternSet(Options{DeniedPatterns: lists(0).denied})
	for i := 1; i < 2*maxPatternSets; i++ {
		compiledPatternSet(Options{DeniedPatterns: lists(i).denied})
		// bounded-0 is used at every round, so it stays.
		assert.Same(t, first, compiledPatternSet(Options{DeniedPatterns: lists(0).denied}), "round %d", i)
	}
	patternSets.Lock()
	n := len(patternSets.entries)
	patternSets.Unlock()
	assert.Equal(t, maxPatternSets, n)
	// bounded-1 was pushed out long ago: it is compiled again.
	again := compiledPatternSet(Options{DeniedPatterns: lists(1).denied})
	assert.Same(t, again, compiledPatternSet(Options{DeniedPatterns: lists(1).denied}))
	p, ok := matchAny(again.denied, "bounded-1", false)
	assert.True(t, ok)
	assert.Equal(t, "bounded-1", p)
}

// FileSystems built at once from the same lists all get one set.
func TestPatternSetsConcurrent(t *testing.T) {
	t.Parallel()
	opts := Options{DeniedPatterns: []string{"concurrent-denied"}, SecretPatterns: []string{"concurrent-*", "!*.x"}}
	sets := make([]*patternSet, 16)
	var wg sync.WaitGroup
	for i := range sets {
		wg.Go(func() { sets[i] = compiledPatternSet(opts) })
	}
	wg.Wait()
	for _, s := range sets {
		p, ok := matchAny(s.denied, "concurrent-y", false)
		assert.True(t, ok)
		assert.Equal(t, "concurrent-*", p)
		_, ok = matchAny(s.denied, "concurrent-y.x", false)
		assert.False(t, ok)
	}
}
