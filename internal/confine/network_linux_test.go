package confine_test

import (
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// listener is a loopback service of the host the command tries to reach;
// received reports what reached it.
type listener struct {
	network, address string
	received         func() string
}

// listenStream listens for connections (TCP, Unix) and records the first
// bytes of each.
func listenStream(t *testing.T, network, address string) listener {
	l, err := net.Listen(network, address)
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	got := make(chan string, 4)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			b, _ := io.ReadAll(io.LimitReader(c, 64))
			c.Close()
			got <- string(b)
		}
	}()
	return listener{network: network, address: l.Addr().String(), received: func() string { return drain(got) }}
}

func listenUDP(t *testing.T) listener {
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	got := make(chan string, 4)
	go func() {
		buf := make([]byte, 64)
		for {
			n, _, err := c.ReadFrom(buf)
			if err != nil {
				return
			}
			got <- string(buf[:n])
		}
	}()
	return listener{network: "udp", address: c.LocalAddr().String(), received: func() string { return drain(got) }}
}

// drain returns what reached a listener, called once the command has
// ended: a connection or datagram on loopback is queued before the
// sender's call returns, so the short wait only absorbs the listener
// goroutine's scheduling.
func drain(got chan string) string {
	select {
	case s := <-got:
		return s
	case <-time.After(200 * time.Millisecond):
		return ""
	}
}

func TestNetworkIsRefused(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	require.NoError(t, err)
	cases := []struct {
		name   string
		listen func(t *testing.T) listener
	}{
		{"tcp to the host's loopback", func(t *testing.T) listener { return listenStream(t, "tcp4", "127.0.0.1:0") }},
		{"udp to the host's loopback", listenUDP},
		{"pathname unix socket", func(t *testing.T) listener {
			return listenStream(t, "unix", filepath.Join(t.TempDir(), "docker.sock"))
		}},
		{"abstract unix socket", func(t *testing.T) listener {
			return listenStream(t, "unix", "@agentspec-confine-test-"+strings.ReplaceAll(t.Name(), "/", "-"))
		}},
	}
	type mode struct {
		name             string
		sandbox, network bool
	}
	for _, m := range []mode{{"unconfined", false, false}, {"confined", true, false}, {"confined with network", true, true}} {
		for _, tc := range cases {
			t.Run(m.name+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				needSandbox(t, m.sandbox)
				needVisible(t, m.sandbox, exe)
				l := tc.listen(t)
				a := newArena(t)
				// The test binary is the client (TestMain, dialVar).
				c := a.command(t, m.sandbox, "exec '"+exe+"'")
				c.Env = append(c.Env, dialVar+"="+l.network+" "+l.address+" token")
				c.Policy.Network = m.network
				r := run(t, t.Context(), c)
				reached := l.received() == "token"
				if m.sandbox && !m.network {
					assert.False(t, reached, "%+v", r)
					assert.NotContains(t, r.stdout, "sent")
					t.Log(r.stdout)
				} else {
					assert.True(t, reached, "%+v", r)
				}
			})
		}
	}
}

// vsock makes a vsock socket and says how it went.
func vsock() int {
	fd, err := unix.Socket(unix.AF_VSOCK, unix.SOCK_STREAM, 0)
	if err != nil {
		fmt.Println("vsock:", err)
		return 1
	}
	unix.Close(fd)
	fmt.Println("vsock socket")
	return 0
}

// TestVsockIsRefused: vsock belongs to no network namespace, and its
// peer is the host of the virtual machine the command runs in, past the
// machine's network. No test can stand for that host, so it is the socket
// that must not be made.
func TestVsockIsRefused(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	require.NoError(t, err)
	if fd, err := unix.Socket(unix.AF_VSOCK, unix.SOCK_STREAM, 0); err != nil {
		t.Skipf("no vsock here: %v", err)
	} else {
		unix.Close(fd)
	}
	type mode struct {
		name             string
		sandbox, network bool
	}
	for _, m := range []mode{{"unconfined", false, false}, {"confined", true, false}, {"confined with network", true, true}} {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			needSandbox(t, m.sandbox)
			needVisible(t, m.sandbox, exe)
			a := newArena(t)
			c := a.command(t, m.sandbox, "exec '"+exe+"'")
			c.Env = append(c.Env, dialVar+"=vsock")
			c.Policy.Network = m.network
			r := run(t, t.Context(), c)
			if m.sandbox && !m.network {
				assert.Equal(t, "vsock: permission denied\n", r.stdout)
			} else {
				assert.Equal(t, "vsock socket\n", r.stdout)
			}
		})
	}
}
