package shell

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/internal/confine"
)

// newShell builds a Shell over a fresh workspace, sandboxed as the system
// allows, and closes it when the test ends.
func newShell(t *testing.T, js string) (*Capability, string) {
	t.Helper()
	w := realTemp(t)
	o := options(t, js)
	if o.Sandbox == nil {
		o.Sandbox = sandboxMode(t)
	}
	s, err := New(o, w)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, s.Close()) })
	return s, w
}

// sandboxMode is "on" where the system can confine commands, else "off".
func sandboxMode(t *testing.T) string {
	t.Helper()
	if _, err := configure(Options{}); err == nil {
		if s, err := New(Options{}, t.TempDir()); err == nil {
			s.Close()
			return "on"
		}
	}
	return "off"
}

// sandboxModes is the sandbox settings a test runs under here: off, and on
// where the system can confine commands.
func sandboxModes(t *testing.T) []string {
	t.Helper()
	if sandboxMode(t) == "on" {
		return []string{"off", "on"}
	}
	return []string{"off"}
}

// startFinished starts a background command with args and waits until
// check_command says it has finished; it returns the command's id.
func startFinished(t *testing.T, ctx context.Context, s *Capability, args string) string {
	t.Helper()
	out, err := call(t, ctx, s, ToolStartCommand, args)
	require.NoError(t, err)
	id := out[len(out)-32:]
	require.Eventually(t, func() bool {
		out, _ := call(t, ctx, s, ToolCheckCommand, `{"command_id": "`+id+`"}`)
		return strings.Contains(out, "[status: finished]")
	}, timeoutForEventually, pollEvery)
	return id
}

// call calls the named tool with args and returns its result or retry.
func call(t *testing.T, ctx context.Context, s *Capability, name, args string) (string, error) {
	t.Helper()
	tools, err := s.Tools(ctx)
	require.NoError(t, err)
	for _, tl := range tools {
		if tl.Name() == name {
			return tl.Call(ctx, json.RawMessage(args))
		}
	}
	t.Fatalf("no tool %s", name)
	return "", nil
}

func run(t *testing.T, s *Capability, command string) string {
	t.Helper()
	args, _ := json.Marshal(map[string]string{"command": command})
	out, err := call(t, context.Background(), s, ToolRunCommand, string(args))
	require.NoError(t, err, command)
	return out
}

func retryOf(t *testing.T, err error) string {
	t.Helper()
	msg, ok := capabilities.AsRetry(err)
	require.True(t, ok, "a retry, got %v", err)
	return msg
}

func TestRunCommandFormats(t *testing.T) {
	t.Parallel()
	s, _ := newShell(t, `{}`)
	for command, want := range map[string]string{
		"echo hello":                   "[stdout]\nhello\n",
		"true":                         "(no output)",
		"echo out && echo err >&2":     "[stdout]\nout\n\n[stderr]\nerr\n",
		"echo out; exit 3":             "[stdout]\nout\n\n[exit code: 3]",
		"exit 4":                       "(no output)\n[exit code: 4]",
		"kill -TERM $$":                "(no output)\n[exit code: 143]",
		"printf 'a\\377b'":             "[stdout]\na\ufffdb",
		"read x; echo \"got [$x] $?\"": "[stdout]\ngot [] 1\n",
	} {
		assert.Equal(t, want, run(t, s, command), command)
	}
}

func TestRunCommandTimeout(t *testing.T) {
	t.Parallel()
	s, _ := newShell(t, `{}`)
	out, err := call(t, context.Background(), s, ToolRunCommand, `{"command": "echo before; sleep 30", "timeout_seconds": 1}`)
	require.NoError(t, err)
	assert.Equal(t, "[stdout]\nbefore\n\n[Command timed out after 1.0s]", out)
	out, err = call(t, context.Background(), s, ToolRunCommand, `{"command": "sleep 30", "timeout_seconds": 0.5}`)
	require.NoError(t, err)
	assert.Equal(t, "[Command timed out after 0.5s]", out)

	_, err = call(t, context.Background(), s, ToolRunCommand, `{"command": "true", "timeout_seconds": 0}`)
	assert.Equal(t, "timeout_seconds must be greater than zero.", retryOf(t, err))
	_, err = call(t, context.Background(), s, ToolRunCommand, `{"command": "true", "timeout_seconds": 600.5}`)
	assert.Equal(t, "timeout_seconds must be at most 600.0 seconds.", retryOf(t, err))
	_, err = call(t, context.Background(), s, ToolRunCommand, `{"command": "true", "timeout_seconds": 600}`)
	assert.NoError(t, err)
}

func TestRunCommandRefusals(t *testing.T) {
	t.Parallel()
	s, w := newShell(t, `{"denied_operators": [">"]}`)
	_, err := call(t, context.Background(), s, ToolRunCommand, `{"command": "rm -rf x"}`)
	assert.Equal(t, "Command 'rm' is denied.", retryOf(t, err))
	_, err = call(t, context.Background(), s, ToolRunCommand, `{"command": "echo x > f"}`)
	assert.Equal(t, "Shell operator '>' is not allowed.", retryOf(t, err))
	_, err = call(t, context.Background(), s, ToolRunCommand, `{"command": "echo \ud800"}`)
	assert.Equal(t, "The command contains characters that cannot be encoded for the operating system.", retryOf(t, err))
	_, err = call(t, context.Background(), s, ToolRunCommand, `{}`)
	assert.Equal(t, "Missing required argument 'command'.", retryOf(t, err))
	_, err = os.Stat(filepath.Join(w, "f"))
	assert.ErrorIs(t, err, os.ErrNotExist)

	// sh runs a line before it reads the next: a quote left open on a
	// later line does not stop the first from running, so it is checked.
	require.NoError(t, os.WriteFile(filepath.Join(w, "victim"), []byte("x"), 0o644))
	args, _ := json.Marshal(map[string]string{"command": "rm victim\necho 'oops"})
	_, err = call(t, context.Background(), s, ToolRunCommand, string(args))
	assert.Equal(t, "Command 'rm' is denied.", retryOf(t, err))
	assert.FileExists(t, filepath.Join(w, "victim"))
}

func TestOutputIsCapped(t *testing.T) {
	t.Parallel()
	s, _ := newShell(t, `{"max_output_chars": 200}`)
	out := run(t, s, "head -c 100000 /dev/zero | tr '\\0' x; exit 7")
	assert.True(t, strings.HasPrefix(out, "[... output truncated, showing last 153 chars]\n"), out)
	assert.True(t, strings.HasSuffix(out, "xxx\n[exit code: 7]"), out)
	assert.Len(t, out, 200)
}

func TestMaxFileBytes(t *testing.T) {
	t.Parallel()
	s, w := newShell(t, `{"max_file_bytes": 1024}`)
	out := run(t, s, "head -c 4096 /dev/zero > big")
	// The shell says why head died on stderr.
	assert.True(t, strings.HasSuffix(out, "\n[exit code: 153]\n[File-size limit exceeded: max_file_bytes=1024. Reduce file output before retrying.]"), out)
	st, err := os.Stat(filepath.Join(w, "big"))
	require.NoError(t, err)
	assert.LessOrEqual(t, st.Size(), int64(1024))
	assert.Equal(t, "(no output)\n[exit code: 2]\n[Command failed with max_file_bytes=1024; file writes may have reached the per-file limit.]", run(t, s, "exit 2"))
}

// A background command's exit carries the max_file_bytes note too, in
// check_command and in stop_command, as the reference adds it to every exit
// line it shows; an exit 0 has no note.
func TestMaxFileBytesBackground(t *testing.T) {
	t.Parallel()
	s, _ := newShell(t, `{"max_file_bytes": 1024}`)
	ctx := context.Background()
	const (
		exceeded = "\n[File-size limit exceeded: max_file_bytes=1024. Reduce file output before retrying.]"
		failed   = "\n[Command failed with max_file_bytes=1024; file writes may have reached the per-file limit.]"
	)
	for command, exit := range map[string]string{
		"head -c 4096 /dev/zero > big 2>/dev/null; exit $?": "[exit code: 153]" + exceeded,
		"exit 2": "[exit code: 2]" + failed,
		"true":   "[exit code: 0]",
	} {
		id := startFinished(t, ctx, s, `{"command": "`+command+`"}`)
		out, err := call(t, ctx, s, ToolCheckCommand, `{"command_id": "`+id+`"}`)
		require.NoError(t, err)
		assert.Equal(t, "(no output yet)\n[status: finished]\n"+exit, out, command)
		out, err = call(t, ctx, s, ToolStopCommand, `{"command_id": "`+id+`"}`)
		require.NoError(t, err)
		assert.Equal(t, "(no output)\n[stopped]\n"+exit, out, command)
	}

	// Stopped by its SIGTERM: 143, a failure under the limit as the
	// reference words it.
	out, err := call(t, ctx, s, ToolStartCommand, `{"command": "sleep 30"}`)
	require.NoError(t, err)
	out, err = call(t, ctx, s, ToolStopCommand, `{"command_id": "`+out[len(out)-32:]+`"}`)
	require.NoError(t, err)
	assert.Equal(t, "(no output)\n[stopped]\n[exit code: 143]"+failed, out)
}

func TestEnvironmentOfACommand(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-should-not-leak")
	t.Setenv("AGENTSPEC_SECRET", "nope")
	s, _ := newShell(t, `{"env": {"GREETING": "hi", "OPENAI_ORG": "o"}, "denied_env_patterns": ["OPENAI_*"]}`)
	out := run(t, s, "env | sort")
	assert.NotContains(t, out, "OPENAI")
	assert.NotContains(t, out, "AGENTSPEC")
	assert.NotContains(t, out, "sk-should-not-leak")
	assert.Contains(t, out, "GREETING=hi\n")
	assert.Contains(t, out, "TERM=dumb\n")
	assert.Contains(t, out, "HOME="+filepath.Join(s.temp, "home")+"\n")
	assert.Contains(t, out, "TMPDIR="+s.temp+"\n")
	var names []string
	for _, line := range strings.Split(strings.TrimPrefix(out, "[stdout]\n"), "\n") {
		if k, _, ok := strings.Cut(line, "="); ok {
			names = append(names, k)
		}
	}
	for _, n := range names {
		assert.Contains(t, []string{"PATH", "HOME", "TMPDIR", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "GREETING", "PWD", "SHLVL", "_"}, n, "unexpected variable")
	}
	st, err := os.Stat(s.temp)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), st.Mode().Perm())
}

func TestPersistCwd(t *testing.T) {
	t.Parallel()
	s, w := newShell(t, `{"persist_cwd": true}`)
	require.NoError(t, os.MkdirAll(filepath.Join(w, "a", "b"), 0o755))
	assert.Equal(t, "[stdout]\n"+w+"\n", run(t, s, "pwd"))
	assert.Equal(t, "(no output)", run(t, s, "cd a/b"))
	assert.Equal(t, "[stdout]\n"+filepath.Join(w, "a", "b")+"\n", run(t, s, "pwd"))
	assert.Equal(t, "(no output)\n[exit code: 1]", run(t, s, "cd ..; false"), "not kept after a failure")
	assert.Equal(t, "[stdout]\n"+filepath.Join(w, "a", "b")+"\n", run(t, s, "pwd"))
	require.NoError(t, os.RemoveAll(filepath.Join(w, "a")))
	_, err := call(t, context.Background(), s, ToolRunCommand, `{"command": "pwd"}`)
	assert.Equal(t, "The previous directory was removed; now in "+w+".", retryOf(t, err))
	assert.Equal(t, "[stdout]\n"+w+"\n", run(t, s, "pwd"))

	// A file in its place: the directory was removed too.
	require.NoError(t, os.Mkdir(filepath.Join(w, "c"), 0o755))
	assert.Equal(t, "(no output)", run(t, s, "cd c"))
	require.NoError(t, os.Remove(filepath.Join(w, "c")))
	require.NoError(t, os.WriteFile(filepath.Join(w, "c"), nil, 0o644))
	_, err = call(t, context.Background(), s, ToolRunCommand, `{"command": "pwd"}`)
	assert.Equal(t, "The previous directory was removed; now in "+w+".", retryOf(t, err))
	assert.Equal(t, "[stdout]\n"+w+"\n", run(t, s, "pwd"))

	plain, w2 := newShell(t, `{}`)
	require.NoError(t, os.Mkdir(filepath.Join(w2, "d"), 0o755))
	run(t, plain, "cd d")
	assert.Equal(t, "[stdout]\n"+w2+"\n", run(t, plain, "pwd"), "without persist_cwd every command starts in the workspace")
}

var idRE = regexp.MustCompile(`^Started background command: 'echo bg-out; echo bg-err >&2; sleep 30'\nID: ([0-9a-f]{32})$`)

func TestBackgroundCommands(t *testing.T) {
	t.Parallel()
	s, _ := newShell(t, `{"max_background": 2}`)
	ctx := context.Background()
	out, err := call(t, ctx, s, ToolStartCommand, `{"command": "echo bg-out; echo bg-err >&2; sleep 30"}`)
	require.NoError(t, err)
	m := idRE.FindStringSubmatch(out)
	require.NotNil(t, m, out)
	id := m[1]
	require.Eventually(t, func() bool {
		out, _ := call(t, ctx, s, ToolCheckCommand, `{"command_id": "`+id+`"}`)
		return out == "[stdout]\nbg-out\n\n[stderr]\nbg-err\n\n[status: running]"
	}, timeoutForEventually, pollEvery)

	out, err = call(t, ctx, s, ToolStartCommand, `{"command": "echo done"}`)
	require.NoError(t, err)
	done := strings.TrimPrefix(out[strings.Index(out, "ID: "):], "ID: ")
	require.Eventually(t, func() bool {
		out, _ := call(t, ctx, s, ToolCheckCommand, `{"command_id": "`+done+`"}`)
		return out == "[stdout]\ndone\n\n[status: finished]\n[exit code: 0]"
	}, timeoutForEventually, pollEvery)

	out, err = call(t, ctx, s, ToolStartCommand, `{"command": "sleep 30"}`)
	require.NoError(t, err)
	_, err = call(t, ctx, s, ToolStartCommand, `{"command": "sleep 30"}`)
	assert.Equal(t, "Too many background commands are running (2); stop one with stop_command first.", retryOf(t, err))

	out, err = call(t, ctx, s, ToolStopCommand, `{"command_id": "`+id+`"}`)
	require.NoError(t, err)
	assert.Equal(t, "[stdout]\nbg-out\n\n[stderr]\nbg-err\n\n[stopped]\n[exit code: 143]", out)
	for _, bad := range []string{id, "nope", strings.ToUpper(done)} {
		out, err = call(t, ctx, s, ToolCheckCommand, `{"command_id": "`+bad+`"}`)
		require.NoError(t, err)
		assert.Equal(t, "[Error: unknown command ID "+pyRepr(bad)+"]", out)
		out, err = call(t, ctx, s, ToolStopCommand, `{"command_id": "`+bad+`"}`)
		require.NoError(t, err)
		assert.Equal(t, "[Error: unknown command ID "+pyRepr(bad)+"]", out)
	}
	out, err = call(t, ctx, s, ToolStopCommand, `{"command_id": "`+done+`"}`)
	require.NoError(t, err)
	assert.Equal(t, "[stdout]\ndone\n\n[stopped]\n[exit code: 0]", out)
}

func TestStopWithoutOutput(t *testing.T) {
	t.Parallel()
	s, _ := newShell(t, `{}`)
	ctx := context.Background()
	out, err := call(t, ctx, s, ToolStartCommand, `{"command": "sleep 30"}`)
	require.NoError(t, err)
	id := out[len(out)-32:]
	out, err = call(t, ctx, s, ToolCheckCommand, `{"command_id": "`+id+`"}`)
	require.NoError(t, err)
	assert.Equal(t, "(no output yet)\n[status: running]", out)
	out, err = call(t, ctx, s, ToolStopCommand, `{"command_id": "`+id+`"}`)
	require.NoError(t, err)
	assert.Equal(t, "(no output)\n[stopped]\n[exit code: 143]", out)
}

// A background command that died of SIGKILL before stop_command keeps its
// exit line, as check_command showed it: only a command the stop itself had
// to kill has none, as in the reference.
func TestStopAfterSIGKILL(t *testing.T) {
	t.Parallel()
	for _, mode := range sandboxModes(t) {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			testStopAfterSIGKILL(t, mode)
		})
	}
}

func testStopAfterSIGKILL(t *testing.T, mode string) {
	s, _ := newShell(t, `{"sandbox": "`+mode+`"}`)
	ctx := context.Background()
	out, err := call(t, ctx, s, ToolStartCommand, `{"command": "echo before; kill -9 $$"}`)
	require.NoError(t, err)
	id := out[len(out)-32:]
	require.Eventually(t, func() bool {
		out, _ := call(t, ctx, s, ToolCheckCommand, `{"command_id": "`+id+`"}`)
		return out == "[stdout]\nbefore\n\n[status: finished]\n[exit code: 137]"
	}, timeoutForEventually, pollEvery)
	out, err = call(t, ctx, s, ToolStopCommand, `{"command_id": "`+id+`"}`)
	require.NoError(t, err)
	assert.Equal(t, "[stdout]\nbefore\n\n[stopped]\n[exit code: 137]", out)

	// SIGTERM ignored, by the shell and by sleep: the stop escalates.
	out, err = call(t, ctx, s, ToolStartCommand, `{"command": "trap '' TERM; echo ready; sleep 30"}`)
	require.NoError(t, err)
	id = out[len(out)-32:]
	require.Eventually(t, func() bool {
		out, _ := call(t, ctx, s, ToolCheckCommand, `{"command_id": "`+id+`"}`)
		return out == "[stdout]\nready\n\n[status: running]"
	}, timeoutForEventually, pollEvery)
	out, err = call(t, ctx, s, ToolStopCommand, `{"command_id": "`+id+`"}`)
	require.NoError(t, err)
	assert.Equal(t, "[stdout]\nready\n\n[stopped]", out)

	// Running when stopped, then dead of a SIGKILL that is not the stop's
	// (its own, here, on the SIGTERM) within the grace: it has an exit
	// status, and the stop shows it.
	out, err = call(t, ctx, s, ToolStartCommand, `{"command": "trap 'kill -KILL $$' TERM; echo ready; sleep 30 & wait"}`)
	require.NoError(t, err)
	id = out[len(out)-32:]
	require.Eventually(t, func() bool {
		out, _ := call(t, ctx, s, ToolCheckCommand, `{"command_id": "`+id+`"}`)
		return out == "[stdout]\nready\n\n[status: running]"
	}, timeoutForEventually, pollEvery)
	out, err = call(t, ctx, s, ToolStopCommand, `{"command_id": "`+id+`"}`)
	require.NoError(t, err)
	assert.Equal(t, "[stdout]\nready\n\n[stopped]\n[exit code: 137]", out)
}

// Close kills every background command and removes the private temporary
// directory once they are dead; tools then fail.
func TestCloseEndsEverything(t *testing.T) {
	t.Parallel()
	w := realTemp(t)
	s, err := New(Options{Sandbox: sandboxMode(t)}, w)
	require.NoError(t, err)
	ctx := context.Background()
	_, err = call(t, ctx, s, ToolStartCommand, `{"command": "echo $$ > pid; exec sleep 300"}`)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(filepath.Join(w, "pid"))
		return err == nil && len(b) > 0
	}, timeoutForEventually, pollEvery)
	temp := s.temp
	require.NoError(t, s.Close())
	_, err = os.Stat(temp)
	assert.ErrorIs(t, err, os.ErrNotExist)
	assert.Empty(t, s.jobs)
	_, err = call(t, ctx, s, ToolRunCommand, `{"command": "true"}`)
	assert.ErrorIs(t, err, ErrClosed)
	assert.NoError(t, s.Close(), "twice")
}

// Background commands started at once still number at most max_background.
func TestMaxBackgroundUnderConcurrentStarts(t *testing.T) {
	t.Parallel()
	s, _ := newShell(t, `{"max_background": 2}`)
	results := make(chan error, 6)
	for range 6 {
		go func() {
			_, err := call(t, context.Background(), s, ToolStartCommand, `{"command": "sleep 30"}`)
			results <- err
		}()
	}
	started, refused := 0, 0
	for range 6 {
		if err := <-results; err == nil {
			started++
		} else if msg, ok := capabilities.AsRetry(err); ok && msg == "Too many background commands are running (2); stop one with stop_command first." {
			refused++
		}
	}
	assert.Equal(t, 2, started)
	assert.Equal(t, 4, refused)
}

// runBounded is run, failing the test rather than hanging the package when
// the call does not return within a minute (far past any command here).
func runBounded(t *testing.T, s *Capability, command string) string {
	t.Helper()
	tools, err := s.Tools(context.Background())
	require.NoError(t, err)
	i := slices.IndexFunc(tools, func(tl capabilities.Tool) bool { return tl.Name() == ToolRunCommand })
	require.GreaterOrEqual(t, i, 0)
	args, _ := json.Marshal(map[string]string{"command": command})
	result := make(chan string, 1)
	go func() {
		out, err := tools[i].Call(context.Background(), args)
		if err != nil {
			out = "error: " + err.Error()
		}
		result <- out
	}()
	select {
	case out := <-result:
		return out
	case <-time.After(time.Minute):
		t.Fatalf("run_command %q did not return", command)
		return ""
	}
}

// persist_cwd's capture file is in T, which the command may write: one it
// replaced with a FIFO, a symlink, something larger than any path or a
// directory neither hangs the call nor moves the next command; the
// directory stays where it was, as the reference keeps it when the capture
// is unusable.
func TestPersistCwdForgedCapture(t *testing.T) {
	t.Parallel()
	s, w := newShell(t, `{"persist_cwd": true}`)
	require.NoError(t, os.Mkdir(filepath.Join(w, "d"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(w, "slash"), []byte("/\n"), 0o644))
	run(t, s, "true") // T, where the captures go, is made at the first command
	for _, forge := range []string{
		`mkfifo "$CAPTURE"`,
		`ln -s "$W/slash" "$CAPTURE"`,
		`{ printf /; head -c 5000 /dev/zero | tr '\0' /; } > "$CAPTURE"`,
		`mkdir "$CAPTURE"`,
	} {
		s.mu.Lock()
		capture := filepath.Join(s.temp, fmt.Sprintf("cwd-%d", s.captures+1)) // the next command's
		s.mu.Unlock()
		script := "W=$PWD; CAPTURE=" + shQuote(capture) + "; cd d && " + forge + " && exit 0"
		assert.Equal(t, "(no output)", runBounded(t, s, script), forge)
		assert.Equal(t, "[stdout]\n"+w+"\n", run(t, s, "pwd"), forge)
	}
}

// The spec's tool_timeout, the context's deadline, ends a command as its
// own timeout does: the output so far and the reference's trailer naming
// the call's limit, not an error; and the command's event.
func TestDeadlineIsATimeout(t *testing.T) {
	t.Parallel()
	s, w := newShell(t, `{}`)
	var r recorder
	ctx := newDeadline(r.ctx(), time.Now().Add(time.Second))
	go func() {
		waitForFile(filepath.Join(w, "started"))
		ctx.expire()
	}()
	out, err := call(t, ctx, s, ToolRunCommand, `{"command": "echo before; touch started; sleep 30"}`)
	require.NoError(t, err)
	assert.Equal(t, "[stdout]\nbefore\n\n[Command timed out after 1.0s]", out)
	require.Len(t, r.events, 2)
	ev := r.events[1].(*CommandEvent)
	assert.True(t, ev.TimedOut)
	assert.Nil(t, ev.ExitCode)
	assert.EqualValues(t, 7, ev.StdoutBytes)
	assert.Equal(t, "timed out after 1.0s", ev.Outcome())
}

// A call cancelled (not timed out) kills its command and returns the
// context's error; the command's end is still reported, with no exit code.
func TestCancelledCallReportsTheCommand(t *testing.T) {
	t.Parallel()
	s, w := newShell(t, `{}`)
	var r recorder
	ctx, cancel := context.WithCancel(r.ctx())
	defer cancel()
	go func() {
		waitForFile(filepath.Join(w, "started"))
		cancel()
	}()
	_, err := call(t, ctx, s, ToolRunCommand, `{"command": "touch started; sleep 30"}`)
	assert.ErrorIs(t, err, context.Canceled)
	require.Len(t, r.events, 2)
	ev := r.events[1].(*CommandEvent)
	assert.False(t, ev.TimedOut)
	assert.Nil(t, ev.ExitCode)
	assert.Equal(t, "killed", ev.Outcome())
}

// deadline is a context whose deadline the test reaches when it chooses:
// Deadline says when, Done closes at expire.
type deadline struct {
	context.Context
	at   time.Time
	done chan struct{}
	once sync.Once
}

func newDeadline(parent context.Context, at time.Time) *deadline {
	return &deadline{Context: parent, at: at, done: make(chan struct{})}
}

func (d *deadline) Deadline() (time.Time, bool) { return d.at, true }
func (d *deadline) Done() <-chan struct{}       { return d.done }
func (d *deadline) expire()                     { d.once.Do(func() { close(d.done) }) }

func (d *deadline) Err() error {
	select {
	case <-d.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

// waitForFile polls until path exists, for at most a minute.
func waitForFile(path string) {
	for until := time.Now().Add(time.Minute); time.Now().Before(until); time.Sleep(pollEvery) {
		if _, err := os.Stat(path); err == nil {
			return
		}
	}
}

// A timeout longer than a time.Duration holds (about 292 years), which a
// spec's max_timeout may allow, waits as long as the command runs: it is
// not converted into a negative duration that ends the command at once.
func TestTimeoutBeyondADurationWaits(t *testing.T) {
	t.Parallel()
	s, _ := newShell(t, `{"default_timeout": 1e10, "max_timeout": 1e300}`)
	assert.Equal(t, "[stdout]\ndone\n", run(t, s, "sleep 0.2; echo done"))
	out, err := call(t, context.Background(), s, ToolRunCommand, `{"command": "sleep 0.2; echo done", "timeout_seconds": 1e299}`)
	require.NoError(t, err)
	assert.Equal(t, "[stdout]\ndone\n", out)
}

// A command line longer than one argument of execve may be (128 KiB), a
// heredoc writing a large file, runs and answers as a short one does, in
// the foreground and in the background, confined or not.
func TestLongCommandLine(t *testing.T) {
	t.Parallel()
	body := strings.Repeat("a line of the file\n", 10<<10) // 190 KiB
	command := "cat > big.txt <<'EOF'\n" + body + "EOF\nwc -c < big.txt; echo err >&2; exit 5"
	want := fmt.Sprintf("[stdout]\n%d\n\n[stderr]\nerr\n\n[exit code: 5]", len(body))
	for _, mode := range sandboxModes(t) {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			s, w := newShell(t, `{"sandbox": "`+mode+`"}`)
			ctx := context.Background()
			args, _ := json.Marshal(map[string]string{"command": command})
			out, err := call(t, ctx, s, ToolRunCommand, string(args))
			require.NoError(t, err)
			assert.Equal(t, want, out)
			got, err := os.ReadFile(filepath.Join(w, "big.txt"))
			require.NoError(t, err)
			assert.True(t, body == string(got), "big.txt has the heredoc's text")

			id := startFinished(t, ctx, s, string(args))
			out, err = call(t, ctx, s, ToolStopCommand, `{"command_id": "`+id+`"}`)
			require.NoError(t, err)
			assert.Equal(t, strings.Replace(want, "[exit code", "[stopped]\n[exit code", 1), out)
		})
	}

	// Longer than the helper takes: the model is told, the run goes on.
	// (Started as both tools start a command, past the checks, which
	// take long over 32 MiB under the race detector.)
	s, w := newShell(t, `{}`)
	huge := "# " + strings.Repeat("x", confine.MaxScript) + "\ntrue"
	_, err := s.start(context.Background(), &launch{command: huge, dir: w}, newRing(10), newRing(10))
	assert.Equal(t, fmt.Sprintf("The command was not run: it is %d bytes long, and a command may be at most 32 MiB. "+
		"Write long contents to a file in parts, with several commands.", len(huge)), retryOf(t, err))
	assert.Equal(t, "(no output)", run(t, s, "true"))
}
