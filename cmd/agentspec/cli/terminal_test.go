//go:build linux || darwin

package cli

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/creack/pty"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stderrOnTerminal runs the binary with stderr on a pseudo-terminal (stdout
// and stdin stay pipes) and returns what the terminal got.
func stderrOnTerminal(t *testing.T, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ptmx, tty, err := pty.Open()
	require.NoError(t, err)
	defer ptmx.Close()
	cmd := exec.Command(agentspecBinary(t), args...)
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, tty
	require.NoError(t, cmd.Start())
	tty.Close() // the child holds its own copy
	read := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(ptmx) // ends with EIO once the child closes its side
		read <- b
	}()
	code = exitCode(t, cmd.Wait())
	return code, out.String(), string(<-read)
}

// stderrOnPipe runs the binary with stderr on a pipe.
func stderrOnPipe(t *testing.T, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(agentspecBinary(t), args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	code = exitCode(t, cmd.Run())
	return code, out.String(), errOut.String()
}

// Progress redraws a status line in place on a terminal, and is plain lines,
// without a carriage return or an escape code, anywhere else and on a dumb
// terminal: for run and for batch.
func TestProgressOnATerminalAndOff(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"notes.md":     "hello\n",
		"jobs/a/x.txt": "a\n",
		"jobs/b/x.txt": "b\n",
		"script.yaml":  "turns:\n  - tool_calls: [{name: read_file, arguments: {path: notes.md}}]\n  - text: done\n",
		"agent.yaml":   "model: script:script.yaml\ninstructions: Read.\ncapabilities: [FileSystem]\n",
		"batch.yaml":   "model: test\ninstructions: Read.\ncapabilities: [FileSystem]\n",
	})
	runArgs := []string{"run", "--workspace", dir, filepath.Join(dir, "agent.yaml")}
	batchArgs := []string{"batch", filepath.Join(dir, "batch.yaml"), filepath.Join(dir, "jobs", "*")}
	const redraw = "\r\033[K"
	term := []string{"TERM=xterm"}

	code, stdout, stderr := stderrOnTerminal(t, term, runArgs...)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, "done\n", stdout)
	assert.Contains(t, stderr, "waiting for the model (request 1)…"+redraw, "a live status line, cleared in place")
	assert.Contains(t, stderr, "read_file notes.md")

	code, _, stderr = stderrOnTerminal(t, term, batchArgs...)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, redraw+"[")
	assert.Contains(t, stderr, "running")

	for name, run := range map[string]func(*testing.T, []string, ...string) (int, string, string){
		"pipe": stderrOnPipe,
		"dumb terminal": func(t *testing.T, _ []string, args ...string) (int, string, string) {
			return stderrOnTerminal(t, []string{"TERM=dumb"}, args...)
		},
	} {
		for _, args := range [][]string{runArgs, batchArgs} {
			code, _, stderr := run(t, term, args...)
			require.Equal(t, 0, code, stderr)
			// A terminal turns "\n" into "\r\n" on output; only a bare "\r" is a redraw.
			plain := strings.ReplaceAll(stderr, "\r\n", "\n")
			assert.NotContains(t, plain, "\r", "%s, %s: %q", name, args[0], stderr)
			assert.NotContains(t, plain, "\033", "%s, %s: %q", name, args[0], stderr)
			assert.NotEmpty(t, plain)
		}
	}
}

// batch --nats counts the jobs the workers are running, as a local batch
// counts its own: the live line shows them while they run.
func TestBatchOverNATSShowsRunningJobs(t *testing.T) {
	t.Parallel()
	url := startNATS(t)
	f := newBatchFixture(t, 2, "")
	// Each job's first answer takes two seconds: the line is redrawn every
	// half second meanwhile.
	writeFile(t, filepath.Join(f.dir, "turns.yaml"), strings.Replace(copyScript,
		"  - tool_calls: [{name: read_file", "  - delay: 2s\n    tool_calls: [{name: read_file", 1))
	startWorkerCmd(t, "--nats", url, "--workspace-root", f.dir, "-j", "2", "--no-events", "-q")
	code, stdout, stderr := stderrOnTerminal(t, []string{"TERM=xterm"},
		"batch", "--nats", url, "--workspace-root", f.dir, f.spec, filepath.Join(f.dir, "jobs", "job-*"))
	require.Equal(t, 0, code, stderr)
	assert.Len(t, jobLines(t, stdout), 2)
	assert.Regexp(t, `\] 0/2  [12] running `, stderr, "the jobs the worker took are counted running (its --no-events keeps job.start)")
	assert.Contains(t, stderr, "2/2  0 running")
}
