package filesystem

import (
	"context"
	"encoding/json"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// The walker benchmarks run over the Go distribution's source tree, each
// against an anchor: the rg command that does the same work, run in the same
// loop so that both see the same machine. Each reports the tool's and the
// anchor's time per operation and their ratio, x-rg (tool / rg; below 1 the
// tool is faster). scripts/bench-rg.sh prints them as a table.
//
// Limits are raised so that no result is truncated: a capped tool would stop
// early and flatter the ratio.

// benchFS returns a FileSystem over $(go env GOROOT)/src, with every tool,
// and the tree's path.
func benchFS(b *testing.B) (*Capability, string) {
	b.Helper()
	if _, err := exec.LookPath("rg"); err != nil {
		b.Skip("rg is not installed")
	}
	goroot, err := goEnvGOROOT()
	if err != nil {
		b.Skipf("go env GOROOT: %v", err)
	}
	src := filepath.Join(goroot, "src")
	const unlimited = 1 << 30
	c, err := New(Options{
		RootDir:          src,
		Tools:            AllToolNames,
		MaxSearchResults: unlimited,
		MaxFindResults:   unlimited,
		MaxListResults:   unlimited,
	}, "")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return c, src
}

// goEnvGOROOT is $(go env GOROOT), asked once: the root of the toolchain on
// PATH, as scripts/bench-rg.sh names the tree.
var goEnvGOROOT = sync.OnceValues(func() (string, error) {
	out, err := exec.Command("go", "env", "GOROOT").Output()
	return strings.TrimSpace(string(out)), err
})

// benchAgainstRG times the tool call and the rg command alternately.
func benchAgainstRG(b *testing.B, tool string, args map[string]any, rgArgs ...string) {
	c, src := benchFS(b)
	raw, err := json.Marshal(args)
	if err != nil {
		b.Fatal(err)
	}
	var call func(context.Context, json.RawMessage) (string, error)
	for _, tl := range c.tools {
		if tl.Name() == tool {
			call = tl.Call
		}
	}
	ctx := context.Background()
	// Warm the page cache and check both sides work before timing.
	if _, err := call(ctx, raw); err != nil {
		b.Fatal(err)
	}
	runRG := func() {
		cmd := exec.Command("rg", rgArgs...)
		cmd.Dir = src
		cmd.Stdout = io.Discard
		if err := cmd.Run(); err != nil {
			if exit, ok := err.(*exec.ExitError); !ok || exit.ExitCode() != 1 {
				b.Fatal(err)
			}
		}
	}
	runRG()

	var toolTime, rgTime time.Duration
	n := 0
	for b.Loop() {
		t0 := time.Now()
		if _, err := call(ctx, raw); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		runRG()
		rgTime += time.Since(t1)
		toolTime += t1.Sub(t0)
		n++
	}
	b.ReportMetric(float64(toolTime.Nanoseconds())/float64(n), "tool-ns/op")
	b.ReportMetric(float64(rgTime.Nanoseconds())/float64(n), "rg-ns/op")
	b.ReportMetric(float64(toolTime)/float64(rgTime), "x-rg")
}

const (
	benchNew     = `func New[A-Z]\w*\(`
	benchHandler = `\w+Handler\(`
)

func BenchmarkSearchFilesNew(b *testing.B) {
	benchAgainstRG(b, ToolSearchFiles, map[string]any{"pattern": benchNew}, "-uu", "-n", "--regexp", benchNew, "--", ".")
}

func BenchmarkSearchFilesHandler(b *testing.B) {
	benchAgainstRG(b, ToolSearchFiles, map[string]any{"pattern": benchHandler}, "-uu", "-n", "--regexp", benchHandler, "--", ".")
}

func BenchmarkFindFilesTests(b *testing.B) {
	benchAgainstRG(b, ToolFindFiles, map[string]any{"pattern": "**/*_test.go"}, "--files")
}

func BenchmarkFindFilesAll(b *testing.B) {
	benchAgainstRG(b, ToolFindFiles, map[string]any{"pattern": "**/*"}, "--files")
}

// The ripgrep tools are measured against rg run with exactly the arguments
// the tool gives it.

func BenchmarkListFiles(b *testing.B) {
	benchAgainstRG(b, ToolListFiles, map[string]any{},
		"--no-config", "--null", "--color=never", "--files", "--sort", "path")
}

func grepRGArgs(pattern string) []string {
	return []string{
		"--no-config", "--null", "--color=never", "--line-number", "--with-filename", "--sort", "path",
		"--max-columns", "4096", "--max-columns-preview", "--context", "0",
		"--text", "--encoding", "none", "--regex-size-limit", RipgrepSizeLimit, "--dfa-size-limit", RipgrepSizeLimit,
		"--regexp", pattern, "--", ".",
	}
}

func BenchmarkGrepNew(b *testing.B) {
	benchAgainstRG(b, ToolGrep, map[string]any{"pattern": benchNew}, grepRGArgs(benchNew)...)
}

func BenchmarkGrepHandler(b *testing.B) {
	benchAgainstRG(b, ToolGrep, map[string]any{"pattern": benchHandler}, grepRGArgs(benchHandler)...)
}
