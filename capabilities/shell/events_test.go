package shell

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentspec/agentspec/capabilities"
	"github.com/agentspec/agentspec/internal/confine"
)

// recorder keeps the events of a call, cancelling requests with cancel
// when it is set.
type recorder struct {
	events []capabilities.Event
	cancel *string
}

func (r *recorder) ctx() context.Context {
	return capabilities.WithListener(context.Background(), func(_ context.Context, ev capabilities.Event) error {
		if req, ok := ev.(capabilities.ChangeRequest); ok && r.cancel != nil {
			req.Cancel(*r.cancel)
		}
		r.events = append(r.events, ev)
		return nil
	})
}

func marshal(t *testing.T, ev capabilities.Event) map[string]any {
	t.Helper()
	b, err := capabilities.MarshalEvent(ev)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	return m
}

func TestCommandEvents(t *testing.T) {
	t.Parallel()
	s, w := newShell(t, `{}`)
	require.NoError(t, os.Mkdir(filepath.Join(w, "sub"), 0o755))
	var r recorder
	out, err := call(t, r.ctx(), s, ToolRunCommand, `{"command": "echo hi; echo e >&2; exit 2"}`)
	require.NoError(t, err)
	assert.Equal(t, "[stdout]\nhi\n\n[stderr]\ne\n\n[exit code: 2]", out)
	require.Len(t, r.events, 2)
	req := marshal(t, r.events[0])
	assert.Equal(t, map[string]any{"kind": "shell.command_request", "command": "echo hi; echo e >&2; exit 2", "cwd": ".", "root_dir": w,
		"background": false, "sandboxed": s.Sandboxed(), "cancelled": false, "cancel_reason": nil}, req)
	done := marshal(t, r.events[1])
	assert.GreaterOrEqual(t, done["duration_ms"], 0.0)
	delete(done, "duration_ms")
	assert.Equal(t, map[string]any{"kind": "shell.command", "command": "echo hi; echo e >&2; exit 2", "cwd": ".", "root_dir": w,
		"exit_code": 2.0, "timed_out": false, "truncated": false, "stdout_bytes": 3.0, "stderr_bytes": 2.0,
		"background": false, "sandboxed": s.Sandboxed()}, done)
	assert.Equal(t, "exit 2", r.events[1].(*CommandEvent).Outcome())

	r = recorder{}
	out, err = call(t, r.ctx(), s, ToolRunCommand, `{"command": "sleep 5", "timeout_seconds": 0.25}`)
	require.NoError(t, err)
	assert.Equal(t, "[Command timed out after 0.25s]", out)
	ev := r.events[1].(*CommandEvent)
	assert.True(t, ev.TimedOut)
	assert.Nil(t, ev.ExitCode)
	assert.Equal(t, "timed out after 0.25s", ev.Outcome())

	r = recorder{}
	_, err = call(t, r.ctx(), s, ToolRunCommand, `{"command": "rm x"}`)
	assert.Equal(t, "Command 'rm' is denied.", retryOf(t, err))
	assert.Empty(t, r.events, "a refused command emits nothing")
}

func TestCancelledCommandDoesNotRun(t *testing.T) {
	t.Parallel()
	s, w := newShell(t, `{}`)
	reason := "the user declined the change"
	r := recorder{cancel: &reason}
	out, err := call(t, r.ctx(), s, ToolRunCommand, `{"command": "touch ran"}`)
	require.NoError(t, err)
	assert.Equal(t, "[Command was not run: the user declined the change]", out)
	require.Len(t, r.events, 1)
	assert.Equal(t, "run `touch ran` in .", r.events[0].(capabilities.ChangeRequest).Describe().Summary)
	assert.Equal(t, reason, marshal(t, r.events[0])["cancel_reason"])

	empty := ""
	r = recorder{cancel: &empty}
	out, err = call(t, r.ctx(), s, ToolStartCommand, `{"command": "touch ran"}`)
	require.NoError(t, err)
	assert.Equal(t, "[Command was not run: cancelled by a listener]", out)
	_, err = os.Stat(filepath.Join(w, "ran"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

func TestBackgroundEvents(t *testing.T) {
	t.Parallel()
	s, _ := newShell(t, `{}`)
	var r recorder
	out, err := call(t, r.ctx(), s, ToolStartCommand, `{"command": "sleep 30"}`)
	require.NoError(t, err)
	id := out[len(out)-32:]
	require.Len(t, r.events, 2)
	assert.True(t, r.events[0].(*CommandRequestEvent).Background)
	started := r.events[1].(*CommandEvent)
	assert.Equal(t, id, started.ID)
	assert.Nil(t, started.ExitCode)
	assert.Equal(t, "started "+id, started.Outcome())
	_, err = call(t, r.ctx(), s, ToolStopCommand, `{"command_id": "`+id+`"}`)
	require.NoError(t, err)
	require.Len(t, r.events, 3)
	stopped := r.events[2].(*CommandEvent)
	require.NotNil(t, stopped.ExitCode)
	assert.Equal(t, 143, *stopped.ExitCode)
	assert.Equal(t, id, stopped.ID)
}

// A start_command whose result is cut to max_output_chars (its command
// is quoted in it) says so in the event of its start, as every result cut
// does in its command's event; the ID at the end survives.
func TestBackgroundStartEventTruncated(t *testing.T) {
	t.Parallel()
	s, _ := newShell(t, `{"max_output_chars": 100}`)
	for command, truncated := range map[string]bool{"sleep 30": false, "sleep 30 # " + strings.Repeat("x", 100): true} {
		var r recorder
		args, _ := json.Marshal(map[string]string{"command": command})
		out, err := call(t, r.ctx(), s, ToolStartCommand, string(args))
		require.NoError(t, err)
		assert.Equal(t, truncated, strings.HasPrefix(out, "[... output truncated"), out)
		require.Len(t, r.events, 2)
		assert.Equal(t, truncated, r.events[1].(*CommandEvent).Truncated, command)
		_, err = call(t, r.ctx(), s, ToolStopCommand, `{"command_id": "`+out[len(out)-32:]+`"}`)
		require.NoError(t, err)
	}
}

// The run's end kills a background command and says so.
func TestCloseReportsBackgroundCommands(t *testing.T) {
	t.Parallel()
	s, err := New(Options{Sandbox: sandboxMode(t)}, realTemp(t))
	require.NoError(t, err)
	var r recorder
	out, err := call(t, r.ctx(), s, ToolStartCommand, `{"command": "sleep 300"}`)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.Len(t, r.events, 3)
	ev := r.events[2].(*CommandEvent)
	assert.Equal(t, out[len(out)-32:], ev.ID)
	assert.Nil(t, ev.ExitCode, "killed")
	assert.Equal(t, "killed", ev.Outcome())
}

// A background command that had ended before the run's end is reported
// with the exit code check_command showed, 128+N after a death by signal N
// as well; only the one the end kills has none.
func TestCloseReportsEndedBackgroundCommands(t *testing.T) {
	t.Parallel()
	s, err := New(Options{Sandbox: sandboxMode(t)}, realTemp(t))
	require.NoError(t, err)
	var r recorder
	for command, want := range map[string]string{
		"exit 3":        "[exit code: 3]",
		"kill -TERM $$": "[exit code: 143]",
		"kill -KILL $$": "[exit code: 137]",
		"sleep 300":     "",
	} {
		out, err := call(t, r.ctx(), s, ToolStartCommand, `{"command": "`+command+`"}`)
		require.NoError(t, err)
		id := out[len(out)-32:]
		if want != "" {
			require.Eventually(t, func() bool {
				out, _ := call(t, context.Background(), s, ToolCheckCommand, `{"command_id": "`+id+`"}`)
				return out == "(no output yet)\n[status: finished]\n"+want
			}, timeoutForEventually, pollEvery, command)
		}
	}
	require.NoError(t, s.Close())
	outcomes := map[string]string{}
	for _, ev := range r.events {
		if e, ok := ev.(*CommandEvent); ok && !e.started {
			outcomes[e.Command] = e.Outcome()
		}
	}
	assert.Equal(t, map[string]string{
		"exit 3": "exit 3", "kill -TERM $$": "exit 143", "kill -KILL $$": "exit 137", "sleep 300": "killed",
	}, outcomes)
}

// A background command's end is reported once, whoever ends it: two
// stop_commands of the same ID and Close, all at once.
func TestBackgroundEndReportedOnce(t *testing.T) {
	t.Parallel()
	s, err := New(Options{Sandbox: sandboxMode(t)}, realTemp(t))
	require.NoError(t, err)
	var (
		mu   sync.Mutex
		ends int
	)
	ctx := capabilities.WithListener(context.Background(), func(_ context.Context, ev capabilities.Event) error {
		if e, ok := ev.(*CommandEvent); ok && !e.started {
			mu.Lock()
			ends++
			mu.Unlock()
		}
		return nil
	})
	out, err := call(t, ctx, s, ToolStartCommand, `{"command": "sleep 30"}`)
	require.NoError(t, err)
	id := out[len(out)-32:]
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			// Each finds the job and stops it, or finds it gone.
			_, _ = s.stopCommand(ctx, json.RawMessage(`{"command_id": "`+id+`"}`))
		})
	}
	wg.Go(func() { assert.NoError(t, s.Close()) })
	wg.Wait()
	assert.Equal(t, 1, ends)
}

// A command longer than a command may be (confine.MaxScript) is refused
// before the listeners hear of it, as a command the checks refuse is: no
// shell.command_request, so that --approve does not put to the user a
// command that would not run, and the model is told to write in parts.
func TestCommandTooLongIsNotAnnounced(t *testing.T) {
	t.Parallel()
	s, _ := newShell(t, `{}`)
	command := "# " + strings.Repeat("x", confine.MaxScript) + "\ntrue"
	args, err := json.Marshal(map[string]string{"command": command})
	require.NoError(t, err)
	for _, tool := range []string{ToolRunCommand, ToolStartCommand} {
		var r recorder
		_, err := call(t, r.ctx(), s, tool, string(args))
		assert.Equal(t, fmt.Sprintf("The command was not run: it is %d bytes long, and a command may be at most 32 MiB. "+
			"Write long contents to a file in parts, with several commands.", len(command)), retryOf(t, err), tool)
		assert.Empty(t, r.events, "%s: a command too long to run is not announced", tool)
	}
	assert.Equal(t, "(no output)", run(t, s, "true"))
}
