package cache

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func hashOf(t *testing.T, root string, globs ...string) (string, []string) {
	t.Helper()
	digest, files, err := HashFiles(context.Background(), root, globs)
	require.NoError(t, err)
	return digest, files
}

// digestOf is the digest HashFiles gives the files, path and content in
// turn, in sorted order: the SHA-256 over each path, NUL, the SHA-256 of
// its content and NUL.
func digestOf(pathsAndContents ...string) string {
	h := sha256.New()
	for i := 0; i+1 < len(pathsAndContents); i += 2 {
		sum := sha256.Sum256([]byte(pathsAndContents[i+1]))
		h.Write([]byte(pathsAndContents[i] + "\x00"))
		h.Write(sum[:])
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// The digest is defined byte for byte: path NUL SHA-256(content) NUL, in
// sorted order.
func TestHashFilesFormat(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t, map[string]string{
		"notes/b.md": "bee",
		"notes/a.md": "ay\x00\xff", // bytes, not text
		"other.txt":  "not matched",
	})
	h := sha256.New()
	ay, bee := sha256.Sum256([]byte("ay\x00\xff")), sha256.Sum256([]byte("bee"))
	h.Write([]byte("notes/a.md\x00"))
	h.Write(ay[:])
	h.Write([]byte("\x00notes/b.md\x00"))
	h.Write(bee[:])
	h.Write([]byte{0})

	digest, files := hashOf(t, ws, "notes/*.md")
	assert.Equal(t, hex.EncodeToString(h.Sum(nil)), digest)
	assert.Equal(t, digestOf("notes/a.md", "ay\x00\xff", "notes/b.md", "bee"), digest)
	assert.Equal(t, []string{"notes/a.md", "notes/b.md"}, files)
}

func TestHashFilesMatching(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t, map[string]string{
		"a.md":            "a",
		".hidden.md":      "h",
		"notes/x.md":      "x",
		"notes/deep/y.md": "y",
		"notes/z.txt":     "z",
		".git/HEAD":       "ref",
		"[lit].md":        "l",
	})
	tests := []struct {
		name  string
		globs []string
		want  []string
	}{
		{"star stays in one directory, hidden files included", []string{"*.md"}, []string{".hidden.md", "[lit].md", "a.md"}},
		{"double star spans directories", []string{"notes/**/*.md"}, []string{"notes/deep/y.md", "notes/x.md"}},
		{"double star walks hidden directories", []string{"**/HEAD"}, []string{".git/HEAD"}},
		{"union de-duplicated", []string{"notes/*", "notes/*.md", "**/x.md"}, []string{"notes/x.md", "notes/z.txt"}},
		{"alternatives", []string{"{a,notes/x}.md"}, []string{"a.md", "notes/x.md"}},
		{"literal path", []string{"notes/x.md"}, []string{"notes/x.md"}},
		{"dot slash is the root", []string{"./a.md"}, []string{"a.md"}},
		{"escaped meta character", []string{`\[lit\].md`}, []string{"[lit].md"}},
		{"directories are not files", []string{"notes", "notes/*"}, []string{"notes/z.txt", "notes/x.md"}},
		{"missing base", []string{"nowhere/**/*.md"}, nil},
		{"no globs", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			digest, files := hashOf(t, ws, tt.globs...)
			assert.ElementsMatch(t, tt.want, files)
			assert.Equal(t, len(tt.want) == 0, digest == "", "digest %q", digest)
		})
	}
}

func TestHashFilesGlobOrderAndRepetition(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t, map[string]string{"a.md": "a", "b/c.txt": "c"})
	d1, _ := hashOf(t, ws, "*.md", "b/*.txt")
	d2, _ := hashOf(t, ws, "b/*.txt", "*.md", "*.md", "./b/*.txt")
	assert.Equal(t, d1, d2)
}

func TestHashFilesChanges(t *testing.T) {
	t.Parallel()
	base := map[string]string{"notes/a.md": "alpha", "notes/b.md": "beta", "out.txt": "x"}
	tests := []struct {
		name   string
		change func(t *testing.T, ws string)
		same   bool
	}{
		{"content of a matched file", func(t *testing.T, ws string) { writeFiles(t, ws, map[string]string{"notes/a.md": "ALPHA"}) }, false},
		{"a new matching file", func(t *testing.T, ws string) { writeFiles(t, ws, map[string]string{"notes/c.md": ""}) }, false},
		{"a matched file removed", func(t *testing.T, ws string) { require.NoError(t, os.Remove(filepath.Join(ws, "notes/b.md"))) }, false},
		{"a matched file renamed", func(t *testing.T, ws string) {
			require.NoError(t, os.Rename(filepath.Join(ws, "notes/b.md"), filepath.Join(ws, "notes/bb.md")))
		}, false},
		{"content moved across the boundary of two files", func(t *testing.T, ws string) {
			writeFiles(t, ws, map[string]string{"notes/a.md": "alphab", "notes/b.md": "eta"})
		}, false},
		{"one file holding what two hashed as", func(t *testing.T, ws string) {
			require.NoError(t, os.Remove(filepath.Join(ws, "notes/b.md")))
			writeFiles(t, ws, map[string]string{"notes/a.md": "alpha\x00notes/b.md\x00beta"})
		}, false},
		{"a file the globs do not match", func(t *testing.T, ws string) {
			writeFiles(t, ws, map[string]string{"out.txt": "y", "notes/c.txt": "z"})
		}, true},
		{"the modification time only", func(t *testing.T, ws string) { writeFiles(t, ws, map[string]string{"notes/a.md": "alpha"}) }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ws := newWorkspace(t, base)
			before, _ := hashOf(t, ws, "notes/*.md")
			tt.change(t, ws)
			after, _ := hashOf(t, ws, "notes/*.md")
			assert.Equal(t, tt.same, before == after)
		})
	}
}

func TestHashFilesSymlinks(t *testing.T) {
	t.Parallel()
	outside := newWorkspace(t, map[string]string{"secret.md": "outside", "dir/s.md": "outside"})
	ws := realTempDir(t)
	writeFiles(t, ws, map[string]string{"notes/a.md": "alpha", "real/t.md": "target"})
	without, files := hashOf(t, ws, "**/*.md")
	require.Equal(t, []string{"notes/a.md", "real/t.md"}, files)

	// Links that leave the workspace, dangle or loop are ignored.
	symlink(t, filepath.Join(outside, "secret.md"), filepath.Join(ws, "notes/abs-out.md"))
	symlink(t, filepath.Join("..", "..", filepath.Base(outside), "secret.md"), filepath.Join(ws, "notes/rel-out.md"))
	symlink(t, filepath.Join(outside, "dir"), filepath.Join(ws, "outdir"))
	symlink(t, "missing.md", filepath.Join(ws, "notes/dangling.md"))
	symlink(t, "loop.md", filepath.Join(ws, "notes/loop.md"))
	withOut, files := hashOf(t, ws, "**/*.md", "outdir/*")
	assert.Equal(t, without, withOut)
	assert.Equal(t, []string{"notes/a.md", "real/t.md"}, files)

	// Changing what an escaping link points at changes nothing.
	writeFiles(t, outside, map[string]string{"secret.md": "changed", "dir/s.md": "changed"})
	again, _ := hashOf(t, ws, "**/*.md", "outdir/*")
	assert.Equal(t, without, again)

	// Links inside the workspace, relative or absolute, are hashed with their
	// target's content under their own name; linked directories are not walked.
	symlink(t, filepath.Join("..", "real", "t.md"), filepath.Join(ws, "notes/rel-in.md"))
	symlink(t, filepath.Join(ws, "real", "t.md"), filepath.Join(ws, "notes/abs-in.md"))
	symlink(t, "real", filepath.Join(ws, "linkdir"))
	digest, files := hashOf(t, ws, "**/*.md")
	assert.Equal(t, []string{"notes/a.md", "notes/abs-in.md", "notes/rel-in.md", "real/t.md"}, files)
	assert.Equal(t, digestOf("notes/a.md", "alpha", "notes/abs-in.md", "target", "notes/rel-in.md", "target", "real/t.md", "target"), digest)
}

// A workspace reached through a symlink hashes like its target. An absolute
// link is followed only when spelled under the real path, however the root
// was named, so the digest never depends on the spelling.
func TestHashFilesSymlinkedRoot(t *testing.T) {
	t.Parallel()
	real := realTempDir(t)
	writeFiles(t, real, map[string]string{"a.md": "a"})
	alias := filepath.Join(t.TempDir(), "alias")
	symlink(t, real, alias)
	symlink(t, filepath.Join(alias, "a.md"), filepath.Join(real, "via-alias.md"))
	symlink(t, filepath.Join(real, "a.md"), filepath.Join(real, "via-real.md"))
	d1, f1 := hashOf(t, real, "*.md")
	d2, f2 := hashOf(t, alias, "*.md")
	assert.Equal(t, d1, d2)
	assert.Equal(t, []string{"a.md", "via-real.md"}, f1)
	assert.Equal(t, f1, f2)
}

func TestHashFilesMissingRoot(t *testing.T) {
	t.Parallel()
	digest, files := hashOf(t, filepath.Join(t.TempDir(), "not-yet"), "**/*")
	assert.Empty(t, digest)
	assert.Empty(t, files)
}

func TestHashFilesBadGlobs(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	for _, g := range []string{"", "/etc/*", "../*.md", "notes/../../x", "notes/[", "{a,b"} {
		_, _, err := HashFiles(context.Background(), ws, []string{"ok/*.md", g})
		assert.Error(t, err, "%q", g)
	}
}

func TestHashFilesCancelled(t *testing.T) {
	t.Parallel()
	ws := newWorkspace(t, map[string]string{"a.md": "a", "b/c.md": "c"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err := HashFiles(ctx, ws, []string{"**/*.md"})
	assert.ErrorIs(t, err, context.Canceled)
}

func TestMissingOutputs(t *testing.T) {
	t.Parallel()
	outside := newWorkspace(t, map[string]string{"x.md": "x"})
	ws := realTempDir(t)
	writeFiles(t, ws, map[string]string{"review.md": "r", "out/report.md": "o", "real/t.md": "t"})
	symlink(t, filepath.Join(outside, "x.md"), filepath.Join(ws, "escape.md"))
	symlink(t, "real/t.md", filepath.Join(ws, "inside.md"))
	symlink(t, filepath.Join(ws, "real", "t.md"), filepath.Join(ws, "abs-inside.md"))

	tests := []struct {
		path    string
		missing bool
	}{
		{"review.md", false},
		{"./review.md", false},
		{"out", false}, // a directory counts
		{"out/report.md", false},
		{"inside.md", false},
		{"abs-inside.md", false},
		{"absent.md", true},
		{"out/absent.md", true},
		{"escape.md", true},
		{"../" + filepath.Base(outside) + "/x.md", true},
		{"out/../review.md", true}, // ".." is refused even when it stays inside
		{filepath.Join(outside, "x.md"), true},
		{filepath.Join(ws, "review.md"), true}, // absolute, even inside
		{"", true},
	}
	for _, tt := range tests {
		got := missingOutputs(ws, []string{tt.path})
		assert.Equal(t, tt.missing, len(got) == 1, "%q: missing = %v", tt.path, got)
	}
	assert.Equal(t, []string{"a", "b"}, missingOutputs(filepath.Join(ws, "not-yet"), []string{"a", "b"}))
	assert.Nil(t, missingOutputs(ws, nil))
}

func TestOutermost(t *testing.T) {
	t.Parallel()
	assert.Equal(t, []string{"a", "a-b", "b"}, outermost([]string{"b", "a/b/c", "a", "a-b", "a/b", "a"}))
	assert.Equal(t, []string{"."}, outermost([]string{"x", ".", "y/z"}))
	assert.Nil(t, outermost(nil))
}

func TestRealPath(t *testing.T) {
	t.Parallel()
	real := realTempDir(t)
	alias := filepath.Join(t.TempDir(), "alias")
	symlink(t, real, alias)

	got, err := realPath(alias)
	require.NoError(t, err)
	assert.Equal(t, real, got)

	// A tail that does not exist yet is kept, under the resolved prefix.
	got, err = realPath(filepath.Join(alias, "job", "out"))
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(real, "job", "out"), got)
}
