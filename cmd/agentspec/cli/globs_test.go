package cli

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
)

// The table of the three glob dialects in docs/filesystem.md, example by
// example, as the tools answer them.
func TestGlobDialectsAsTheDocsSay(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"app.log":           "top\n",
		"logs/2026/app.log": "deep\n",
		"main.py":           "x = 1\n",
		"src/a.py":          "x = 1\n",
		"src/x/b.py":        "x = 1\n",
		"web/app.min.js":    "1\n",
		"web/app.js":        "1\n",
		"agent.yaml":        "capabilities:\n  - FileSystem:\n      root_dir: .\n      denied_patterns: ['*.log']\n",
	})
	tool := func(args ...string) (int, string) {
		code, stdout, stderr := runBinary(t, dir, "", append([]string{"tool"}, args...)...)
		return code, stdout + stderr
	}

	// fnmatch: '*' crosses '/'.
	for _, p := range []string{"app.log", "logs/2026/app.log"} {
		code, out := tool("--spec", filepath.Join(dir, "agent.yaml"), "read_file", `{"path": "`+p+`"}`)
		assert.Equal(t, exitToolRetry, code, "%s is denied by *.log: %s", p, out)
	}
	_, out := tool("--root", dir, "search_files", `{"pattern": "x = 1", "include_glob": "*.py"}`)
	for _, p := range []string{"main.py", "src/a.py", "src/x/b.py"} {
		assert.Contains(t, out, p+":1:", "include_glob *.py reaches %s", p)
	}

	// Path.glob: '*' stays in one directory; '**' crosses.
	_, out = tool("--root", dir, "find_files", `{"pattern": "*.py"}`)
	assert.Equal(t, "main.py\n", out)
	_, out = tool("--root", dir, "find_files", `{"pattern": "**/*.py"}`)
	assert.Equal(t, "main.py\nsrc/a.py\nsrc/x/b.py\n", out)

	// ripgrep: a glob without '/' matches names at any depth; with one, it
	// is anchored; '!' excludes.
	_, out = tool("--root", dir, "list_files", `{"glob": "*.py"}`)
	assert.Equal(t, "main.py\nsrc/a.py\nsrc/x/b.py\n", out)
	_, out = tool("--root", dir, "list_files", `{"glob": "src/*.py"}`)
	assert.Equal(t, "src/a.py\n", out)
	_, out = tool("--root", dir, "list_files", `{"path": "web", "glob": "!*.min.js"}`)
	assert.Equal(t, "web/app.js\n", out)
}
