package shell

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A background command that has ended holds no ring of its output, only
// what its results can still show, and they read as the whole output
// would make them: check_command's, again and again, and stop_command's.
func TestEndedBackgroundCommandGivesBackItsOutput(t *testing.T) {
	t.Parallel()
	s, _ := newShell(t, `{"max_output_chars": 300}`)
	ctx := context.Background()
	// 2,000 bytes on each stream, more than the rings' 1,200, in lines
	// whose numbers tell which tail was kept.
	id := startFinished(t, ctx, s, `{"command": "i=0; while [ $i -lt 200 ]; do printf 'o%08d\\n' $i; printf 'e%08d\\n' $i >&2; i=$((i+1)); done; exit 3"}`)
	var out, errs strings.Builder
	for i := range 200 {
		out.WriteString("o" + zeros(i) + "\n")
		errs.WriteString("e" + zeros(i) + "\n")
	}
	wantCheck := truncateTail(labelled(out.String(), errs.String(), "(no output yet)", "")+"\n[status: finished]\n[exit code: 3]", 300)
	wantStop := truncateTail(labelled(out.String(), errs.String(), "(no output)", "")+"\n[stopped]\n[exit code: 3]", 300)
	for range 2 {
		got, err := call(t, ctx, s, ToolCheckCommand, `{"command_id": "`+id+`"}`)
		require.NoError(t, err)
		assert.Equal(t, wantCheck, got)
	}
	s.mu.Lock()
	j := s.jobs[id]
	s.mu.Unlock()
	require.NotNil(t, j)
	j.stdout.mu.Lock()
	j.stderr.mu.Lock()
	assert.Zero(t, cap(j.stdout.buf)+cap(j.stderr.buf), "the rings of a command that ended are given back")
	j.stderr.mu.Unlock()
	j.stdout.mu.Unlock()
	assert.LessOrEqual(t, len(j.shownOut)+len(j.shownErr), 300+1, "no more is kept than a result can show")
	got, err := call(t, ctx, s, ToolStopCommand, `{"command_id": "`+id+`"}`)
	require.NoError(t, err)
	assert.Equal(t, wantStop, got)
}

func zeros(i int) string {
	d := []byte("00000000")
	for k := 7; k >= 0 && i > 0; k-- {
		d[k] = byte('0' + i%10)
		i /= 10
	}
	return string(d)
}

// What shown keeps of two streams makes check_command's and stop_command's
// results read as the whole streams make them, whatever the streams' sizes
// beside the limit, multi-byte characters included.
func TestShownKeepsWhatResultsShow(t *testing.T) {
	t.Parallel()
	streams := []string{"", "x", "é\n", strings.Repeat("a", 39) + "\n", strings.Repeat("b€", 30), strings.Repeat("line\n", 40)}
	for _, limit := range []int{1, 5, 20, 40, 47, 60, 100, 400} {
		for _, stdout := range streams {
			for _, stderr := range streams {
				keptOut, keptErr := shown(stdout, stderr, limit)
				for _, tail := range []struct{ empty, trailer string }{
					{"(no output yet)", "\n[status: finished]\n[exit code: 0]"},
					{"(no output yet)", "\n[status: finished]"},
					{"(no output)", "\n[stopped]\n[exit code: 143]"},
					{"(no output)", "\n[stopped]"},
				} {
					want := truncateTail(labelled(stdout, stderr, tail.empty, "")+tail.trailer, limit)
					got := truncateTail(labelled(keptOut, keptErr, tail.empty, "")+tail.trailer, limit)
					assert.Equal(t, want, got, "limit %d, stdout %q, stderr %q", limit, stdout, stderr)
				}
			}
		}
	}
}

// Close ends a run_command still running as it ends a background command,
// killing it at once (D15: the run's end kills every process of a
// command), rather than waiting for it to end or time out; the call then
// fails as one after Close does.
func TestCloseKillsARunningCommand(t *testing.T) {
	t.Parallel()
	for _, mode := range sandboxModes(t) {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			w := realTemp(t)
			s, err := New(Options{Sandbox: mode}, w)
			require.NoError(t, err)
			type result struct {
				out string
				err error
			}
			done := make(chan result, 1)
			go func() {
				out, err := call(t, context.Background(), s, ToolRunCommand, `{"command": "echo started > started; exec sleep 120", "timeout_seconds": 120}`)
				done <- result{out, err}
			}()
			require.Eventually(t, func() bool {
				_, err := os.Stat(filepath.Join(w, "started"))
				return err == nil
			}, timeoutForEventually, pollEvery)
			closed := make(chan error, 1)
			go func() { closed <- s.Close() }()
			select {
			case err := <-closed:
				require.NoError(t, err)
			case <-time.After(timeoutForEventually):
				t.Fatal("Close waited for the command")
			}
			r := <-done
			assert.ErrorIs(t, r.err, ErrClosed)
			assert.Empty(t, r.out)
		})
	}
}

// A start_command whose call ended while its listeners heard of it (its
// tool_timeout, the run cancelled) starts nothing, as a run_command does
// not: the model would never learn the command's ID, and the command would
// hold one of max_background's places until the run ends.
func TestStartCommandOfAnEndedCallStartsNothing(t *testing.T) {
	t.Parallel()
	s, w := newShell(t, `{"max_background": 1}`)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := call(t, ctx, s, ToolStartCommand, `{"command": "touch ran; exec sleep 120"}`)
	assert.ErrorIs(t, err, context.Canceled)
	s.mu.Lock()
	assert.Empty(t, s.jobs)
	assert.Zero(t, s.starting)
	s.mu.Unlock()
	_, err = os.Stat(filepath.Join(w, "ran"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}
