package glob

import (
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// globTree is a directory tree in memory: path -> kind, where kind is "f"
// (file), "d" (directory), "ld" (symlink to a directory) or "lf" (symlink to a
// file).
var globTree = map[string]string{
	"a.go":            "f",
	"a":               "d",
	"a/b.go":          "f",
	"a/b":             "d",
	"a/b/c.go":        "f",
	"a/b/c_test.go":   "f",
	"a/b/deep":        "d",
	"a/b/deep/d.go":   "f",
	"b_test.go":       "f",
	"docs":            "d",
	"docs/x.md":       "f",
	"link":            "ld",
	"link/inside.go":  "f", // only reachable through the symlink
	"alias.go":        "lf",
	"a.go.d":          "d",
	"a.go.d/nested.x": "f",
}

// globAll runs g over globTree the way find_files walks: entries in
// component-wise order ("a/b.go" before "a.go"), directories entered while the pattern can still match below them,
// symlinked directories never entered.
func globAll(g *FindFiles) []string {
	children := map[string][]string{}
	for p := range globTree {
		dir, name := "", p
		if i := strings.LastIndexByte(p, '/'); i >= 0 {
			dir, name = p[:i], p[i+1:]
		}
		children[dir] = append(children[dir], name)
	}
	var out []string
	var visit func(dir string, s State)
	visit = func(dir string, s State) {
		names := children[dir]
		sort.Strings(names)
		for _, name := range names {
			p := name
			if dir != "" {
				p = dir + "/" + name
			}
			kind := globTree[p]
			isDir, realDir := kind == "d" || kind == "ld", kind == "d"
			next := g.Step(s, name, realDir)
			if g.Matched(next, isDir) {
				if isDir {
					out = append(out, p+"/")
				} else {
					out = append(out, p)
				}
			}
			if realDir && g.Alive(next) {
				visit(p, next)
			}
		}
	}
	visit("", g.Start())
	return out
}

func TestGlob(t *testing.T) {
	t.Parallel()
	for pattern, want := range map[string][]string{
		"*.go":              {"a.go", "alias.go", "b_test.go"},
		"**/*.go":           {"a/b/c.go", "a/b/c_test.go", "a/b/deep/d.go", "a/b.go", "a.go", "alias.go", "b_test.go"},
		"**/*_test.go":      {"a/b/c_test.go", "b_test.go"},
		"a/*":               {"a/b/", "a/b.go"},
		"*/":                {"a/", "a.go.d/", "docs/", "link/"},
		"**/":               {"a/", "a/b/", "a/b/deep/", "a.go.d/", "docs/", "link/"},
		"a/**":              {"a/", "a/b/", "a/b/c.go", "a/b/c_test.go", "a/b/deep/", "a/b/deep/d.go", "a/b.go"},
		"a/**/":             {"a/", "a/b/", "a/b/deep/"},
		"**/b":              {"a/b/"},
		"a/**/c.go":         {"a/b/c.go"},
		"a/**/**/c.go":      {"a/b/c.go"},
		"**/deep/*":         {"a/b/deep/d.go"},
		"link/*":            nil,
		"./a/b.go":          {"a/b.go"},
		"a//b.go":           {"a/b.go"},
		"[ab].go":           {"a.go"},
		"[!b]*.go":          {"a.go", "alias.go"},
		"?.go":              {"a.go"},
		"a**":               {"a/", "a.go", "a.go.d/", "alias.go"},
		"*.x":               nil,
		"*/*.x":             {"a.go.d/nested.x"},
		"**/**/*.md":        {"docs/x.md"},
		"docs/x.md":         {"docs/x.md"},
		"missing/**":        nil,
		"a/b/deep/d.go/":    nil,
		"**/c*.go":          {"a/b/c.go", "a/b/c_test.go"},
		"a.go.d/nested.x/*": nil,
	} {
		g, err := CompileFindFiles(pattern)
		require.NoError(t, err, pattern)
		assert.Equal(t, want, globAll(g), "pattern %q", pattern)
	}
	// "**" alone lists the whole tree, files and directories, but does not
	// enter the symlinked directory.
	g, err := CompileFindFiles("**")
	require.NoError(t, err)
	var all []string
	for p, kind := range globTree {
		if p == "link/inside.go" {
			continue
		}
		if kind == "d" || kind == "ld" {
			p += "/"
		}
		all = append(all, p)
	}
	assert.ElementsMatch(t, all, globAll(g))
}
