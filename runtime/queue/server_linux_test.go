//go:build linux

package queue

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// serverProcess builds nats-server from the module and starts it on a free
// loopback port; ok is false when it cannot.
func serverProcess(b *testing.B) (url string, cpu func() time.Duration, ok bool) {
	bin := filepath.Join(b.TempDir(), "nats-server")
	build := exec.Command("go", "build", "-o", bin, "github.com/nats-io/nats-server/v2")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		b.Logf("using an embedded server: building nats-server: %v\n%s", err, out)
		return "", nil, false
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, false
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(bin, "-js", "-a", "127.0.0.1", "-p", strconv.Itoa(port), "-sd", b.TempDir())
	if err := cmd.Start(); err != nil {
		return "", nil, false
	}
	b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			b.Fatal("nats-server did not start")
		}
	}
	stat := fmt.Sprintf("/proc/%d/stat", cmd.Process.Pid)
	return fmt.Sprintf("nats://127.0.0.1:%d", port), func() time.Duration {
		data, err := os.ReadFile(stat)
		if err != nil {
			return 0
		}
		// Fields after the command name, which is in parentheses: utime and
		// stime are the 14th and 15th fields of the line, in clock ticks
		// (100 a second on Linux).
		f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
		if len(f) < 13 {
			return 0
		}
		u, _ := strconv.ParseInt(f[11], 10, 64)
		s, _ := strconv.ParseInt(f[12], 10, 64)
		return time.Duration(u+s) * 10 * time.Millisecond
	}, true
}
