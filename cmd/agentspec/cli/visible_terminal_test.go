//go:build linux || darwin

package cli

import (
	"bytes"
	"io"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/creack/pty"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stdoutOnTerminal runs the binary with stdout on a pseudo-terminal and
// returns what the terminal got, with the terminal's "\r\n" for "\n" undone.
func stdoutOnTerminal(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ptmx, tty, err := pty.Open()
	require.NoError(t, err)
	defer ptmx.Close()
	cmd := exec.Command(agentspecBinary(t), args...)
	var errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = tty, &errOut
	require.NoError(t, cmd.Start())
	tty.Close()
	read := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(ptmx)
		read <- b
	}()
	code = exitCode(t, cmd.Wait())
	return code, string(bytes.ReplaceAll(<-read, []byte("\r\n"), []byte("\n"))), errOut.String()
}

// The answer of a run and the text of a tool are data: piped, they are
// written as they are; on a terminal, a person reads them, and what the
// terminal would act on is shown escaped.
func TestOutputOnATerminalShowsControlsEscaped(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"notes.md":    "line one\x1b[2K\u202eline two\n",
		"script.yaml": "turns:\n  - text: \"all done\\e[2K\\rnothing to see\\n\\tindented\"\n",
		"agent.yaml":  "model: script:script.yaml\ninstructions: Answer.\n",
	})
	runArgs := []string{"run", "-q", filepath.Join(dir, "agent.yaml")}
	toolArgs := []string{"tool", "--root", dir, "read_file", `{"path": "notes.md"}`}

	code, stdout, stderr := stdoutOnTerminal(t, runArgs...)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, "all done\\x1b[2K\\rnothing to see\n\tindented\n", stdout)
	code, stdout, stderr = stdoutOnTerminal(t, toolArgs...)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "line one\\x1b[2K\\u202eline two\n")
	assert.NotContains(t, stdout, "\x1b")

	cmd := exec.Command(agentspecBinary(t), runArgs...)
	piped, err := cmd.Output()
	require.NoError(t, err)
	assert.Equal(t, "all done\x1b[2K\rnothing to see\n\tindented\n", string(piped), "piped, the answer is as the model wrote it")
	cmd = exec.Command(agentspecBinary(t), toolArgs...)
	piped, err = cmd.Output()
	require.NoError(t, err)
	assert.Contains(t, string(piped), "line one\x1b[2K\u202eline two\n")
}
