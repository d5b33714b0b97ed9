package glob

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The ripgrep dialect is rg's: this runs rg --files with RipgrepArgs over a
// small tree, pinning what list_files' and grep's descriptions promise
// ("'*.py' matches at any depth, 'src/*.py' only directly in src").
func TestRipgrep(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("rg"); err != nil {
		t.Skip("rg is not installed")
	}
	root := t.TempDir()
	for _, f := range []string{"a.py", "src/b.py", "src/deep/c.py", "docs/d.md", "src/e.txt"} {
		require.NoError(t, os.MkdirAll(filepath.Join(root, filepath.Dir(f)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(root, f), []byte("x\n"), 0o644))
	}
	tests := []struct {
		glob string
		want []string
	}{
		{"", []string{"a.py", "docs/d.md", "src/b.py", "src/deep/c.py", "src/e.txt"}},
		{"*.py", []string{"a.py", "src/b.py", "src/deep/c.py"}},
		{"src/*.py", []string{"src/b.py"}},
		{"src/**/*.py", []string{"src/b.py", "src/deep/c.py"}},
		{"!*.py", []string{"docs/d.md", "src/e.txt"}},
		{"*.{md,txt}", []string{"docs/d.md", "src/e.txt"}},
	}
	for _, tt := range tests {
		args := append([]string{"--no-config", "--files", "--sort", "path"}, RipgrepArgs(tt.glob)...)
		cmd := exec.Command("rg", args...)
		cmd.Dir = root
		out, err := cmd.Output()
		require.NoError(t, err, "glob %q", tt.glob)
		got := strings.Fields(string(out))
		slices.Sort(got)
		assert.Equal(t, tt.want, got, "glob %q", tt.glob)
	}
	assert.Nil(t, RipgrepArgs(""), "no glob, no arguments")
}
