package confine_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/internal/confine"
)

// syncBuffer is an io.Writer the package's goroutines may write to while a
// test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// env is the environment tests give commands.
func env(temp string) []string {
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + filepath.Join(temp, "home"), "TMPDIR=" + temp, "LANG=C.UTF-8", "TERM=dumb"}
}

// box is a workspace W and a private temp T for one test.
type box struct {
	root, temp string
}

func newBox(t testing.TB) box {
	t.Helper()
	base := t.TempDir()
	b := box{root: filepath.Join(base, "w"), temp: filepath.Join(base, "t")}
	require.NoError(t, os.Mkdir(b.root, 0o755))
	require.NoError(t, os.Mkdir(b.temp, 0o700))
	require.NoError(t, os.Mkdir(filepath.Join(b.temp, "home"), 0o700))
	return b
}

func (b box) command(t *testing.T, sandbox bool, script string) confine.Command {
	return confine.Command{
		Script:  script,
		Dir:     b.root,
		Env:     env(b.temp),
		Sandbox: sandbox,
		Policy:  confine.Policy{Root: b.root, Temp: b.temp},
	}
}

type result struct {
	exit           confine.Exit
	stdout, stderr string
}

// run runs c to the end.
func run(t *testing.T, ctx context.Context, c confine.Command) result {
	t.Helper()
	var out, errOut syncBuffer
	c.Stdout, c.Stderr = &out, &errOut
	p, err := confine.Start(ctx, c)
	require.NoError(t, err)
	exit, err := p.Wait()
	require.NoError(t, err)
	return result{exit: exit, stdout: out.String(), stderr: errOut.String()}
}

// modes are the two ways every behaviour test runs.
var modes = []struct {
	name    string
	sandbox bool
}{{"unconfined", false}, {"confined", true}}

// needSandbox skips a confined test where this system cannot confine.
func needSandbox(t *testing.T, sandbox bool) {
	t.Helper()
	if !sandbox {
		return
	}
	if err := confine.Available(); err != nil {
		t.Skip(err)
	}
}

// needVisible skips a confined test whose command runs path (the test's
// own binary) where the command cannot see it: below /dev, which the
// command's own /dev covers, as go test builds it there when GOTMPDIR, or
// TMPDIR, is on /dev/shm.
func needVisible(t *testing.T, sandbox bool, path string) {
	t.Helper()
	if sandbox && strings.HasPrefix(path, "/dev/") {
		t.Skipf("the test's binary %s lies below /dev, which a confined command does not see: set GOTMPDIR to a directory elsewhere to run this case", path)
	}
}

// procsWith lists the host's processes whose command line starts with
// prefix.
func procsWith(prefix string) []string {
	var found []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.HasPrefix(strings.ReplaceAll(string(b), "\x00", " "), prefix) {
			found = append(found, e.Name()+": "+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return found
}

// waitGone polls until no process's command line starts with prefix (they
// are killed, but reaping may lag an instant), for at most a few seconds.
func waitGone(prefix string) []string {
	for range 50 {
		if len(procsWith(prefix)) == 0 {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return procsWith(prefix)
}

func syscallKill(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) }

// awaitReady waits until the command has written "ready\n", and fails the
// test if it ends (or writes something else) first.
func awaitReady(t *testing.T, p *confine.Process, out *syncBuffer) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		_, _ = p.Wait()
		close(done)
	}()
	for {
		switch s := out.String(); {
		case s == "ready\n":
			return
		case s != "" && !strings.HasPrefix("ready\n", s):
			t.Fatalf("the command wrote %q, not ready", s)
		}
		select {
		case <-done:
			if out.String() != "ready\n" {
				t.Fatalf("the command ended before it was ready; it wrote %q", out.String())
			}
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// waitFor polls cond until it holds. It gives up, failing the test, after
// a minute, far past any wait here, so that a command that went wrong
// fails its test instead of hanging the package.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); {
		if time.Now().After(deadline) {
			t.Fatal("gave up waiting")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
