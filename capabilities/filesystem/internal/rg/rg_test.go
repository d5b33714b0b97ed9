package rg

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func needRG(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("rg"); err != nil {
		t.Skip("rg is not installed")
	}
}

func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for rel, content := range files {
		p := filepath.Join(dir, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	return dir
}

func records(t *testing.T, p *Proc) []string {
	t.Helper()
	var out []string
	for {
		rec, ok := p.Next()
		if !ok {
			return out
		}
		out = append(out, string(rec))
	}
}

func TestFiles(t *testing.T) {
	t.Parallel()
	needRG(t)
	dir := tree(t, map[string]string{"b.txt": "", "a/z.txt": "", "new\nline.txt": ""})
	p, err := Start(context.Background(), dir, SplitPaths, "--null", "--files", "--sort", "path")
	require.NoError(t, err)
	assert.Equal(t, []string{"a/z.txt", "b.txt", "new\nline.txt"}, records(t, p))
	assert.False(t, p.Truncated())
	assert.NoError(t, p.Wait())
}

func TestNothingFoundIsNotAFailure(t *testing.T) {
	t.Parallel()
	needRG(t)
	dir := tree(t, map[string]string{"a.txt": "abc\n"})
	p, err := Start(context.Background(), dir, SplitMatches, "--regexp", "zzz", "--", ".")
	require.NoError(t, err)
	assert.Empty(t, records(t, p))
	assert.NoError(t, p.Wait())
}

func TestFailure(t *testing.T) {
	t.Parallel()
	needRG(t)
	p, err := Start(context.Background(), t.TempDir(), SplitMatches, "--regexp", "(", "--", ".")
	require.NoError(t, err)
	records(t, p)
	err = p.Wait()
	var f *Failure
	require.ErrorAs(t, err, &f)
	assert.Equal(t, 2, f.Code)
	assert.Contains(t, f.Error(), "unclosed group")
	assert.Equal(t, "exit code 2", (&Failure{Code: 2}).Error())
}

func TestConfigIsIgnored(t *testing.T) {
	needRG(t)
	dir := tree(t, map[string]string{"a.txt": "abc\n", "rgrc": "--files-without-match\n"})
	t.Setenv("RIPGREP_CONFIG_PATH", filepath.Join(dir, "rgrc"))
	p, err := Start(context.Background(), dir, SplitMatches, "--null", "-n", "--with-filename", "--regexp", "abc", "--", "./a.txt")
	require.NoError(t, err)
	assert.Equal(t, []string{"./a.txt\x001:abc"}, records(t, p))
	assert.NoError(t, p.Wait())
}

func TestStop(t *testing.T) {
	t.Parallel()
	needRG(t)
	files := map[string]string{}
	for i := range 200 {
		files[filepath.Join("d", strings.Repeat("x", i%50)+string(rune('a'+i%26))+".txt")] = "match\n"
	}
	dir := tree(t, files)
	p, err := Start(context.Background(), dir, SplitMatches, "--null", "--regexp", "match", "--", ".")
	require.NoError(t, err)
	_, ok := p.Next()
	require.True(t, ok)
	p.Stop()
	assert.NoError(t, p.Wait())
}

func TestOverlongRecordTruncates(t *testing.T) {
	t.Parallel()
	needRG(t)
	dir := tree(t, map[string]string{"long.txt": "short match\n" + strings.Repeat("x", MaxRecord) + " match\n"})
	p, err := Start(context.Background(), dir, SplitMatches, "--null", "--with-filename", "--regexp", "match", "--", "./long.txt")
	require.NoError(t, err)
	assert.Equal(t, []string{"./long.txt\x00short match"}, records(t, p))
	assert.True(t, p.Truncated())
	assert.NoError(t, p.Wait())
}

func TestNotInstalled(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := Start(context.Background(), t.TempDir(), SplitPaths, "--files")
	assert.ErrorIs(t, err, ErrNotInstalled)
}

// A newline in a file name must not split a record: the name ends at the
// NUL, the line at the next newline.
func TestMatchesWithNewlineInName(t *testing.T) {
	t.Parallel()
	needRG(t)
	dir := tree(t, map[string]string{"sec\nok.txt": "secret stuff\n", "z.txt": "l1\nsecret\nl3\nl4\nl5\nsecret\n"})
	p, err := Start(context.Background(), dir, SplitMatches,
		"--null", "-n", "--with-filename", "--sort", "path", "--context", "1", "--regexp", "secret", "--", ".")
	require.NoError(t, err)
	var got []string
	for _, rec := range records(t, p) {
		if l, ok := ParseLine([]byte(rec)); ok {
			got = append(got, string(l.Path)+"|"+string(l.Number)+"|"+string(l.Text))
		}
	}
	require.NoError(t, p.Wait())
	assert.Equal(t, []string{
		"./sec\nok.txt|1|secret stuff",
		"./z.txt|1|l1", "./z.txt|2|secret", "./z.txt|3|l3",
		"./z.txt|5|l5", "./z.txt|6|secret",
	}, got)
}

func TestSplitMatches(t *testing.T) {
	t.Parallel()
	sc := bufio.NewScanner(strings.NewReader("./a\nb\x001:x\n--\n./c\x002-y\nnote without nul\n"))
	sc.Split(SplitMatches)
	var got []string
	for sc.Scan() {
		got = append(got, sc.Text())
	}
	assert.Equal(t, []string{"./a\nb\x001:x", "--\n./c\x002-y", "note without nul"}, got)
}

func TestParseLine(t *testing.T) {
	t.Parallel()
	for rec, want := range map[string]*Line{
		"./a.txt\x0012:text: with colon": {Path: []byte("./a.txt"), Number: []byte("12"), Text: []byte("text: with colon")},
		"./a.txt\x003-context":           {Path: []byte("./a.txt"), Number: []byte("3"), Context: true, Text: []byte("context")},
		"./crlf\x001:line\r":             {Path: []byte("./crlf"), Number: []byte("1"), Text: []byte("line")},
		"./a:1:b.txt\x007:":              {Path: []byte("./a:1:b.txt"), Number: []byte("7"), Text: []byte{}},
		"--\n--\n./x\x009:t":             {Path: []byte("./x"), Number: []byte("9"), Text: []byte("t")},
		"./new\nline\x001:t":             {Path: []byte("./new\nline"), Number: []byte("1"), Text: []byte("t")},
		"a.txt\x001:no dot slash":        nil,
		"--":                             nil,
		"./bin.dat: binary file matches (found \"\\0\" byte around offset 1)": nil,
		"./a\x00x:1":  nil,
		"./a\x00":     nil,
		"./a\x0012":   nil,
		"./a\x0012+x": nil,
	} {
		got, ok := ParseLine([]byte(rec))
		if want == nil {
			assert.False(t, ok, "%q", rec)
			continue
		}
		require.True(t, ok, "%q", rec)
		assert.Equal(t, *want, got, "%q", rec)
	}
}
