package filesystem

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// benchTool returns the named tool's Call of c.
func benchTool(b *testing.B, c *Capability, name string) func(context.Context, json.RawMessage) (string, error) {
	b.Helper()
	tools, err := c.Tools(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	for _, t := range tools {
		if t.Name() == name {
			return t.Call
		}
	}
	b.Fatalf("no tool %s", name)
	return nil
}

// BenchmarkReadFileSmall times read_file of a small text file in-process and
// reports its median (p50-ns) beside the anchor's, os.ReadFile of the same
// file, with their ratio x-readfile. The target is a p50 under 20µs.
func BenchmarkReadFileSmall(b *testing.B) {
	dir := b.TempDir()
	var content []byte
	for i := range 40 {
		content = fmt.Appendf(content, "line %d: the quick brown fox jumps over the lazy dog\n", i)
	}
	if err := os.WriteFile(filepath.Join(dir, "small.txt"), content, 0o644); err != nil {
		b.Fatal(err)
	}
	c, err := New(Options{RootDir: dir}, "")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	read := benchTool(b, c, ToolReadFile)
	args := json.RawMessage(`{"path": "small.txt"}`)
	ctx := context.Background()
	path := filepath.Join(dir, "small.txt")

	var tool, anchor []time.Duration
	b.ReportAllocs()
	for b.Loop() {
		t0 := time.Now()
		if _, err := read(ctx, args); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if _, err := os.ReadFile(path); err != nil {
			b.Fatal(err)
		}
		tool = append(tool, t1.Sub(t0))
		anchor = append(anchor, time.Since(t1))
	}
	p50, a50 := median(tool), median(anchor)
	b.ReportMetric(float64(p50.Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(a50.Nanoseconds()), "readfile-p50-ns")
	b.ReportMetric(float64(p50)/float64(a50), "x-readfile")
}

// BenchmarkSearchFilesSmall is a search_files call of the size an agent
// makes most: a directory of 20 files of about 1.6 KB, one line matching in
// each. The whole call takes a few hundred microseconds, so what a call
// allocates before it reads a byte (its scan buffers) shows here, as it
// cannot in the searches over GOROOT.
func BenchmarkSearchFilesSmall(b *testing.B) {
	dir := b.TempDir()
	for i := range 20 {
		var content []byte
		for j := range 40 {
			content = fmt.Appendf(content, "line %d of file %d: the quick brown fox\n", j, i)
		}
		content = append(content, "func needle() {}\n"...)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%02d.go", i)), content, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	c, err := New(Options{RootDir: dir}, "")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	search := benchTool(b, c, ToolSearchFiles)
	args := json.RawMessage(`{"pattern": "func needle"}`)
	ctx := context.Background()
	out, err := search(ctx, args)
	if err != nil {
		b.Fatal(err)
	}
	if n := strings.Count(out, "func needle"); n != 20 {
		b.Fatalf("%d matches, want 20:\n%s", n, out)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := search(ctx, args); err != nil {
			b.Fatal(err)
		}
	}
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// bigTree builds a tree of 100,000 small files: 100 directories of 1,000
// files each.
func bigTree(b *testing.B) string {
	b.Helper()
	root := b.TempDir()
	for d := range 100 {
		sub := filepath.Join(root, fmt.Sprintf("d%03d", d))
		if err := os.Mkdir(sub, 0o755); err != nil {
			b.Fatal(err)
		}
		for f := range 1000 {
			name := filepath.Join(sub, fmt.Sprintf("f%04d.txt", f))
			if err := os.WriteFile(name, []byte("hay\n"), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	return root
}

// BenchmarkLargeTree walks a 100,000-file tree with the walkers at their
// default caps and reports the peak heap in use during the calls (peak-heap-MB,
// sampled) beside the bytes allocated per call: a capped walk stops early and
// a full walk (a search that matches nothing) never holds the tree in memory.
func BenchmarkLargeTree(b *testing.B) {
	root := bigTree(b)
	c, err := New(Options{RootDir: root, Tools: AllToolNames}, "")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	cases := []struct {
		name, tool, args string
	}{
		{"find_files_all", ToolFindFiles, `{"pattern": "**/*"}`},
		{"search_files_no_match", ToolSearchFiles, `{"pattern": "needle"}`},
		{"list_directory_1000", ToolListDirectory, `{"path": "d050"}`},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			call := benchTool(b, c, tc.tool)
			ctx := context.Background()
			runtime.GC()
			var base runtime.MemStats
			runtime.ReadMemStats(&base)
			var peak atomic.Uint64
			stop := make(chan struct{})
			done := make(chan struct{})
			go func() {
				defer close(done)
				var m runtime.MemStats
				for {
					runtime.ReadMemStats(&m)
					if m.HeapInuse > peak.Load() {
						peak.Store(m.HeapInuse)
					}
					select {
					case <-stop:
						return
					case <-time.After(2 * time.Millisecond):
					}
				}
			}()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := call(ctx, json.RawMessage(tc.args)); err != nil {
					b.Fatal(err)
				}
			}
			close(stop)
			<-done
			grown := int64(peak.Load()) - int64(base.HeapInuse)
			b.ReportMetric(float64(max(grown, 0))/(1<<20), "peak-heap-MB")
		})
	}
}

// BenchmarkReadFileLarge times read_file of the first 100 lines of a 32 MiB
// file, which it streams whole for its hash and line count, against two
// anchors timed in the same loop (interleaved, medians): os.ReadFile of the
// file (x-readfile) and os.ReadFile plus the SHA-256 of its bytes, the least
// any hashing read does (x-readhash). The anchors hold the file in memory,
// which read_file never does: tool-B/op is what one read_file call
// allocates. "lines" is a file of 80-byte lines, "one-line" a file that is
// one line.
func BenchmarkReadFileLarge(b *testing.B) {
	dir := b.TempDir()
	const size = 32 << 20
	files := map[string][]byte{
		"lines":    bytes.Repeat([]byte("a line of text in a large file, read in windows of a hundred lines at a time.\r\n"), size/80),
		"one-line": bytes.Repeat([]byte("minified"), size/8),
	}
	c, err := New(Options{RootDir: dir}, "")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	read := benchTool(b, c, ToolReadFile)
	ctx := context.Background()
	for _, name := range []string{"lines", "one-line"} {
		path := filepath.Join(dir, name+".txt")
		if err := os.WriteFile(path, files[name], 0o644); err != nil {
			b.Fatal(err)
		}
		args := json.RawMessage(`{"path": "` + name + `.txt", "limit": 100}`)
		b.Run(name, func(b *testing.B) {
			var tool, plain, hashed []time.Duration
			var alloc uint64
			var m0, m1 runtime.MemStats
			for b.Loop() {
				runtime.ReadMemStats(&m0)
				t0 := time.Now()
				if _, err := read(ctx, args); err != nil {
					b.Fatal(err)
				}
				tool = append(tool, time.Since(t0))
				runtime.ReadMemStats(&m1)
				alloc += m1.TotalAlloc - m0.TotalAlloc
				t1 := time.Now()
				if _, err := os.ReadFile(path); err != nil {
					b.Fatal(err)
				}
				t2 := time.Now()
				data, err := os.ReadFile(path)
				if err != nil {
					b.Fatal(err)
				}
				sha256.Sum256(data)
				plain = append(plain, t2.Sub(t1))
				hashed = append(hashed, time.Since(t2))
			}
			p50 := median(tool)
			b.ReportMetric(float64(p50.Nanoseconds()), "p50-ns")
			b.ReportMetric(float64(p50)/float64(median(plain)), "x-readfile")
			b.ReportMetric(float64(p50)/float64(median(hashed)), "x-readhash")
			b.ReportMetric(float64(alloc)/float64(len(tool)), "tool-B/op")
		})
	}
}

// BenchmarkListDirectory times list_directory of a directory of 120 files
// and 12 directories in-process, the listing scripts/bench-mcp.sh compares
// against the official server over MCP.
// BenchmarkListDirectory lists one directory of 120 files and 12
// directories again and again; from the third listing on, list_directory
// shows what it kept while the directory is unchanged (on Linux).
func BenchmarkListDirectory(b *testing.B) {
	list, _ := benchListing(b)
	args := json.RawMessage(`{"path": "."}`)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := list(ctx, args); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkListDirectoryChanging is BenchmarkListDirectory with one file
// grown by a byte before each listing, so that every listing reads the
// directory and describes each file again.
func BenchmarkListDirectoryChanging(b *testing.B) {
	list, dir := benchListing(b)
	f, err := os.OpenFile(filepath.Join(dir, "file_007.go"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	args := json.RawMessage(`{"path": "."}`)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f.Write([]byte{'x'}); err != nil {
			b.Fatal(err)
		}
		if _, err := list(ctx, args); err != nil {
			b.Fatal(err)
		}
	}
}

// benchListing makes the listed directory and returns list_directory's
// call over it, and the directory.
func benchListing(b *testing.B) (func(context.Context, json.RawMessage) (string, error), string) {
	dir := b.TempDir()
	for i := range 120 {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("file_%03d.go", i)), bytes.Repeat([]byte("x"), i*37%4096), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	for i := range 12 {
		if err := os.Mkdir(filepath.Join(dir, fmt.Sprintf("dir_%02d", i)), 0o755); err != nil {
			b.Fatal(err)
		}
	}
	c, err := New(Options{RootDir: dir}, "")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return benchTool(b, c, ToolListDirectory), dir
}
