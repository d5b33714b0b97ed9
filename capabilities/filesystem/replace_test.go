package filesystem

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/internal/sandbox"
	"github.com/agentspec/agentspec/internal/sandbox/sandboxtest"
)

// tempFiles lists the temporary files of replacements left in dir.
func tempFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		if sandbox.IsTempName(e.Name()) {
			names = append(names, e.Name())
		}
	}
	return names
}

// setFault installs a fault hook for the rest of the test. Tests that use it
// are not parallel, so no other test's write meets the fault.
func setFault(t *testing.T, h func(point string) error) {
	sandboxtest.SetFaultHook(h)
	t.Cleanup(func() { sandboxtest.SetFaultHook(nil) })
}

// A replacement that fails at any point leaves the original byte-identical
// and no temporary file behind.
func TestReplaceFailureKeepsOriginal(t *testing.T) {
	original := "UNIQUE\n" + strings.Repeat("original line\n", 200_000) // ~2.8 MB: written in several chunks
	for _, tc := range []struct {
		name  string
		point string
		after int // how many calls at point succeed first
		err   error
	}{
		{"disk full on the first chunk", sandboxtest.HookWrite, 0, syscall.ENOSPC},
		{"disk full mid-file", sandboxtest.HookWrite, 2, syscall.ENOSPC},
		{"quota mid-file", sandboxtest.HookWrite, 1, syscall.EDQUOT},
		{"failure before the rename", sandboxtest.HookBeforeRename, 0, syscall.EIO},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, root := newTestFS(t, Options{}, map[string]string{"big.txt": original})
			calls := 0
			setFault(t, func(point string) error {
				if point != tc.point {
					return nil
				}
				if calls++; calls > tc.after {
					return tc.err
				}
				return nil
			})
			for _, call := range []struct {
				tool string
				args map[string]any
			}{
				{ToolWriteFile, map[string]any{"path": "big.txt", "content": strings.Repeat("new content\n", 300_000)}},
				{ToolEditFile, map[string]any{"path": "big.txt", "old_text": "UNIQUE\n", "new_text": "x"}},
				{ToolWriteFile, map[string]any{"path": "fresh.txt", "content": strings.Repeat("n", 3<<20)}},
			} {
				calls = 0
				_, err := callTool(context.Background(), t, c, call.tool, call.args)
				require.ErrorIs(t, err, tc.err, call.tool)
				assert.Equal(t, original, readBack(t, root, "big.txt"), "%s: the original is untouched", call.tool)
				assert.Empty(t, tempFiles(t, root), "%s: no temporary file remains", call.tool)
			}
			assert.NoFileExists(t, filepath.Join(root, "fresh.txt"), "a failed create leaves no file")
		})
	}
}

// A real full disk: a small tmpfs, where the new content and the old cannot
// both fit. Needs the right to mount, so it runs as root only.
func TestReplaceOnFullDisk(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("notice: mounting a small tmpfs needs root; the disk-full case is covered by fault injection only")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("notice: cannot mount a tmpfs here (%v: %s); the disk-full case is covered by fault injection only", err, bytes.TrimSpace(out))
	}
	t.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })

	original := strings.Repeat("o", 600<<10)
	mustWrite(t, dir, "big.txt", original)
	c, err := New(Options{}, dir)
	require.NoError(t, err)
	defer c.Close()
	_, err = callTool(context.Background(), t, c, ToolWriteFile, map[string]any{"path": "big.txt", "content": strings.Repeat("n", 600<<10)})
	require.ErrorIs(t, err, syscall.ENOSPC)
	assert.Equal(t, original, readBack(t, dir, "big.txt"), "the original survives a full disk")
	assert.Empty(t, tempFiles(t, dir), "no temporary file remains")

	// A change that fits still lands.
	out, err := callTool(context.Background(), t, c, ToolWriteFile, map[string]any{"path": "big.txt", "content": "small\n"})
	require.NoError(t, err)
	assert.Contains(t, out, "Wrote 6 chars")
}

// The new file keeps the old one's permission bits, never setuid or setgid.
func TestReplaceKeepsMode(t *testing.T) {
	t.Parallel()
	c, root := newTestFS(t, Options{}, map[string]string{"run.sh": "#!/bin/sh\n", "suid": "x\n"})
	require.NoError(t, os.Chmod(filepath.Join(root, "run.sh"), 0o751))
	require.NoError(t, os.Chmod(filepath.Join(root, "suid"), 0o4755|os.ModeSetuid|os.ModeSetgid))
	write(context.Background(), t, c, map[string]any{"path": "run.sh", "content": "#!/bin/sh\necho hi\n"})
	write(context.Background(), t, c, map[string]any{"path": "suid", "content": "y\n"})
	st, err := os.Stat(filepath.Join(root, "run.sh"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o751), st.Mode())
	st, err = os.Stat(filepath.Join(root, "suid"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o755), st.Mode(), "setuid and setgid are dropped")
}

// Readers see the old content or the new, never a part of either.
func TestReadersNeverSeeHalfWrittenFiles(t *testing.T) {
	t.Parallel()
	a, b := strings.Repeat("a", 1<<20), strings.Repeat("b", 1<<20)
	c, root := newTestFS(t, Options{}, map[string]string{"f.txt": a})
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			data, err := os.ReadFile(filepath.Join(root, "f.txt"))
			if err != nil {
				t.Error(err)
				return
			}
			if string(data) != a && string(data) != b {
				t.Errorf("read %d: a reader saw %d bytes of mixed content", i, len(data))
				return
			}
		}
	}()
	for i := range 40 {
		content := a
		if i%2 == 0 {
			content = b
		}
		_, err := callTool(context.Background(), t, c, ToolWriteFile, map[string]any{"path": "f.txt", "content": content})
		require.NoError(t, err)
	}
	close(done)
	wg.Wait()
}

// editorProcess is the child of the cross-process tests: with
// AGENTSPEC_TEST_EDITOR set to "root:file:label:count" it edits file
// count times through its own FileSystem and prints each marker it was told
// is done.
func editorProcess() {
	spec := os.Getenv("AGENTSPEC_TEST_EDITOR")
	if spec == "" {
		return
	}
	parts := strings.SplitN(spec, "|", 4)
	n, _ := strconv.Atoi(parts[3])
	c, err := New(Options{Tools: []string{ToolEditFile, ToolReadFile}}, parts[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	for i := range n {
		marker := fmt.Sprintf("%s-%d", parts[2], i)
		if editUntilDone(c, parts[1], marker) {
			fmt.Println(marker)
		}
	}
	c.Close()
	os.Exit(0)
}

// editUntilDone inserts marker before the file's END line, re-reading the
// file and calling again on a conflict (the model's move), and reports
// whether the tool said it was done.
func editUntilDone(c *Capability, file, marker string) bool {
	raw := fmt.Sprintf(`{"path":%q,"old_text":"END\n","new_text":%q}`, file, marker+"\nEND\n")
	for range 1000 {
		tl := toolNamed(c, ToolEditFile)
		_, err := tl.Call(context.Background(), []byte(raw))
		if err == nil {
			return true
		}
		msg, ok := capabilities.AsRetry(err)
		if !ok || !strings.HasPrefix(msg, "Conflict:") {
			fmt.Fprintln(os.Stderr, "edit:", err)
			return false
		}
		read := fmt.Sprintf(`{"path":%q}`, file)
		if _, err := toolNamed(c, ToolReadFile).Call(context.Background(), []byte(read)); err != nil {
			fmt.Fprintln(os.Stderr, "read:", err)
			return false
		}
	}
	return false
}

func toolNamed(c *Capability, name string) capabilities.Tool {
	for _, tl := range c.tools {
		if tl.Name() == name {
			return tl
		}
	}
	return nil
}

// Concurrent edits of one file, from goroutines sharing a FileSystem, from
// several FileSystems on the same root and from other processes, lose no
// edit that was reported as done.
func TestConcurrentEditsLoseNoUpdate(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	mustWrite(t, root, "log.txt", "START\nEND\n")
	const perWriter = 15

	var mu sync.Mutex
	var done []string
	var wg sync.WaitGroup
	shared, err := New(Options{Tools: []string{ToolEditFile, ToolReadFile}}, root)
	require.NoError(t, err)
	defer shared.Close()
	for w := range 6 {
		c := shared
		if w%2 == 1 { // every other writer has a FileSystem of its own
			own, err := New(Options{Tools: []string{ToolEditFile, ToolReadFile}}, root)
			require.NoError(t, err)
			defer own.Close()
			c = own
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWriter {
				marker := fmt.Sprintf("g%d-%d", w, i)
				if editUntilDone(c, "log.txt", marker) {
					mu.Lock()
					done = append(done, marker)
					mu.Unlock()
				}
			}
		}()
	}
	var procs []*exec.Cmd
	var outs []*bytes.Buffer
	for p := range 2 {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), fmt.Sprintf("AGENTSPEC_TEST_EDITOR=%s|log.txt|p%d|%d", root, p, perWriter))
		out := &bytes.Buffer{}
		cmd.Stdout, cmd.Stderr = out, os.Stderr
		require.NoError(t, cmd.Start())
		procs, outs = append(procs, cmd), append(outs, out)
	}
	wg.Wait()
	for i, cmd := range procs {
		require.NoError(t, cmd.Wait())
		done = append(done, strings.Fields(outs[i].String())...)
	}

	final := readBack(t, root, "log.txt")
	lines := strings.Split(strings.TrimSuffix(final, "\n"), "\n")
	assert.Len(t, done, 8*perWriter, "every edit eventually lands")
	assert.Len(t, lines, 2+len(done), "one line per edit reported done, no more")
	for _, m := range done {
		assert.Contains(t, lines, m, "an edit reported as done is in the file")
	}
}

// writerProcess is the child of TestKilledWriterLeavesFileIntact: it
// replaces the file over and over with one of two contents until killed.
func writerProcess() {
	root := os.Getenv("AGENTSPEC_TEST_WRITER")
	if root == "" {
		return
	}
	c, err := New(Options{Tools: []string{ToolWriteFile}}, root)
	if err != nil {
		os.Exit(3)
	}
	if os.Getenv("AGENTSPEC_TEST_WRITER_PARK") != "" {
		// Park inside the second replacement, its temporary file complete
		// but not yet renamed, so the parent kills it exactly there.
		n := 0
		park := func(point string) error {
			if point == sandboxtest.HookBeforeRename {
				if n++; n == 2 {
					os.WriteFile(filepath.Join(root, "parked"), nil, 0o644)
					select {}
				}
			}
			return nil
		}
		sandboxtest.SetFaultHook(park)
	}
	tl := toolNamed(c, ToolWriteFile)
	for i := 0; ; i++ {
		content := strings.Repeat(string(rune('a'+i%2)), 4<<20)
		raw := fmt.Sprintf(`{"path":"f.txt","content":%q}`, content)
		if _, err := tl.Call(context.Background(), []byte(raw)); err != nil {
			os.Exit(4)
		}
		if i == 0 {
			os.WriteFile(filepath.Join(root, "started"), nil, 0o644)
		}
	}
}

func TestMain(m *testing.M) {
	editorProcess()
	writerProcess()
	capabilities.MustRegister(Type()) // as a program registers it; the tests' specs name FileSystem
	os.Exit(m.Run())
}

// A writer killed at any moment leaves the file whole (old or new content),
// and the temporary file it was filling is removed by the next write there
// and never listed.
func TestKilledWriterLeavesFileIntact(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	whole := func(s string) bool {
		return len(s) == 4<<20 && (s == strings.Repeat("a", 4<<20) || s == strings.Repeat("b", 4<<20))
	}
	mustWrite(t, root, "f.txt", strings.Repeat("b", 4<<20))
	waitFor := func(name string) {
		for range 1000 {
			if _, err := os.Stat(filepath.Join(root, name)); err == nil {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Fatalf("the writer never made %s", name)
	}
	for round := range 6 {
		os.Remove(filepath.Join(root, "started"))
		os.Remove(filepath.Join(root, "parked"))
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "AGENTSPEC_TEST_WRITER="+root)
		if round == 0 {
			cmd.Env = append(cmd.Env, "AGENTSPEC_TEST_WRITER_PARK=1")
		}
		require.NoError(t, cmd.Start())
		if round == 0 {
			waitFor("parked") // killed with a complete temporary file not yet renamed
		} else {
			waitFor("started")
			time.Sleep(time.Duration(round*7) * time.Millisecond) // at a different point each round
		}
		require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
		cmd.Wait()
		assert.True(t, whole(readBack(t, root, "f.txt")), "round %d: the file is whole after a kill", round)
		if round == 0 {
			assert.NotEmpty(t, tempFiles(t, root), "the parked writer left its temporary file")
		}
	}

	c, err := New(Options{Tools: []string{ToolWriteFile, ToolListDirectory, ToolFindFiles, ToolSearchFiles}}, root)
	require.NoError(t, err)
	defer c.Close()
	for _, call := range []struct {
		tool string
		args map[string]any
	}{
		{ToolListDirectory, map[string]any{"path": "."}},
		{ToolFindFiles, map[string]any{"pattern": "**/*"}},
		{ToolSearchFiles, map[string]any{"pattern": "a"}},
	} {
		out, err := callTool(context.Background(), t, c, call.tool, call.args)
		require.NoError(t, err)
		assert.NotContains(t, out, sandbox.TempPrefix, "%s never lists a temporary file", call.tool)
	}
	write(context.Background(), t, c, map[string]any{"path": "f.txt", "content": "after\n"})
	assert.Empty(t, tempFiles(t, root), "the next write removed the strays")
}
