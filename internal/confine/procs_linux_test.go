package confine_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/internal/confine"
)

// TestAgentspecIsInvisible: the command cannot find this process (the one
// that started it), read its command line or environment, or signal it.
func TestAgentspecIsInvisible(t *testing.T) {
	t.Parallel()
	self := strconv.Itoa(os.Getpid())
	exe, err := os.Executable()
	require.NoError(t, err)
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			needSandbox(t, m.sandbox)
			a := newArena(t)
			r := run(t, t.Context(), a.command(t, m.sandbox, fmt.Sprintf(
				"tr '\\0' ' ' < /proc/%[1]s/cmdline; echo; kill -0 %[1]s && echo signalled; "+
					"tr '\\0' '\\n' < /proc/%[1]s/environ | grep -c PATH=; set -- /proc/[0-9]*; echo $#", self)))
			lines := strings.Split(r.stdout, "\n")
			sees := strings.Contains(lines[0], filepath.Base(exe))
			assert.Equal(t, !m.sandbox, sees, "the command line of this process: %+v", r)
			assert.Equal(t, !m.sandbox, strings.Contains(r.stdout, "signalled"), "kill -0 this process: %+v", r)
			// Unconfined too: Start makes this process non-dumpable
			// (childproc.Harden) and the child lacks CAP_SYS_PTRACE.
			assert.NotContains(t, r.stdout, "PATH=", "%+v", r)
			if !m.sandbox {
				assert.Contains(t, r.stderr, "environ: Permission denied", "%+v", r)
			} else {
				// init and sh: nothing of the host. The shell expands the
				// glob itself, so no process of its own is running then
				// (counting with ls | grep raced: grep may not have
				// started when ls read /proc).
				assert.Equal(t, "2", lines[len(lines)-2], "processes visible in /proc: %+v", r)
			}
		})
	}
}

// orphanScript starts a child each way a process outlives its shell: a
// background job, nohup, setsid, a double fork. Each writes a file when it
// runs, then sleeps a time only it uses, which identifies it among the
// host's processes; the script waits for the files, says ready and then
// waits for go (created by the test) before it exits.
func orphanScript(token string) string {
	return fmt.Sprintf(`
sleep 300.%[1]s1 & echo > started1
nohup sh -c 'echo > started2; exec sleep 300.%[1]s2' >/dev/null 2>&1 &
setsid sh -c 'echo > started3; exec sleep 300.%[1]s3' >/dev/null 2>&1 &
sh -c "sh -c 'echo > started4; exec sleep 300.%[1]s4' >/dev/null 2>&1 &" 
until [ -e started1 ] && [ -e started2 ] && [ -e started3 ] && [ -e started4 ]; do sleep 0.01; done
echo ready
until [ -e go ]; do sleep 0.01; done
`, token)
}

func TestNothingOutlivesTheCommand(t *testing.T) {
	t.Parallel()
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			needSandbox(t, m.sandbox)
			a := newArena(t)
			token := strconv.FormatInt(time.Now().UnixNano()%1e9, 10)
			var out syncBuffer
			c := a.command(t, m.sandbox, orphanScript(token))
			c.Stdout = &out
			p, err := confine.Start(t.Context(), c)
			require.NoError(t, err)
			awaitReady(t, p, &out)
			// Every orphan runs (it may be an instant from its exec), and
			// the host sees it.
			waitFor(t, func() bool { return len(procsWith("sleep 300."+token)) == 4 })
			require.NoError(t, os.WriteFile(filepath.Join(a.root, "go"), nil, 0o644))
			exit, err := p.Wait()
			require.NoError(t, err)
			assert.Equal(t, confine.Exit{}, exit)
			left := waitGone("sleep 300." + token)
			t.Cleanup(func() { killAll(left) })
			switch {
			case m.sandbox:
				assert.Empty(t, left, "the PID namespace ended with its init")
			case os.Geteuid() == 0:
				assert.Empty(t, left, "the process group is killed, and the setsid one with the pids cgroup")
			default:
				assert.Len(t, left, 1, "the setsid one left the process group")
			}
		})
	}
}

func TestKillEndsEveryProcess(t *testing.T) {
	t.Parallel()
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			needSandbox(t, m.sandbox)
			a := newArena(t)
			token := strconv.FormatInt(time.Now().UnixNano()%1e9, 10)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			var out syncBuffer
			c := a.command(t, m.sandbox, orphanScript(token))
			c.Stdout = &out
			p, err := confine.Start(ctx, c)
			require.NoError(t, err)
			awaitReady(t, p, &out)
			waitFor(t, func() bool { return len(procsWith("sleep 300."+token)) == 4 })
			cancel() // a timeout, or the run's end
			exit, err := p.Wait()
			require.NoError(t, err)
			assert.Equal(t, 137, exit.Code)
			left := waitGone("sleep 300." + token)
			t.Cleanup(func() { killAll(left) })
			if m.sandbox || os.Geteuid() == 0 {
				assert.Empty(t, left)
			} else {
				assert.Len(t, left, 1, "the setsid one left the process group")
			}
		})
	}
}

func killAll(procs []string) {
	for _, p := range procs {
		if pid, err := strconv.Atoi(strings.SplitN(p, ":", 2)[0]); err == nil {
			_ = syscallKill(pid)
		}
	}
}

func TestProcessesAreBounded(t *testing.T) {
	t.Parallel()
	const max = 64
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			needSandbox(t, m.sandbox)
			if !m.sandbox && os.Geteuid() != 0 {
				t.Skip("unconfined, only root's commands are bounded (by a pids cgroup)")
			}
			a := newArena(t)
			// 100 sleepers are tried (a failed fork ends only its
			// subshell); the test counts those that run, then lets the
			// command end.
			token := strconv.FormatInt(time.Now().UnixNano()%1e9, 10)
			var out syncBuffer
			c := a.command(t, m.sandbox, fmt.Sprintf(`
i=0
while [ $i -lt 100 ]; do
  (sleep 300.%s &) 2>/dev/null
  i=$((i+1))
done
echo ready
until [ -e go ]; do sleep 0.01; done`, token))
			c.Stdout = &out
			c.Policy.MaxProcs = max
			p, err := confine.Start(t.Context(), c)
			require.NoError(t, err)
			awaitReady(t, p, &out)
			n := len(procsWith("sleep 300." + token))
			require.NoError(t, os.WriteFile(filepath.Join(a.root, "go"), nil, 0o644))
			_, err = p.Wait()
			require.NoError(t, err)
			assert.Equal(t, "ready\n", out.String())
			assert.Greater(t, n, max/2, "the spawner ran")
			assert.LessOrEqual(t, n, max, "the bound held")
			assert.Empty(t, waitGone("sleep 300."+token))
		})
	}
}

func TestForkBombEnds(t *testing.T) {
	t.Parallel()
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			needSandbox(t, m.sandbox)
			if !m.sandbox && os.Geteuid() != 0 {
				t.Skip("unconfined, only root's commands are bounded (by a pids cgroup)")
			}
			a := newArena(t)
			// The bomb saturates the bound (its processes say "Cannot
			// fork"); the shell sees that, ends, and the command ends with
			// it, bomb included. The shell itself forks once, for the
			// subshell that starts the bomb, and then looks with builtins
			// only: dash gives up (exit status 2) when it cannot fork, and
			// once the bound is reached it could not. (It used to start the
			// bomb's first pipeline itself and grep for the message, and
			// failed at times, when the bomb had filled the bound first.)
			c := a.command(t, m.sandbox, `bomb() { bomb | bomb & }
: >"$TMPDIR/err"
(bomb 2>"$TMPDIR/err") &
saturated() {
	while IFS= read -r line; do case $line in *'Cannot fork'*) return 0 ;; esac; done <"$TMPDIR/err"
	return 1
}
until saturated; do :; done; echo saturated`)
			c.Policy.MaxProcs = 64
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer cancel()
			r := run(t, ctx, c)
			require.NoError(t, ctx.Err(), "the command ended by itself: %v", r.exit)
			assert.Equal(t, "saturated\n", r.stdout, "%v %s", r.exit, r.stderr)
		})
	}
}

// TestCommandDiesWithItsParent: when the process that started a command
// dies without a word (SIGKILL, a crash), the command dies too: its init
// reads the end of the request pipe the parent held.
func TestCommandDiesWithItsParent(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	require.NoError(t, err)
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			needSandbox(t, m.sandbox)
			a := newArena(t)
			token := strconv.FormatInt(time.Now().UnixNano()%1e9, 10)
			flag := map[bool]string{true: "1", false: "0"}[m.sandbox]
			cmd := exec.Command(exe)
			cmd.Env = append(os.Environ(), parentVar+"="+flag+" "+a.root+" "+a.temp+" exec sleep 300."+token)
			stdout, err := cmd.StdoutPipe()
			require.NoError(t, err)
			require.NoError(t, cmd.Start())
			line, _ := bufio.NewReader(stdout).ReadString('\n')
			require.Equal(t, "started\n", line)
			waitFor(t, func() bool { return len(procsWith("sleep 300."+token)) == 1 })
			require.NoError(t, cmd.Process.Kill())
			_ = cmd.Wait()
			left := waitGone("sleep 300." + token)
			t.Cleanup(func() {
				killAll(left)
				// The parent's pids cgroup, if it made one, is empty now.
				dirs, _ := filepath.Glob(fmt.Sprintf("/sys/fs/cgroup/pids/*/agentspec-%d-*", cmd.Process.Pid))
				more, _ := filepath.Glob(fmt.Sprintf("/sys/fs/cgroup/pids/agentspec-%d-*", cmd.Process.Pid))
				for _, d := range append(dirs, more...) {
					waitFor(t, func() bool { return syscall.Rmdir(d) == nil })
				}
			})
			assert.Equal(t, !m.sandbox, len(left) == 1, "the command outlived its parent: %v", left)
		})
	}
}
