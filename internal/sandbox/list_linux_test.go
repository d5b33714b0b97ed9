package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/agentspec/agentspec/internal/sandbox/walk"
)

func TestListRegular(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	want := map[string]bool{}
	// Long names, so that the listing takes several getdents64 calls.
	for i := range 300 {
		name := fmt.Sprintf("%03d-%s.txt", i, strings.Repeat("n", 200))
		mustWrite(t, dir, name, "")
		want[name] = true
	}
	mustWrite(t, dir, "sub/x.txt", "")
	mustSymlink(t, "000-"+strings.Repeat("n", 200)+".txt", filepath.Join(dir, "link.txt"))
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o644))

	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	require.NoError(t, err)
	defer unix.Close(fd)
	var buf []byte
	assert.Equal(t, want, listRegular(fd, &buf), "regular files only, through an O_PATH descriptor")

	f, err := os.Open(filepath.Join(dir, "sub", "x.txt"))
	require.NoError(t, err)
	defer f.Close()
	assert.Nil(t, listRegular(int(f.Fd()), &buf), "not a directory")
}

// A walk asked for once the Dir is closed fails, and a closed Dir closes
// nothing more: its descriptor's number may belong to another file by then.
func TestWalkAfterCloseFails(t *testing.T) {
	t.Parallel()
	d, err := OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	other, err := os.Open(t.TempDir()) // may take the number the Dir had
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := NewWalker(d, ".", struct{}{}); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("NewWalker after Close: %v", err)
	}
	if _, _, err := NewTrackedWalker(d, ".", struct{}{}, walk.Stamp{}); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("NewTrackedWalker after Close: %v", err)
	}
	d.Close()
	if _, err := other.Stat(); err != nil {
		t.Fatalf("a second Close closed another file: %v", err)
	}
}
