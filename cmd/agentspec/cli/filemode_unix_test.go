//go:build unix

package cli

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Event files hold tool arguments and results, the contents of the files a
// run read among them: run, batch and mcp create them for their owner
// alone, whatever the umask lets through.
func TestEventFilesAreTheOwnersAlone(t *testing.T) {
	old := syscall.Umask(0o022) // the common umask, which lets 0644 through
	defer syscall.Umask(old)
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"jobs/a/x.txt": "a\n",
		"jobs/b/x.txt": "b\n",
		"agent.yaml":   "model: test\ninstructions: Read.\ncapabilities: [FileSystem]\n",
	})
	main := func(args ...string) {
		t.Helper()
		var out, errOut strings.Builder
		require.Equal(t, exitOK, Main(context.Background(), args, strings.NewReader(""), &out, &errOut), errOut.String())
	}
	runEvents := filepath.Join(dir, "run.jsonl")
	main("run", "-q", "--workspace", dir, "--events", runEvents, filepath.Join(dir, "agent.yaml"))
	mcpEvents := filepath.Join(dir, "mcp.jsonl")
	main("mcp", "--root", dir, "--events", mcpEvents) // stdin is empty: it serves nothing and ends
	batchEvents := filepath.Join(dir, "batch-events")
	main("batch", "-q", "--events", batchEvents, filepath.Join(dir, "agent.yaml"), filepath.Join(dir, "jobs", "*"))

	files := []string{runEvents, mcpEvents}
	perJob, err := filepath.Glob(filepath.Join(batchEvents, "*"))
	require.NoError(t, err)
	require.Len(t, perJob, 2)
	for _, f := range append(files, perJob...) {
		st, err := os.Stat(f)
		require.NoError(t, err)
		assert.Equal(t, fs.FileMode(0o600), st.Mode().Perm(), f)
	}
}

// A spec can come through a FIFO, which is read once: the check for a
// pipeline leaves it to the loader rather than take its one read.
func TestSpecFromFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "agent.yaml")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	write := func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		defer f.Close()
		f.WriteString("model: test\ninstructions: Say hi.\n")
	}
	go write()
	type result struct {
		code   int
		stderr string
	}
	done := make(chan result, 1)
	go func() {
		code, _, stderr := runCLI(t, "", "validate", fifo)
		done <- result{code, stderr}
	}()
	select {
	case r := <-done:
		assert.Equal(t, 0, r.code, r.stderr)
	case <-time.After(30 * time.Second):
		go write() // lets the waiting open return, so the test can end
		<-done
		t.Fatal("validate waited for a second writer of the FIFO")
	}
}
