package cache

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// writeFiles creates files (slash paths relative to dir) with their content.
func writeFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
}

// newWorkspace returns a fresh directory holding files.
func newWorkspace(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	writeFiles(t, dir, files)
	return dir
}

// realTempDir is a fresh directory named by its real path (on macOS, TempDir
// is under a symlinked /var), for tests that write absolute symlinks into it.
func realTempDir(t testing.TB) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	return dir
}

// symlink makes link point at target, or skips the test where symlinks cannot
// be made.
func symlink(t testing.TB, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Skipf("symlinks unavailable: %v", err)
	}
}

// warnings collects what a Cache reports through WithWarn.
type warnings struct {
	mu   sync.Mutex
	errs []error
}

func (w *warnings) add(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.errs = append(w.errs, err)
}

func (w *warnings) list() []error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]error(nil), w.errs...)
}

// newCache returns a cache in a fresh directory and what it warns about.
func newCache(t testing.TB, opts ...Option) (*Cache, *warnings) {
	t.Helper()
	w := &warnings{}
	c, err := New(t.TempDir(), append([]Option{WithWarn(w.add)}, opts...)...)
	require.NoError(t, err)
	return c, w
}

const testSpec = `{"version": 1, "model": "openai:gpt-4o", "instructions": ["Summarise the notes into summary.md."],
 "workspace": {"input_globs": ["notes/*.md"], "expected_output_files": ["summary.md"]}}`

// keyInput is the KeyInput of a summarising run over ws.
func keyInput(ws string) KeyInput {
	return KeyInput{
		Spec:                []byte(testSpec),
		Model:               "openai:gpt-4o",
		Input:               "Summarise, please.",
		Vars:                map[string]string{"audience": "engineers"},
		Workspace:           ws,
		InputGlobs:          []string{"notes/*.md"},
		ExpectedOutputFiles: []string{"summary.md"},
	}
}
