package rg

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The output read is bounded: past the bound rg is stopped, the output ends
// at the last whole record and says it was cut, and Wait reports no failure.
func TestOutputIsCapped(t *testing.T) {
	t.Parallel()
	needRG(t)
	files := map[string]string{}
	for i := range 100 {
		files[fmt.Sprintf("file-%03d.txt", i)] = ""
	}
	dir := tree(t, files)
	const limit = 1000 // bytes: about 75 of the 100 names of 13 bytes
	p, err := start(context.Background(), dir, SplitPaths, limit, []string{"--null", "--files", "--sort", "path"})
	require.NoError(t, err)
	got := records(t, p)
	assert.True(t, p.OutputCut())
	assert.False(t, p.Truncated())
	assert.NoError(t, p.Wait())
	require.Len(t, got, limit/len("file-000.txt\x00"))
	for i, rec := range got {
		assert.Equal(t, fmt.Sprintf("file-%03d.txt", i), rec) // whole records only
	}

	// Under the bound nothing is cut.
	p, err = start(context.Background(), dir, SplitPaths, 1<<20, []string{"--null", "--files"})
	require.NoError(t, err)
	assert.Len(t, records(t, p), 100)
	assert.False(t, p.OutputCut())
	assert.NoError(t, p.Wait())
}

// deepTree makes a file whose path, relative to the tree, is longer than
// PATH_MAX, so that rg, which opens files by path, cannot read it even as
// root. It returns the tree.
func deepTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := tree(t, files)
	r, err := os.OpenRoot(dir)
	require.NoError(t, err)
	name := strings.Repeat("d", 200)
	for range 25 { // 25 * 201 bytes > 4096
		require.NoError(t, r.Mkdir(name, 0o755))
		sub, err := r.OpenRoot(name)
		require.NoError(t, err)
		r.Close()
		r = sub
	}
	require.NoError(t, r.WriteFile("deep.txt", []byte("hello deep\n"), 0o644))
	r.Close()
	return dir
}

// A file rg cannot read makes it exit with status 2 after printing the
// other matches: that is no failure, and Unreadable counts it.
func TestUnreadableIsNotAFailure(t *testing.T) {
	t.Parallel()
	needRG(t)
	dir := deepTree(t, map[string]string{"a.txt": "hello\n"})
	p, err := Start(context.Background(), dir, SplitMatches, "--null", "--with-filename", "--regexp", "hello", "--", ".")
	require.NoError(t, err)
	assert.Equal(t, []string{"./a.txt\x00hello"}, records(t, p))
	assert.NoError(t, p.Wait())
	assert.Equal(t, 1, p.Unreadable())

	// list_files' run: rg exits 0 but says the same on stderr.
	p, err = Start(context.Background(), dir, SplitPaths, "--null", "--files")
	require.NoError(t, err)
	assert.Equal(t, []string{"a.txt"}, records(t, p))
	assert.NoError(t, p.Wait())
	assert.Equal(t, 1, p.Unreadable())
}

// Status 2 for anything but unreadable files stays a failure (a mix of
// both on stderr is sorted in TestStderrLines).
func TestOtherStatus2IsAFailure(t *testing.T) {
	t.Parallel()
	needRG(t)
	dir := deepTree(t, map[string]string{"a.txt": "hello\n"})
	p, err := Start(context.Background(), dir, SplitMatches, "--null", "--type=nosuchtype", "--regexp", "hello", "--", ".")
	require.NoError(t, err)
	records(t, p)
	var f *Failure
	require.ErrorAs(t, p.Wait(), &f)
	assert.Equal(t, "unrecognized file type: nosuchtype", f.Stderr)
}

func TestStderrLines(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		writes []string
		os     int
		only   bool
	}{
		{"none", nil, 0, false},
		{"one", []string{"./x: No such file or directory (os error 2)\n"}, 1, true},
		{"split across writes", []string{"./x: Permission ", "denied (os error 13)\n./y: File name too long (os error 36)\n"}, 2, true},
		{"unfinished last line", []string{"./x: gone (os error 2)"}, 0, true},
		{"long path", []string{strings.Repeat("p", 10000) + ": File name too long (os error 36)\n"}, 1, true},
		{"another error", []string{"./x: gone (os error 2)\n", "regex parse error:\n    (\n"}, 1, false},
		{"not digits", []string{"./x: gone (os error two)\n"}, 0, false},
		{"blank lines ignored", []string{"\n./x: gone (os error 2)\n\n"}, 1, true},
	} {
		var b limitedBuffer
		for _, w := range tc.writes {
			b.Write([]byte(w))
		}
		assert.Equal(t, tc.os, b.osErrors(), tc.name)
		assert.Equal(t, tc.only, b.onlyOSErrors(), tc.name)
	}
	// What is kept is bounded, what is counted is not.
	var b limitedBuffer
	line := filepath.Join("dir", strings.Repeat("n", 100)) + ": gone (os error 2)\n"
	for range 10 * stderrLimit / len(line) {
		b.Write([]byte(line))
	}
	assert.Len(t, b.String(), stderrLimit)
	assert.Equal(t, 10*stderrLimit/len(line), b.osErrors())
}

// A record too long ends the output as truncated, not as cut, even when
// the bytes read to find it out reach the output bound exactly: no read
// was refused by the bound.
func TestTooLongRecordAtTheBoundIsNotCut(t *testing.T) {
	t.Parallel()
	needRG(t)
	dir := tree(t, map[string]string{"a.txt": strings.Repeat("x", 2*MaxRecord) + "\n"})
	p, err := start(context.Background(), dir, SplitMatches, MaxRecord+1,
		[]string{"--null", "--with-filename", "--regexp", "x", "--", "."})
	require.NoError(t, err)
	assert.Empty(t, records(t, p))
	assert.True(t, p.Truncated())
	assert.False(t, p.OutputCut())
	assert.NoError(t, p.Wait())
}
