package confine_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/internal/confine"
)

func TestRun(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, script   string
		exit           confine.Exit
		stdout, stderr string
	}{
		{"output", "echo out; echo err >&2", confine.Exit{}, "out\n", "err\n"},
		{"exit code", "exit 3", confine.Exit{Code: 3}, "", ""},
		{"signal death", "kill -9 $$", confine.Exit{Code: 137, Signal: syscall.SIGKILL}, "", ""},
		{"stdin is empty", "cat; echo done", confine.Exit{}, "done\n", ""},
		{"working directory", "pwd", confine.Exit{}, "<root>\n", ""},
		{"only fds 0-2", "ls /proc/self/fd | sort -n | tr '\\n' ' '", confine.Exit{}, "0 1 2 3 ", ""},
		{"no core dumps", "ulimit -c", confine.Exit{}, "0\n", ""},
	}
	for _, m := range modes {
		for _, tc := range cases {
			t.Run(m.name+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				needSandbox(t, m.sandbox)
				b := newBox(t)
				r := run(t, t.Context(), b.command(t, m.sandbox, tc.script))
				assert.Equal(t, tc.exit, r.exit)
				assert.Equal(t, strings.ReplaceAll(tc.stdout, "<root>", b.root), r.stdout)
				assert.Equal(t, tc.stderr, r.stderr)
			})
		}
	}
}

func TestEnvironmentIsExactlyTheCommands(t *testing.T) {
	t.Setenv("AGENTSPEC_CONFINE_TEST_SECRET", "leaked") // not passed on
	for _, m := range modes {
		// An empty environment too: it stays empty, never the helper's.
		for _, env := range [][]string{{"A=1", "PATH=" + os.Getenv("PATH")}, {}} {
			t.Run(fmt.Sprintf("%s/%d", m.name, len(env)), func(t *testing.T) {
				needSandbox(t, m.sandbox)
				b := newBox(t)
				c := b.command(t, m.sandbox, "/usr/bin/env | /usr/bin/sort")
				c.Env = env
				r := run(t, t.Context(), c)
				// sh adds PWD (and dash nothing else) to what it was given.
				var got []string
				for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
					if l != "" && !strings.HasPrefix(l, "PWD=") && !strings.HasPrefix(l, "OLDPWD=") && !strings.HasPrefix(l, "SHLVL=") && !strings.HasPrefix(l, "_=") {
						got = append(got, l)
					}
				}
				assert.Equal(t, env, append([]string{}, got...), "%+v", r)
			})
		}
	}
}

func TestMaxFileBytes(t *testing.T) {
	t.Parallel()
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			needSandbox(t, m.sandbox)
			b := newBox(t)
			c := b.command(t, m.sandbox, "head -c 100000 /dev/zero > big")
			c.Policy.MaxFileBytes = 4096
			r := run(t, t.Context(), c)
			assert.Equal(t, confine.Exit{Code: 128 + int(syscall.SIGXFSZ)}, r.exit, "head dies of SIGXFSZ, and sh reports it as 153")
			fi, err := os.Stat(filepath.Join(b.root, "big"))
			require.NoError(t, err)
			assert.EqualValues(t, 4096, fi.Size())
		})
	}
}

func TestTerminate(t *testing.T) {
	t.Parallel()
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			needSandbox(t, m.sandbox)
			b := newBox(t)
			var out syncBuffer
			c := b.command(t, m.sandbox, "echo ready; exec sleep 30")
			c.Stdout = &out
			p, err := confine.Start(t.Context(), c)
			require.NoError(t, err)
			awaitReady(t, p, &out)
			p.Terminate(10 * time.Second)
			exit, err := p.Wait()
			require.NoError(t, err)
			assert.Equal(t, confine.Exit{Code: 143, Signal: syscall.SIGTERM}, exit)
		})
	}
}

func TestTerminateEscalates(t *testing.T) {
	t.Parallel()
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			needSandbox(t, m.sandbox)
			b := newBox(t)
			var out syncBuffer
			c := b.command(t, m.sandbox, "trap '' TERM; echo ready; while :; do sleep 1; done")
			c.Stdout = &out
			p, err := confine.Start(t.Context(), c)
			require.NoError(t, err)
			awaitReady(t, p, &out)
			p.Terminate(100 * time.Millisecond)
			exit, err := p.Wait()
			require.NoError(t, err)
			assert.Equal(t, confine.Exit{Code: 137, Signal: syscall.SIGKILL, Killed: true}, exit)
		})
	}
}

// A command that dies of a SIGKILL not sent by the Process (its own, here,
// on the SIGTERM) during Terminate's grace ended with a status of its own:
// Killed says the escalation did not end it.
func TestTerminateWithoutEscalation(t *testing.T) {
	t.Parallel()
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			needSandbox(t, m.sandbox)
			b := newBox(t)
			var out syncBuffer
			c := b.command(t, m.sandbox, "trap 'kill -KILL $$' TERM; echo ready; sleep 30 & wait")
			c.Stdout = &out
			p, err := confine.Start(t.Context(), c)
			require.NoError(t, err)
			awaitReady(t, p, &out)
			p.Terminate(time.Minute)
			exit, err := p.Wait()
			require.NoError(t, err)
			assert.Equal(t, confine.Exit{Code: 137, Signal: syscall.SIGKILL}, exit)
		})
	}
}

func TestContextCancelKills(t *testing.T) {
	t.Parallel()
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			needSandbox(t, m.sandbox)
			b := newBox(t)
			ctx, cancel := context.WithCancel(t.Context())
			var out syncBuffer
			c := b.command(t, m.sandbox, "echo ready; sleep 30")
			c.Stdout = &out
			p, err := confine.Start(ctx, c)
			require.NoError(t, err)
			awaitReady(t, p, &out)
			cancel()
			exit, err := p.Wait()
			require.NoError(t, err)
			assert.Equal(t, confine.Exit{Code: 137, Signal: syscall.SIGKILL, Killed: true}, exit)
		})
	}
}

func TestStartRefusesARelativeDir(t *testing.T) {
	t.Parallel()
	_, err := confine.Start(t.Context(), confine.Command{Script: "true", Dir: "rel"})
	assert.ErrorContains(t, err, `"rel" is not an absolute path`)
}

// TestTerminateReachesEveryProcess: a background child gets SIGTERM too,
// not only the shell. Both trap it, and the shell ends once the child has
// said so.
func TestTerminateReachesEveryProcess(t *testing.T) {
	t.Parallel()
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			needSandbox(t, m.sandbox)
			b := newBox(t)
			var out syncBuffer
			c := b.command(t, m.sandbox, `
sh -c 'trap "echo > got; exit 0" TERM; echo > started; while :; do sleep 0.05; done' &
trap 'until [ -e got ]; do sleep 0.01; done; exit 7' TERM
until [ -e started ]; do sleep 0.01; done
echo ready
wait`)
			c.Stdout = &out
			p, err := confine.Start(t.Context(), c)
			require.NoError(t, err)
			awaitReady(t, p, &out)
			p.Terminate(time.Minute)
			exit, err := p.Wait()
			require.NoError(t, err)
			assert.Equal(t, confine.Exit{Code: 7}, exit, "the child got SIGTERM, and the shell saw it")
		})
	}
}

func TestStartErrors(t *testing.T) {
	t.Parallel()
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			needSandbox(t, m.sandbox)
			b := newBox(t)

			c := b.command(t, m.sandbox, "true")
			c.Dir = filepath.Join(b.root, "missing")
			_, err := confine.Start(t.Context(), c)
			assert.ErrorIs(t, err, syscall.ENOENT, "a missing directory is the caller's to report")
			assertDirError(t, err)

			require.NoError(t, os.WriteFile(filepath.Join(b.root, "file"), nil, 0o644))
			c.Dir = filepath.Join(b.root, "file")
			_, err = confine.Start(t.Context(), c)
			assert.ErrorIs(t, err, syscall.ENOTDIR)
			assertDirError(t, err)

			// A directory the command may not search: another user's
			// private one, which root enters only outside the user
			// namespace.
			if os.Geteuid() != 0 || m.sandbox {
				c.Dir = filepath.Join(b.root, "private")
				require.NoError(t, os.Mkdir(c.Dir, 0o700))
				if os.Geteuid() == 0 {
					require.NoError(t, os.Chown(c.Dir, 65534, 65534))
				} else {
					require.NoError(t, os.Chmod(c.Dir, 0o600))
				}
				_, err = confine.Start(t.Context(), c)
				assert.ErrorIs(t, err, syscall.EACCES)
				assertDirError(t, err)
			}

			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			_, err = confine.Start(ctx, b.command(t, m.sandbox, "true"))
			assert.ErrorIs(t, err, context.Canceled)
		})
	}
}

// assertDirError checks that err is a *confine.DirError.
func assertDirError(t *testing.T, err error) {
	t.Helper()
	_, ok := errors.AsType[*confine.DirError](err)
	assert.True(t, ok, "a *DirError, got %v", err)
}

// TestLongScript: a script longer than one argument of execve may be
// (MAX_ARG_STRLEN, 128 KiB), a heredoc writing a large file, runs as a short
// one does: $0 is sh, no arguments, stdin empty, only fds 0-2, and under a
// max_file_bytes smaller than itself.
func TestLongScript(t *testing.T) {
	t.Parallel()
	body := strings.Repeat("0123456789abcdef\n", 12<<10) // 204 KiB
	script := "cat > big <<'EOF'\n" + body + "EOF\n" +
		`echo "$0 $#"; cat; wc -c < big; ls /proc/self/fd | sort -n | tr '\n' ' '; exit 3`
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			needSandbox(t, m.sandbox)
			b := newBox(t)
			r := run(t, t.Context(), b.command(t, m.sandbox, script))
			assert.Equal(t, result{exit: confine.Exit{Code: 3}, stdout: fmt.Sprintf("sh 0\n%d\n0 1 2 3 ", len(body))}, r)
			got, err := os.ReadFile(filepath.Join(b.root, "big"))
			require.NoError(t, err)
			assert.Equal(t, body, string(got))

			c := b.command(t, m.sandbox, "# "+body+"\nhead -c 8192 /dev/zero > capped")
			c.Policy.MaxFileBytes = 4096
			r = run(t, t.Context(), c)
			assert.Equal(t, confine.Exit{Code: 128 + int(syscall.SIGXFSZ)}, r.exit, "%+v", r)
		})
	}
	_, err := confine.Start(t.Context(), confine.Command{Script: strings.Repeat("#", confine.MaxScript+1), Dir: "/"})
	assert.ErrorIs(t, err, confine.ErrScriptTooLong)
}
