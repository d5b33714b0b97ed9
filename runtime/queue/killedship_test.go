//go:build unix

package queue

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A submitter killed (SIGKILL, or a second Ctrl-C, which ends it without
// its clean stop) while it uploads a workspace's archive leaves no file of
// it, up to --ship-max, in its temporary directory, which no one would
// ever remove.
func TestKilledShippingLeavesNoTemporaryFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"a.txt": "a file to ship\n"})
	tmp := t.TempDir()
	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), envChildShip+"="+dir, "TMPDIR="+tmp)
	child.Stderr = os.Stderr
	out, err := child.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, child.Start())
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
	said := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		said <- line
	}()
	select {
	case line := <-said:
		require.Equal(t, "uploading\n", line)
	case <-time.After(20 * time.Second):
		t.Fatal("the upload never started")
	}
	require.NoError(t, child.Process.Kill())
	_ = child.Wait()
	left, err := os.ReadDir(tmp)
	require.NoError(t, err)
	var names []string
	for _, e := range left {
		names = append(names, filepath.Join(tmp, e.Name()))
	}
	assert.Empty(t, names, "left behind")
}
