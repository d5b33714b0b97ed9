//go:build unix

package walk

import (
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// A descriptor whose file honours O_NONBLOCK (a FUSE file system may, for a
// regular file) answers EAGAIN while it has nothing yet; the Stream then
// blocks rather than failing the read. No regular file here can answer
// EAGAIN, so a pipe stands in for one: Read and ReadAt share that loop.
func TestStreamWaitsWhereNonblockIsHonoured(t *testing.T) {
	var fds [2]int
	require.NoError(t, unix.Pipe(fds[:])) // no Pipe2 on darwin
	require.NoError(t, unix.SetNonblock(fds[0], true))
	s := NewStream(fds[0], "pipe", 5)
	defer s.Close()
	go func() {
		time.Sleep(20 * time.Millisecond)
		unix.Write(fds[1], []byte("hello"))
		unix.Close(fds[1])
	}()
	got, err := io.ReadAll(s)
	require.NoError(t, err)
	assert.Equal(t, "hello", string(got))
}
